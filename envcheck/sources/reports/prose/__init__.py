"""Free text in a report: what people write about their environment outside any tool's output.

Read: markdown bullets and tables, `key: value` lines ("PyTorch version: 2.1.2", "| CUDA | 12.1 |"), `name==version`,
`name version` and `name (version)`, sentences ("torch 2.1.2+cu121 on an RTX 4090"), GPU product names (through
rules/data/gpus.toml), OS and platform words, Python versions, the install commands the user ran, the versions pip
and a Python prompt print. Only the lines no tool reader claimed are read, so tool output is never counted twice
(and its facts rank first in build.py).

The modules follow a line's way: lines.py sorts it (commands.py, values.py for `key: value`, sentences.py, gpus.py
for GPU names, words.py for the words themselves), each statement it makes is a `Said` with its line and weight, and
choose.py turns them into one `Found`. Weights: a `key: value` line, a table row or a line that is only `name
version` (4 inside an "Environment" / "System Info" / "Versions" section, else 3), an install command (2), a mention
in a sentence (1). Per fact the heaviest statements decide; when they disagree the fact stays unknown and a problem
says why. A number in a path or a log line is never read as a version: fenced blocks (logs, tracebacks, code) are
read only for their structured lines. Every line is read once, in time linear in its length, and at most
MAX_STATEMENTS statements are read.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from envcheck.sources.reports.found import Found
from envcheck.sources.reports.prose.choose import found_of
from envcheck.sources.reports.prose.gpus import gpus_in
from envcheck.sources.reports.prose.lines import Table, said_in_line
from envcheck.sources.reports.prose.said import Said
from envcheck.sources.reports.prose.words import SPLIT, version_of
from envcheck.sources.reports.text import Block
from envcheck.support.patterns import lazy

__all__ = ["MAX_STATEMENTS", "read"]

MAX_STATEMENTS = 5000


MAX_LINE = 4000  # a longer line is no environment description; its first part is read


_ENV_HEADINGS = ("environment", "system info", "system information", "versions", "version info", "env", "setup",
                 "configuration", "hardware", "software", "platform", "specs", "my system", "dependencies",
                 "installed packages", "package versions", "your current environment")


_DIGIT = lazy(r"\d")


_REPL = {"torch.__version__": "torch", "torch.version.cuda": "torch_cuda", "get_device_name": "gpu"}


def read(blocks: Sequence[Block], claimed: set[int]) -> Found | None:
    """What the lines of `blocks` outside `claimed` (input line numbers a tool reader read) state; None when they
    state nothing. At most MAX_STATEMENTS statements are read: far more than any description of one environment,
    and a bound on the time a hostile text takes."""
    said = list(itertools.islice(_statements(blocks, claimed), MAX_STATEMENTS + 1))
    cut = said[MAX_STATEMENTS].line if len(said) > MAX_STATEMENTS else None
    return found_of(said[:MAX_STATEMENTS], cut) if said else None


def _statements(blocks: Sequence[Block], claimed: set[int]) -> Iterator[Said]:
    env = False
    comment = False
    for block in blocks:
        pending: list[str] = []  # what prompts asked (`torch.__version__`, ...), answered by the lines that follow
        table: Table | None = None
        for index, raw in enumerate(block.lines):
            number = block.first_line + index
            if number in claimed:
                pending, table = [], None
                continue
            line, comment = _without_comments(raw[:MAX_LINE], comment)
            text = line.strip()
            if not text:
                continue
            if not block.fenced and _is_heading(text):
                env = _is_env_heading(text)
                continue
            if not block.fenced and text.startswith(">"):
                continue  # someone else's words, quoted
            tier = 4 if env else 3
            asked = [fact for marker, fact in _REPL.items() if marker in text and not _has_value_after(text, marker)]
            if asked:
                pending = (pending + asked)[-8:]
                continue
            if pending and len(text.split()) <= 6 and not text.startswith((">>>", "$", "❯")):
                yield from _repl_output(pending.pop(0), text, number, tier)
                continue
            pending = []
            if text.startswith("|"):
                table = table or Table()
                yield from table.row(text, number, tier)
                continue
            table = None
            yield from said_in_line(text, number, tier, block.fenced)


def _without_comments(line: str, comment: bool) -> tuple[str, bool]:
    """`line` without HTML comments (an issue template's hints), and whether a comment is still open after it."""
    out: list[str] = []
    rest = line
    while True:
        if comment:
            end = rest.find("-->")
            if end < 0:
                return "".join(out), True
            rest, comment = rest[end + 3:], False
        start = rest.find("<!--")
        if start < 0:
            out.append(rest)
            return "".join(out), False
        out.append(rest[:start])
        rest, comment = rest[start + 4:], True


def _is_heading(text: str) -> bool:
    if text.startswith("#") or (text.startswith("**") and text.endswith("**") and len(text) < 80):
        return True
    lower = text.lower()
    return lower.startswith("<summary>") or (text.endswith(":") and len(text) <= 80 and not _DIGIT.search(text))


def _is_env_heading(text: str) -> bool:
    lower = text.lower()
    return any(word in lower for word in _ENV_HEADINGS)


def _has_value_after(text: str, marker: str) -> bool:
    return any(version_of(w) for w in SPLIT.split(text.partition(marker)[2]))


def _repl_output(fact: str, text: str, number: int, tier: int) -> Iterator[Said]:
    """The line a prompt printed for `torch.__version__`, `torch.version.cuda` or `get_device_name()`."""
    value = text.strip("'\" ")
    if fact == "gpu":
        yield from gpus_in(value, number, tier, context=True, whole=True)
        return
    version = version_of(value.split()[0]) if value.split() else None
    if version is not None and fact == "torch":
        yield Said("torch", version, number, tier)
    elif version is not None and version.count(".") == 1 and "+" not in version:
        yield Said(fact, version, number, tier)

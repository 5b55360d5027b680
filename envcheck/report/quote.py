"""Text quoted from the checked environment, made inert for the format it is written in.

Every text of a report but the rule's id and name may carry what the facts hold: a GPU name, a package name, a path
or an error message read from a pasted report (`envcheck check --report`, the issue-triage workflow), a snapshot or a
child's stderr. Whoever wrote that text must not be able to write the report: a link or a mention in the markdown
that the triage bot posts, an escape sequence in a terminal, a workflow command in a CI log.

- `scrubbed` is every format's first step: each text of the report with its control and bidi characters replaced
  (envcheck/support/output_text.py `inert`), so no reporter can forget a field.
- `md_text`, `md_code` and `md_fence` write a text into markdown as GitHub renders it: as plain words, a code span,
  a fenced block. Backslash escapes stop links, emphasis, HTML and tables, but not GitHub's @mentions and
  #references (found in the rendered text) nor every autolink (`a\\@b.c` is still an e-mail link), so a word that
  would become one is quoted as code instead: GitHub links nothing inside code.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import fields, is_dataclass, replace
from enum import Enum
from typing import Any, cast

from envcheck.rules.model import Report
from envcheck.support.output_text import inert
from envcheck.support.patterns import lazy


@functools.cache
def _init_fields(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind) if f.init)


def _scrub(value: Any) -> Any:
    # Every field, found by walking the dataclasses rather than listed: a text field added to Finding or Report
    # later is scrubbed without anyone remembering to. Status and Severity are str enums: kept as they are.
    # What holds nothing to replace is returned as it is, not rebuilt: nearly every report is clean, and rebuilding
    # each finding cost about a tenth of a static check's own work.
    if value is None or isinstance(value, (Enum, int, float)):
        return value
    if isinstance(value, str):
        clean = inert(value)
        return value if clean == value else clean
    if isinstance(value, tuple):
        items = tuple(_scrub(v) for v in value)
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = [(_scrub(k), _scrub(v)) for k, v in value.items()]
        same = all(k2 is k and v2 is v for (k2, v2), (k, v) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)
    if is_dataclass(value) and not isinstance(value, type):
        old = {name: getattr(value, name) for name in _init_fields(type(value))}
        changed = {name: new for name, v in old.items() if (new := _scrub(v)) is not v}
        return replace(value, **changed) if changed else value
    return value


def scrubbed(report: Report) -> Report:
    """`report` with every text's control characters (but newline and tab) and bidi controls replaced by U+FFFD."""
    return cast(Report, _scrub(report))


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


def md_code(text: str, *, cell: bool = False) -> str:
    """`text` as one markdown code span: fenced by more backticks than it holds, so it cannot close the span early;
    in a table `cell`, its pipes escaped, which GitHub's tables need even inside code."""
    text = _one_line(text)
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    # A span that starts or ends with a backtick needs a space beside its fence; one space each side is stripped.
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    code = f"{fence}{pad}{text}{pad}{fence}"
    return code.replace("|", "\\|") if cell else code


# Words GitHub links after rendering, escaped or not: URLs (`https://`, `www.`, `mailto:`), e-mail addresses and
# @mentions (`@`), issue references (`#12`, `owner/repo#12`, `GH-12`).
_LINKED = lazy(r"://|www\.|mailto:|xmpp:|@|#\w|\bgh-\d", re.IGNORECASE)
# Punctuation that starts markdown inline syntax, escaped with a backslash: the backslash itself, code, emphasis and
# strikethrough, links and images, table cells, math; `<` before what starts an HTML tag or an autolink, `&` before
# what starts an entity; `_` except between two letters or digits (where it cannot open or close emphasis).
_INLINE = lazy(r"[\\`*\[\]|~$]|<(?=[A-Za-z/!?])|&(?=[#A-Za-z])|(?<![^\W_])_|_(?![^\W_])")
# Block syntax at the start of a line: a heading, a quote, a list item, a thematic break; its last character escaped.
_BLOCK = lazy(r"[#>+=-]|\d+[.)]")
_CODE_SPAN = lazy(r"`([^`]+)`")


def _escaped(text: str) -> str:
    return _INLINE.sub(lambda m: "\\" + m[0], text)


def _words(text: str) -> Iterator[tuple[bool, str]]:
    """The prose `text` as (code?, text) pieces: a word GitHub would link is code, the rest escaped prose."""
    for word in re.split(r"(\s+)", text):
        stripped = word.lstrip("(\"'")
        core = stripped.rstrip(").,;:!?\"'")
        lead, trail = word[: len(word) - len(stripped)], stripped[len(core):]
        if _LINKED.search(core):  # a sentence's own brackets, quotes and full stop stay outside the code
            yield from ((False, _escaped(lead)), (True, core), (False, _escaped(trail)))
        else:
            yield (True, word) if _LINKED.search(word) else (False, _escaped(word))


def md_text(text: str, *, cell: bool = False) -> str:
    """`text` as markdown that renders as the same words and nothing else: no link, HTML, mention, reference,
    emphasis, heading or list, and no way out of a table `cell`. A pair of backticks in it (a rule's `command`)
    stays a code span."""
    pieces: list[tuple[bool, str]] = []
    # Stripped: leading blanks would indent the line into a code block, and a list item's continuation with it.
    parts = _CODE_SPAN.split(_one_line(text).strip())  # prose, code, prose, ...: re.split keeps the group
    for i, part in enumerate(parts):
        for code, piece in ((True, part),) if i % 2 else _words(part):
            if not piece:
                continue
            if code and pieces and pieces[-1][0]:  # two code spans side by side would read as one backtick run
                pieces[-1] = (True, pieces[-1][1] + piece)
            else:
                pieces.append((code, piece))
    out = "".join(md_code(piece, cell=cell) if code else piece for code, piece in pieces)
    # Last: none of these characters was escaped above, and an escape added before would have been escaped again.
    block = _BLOCK.match(out)
    return out if block is None else f"{block[0][:-1]}\\{out[block.end() - 1:]}"


def md_fence(lines: list[str], info: str = "") -> list[str]:
    """`lines` as a fenced code block whose fence is longer than any run of backticks in them: no line ends it."""
    longest = max((len(run) for line in lines for run in re.findall("`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *lines, fence]


def md_url(url: str) -> str:
    """A rule's reference as a link when it is a plain web address, else as code."""
    return f"<{url}>" if re.fullmatch(r"https?://[^\s<>`]+", url) else md_code(url)

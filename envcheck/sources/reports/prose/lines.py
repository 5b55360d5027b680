"""One line of a report's text (envcheck/sources/reports/prose/): an install command, pip's output, a `key: value`, a
markdown table row, a line that is only `name version` or a GPU's name, else a sentence."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from envcheck.sources.reports.prose.commands import Install, install_of
from envcheck.sources.reports.prose.gpus import gpus_in
from envcheck.sources.reports.prose.said import Said
from envcheck.sources.reports.prose.sentences import GLUED, hedged, sentence
from envcheck.sources.reports.prose.values import key_value, package
from envcheck.sources.reports.prose.words import KEYS, key_of, platform_of, version_of
from envcheck.support.patterns import lazy

__all__ = ["Table", "said_in_line"]

_KEY_END = lazy(r"[:：=]")


_LOG_LINES = ('File "', "Traceback", "at ", "[rank", "INFO", "WARNING", "ERROR", "DEBUG", "raise ", "return ")


_PIP_SATISFIED = "requirement already satisfied:"


_PIP_INSTALLED = "successfully installed "


_PACKAGE_COLUMNS = ("package", "library", "name", "component", "software", "dependency", "lib", "module")


class Table:
    """A markdown table being read: its header once the rule line under it is seen."""

    def __init__(self) -> None:
        self.last: list[str] | None = None  # the previous row, which a rule line makes the header
        self.header: list[str] | None = None
        self.keys: list[str] = []

    def row(self, text: str, number: int, tier: int) -> list[Said]:
        """What one row states: under a "Package | Version" header a package, under a header of keys ("GPU | CUDA |
        torch") each cell by its column's key, and without a header the row's first two cells as key | value."""
        cells = [c.strip() for c in text.strip().strip("|").split("|")][:16]
        if all(set(c) <= set("-: ") for c in cells):
            self.header, self.last = self.last, None
            self.keys = [key_of(c) for c in self.header or ()]
            return []
        self.last = cells
        keys = self.keys
        if len(keys) >= 2 and keys[0] in _PACKAGE_COLUMNS and keys[1] in ("", "version", "installed"):
            return list(package(cells[0], cells[1] if len(cells) > 1 else "", number, tier, any_name=True))
        if any(k in KEYS for k in keys) and self.header is not None:
            pairs = zip(self.header, cells, strict=False)
            return [s for key, cell in pairs for s in key_value(key, cell, number, tier)]
        return list(key_value(cells[0], cells[1], number, tier)) if len(cells) >= 2 else []


def _split_key(text: str) -> tuple[str, str] | None:
    """("PyTorch version", "2.1.2") of "- **PyTorch version**: 2.1.2" or "torch.__version__ = 2.1"; None for a
    line with no key before a colon (a URL's "://", a pin's "==" are not one)."""
    body = text.lstrip("-*+•> ").strip()
    separator = _KEY_END.search(body, 1, 80)
    if separator is None:
        return None
    index = separator.start()
    if body.startswith(("//", "="), index + 1) or body[index - 1] in "=<>!~":
        return None
    return body[:index], body[index + 1:].strip()


def said_in_line(text: str, number: int, tier: int, fenced: bool) -> Iterator[Said]:
    """What one line states (the same line in a long log is read once)."""
    for said in _line_said(text, tier, fenced):
        yield said._replace(line=number)


@functools.lru_cache(maxsize=4096)
def _line_said(text: str, tier: int, fenced: bool) -> tuple[Said, ...]:
    return tuple(_read_line(text, 0, tier, fenced))


def _read_line(text: str, number: int, tier: int, fenced: bool) -> Iterator[Said]:
    lower = text.lower()
    install = install_of(text) if ("install" in lower or "create" in lower) else None
    if install is not None:
        if fenced or not hedged(lower):
            yield from _installed(install, number)
        return
    if lower.startswith("python ") and (banner := version_of(text.split()[1])) and _banner_rest(text):
        # The interpreter's banner or `python --version`: "Python 3.9.16 (main, Mar  8 2023, 14:00:05)". A line
        # that goes on with other facts ("Python 3.11, torch 2.5.1+cpu, Windows 11") is a sentence, read below.
        yield Said("python", banner, number, tier)
        return
    if lower.startswith(_PIP_SATISFIED) or _PIP_INSTALLED in lower:
        yield from _pip_output(text, number, tier)
        return
    pair = _split_key(text)
    if pair is not None and not pair[0].strip().startswith(("http", "File ")):
        said = list(key_value(pair[0], pair[1], number, tier))
        if KEYS.get(key_of(pair[0])) in ("os", "gpu", "driver") and not fenced and not hedged(pair[1].lower()):
            # "Environment: Colab, torch 2.1, CUDA 12.1", "GPU: Tesla T4, NVIDIA driver 470.82.01": the value is a
            # sentence of its own, whatever order its facts come in.
            said += sentence(pair[1], number, 1)
        if said or fenced:
            yield from said
            return
    words = [w for w in text.lstrip("-*+•> ").split() if w]
    if 1 <= len(words) <= 3 and not any(c in text for c in "/\\"):
        said = list(_bare(words, number, tier))
        if said:
            yield from said
            return
    if not fenced and not hedged(lower) and not text.startswith(_LOG_LINES):
        yield from sentence(text, number, 1)


def _banner_rest(text: str) -> bool:
    """Whether what follows "Python X.Y" is a banner's or nothing: "(main, ...)", "[GCC ...]", a `:` or a word such
    as "64-bit", rather than a list of other facts after a comma."""
    rest = text.split(None, 2)
    if len(rest) < 3:
        return not rest[-1].endswith((",", ";"))
    return rest[2][:1] in ("(", "[", ":")


def _bare(words: list[str], number: int, tier: int) -> Iterator[Said]:
    """A line that is only `name version` ("Python 3.10", "torch 2.1.2+cu121", "CUDA12.8", "Ubuntu 22.04") or only
    a GPU's name ("NVIDIA GeForce RTX 4090", "2x A100")."""
    platform = platform_of([w.lower().strip(",;") for w in words])
    if platform is not None:
        yield Said("platform", platform, number, tier)
        words = [w for w in words if platform_of([w.lower().strip(",;")]) is None and not version_of(w)]
        if not words:
            return
    first = words[0].lower()
    glued = GLUED.fullmatch(first) if len(words) == 1 and len(first) <= 40 else None
    if glued is not None:
        words, first = [glued.group(1), glued.group(2)], glued.group(1)
    if len(words) >= 2 and version_of(words[1]) and (len(words) == 2 or words[2].startswith("(")):
        yield from key_value(first, words[1], number, tier)
        return
    if len(words) >= 2 and "==" not in words[0]:
        yield from gpus_in(" ".join(words), number, tier, context=False, whole=True)


def _installed(install: Install, number: int) -> Iterator[Said]:
    if install.torch_version is not None:
        yield Said("torch", install.torch_version, number, 2)
    if install.torch_cuda is not None:
        yield Said("torch_cuda", install.torch_cuda, number, 2)
    if install.torch_hip is not None:
        yield Said("torch_hip", install.torch_hip, number, 2)
    if install.python_version is not None:
        yield Said("python", install.python_version, number, 2)
    for name, version in install.packages:
        yield Said("package", (name, version), number, 2)


def _pip_output(text: str, number: int, tier: int) -> Iterator[Said]:
    """pip's "Requirement already satisfied: torch in ./lib/python3.10/site-packages (2.1.0)" and "Successfully
    installed torch-2.5.1 numpy-1.26.4": the versions installed."""
    lower = text.lower()
    if lower.startswith(_PIP_SATISFIED):
        rest = text[len(_PIP_SATISFIED):].split()
        if len(rest) >= 3 and rest[1] == "in" and rest[-1].startswith("(") and rest[-1].endswith(")"):
            yield from package(re.split(r"[<>=!~\[;]", rest[0], maxsplit=1)[0], rest[-1], number, tier,
                                any_name=True)
        return
    for word in lower.partition(_PIP_INSTALLED)[2].split()[:500]:
        name, _, version = word.rpartition("-")
        yield from package(name, version, number, tier, any_name=True)

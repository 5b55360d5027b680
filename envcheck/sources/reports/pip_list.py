"""`pip list` / `uv pip list` (a "Package Version" table) and `pip freeze` / `uv pip freeze` (`name==version`).

A list counts as complete only when it is the tool's whole output: its own header (or, for freeze, nothing but
requirement lines), a closed fence or no fence, and no "..." where the user cut it. Anything else is a selection,
and a package it does not name is unknown rather than absent.
"""

from __future__ import annotations

import re

from envcheck.sources.reports.found import Found, Package
from envcheck.sources.reports.text import Block
from envcheck.support.patterns import lazy

__all__ = ["parse_freeze", "parse_list", "recognise_freeze", "recognise_list"]

_HEADER = lazy(r"^\s*Package\s+Version(?:\s+\S.*)?$")
_ROW = lazy(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s+(\d\S*)(?:\s+(.*))?$")
_FREEZE = lazy(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(===?)\s*([^\s;#]+)\s*(?:[;#].*)?$")
_DIRECT = lazy(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s+@\s+\S+")
_EDITABLE = lazy(r"^\s*-e\s+\S+")
_ELIDED = {"...", "…", "[...]", "(...)"}
_FREEZE_MINIMUM = 3  # fewer `a==b` lines are a requirement quoted in prose, not a freeze


# The answers of `^\s*-{3,}\s+-{3,}[\s-]*$`, which took time quadratic in a long run of dashes before other text.
def _is_rule(line: str) -> bool:
    """Whether `line` is the table's "------- -------" rule: dashes and spaces only, its first two runs of dashes
    three or more long."""
    runs = line.split()
    return len(runs) >= 2 and len(runs[0]) >= 3 and len(runs[1]) >= 3 and not line.replace("-", "").strip()


def recognise_list(block: Block) -> bool:
    lines = block.lines
    return any(_HEADER.match(lines[i]) and _is_rule(lines[i + 1]) for i in range(min(len(lines) - 1, 2000)))


def recognise_freeze(block: Block) -> bool:
    count = 0
    for line in block.lines:
        if _FREEZE.match(line) or _DIRECT.match(line):
            count += 1
            if count >= _FREEZE_MINIMUM:
                return True
    return False


def parse_list(block: Block) -> Found:
    lines = block.lines
    head = next(i for i in range(len(lines) - 1) if _HEADER.match(lines[i]) and _is_rule(lines[i + 1]))
    packages: list[Package] = []
    elided = False
    index = head + 2
    while index < len(lines):
        line = lines[index]
        row = _ROW.match(line)
        if row:
            packages.append(Package(row.group(1), row.group(2)))
        elif line.strip() in _ELIDED:
            elided = True
        else:
            # A name without its version is a row cut short: the paste ends there.
            elided = elided or re.fullmatch(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*", line) is not None
            break
        index += 1
    rest = [line for line in lines[index:] if line.strip()]
    # Only the table in its block (or text after it in an unfenced paste) and nothing cut: the whole output.
    complete = block.closed and not elided and (not block.fenced or not rest)
    return Found(fmt="pip list", where=block.where("pip list", head, index), packages=tuple(packages),
                 packages_complete=complete,
                 problems=("the package list is cut short (an elided or unfinished row)",) if elided else ())


def parse_freeze(block: Block) -> Found:
    packages: list[Package] = []
    first: int | None = None
    last = 0
    other = False
    elided = False
    for index, line in enumerate(block.lines):
        freeze = _FREEZE.match(line)
        direct = _DIRECT.match(line)
        if freeze or direct:
            if freeze:
                packages.append(Package(freeze.group(1), freeze.group(3)))
            elif direct:
                packages.append(Package(direct.group(1), ""))  # a URL install: its version is not written
            first = index if first is None else first
            last = index + 1
        elif line.strip() in _ELIDED:
            elided = True
        elif line.strip() and not _EDITABLE.match(line) and not line.lstrip().startswith("#"):
            other = True
    start = first or 0
    return Found(fmt="pip freeze", where=block.where("pip freeze", start, last), packages=tuple(packages),
                 packages_complete=block.fenced and block.closed and not other and not elided,
                 problems=("the package list is cut short (an elided or unfinished row)",) if elided else ())

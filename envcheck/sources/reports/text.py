"""Pasted text made readable: decoded, bounded, without colours or carriage returns, and cut into blocks.

A block is one markdown fence's content, or the text between fences. Parsers look for their own markers inside
each block, so one block may hold several outputs (a bare paste of collect_env then pip list) and the same output
reads alike inside or outside a fence.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from envcheck.errors import EnvcheckError
from envcheck.support.patterns import lazy

__all__ = ["MAX_BYTES", "Block", "ReportError", "blocks", "decode"]

# Large enough for a `pip list` of a few thousand packages pasted with every log around it; larger input is not a
# pasted report, and reading it would only cost time.
MAX_BYTES = 8 * 1024 * 1024

_ANSI = lazy(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# A fence opens with 3+ backticks or tildes (any info string) and closes with at least as many of the same.
_FENCE = lazy(r"^ {0,3}(?:> ?)*(`{3,}|~{3,})(.*)$")
_QUOTE = lazy(r"^(?:> ?)+")


class ReportError(EnvcheckError):
    """A report that cannot be read at all (binary, too large): names the file."""

    def __init__(self, file: str, message: str) -> None:
        self.file = file
        super().__init__(f"{file}: {message}")


@dataclass(frozen=True)
class Block:
    """Consecutive lines of the input: one fence's content, or the text outside fences."""

    number: int  # 1-based, in input order
    first_line: int  # 1-based line number of `lines[0]` in the input
    lines: tuple[str, ...]
    fenced: bool
    closed: bool  # a fence that was closed (False for an unclosed fence: the paste may be cut)

    def where(self, fmt: str, start: int = 0, end: int | None = None) -> str:
        """"block 2 (pip list, lines 14-80)": where a fact was read, `start`/`end` indexing `lines`."""
        last = len(self.lines) if end is None else end
        return f"block {self.number} ({fmt}, lines {self.first_line + start}-{self.first_line + max(last - 1, start)})"


def decode(data: bytes, file: str) -> str:
    """The text of a report: UTF-8 or, with a BOM, UTF-16 (PowerShell's `>` writes that). Binary input and input
    over MAX_BYTES are one ReportError."""
    if len(data) > MAX_BYTES:
        raise ReportError(file, f"{len(data)} bytes is too large for a pasted report (at most {MAX_BYTES})")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = data.decode("utf-16", errors="replace")
    else:
        if b"\x00" in data[:65536]:
            raise ReportError(file, "binary data, not a pasted text report")
        text = data.decode("utf-8-sig", errors="replace")
    return text


def _clean(line: str) -> str:
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    return line.rstrip()


def blocks(text: str) -> list[Block]:
    """The input cut at markdown fences; blank runs and empty blocks are kept as they are (lines stay numbered)."""
    lines = [_clean(line) for line in text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    out: list[Block] = []
    current: list[str] = []
    start = 1
    fence: str | None = None

    def flush(fenced: bool, closed: bool, next_start: int) -> None:
        nonlocal current, start
        if any(line.strip() for line in current):
            out.append(Block(len(out) + 1, start, tuple(current), fenced, closed))
        current, start = [], next_start

    for number, line in enumerate(lines, start=1):
        match = _FENCE.match(line) if ("`" in line or "~" in line) else None
        if fence is None and match:
            flush(False, True, number + 1)
            fence = match.group(1)
        elif fence is not None and match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                and not match.group(2).strip():
            flush(True, True, number + 1)
            fence = None
        else:
            # A fence's content quoted in a markdown reply ("> line") reads as the line itself.
            current.append(_QUOTE.sub("", line) if fence is not None and line.startswith(">") else line)
    flush(fence is not None, fence is None, len(lines) + 1)
    return out

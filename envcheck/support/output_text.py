"""The text side of the command line's output, without the CLI framework: comma-separated option values, the colour
decision, text a stream's encoding can carry, text quoted from elsewhere made inert, clipped messages, the probes'
status line, and a command shell-quoted as every report and `envcheck fix` show it (`shell`: the reporters use it
too, so it lives here rather than with the command templates).

envcheck/cli/output.py re-exports these beside the writers that use click; the click-free `envcheck --static`
(envcheck/cli/plain_cli.py) uses them directly.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterable, Sequence

from envcheck.support.patterns import lazy

MAX_MESSAGE = 1000  # characters of one error line


def split(values: Sequence[str]) -> list[str]:
    """Repeated and comma-separated option values, flattened: ("a,b", "c") -> ["a", "b", "c"]."""
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


def shell(argv: Iterable[str]) -> str:
    """The command as a POSIX shell line, each argument quoted only where needed."""
    return shlex.join(list(argv))


def use_color(choice: bool | None, output: str | None) -> bool:
    """--color/--no-color when given; else colour only on a terminal, never into a file or under NO_COLOR."""
    if choice is not None:
        return choice
    if output or os.environ.get("NO_COLOR"):  # https://no-color.org: any non-empty value disables colour
        return False
    return sys.stdout.isatty()


def printable(text: str, encoding: str | None) -> str:
    """`text` as `encoding` can carry it: what it cannot (a ✗ on a latin-1 or cp1252 terminal, a surrogate left
    by a folder name that is not UTF-8) becomes "?", so that no report or message fails to be written."""
    encoding = encoding or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, errors="replace").decode(encoding)
    except LookupError:  # an encoding Python does not know: ASCII is in every one
        return text.encode("ascii", errors="replace").decode("ascii")
    return text


# What a terminal, a log viewer or a reader's eye obeys instead of showing: C0 controls (ESC starts every colour, title,
# clear-screen and hyperlink sequence; BEL, backspace and CR rewrite what was shown), DEL, C1 controls (0x9B is a
# one-byte CSI, 0x90 a DCS, 0x85 a line break), the bidi marks and overrides that reorder a line as displayed
# ("Trojan Source", CVE-2021-42574), and the Unicode line and paragraph separators.
_CONTROL = lazy("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def inert(text: str) -> str:
    """`text` with every control character but newline and tab, and every bidi control, replaced by U+FFFD (visibly
    something, never an action): text quoted from a report, a snapshot or a child's stderr cannot move the cursor,
    recolour or clear a terminal, or reorder what a reader sees."""
    return _CONTROL.sub(lambda m: m[0] if m[0] in "\n\t" else "\ufffd", text)


def inert_json(document: str) -> str:
    """A JSON document with each control and bidi character written as its `\\uXXXX` escape: the same data, and
    inert when printed. (json.dumps escapes C0 itself, but writes DEL, C1 and bidi controls as they are; a raw
    newline is its indentation.)"""
    return _CONTROL.sub(lambda m: "\n" if m[0] == "\n" else f"\\u{ord(m[0]):04x}", document)


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text` cut to `limit` characters, saying how much was left out: a 100,000-character option value echoed
    back in an error is still one readable line."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


class ProgressLine:
    """One self-overwriting status line on stderr while probes run, only on a terminal; silence otherwise. Written
    as click writes to a POSIX stream; the CLI's subclass writes through click (envcheck/cli/click_cli.py)."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.drawn = False

    def _echo(self, text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    def __call__(self, name: str, index: int, total: int, waited: tuple[float, float] | None = None) -> None:
        """`waited`: (seconds, bound) the probes' child has spent starting and importing torch, not yet probing."""
        if self.enabled:
            if waited is None:
                self._echo(f"\r\033[Kenvcheck: probing {name} ({index}/{total})…")
            else:
                self._echo(f"\r\033[Kenvcheck: importing torch… {waited[0]:.0f} s of at most {waited[1]:g} s "
                           "(--probe-timeout)")
            self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            self._echo("\r\033[K")
            self.drawn = False

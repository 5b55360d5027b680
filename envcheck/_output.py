"""What every command shares for its output: comma-separated option values, the colour decision, writing a report.

Used by the root command line (envcheck/_cli.py) and `envcheck fleet` (envcheck/fleet/cli.py), so that both read
`--ignore a,b`, NO_COLOR and `-o FILE` the same way.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envcheck.errors import EnvcheckError

if TYPE_CHECKING:
    _FloatParam = click.ParamType[float]
else:  # click before 8.2 has no generic ParamType
    _FloatParam = click.ParamType

MAX_MESSAGE = 1000  # characters of one error line
_DAY_S = 86400.0


def split(values: Sequence[str]) -> list[str]:
    """Repeated and comma-separated option values, flattened: ("a,b", "c") -> ["a", "b", "c"]."""
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


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


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text` cut to `limit` characters, saying how much was left out: a 100,000-character option value echoed
    back in an error is still one readable line."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def error_line(message: str) -> None:
    """One line on standard error, clipped and printable whatever the terminal's encoding."""
    click.echo(printable(clip(message), getattr(sys.stderr, "encoding", None)), err=True)


def write(text: str, output: str | None) -> None:
    """The report to standard output (no output or "-") or to the file `output`; a write error is one line."""
    if output is None or output == "-":
        # color=True: the reporter already chose (--color / NO_COLOR / a terminal); click would otherwise strip
        # the codes whenever stdout is not a terminal, so `envcheck --color | less -R` showed none.
        click.echo(printable(text, getattr(sys.stdout, "encoding", None)), nl=False, color=True)
        return
    try:
        Path(output).write_text(printable(text, "utf-8"), encoding="utf-8")
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the file name
        raise EnvcheckError(f"--output {clip(output, 200)}: cannot write ({getattr(exc, 'strerror', None) or exc})"
                            ) from None


class Seconds(_FloatParam):
    """A duration in seconds: a finite number from `low` to a day. nan, inf and 1e309 (which float() reads as inf)
    are refused: a probe timeout of nan is never reached, so a hanging probe would never be killed."""

    name = "seconds"

    def __init__(self, low: float) -> None:
        self.low = low

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            self.fail(f"{clip(str(value), 40)!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or not self.low <= seconds <= _DAY_S:
            self.fail(f"{clip(str(value), 40)} is not a number of seconds from {self.low:g} to {_DAY_S:g}", param, ctx)
        return seconds

"""What every command shares for its output: comma-separated option values, the colour decision, writing a report.

Used by the root command line (envcheck/cli/click_cli.py) and `envcheck fleet` (envcheck/cli/fleet_cli.py), so that both
read `--ignore a,b`, NO_COLOR and `-o FILE` the same way.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envcheck.errors import EnvcheckError
from envcheck.support.output_text import MAX_MESSAGE, clip, inert, printable, split, use_color

if TYPE_CHECKING:
    _FloatParam = click.ParamType[float]
else:  # click before 8.2 has no generic ParamType
    _FloatParam = click.ParamType

__all__ = ["EXIT_CLEAN", "EXIT_FINDINGS", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_USAGE", "ISSUES_URL",
           "MAX_MESSAGE", "Seconds", "clip", "error_line", "exit_code", "printable", "split", "use_color", "write"]

# Every command's exit codes: clean, a finding at or above --fail-on, a user's error (usage, configuration, input),
# envcheck's own bug, and Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
ISSUES_URL = "https://github.com/envcheck-ml/envcheck/issues"
_DAY_S = 86400.0


def error_line(message: str) -> None:
    """One line on standard error, clipped and printable whatever the terminal's encoding, with no control character
    (an error may quote a line of a pasted report).

    A newline in what it quotes (a configuration key written `"x\\n::add-mask::y"`) is shown as `\\n`: on a CI
    runner each line of the log is read for workflow commands, and a quoted line of its own could be one. An
    old-style `##[command]`, which the runner finds anywhere in a line, is written `##%5B` (report/github.py)."""
    one_line = inert(message).replace("\n", "\\n").replace("##[", "##%5B")
    click.echo(printable(clip(one_line), getattr(sys.stderr, "encoding", None)), err=True)


def exit_code(exc: Exception | KeyboardInterrupt) -> int | None:
    """What ends a command that raised `exc`, for the click commands (cli/click_cli.py) and the plain check
    (cli/plain_cli.py) alike: its line (or two) written on standard error, and the exit code; None where the caller
    re-raises it (a bug, with ENVCHECK_DEBUG set: the traceback is wanted). Never a traceback otherwise."""
    if isinstance(exc, EnvcheckError):
        error_line(f"envcheck: error: {exc}")
        return EXIT_USAGE
    if isinstance(exc, KeyboardInterrupt):
        click.echo("envcheck: interrupted", err=True)
        return EXIT_INTERRUPTED
    error_line(f"envcheck: internal error: {type(exc).__name__}: {exc}")
    click.echo(f"  please report it at {ISSUES_URL} (attach `envcheck facts -o facts.json`)", err=True)
    return None if os.environ.get("ENVCHECK_DEBUG") else EXIT_INTERNAL


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

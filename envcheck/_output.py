"""What every command shares for its output: comma-separated option values, the colour decision, writing a report.

Used by the root command line (envcheck/_cli.py) and `envcheck fleet` (envcheck/fleet/cli.py), so that both read
`--ignore a,b`, NO_COLOR and `-o FILE` the same way.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from envcheck.errors import EnvcheckError


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


def write(text: str, output: str | None) -> None:
    """The report to standard output (no output or "-") or to the file `output`; a write error is one line."""
    if output is None or output == "-":
        # color=True: the reporter already chose (--color / NO_COLOR / a terminal); click would otherwise strip
        # the codes whenever stdout is not a terminal, so `envcheck --color | less -R` showed none.
        click.echo(text, nl=False, color=True)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EnvcheckError(f"--output {output}: cannot write ({exc.strerror or exc})") from None

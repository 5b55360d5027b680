"""The reporter interface, and the formats a check can be written in: `--format` and `--also` offer exactly these.

A reporter is a module with a `render` function (pip-audit's `_format/interface.py` shape, minus the classes: a
reporter holds no state). Each format's module is registered in envcheck/report/__init__.py (`reporter`), which
imports it only when that format is asked for: a static check pays for the text reporter, not for ElementTree or the
markdown tables.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, NoReturn, Protocol

if TYPE_CHECKING:
    from envcheck.rules.model import Report


class Reporter(Protocol):
    """Turns a report into the text of one format. `color` and `verbose` are hints a format may ignore."""

    def render(self, report: Report, *, color: bool = False, verbose: bool = False) -> str: ...


def unreachable(value: NoReturn) -> NoReturn:
    """The end of an exhaustive dispatch: mypy fails where an enum member has no branch (typing.assert_never, 3.11)."""
    raise AssertionError(f"unhandled value: {value!r}")


class _Format(str, Enum):
    """A `--format` choice: its value is what the user types."""

    @classmethod
    def names(cls) -> list[str]:
        """The values, in definition order, as click.Choice offers them."""
        return [f.value for f in cls]


class ReportFormat(_Format):
    """The formats of `envcheck check --format` and `--also FORMAT=FILE`."""

    TEXT = "text"  # a terminal: one line when all is well, each problem with why, fix and commands if not
    JSON = "json"  # machines: envcheck/schemas/report.schema.json, one finding per rule and item
    MARKDOWN = "markdown"  # bug reports and CI step summaries
    JUNIT = "junit"  # JUnit XML for CI test dashboards: a testcase per rule
    GITHUB = "github"  # GitHub Actions workflow commands: an annotation per rule that found something


class FleetFormat(_Format):
    """The formats of `envcheck fleet --format` (envcheck/fleet/report.py renders them)."""

    TEXT = "text"  # each environment's verdicts as `envcheck check` shows them, the differences, the fleet checks
    JSON = "json"  # machines: envcheck/schemas/fleet.schema.json


class ProbeFormat(_Format):
    """The formats of `envcheck probe --format` (envcheck/report/probes.py renders them)."""

    TEXT = "text"  # each probe's outcome, its cases as a table, matrices as grids
    JSON = "json"  # every result as the facts snapshot stores it


class DocFormat(_Format):
    """The formats of `envcheck rule --format` (envcheck/report/ruledoc.py renders them)."""

    TEXT = "text"  # a terminal
    JSON = "json"  # the rules' documentation fields, for tools
    MARKDOWN = "markdown"  # docs/rules.md is `envcheck rule --all --format markdown`

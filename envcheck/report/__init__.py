"""Reporters: each turns a Report into a string. The CLI picks one with --format and writes its output.

The formats and the reporter interface are in `interface.py`; a reporter's module (text.py, json.py, markdown.py,
junit.py, github.py) is imported only when its format is asked for. common.py holds what they share (the tally,
the problems), groups.py a rule's items grouped with one merged command, quote.py makes quoted text inert in every
format; probes.py renders `envcheck probe`, ruledoc.py a rule's documentation (`envcheck rule`, docs/rules.md).
"""

from __future__ import annotations

from envcheck.model import Report
from envcheck.report.interface import Reporter, ReportFormat

__all__ = ["ReportFormat", "Reporter", "render"]


def render(report: Report, fmt: ReportFormat | str, *, color: bool = False, verbose: bool = False) -> str:
    """`report` in format `fmt` (a ReportFormat, or its value: "text", "json", ...)."""
    return ReportFormat(fmt).reporter().render(report, color=color, verbose=verbose)

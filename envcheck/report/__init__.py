"""Reporters: each turns a Report into a string. The CLI picks one with --format and writes its output.

The formats and the reporter interface are in `interface.py`; each format's module (text.py, json.py, markdown.py,
junit.py, github.py) is registered here (`reporter`) and imported only when its format is asked for. common.py holds
what they share (the tally, the problems), groups.py a rule's items grouped with one merged command, quote.py makes
quoted text inert in every format; outcome.py `envcheck fix`'s before and after; probes.py renders `envcheck probe`,
ruledoc.py a rule's documentation (`envcheck rule`, docs/rules.md).
"""

from __future__ import annotations

from envcheck.report.interface import Reporter, ReportFormat, unreachable
from envcheck.rules.model import Report

__all__ = ["ReportFormat", "Reporter", "render", "reporter"]


def reporter(fmt: ReportFormat) -> Reporter:
    """The module that writes format `fmt`: the registry of the check's formats (a new member of ReportFormat
    fails mypy here until it has its branch). Each branch imports its module: the lazy import is the point."""
    if fmt is ReportFormat.TEXT:
        from envcheck.report import text

        return text
    if fmt is ReportFormat.JSON:
        from envcheck.report import json

        return json
    if fmt is ReportFormat.MARKDOWN:
        from envcheck.report import markdown

        return markdown
    if fmt is ReportFormat.JUNIT:
        from envcheck.report import junit

        return junit
    if fmt is ReportFormat.GITHUB:
        from envcheck.report import github

        return github
    unreachable(fmt)


def render(report: Report, fmt: ReportFormat | str, *, color: bool = False, verbose: bool = False) -> str:
    """`report` in format `fmt` (a ReportFormat, or its value: "text", "json", ...)."""
    return reporter(ReportFormat(fmt)).render(report, color=color, verbose=verbose)

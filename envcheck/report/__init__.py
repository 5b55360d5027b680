"""Reporters: each turns a Report into a string. The CLI picks one with --format and writes its output.

A reporter's module is imported only when its format is asked for: a check pays for the text reporter, not for
XML or markdown.
"""

from __future__ import annotations

import importlib

from envcheck.model import Report

# Format name -> the module (in envcheck.report) whose `render(report)` produces it.
FORMATS: dict[str, str] = {
    "text": "text",
    "json": "json",
    "markdown": "markdown",
    "junit": "junit",  # JUnit XML: a testcase per rule, for CI test dashboards
    "github": "github",  # GitHub Actions workflow commands: an annotation per problem
}


def render(report: Report, fmt: str, *, color: bool = False, verbose: bool = False) -> str:
    module = importlib.import_module(f"envcheck.report.{FORMATS[fmt]}")
    if fmt == "text":
        return str(module.render(report, color=color, verbose=verbose))
    return str(module.render(report))

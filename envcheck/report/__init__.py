"""Reporters: each turns a Report into a string. The CLI picks one with --format and writes its output."""

from __future__ import annotations

from collections.abc import Callable

from envcheck.model import Report
from envcheck.report import github, junit, markdown, text
from envcheck.report import json as json_report

Reporter = Callable[..., str]

FORMATS: dict[str, Reporter] = {
    "text": text.render,
    "json": json_report.render,
    "markdown": markdown.render,
    "junit": junit.render,  # JUnit XML: a testcase per rule, for CI test dashboards
    "github": github.render,  # GitHub Actions workflow commands: an annotation per problem
}


def render(report: Report, fmt: str, *, color: bool = False, verbose: bool = False) -> str:
    if fmt == "text":
        return text.render(report, color=color, verbose=verbose)
    return FORMATS[fmt](report)

"""Golden files: the exact text, markdown, junit and github output of a few reports, kept under tests/golden/.

A presentation change shows up as a diff of these files in review, not by accident. When a change is meant,
regenerate them and read the diff before committing:

    ENVCHECK_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_golden.py

Without the variable a difference fails with a unified diff of expected against actual.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from report_samples import EVERY_STATUS, recorded, report

from envcheck.report import ReportFormat, render
from envcheck.rules.model import Report

GOLDEN = Path(__file__).parents[1] / "golden"
UPDATE = os.environ.get("ENVCHECK_UPDATE_GOLDEN") == "1"

# The reports: two recorded snapshots through the shipped pack, and a sample of every verdict and grouping.
REPORTS: dict[str, Callable[[], Report]] = {
    "torchvision-pin-conflict": lambda: recorded("torchvision-pin-conflict.json"),
    "no-deps-install": lambda: recorded("no-deps-install.json"),
    "every-status": lambda: report(*EVERY_STATUS, problems=("NVML: the driver library could not be loaded",)),
}
# The outputs: file suffix -> (format, colour, verbose).
VARIANTS: dict[str, tuple[ReportFormat, bool, bool]] = {
    "text.txt": (ReportFormat.TEXT, False, False),
    "text-color.txt": (ReportFormat.TEXT, True, False),
    "text-verbose.txt": (ReportFormat.TEXT, False, True),
    "md": (ReportFormat.MARKDOWN, False, False),
    "junit.xml": (ReportFormat.JUNIT, False, False),
    "github.txt": (ReportFormat.GITHUB, False, False),
}
CASES = [f"{name}.{suffix}" for name in REPORTS for suffix in VARIANTS]


def _render(case: str) -> str:
    name, suffix = case.split(".", 1)
    fmt, color, verbose = VARIANTS[suffix]
    return render(REPORTS[name](), fmt, color=color, verbose=verbose)


@pytest.mark.parametrize("case", CASES)
def test_output_matches_golden_file(case: str) -> None:
    """The report renders exactly as its golden file; ENVCHECK_UPDATE_GOLDEN=1 rewrites the file instead."""
    path = GOLDEN / case
    actual = _render(case)
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_bytes(actual.encode("utf-8"))
    assert path.is_file(), f"{path.name} is missing: create it with ENVCHECK_UPDATE_GOLDEN=1"
    expected = path.read_bytes().decode("utf-8")  # bytes: a CRLF would be a difference, not translated away
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                            f"tests/golden/{case} (expected)", "rendered now (actual)"))
        pytest.fail(f"the output differs from its golden file; if the change is meant, regenerate it with "
                    f"ENVCHECK_UPDATE_GOLDEN=1 and review the diff:\n{diff}", pytrace=False)


def test_every_golden_file_belongs_to_a_case() -> None:
    """No stale golden file lingers after a case is renamed or removed (the README and .gitattributes aside)."""
    on_disk = {p.name for p in GOLDEN.iterdir()} - {"README.md", ".gitattributes"}
    assert on_disk == set(CASES)

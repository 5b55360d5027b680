"""Findings and reports for the reporter tests: one builder, and a sample of every verdict a report can hold.

The checked interpreter's path has a space, so that every command shown must be quoted to survive a paste.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from _fakes import FIXTURES

from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Finding, Report, Severity, Status
from envcheck.sources.live import collect as collect_mod

EXE = "/opt/my envs/bin/python"
VERSION = "0.1.0"  # reports built here name this envcheck version, whatever the installed one is


def finding(rule_id: str, status: Status, severity: Severity = Severity.ERROR, **kwargs: Any) -> Finding:
    """A finding of rule `rule_id` named `rule-<id>`, its summary the name unless given."""
    name = kwargs.pop("name", f"rule-{rule_id.lower()}")
    return Finding(rule_id=rule_id, name=name, severity=severity, status=status,
                   summary=kwargs.pop("summary", name), area=kwargs.pop("area", "libraries"), **kwargs)


def report(*findings: Finding, problems: tuple[str, ...] = (), python: str = EXE) -> Report:
    """A report of `findings` in rule-id order (the engine's), items of one rule in the order given."""
    ordered = sorted(findings, key=lambda f: f.rule_id)  # stable: a rule's items keep their order
    return Report(findings=tuple(ordered), python=python, origin="local", envcheck_version=VERSION,
                  collection_problems=problems)


def _pip(*args: str) -> tuple[str, ...]:
    return (EXE, "-m", "pip", *args)


APEX = finding(
    "EC0301", Status.FAIL, summary="NVIDIA apex breaks fp16 T5 | in transformers 4.46.0",
    why="transformers swaps in FusedRMSNorm, which returns fp32 for fp16 input.",
    fix="Uninstall apex.", commands=(_pip("uninstall", "-y", "apex"),),
    references=("https://github.com/xdit-project/xDiT/issues/101",),
)
# A `foreach` rule that fired for two items: their commands merge into one install.
MISSING = tuple(
    finding("EC0102", Status.FAIL, name="requirement-not-installed", area="dependencies",
            summary=f"torchvision 0.21.0 requires {req}, which is not installed",
            why="The distribution imports its declared dependencies.", fix="Install the missing requirement.",
            commands=(_pip("install", req),), references=("https://pip.pypa.io/en/stable/cli/pip_check/",),
            item={"requirer": "torchvision 0.21.0", "requirement": req})
    for req in ("numpy<2", "pillow!=8.3.*,>=5.3.0")
)
# A `foreach` rule whose fix text differs per item and whose commands are removals: nothing merges.
DUPLICATES = tuple(
    finding("EC0103", Status.WARN, Severity.WARNING, name="distribution-installed-twice", area="dependencies",
            summary=f"{name} is installed twice", why="Two metadata folders for one name.",
            fix=f"Uninstall {name} until pip says it is not installed.",
            commands=(_pip("uninstall", "-y", name), _pip("uninstall", "-y", name)),
            item={"name": name, "active_version": version})
    for name, version in (("numpy", "2.1.0"), ("scipy", "1.14.1"))
)
NOTE = finding("EC0201", Status.INFO, Severity.INFO, summary="externally managed", why="w", fix="use a venv",
               area="environment")
BROKEN = finding("EC0900", Status.ERROR, detail="ValueError: unexpected data", area="frameworks")
PASSED = finding("EC0101", Status.PASS, area="dependencies")
NA = finding("EC0302", Status.NA, Severity.WARNING)
SKIPPED = finding("EC0308", Status.SKIPPED, missing=("probe sdpa (not run: probes are skipped with --static)",))
QUIET = (PASSED, NA, SKIPPED)
EVERY_STATUS = (APEX, *MISSING, *DUPLICATES, NOTE, BROKEN, *QUIET)


def recorded(fixture: str) -> Report:
    """The shipped pack's report on a recorded snapshot, its origin and version independent of where it runs."""
    path: Path = FIXTURES / fixture
    checked = evaluate(rule_pack.load(), collect_mod.load(str(path)))
    return dataclasses.replace(checked, origin=f"file:{fixture}", envcheck_version=VERSION)

"""Machine-readable report, validated against envcheck/schemas/report.schema.json in the tests."""

from __future__ import annotations

import json
from typing import Any

from envcheck.model import Finding, Report
from envcheck.support.output_text import inert_json, shell

SCHEMA_ID = "https://envcheck-ml.github.io/schemas/report-1.json"
SCHEMA_VERSION = 1


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "id": f.rule_id,
        "name": f.name,
        "severity": f.severity.value,
        "status": f.status.value,
        "area": f.area,
        "summary": f.summary,
        "why": f.why,
        "fix": f.fix,
        "commands": [{"argv": list(argv), "shell": shell(argv)} for argv in f.commands],
        "references": list(f.references),
        "missing": list(f.missing),
        "detail": f.detail,
        "item": f.item,
        "evidence": f.evidence,
    }


def as_dict(report: Report) -> dict[str, Any]:
    return {
        "$schema": SCHEMA_ID,
        "schema": SCHEMA_VERSION,
        "envcheck_version": report.envcheck_version,
        "python": report.python,
        "origin": report.origin,
        "installer": report.installer,
        "project": report.project,
        "explained": report.explained,
        "target": None if report.target is None else report.target.to_dict(),
        "summary": report.counts(),
        "collection_problems": list(report.collection_problems),
        "unseen": list(report.unseen),
        "findings": [finding_dict(f) for f in report.findings],
    }


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    """The JSON document: every finding, one per rule and item, whatever `verbose` says; never coloured."""
    return inert_json(json.dumps(as_dict(report), indent=2, ensure_ascii=False)) + "\n"

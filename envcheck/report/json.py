"""Machine-readable report, validated against envcheck/schemas/report.schema.json in the tests."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from envcheck.rules.model import Finding, Report
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


# The items of one rule and status a report holds (a rule fires once per item: 50,000 conflicting requirements made
# a report of 750 MB); `cut` says how many more there are, and the summary counts every one.
MAX_ITEMS = 1000


def bounded(findings: Sequence[Finding]) -> tuple[list[int], list[dict[str, Any]]]:
    """The indices of the `findings` a report holds (at most MAX_ITEMS of each rule and status), and what was left
    out of each."""
    seen: Counter[tuple[str, str]] = Counter()
    kept = []
    for i, f in enumerate(findings):
        key = (f.rule_id, f.status.value)
        seen[key] += 1
        if seen[key] <= MAX_ITEMS:
            kept.append(i)
    cut = [{"id": rule_id, "status": status, "shown": MAX_ITEMS, "total": total}
           for (rule_id, status), total in seen.items() if total > MAX_ITEMS]
    return kept, cut


def as_dict(report: Report) -> dict[str, Any]:
    kept, cut = bounded(report.findings)
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
        "findings": [finding_dict(report.findings[i]) for i in kept],
        "cut": cut,
    }


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    """The JSON document: every finding, one per rule and item (at most MAX_ITEMS items of a rule and status, the rest
    counted in `cut`), whatever `verbose` says; never coloured."""
    return inert_json(json.dumps(as_dict(report), indent=2, ensure_ascii=False)) + "\n"

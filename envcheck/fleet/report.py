"""The fleet report as text (a terminal, a job log) or JSON (`--format json`). Each renderer returns a string."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from envcheck.fleet.model import FleetFinding, FleetReport, Node
from envcheck.report import json as json_report
from envcheck.report import text as text_report
from envcheck.report.common import plural, tally
from envcheck.report.interface import FleetFormat, unreachable
from envcheck.rules.model import Severity

SCHEMA_ID = "https://envcheck-ml.github.io/schemas/fleet-1.json"  # envcheck/schemas/fleet.schema.json
SCHEMA_VERSION = 1
_WIDTH = 100
_MAX_DIFF_ROWS = 40  # text only; JSON lists every difference
_MAX_NODES_SHOWN = 6  # node names per value in a finding, text only
_TABLE_GROUPS = 5  # up to this many environments the differences are a table, beyond it one line per fact
_MARK = {Severity.ERROR: "✗", Severity.WARNING: "!", Severity.INFO: "i"}


def render(report: FleetReport, fmt: FleetFormat | str, *, color: bool = False, verbose: bool = False) -> str:
    """`report` in format `fmt` (a FleetFormat, or its value)."""
    fmt = FleetFormat(fmt)
    if fmt is FleetFormat.TEXT:
        return render_text(report, color=color, verbose=verbose)
    if fmt is FleetFormat.JSON:
        return render_json(report)
    unreachable(fmt)


# --- text -----------------------------------------------------------------------------------------------------------

def headline(report: FleetReport) -> str:
    """"3 nodes (5 ranks) in 2 environments, 1 node failed"."""
    members = sum(len(n.members) for n in report.nodes)
    ranks = sum(len(n.ranks) for n in report.nodes)
    unit = f" ({plural(ranks, 'rank')})" if ranks else (f" ({plural(members, 'snapshot')})" if members else "")
    line = f"{plural(len(report.nodes), 'node')}{unit} in {plural(len(report.groups), 'environment')}"
    if report.failed:
        line += f", {plural(len(report.failed), 'node')} failed"
    return line


def _indent(text: str, prefix: str = "  ") -> list[str]:
    return [prefix + line if line else "" for line in text.splitlines()]


def _names(nodes: tuple[str, ...]) -> str:
    shown = ", ".join(nodes[:_MAX_NODES_SHOWN])
    return shown + (f" and {len(nodes) - _MAX_NODES_SHOWN} more" if len(nodes) > _MAX_NODES_SHOWN else "")


def _essentials(view: dict[str, str]) -> str:
    parts = [f"torch {view.get('torch', '?')}" + (f" ({view['torch.build']})" if "torch.build" in view else "")]
    if "driver" in view:
        parts.append(f"driver {view['driver']}"
                     + (f" (up to CUDA {view['driver.cuda']})" if "driver.cuda" in view else ""))
    elif view.get("nvml") not in (None, "ok"):
        parts.append(f"NVML: {view['nvml']}")
    parts.append(view.get("gpus", "no GPU"))
    parts.append(f"Python {view.get('python', '?')}")
    return " · ".join(parts)


def _finding(f: FleetFinding) -> list[str]:
    head = f"{_MARK[f.severity]} {f.check_id} {f.name}" + (f" ({f.item})" if f.item else "")
    out = [f"{head}  [{f.severity.value}]"]
    out += textwrap.wrap(f.summary, width=_WIDTH - 4, initial_indent="    ", subsequent_indent="    ")
    for value, nodes in f.values:
        out.append(f"      {value}: {_names(nodes)}")
    for label, text in (("why:", f.why), ("fix:", f.fix)):
        out += textwrap.wrap(text, width=_WIDTH - 4, initial_indent=f"    {label} ",
                             subsequent_indent=" " * (5 + len(label)))
    if f.references:
        out.append(f"    see: {' '.join(f.references)}")
    return out


def _differences(report: FleetReport) -> list[str]:
    rows = report.differences
    if not rows:
        return []
    out = ["Differences between the environments:"]
    shown = rows[:_MAX_DIFF_ROWS]
    ids = [g.id for g in report.groups]
    table = [["fact", *(f"env {i}" for i in ids)]] + [[d.key, *(d.values[i] for i in ids)] for d in shown]
    widths = [max(len(r[c]) for r in table) for c in range(len(table[0]))]
    if len(ids) <= _TABLE_GROUPS and sum(widths) + 2 * len(widths) <= _WIDTH:
        for n, row in enumerate(table):
            out.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
            if n == 0:
                out.append("  " + "  ".join("-" * w for w in widths))
    else:  # too wide for a table: one line per fact, nothing cut
        for d in shown:
            out.append(f"  {d.key}: " + "; ".join(f"env {i}: {d.values[i]}" for i in ids))
    if len(rows) > len(shown):
        out.append(f"  ... and {len(rows) - len(shown)} more (--format json lists every one)")
    return out


def render_text(report: FleetReport, *, color: bool = False, verbose: bool = False) -> str:
    lines = [f"envcheck fleet: {headline(report)}"]
    if report.stopped:
        lines.append(f"! the gather ended early: {report.stopped}")
    for group in report.groups:
        lines += ["", f"Environment {group.id}: {_names(group.nodes)}", f"  {_essentials(group.view)}"]
        # The group's verdicts as `envcheck check` shows them, less its closing line (replaced by the tally here).
        body = text_report.render(group.report, color=color, verbose=verbose).splitlines()[:-1]
        lines += _indent("\n".join(body).strip("\n"))
        lines.append(f"  verdicts: {tally(group.report)}")
    diff = _differences(report)
    if diff:
        lines += ["", *diff]
    if report.findings:
        lines += ["", "Fleet checks:"]
        for f in report.findings:
            lines += _finding(f)
    lines += ["", f"envcheck {report.envcheck_version} fleet: {_summary(report)}"]
    return "\n".join(lines) + "\n"


def _summary(report: FleetReport) -> str:
    errors = sum(1 for f in report.findings if f.severity is Severity.ERROR)
    warnings = sum(1 for f in report.findings if f.severity is Severity.WARNING)
    fleet = ", ".join(p for p in (plural(errors, "fleet error") if errors else "",
                                  plural(warnings, "fleet warning") if warnings else "") if p) or "no fleet problems"
    state = "complete" if report.complete else "INCOMPLETE"
    return f"{headline(report)}; {fleet}; {state}"


# --- JSON -----------------------------------------------------------------------------------------------------------

def _node_dict(node: Node, report: FleetReport) -> dict[str, Any]:
    group = next((g for g in report.groups if g.id == node.group), None)
    return {
        "name": node.name,
        "status": "ok" if node.group is not None else "failed",
        "error": node.error,
        "group": node.group,
        "ranks": list(node.ranks),
        "files": list(node.files),
        "members": [{"label": m.label, "rank": m.rank, "local_rank": m.local_rank, "python": m.python,
                     "device": m.device, "error": m.error} for m in node.members],
        # The node's verdicts are its environment's: the counts, and the rules that found something.
        "summary": None if group is None else group.report.counts(),
        "problems": [] if group is None else [
            {"id": f.rule_id, "name": f.name, "status": f.status.value, "summary": f.summary}
            for f in group.report.findings if f.status.is_finding or f.status.value == "error"],
    }


def _fleet_finding_dict(f: FleetFinding) -> dict[str, Any]:
    return {"id": f.check_id, "name": f.name, "severity": f.severity.value, "item": f.item, "summary": f.summary,
            "why": f.why, "fix": f.fix, "references": list(f.references),
            "values": [{"value": value, "nodes": list(nodes)} for value, nodes in f.values]}


def as_dict(report: FleetReport) -> dict[str, Any]:
    return {
        "$schema": SCHEMA_ID,
        "schema": SCHEMA_VERSION,
        "envcheck_version": report.envcheck_version,
        "complete": report.complete,
        "stopped": report.stopped,
        "expected": report.expected,
        "summary": {"nodes": len(report.nodes), "failed": len(report.failed), "groups": len(report.groups),
                    "members": sum(len(n.members) for n in report.nodes)},
        "nodes": [_node_dict(n, report) for n in report.nodes],
        "groups": [{"id": g.id, "fingerprint": g.fingerprint, "nodes": list(g.nodes), "facts": g.view,
                    "python": g.report.python, "summary": g.report.counts(),
                    "collection_problems": list(g.report.collection_problems),
                    "findings": [json_report.finding_dict(f) for f in g.report.findings]} for g in report.groups],
        "differences": [{"key": d.key, "values": {str(k): v for k, v in d.values.items()}}
                        for d in report.differences],
        "findings": [_fleet_finding_dict(f) for f in report.findings],
    }


# Levels of the fleet JSON laid out one member per line; anything deeper is written on one line. json.dumps with
# an indent runs the pure-Python encoder, ten times slower than the C one, and a 1,000-node report repeats each
# environment's problems under every node: laid out fully it took seconds to write and ran to a million lines.
_LAID_OUT_LEVELS = 3


def _dumps(value: Any, level: int = 0) -> str:
    """`value` as JSON: the first _LAID_OUT_LEVELS levels indented two spaces per level, deeper values compact."""
    if level >= _LAID_OUT_LEVELS or not isinstance(value, (dict, list)) or not value:
        return json.dumps(value, ensure_ascii=False)
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(value, dict):
        body = ",\n".join(f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_dumps(v, level + 1)}"
                          for k, v in value.items())
        return f"{{\n{body}\n{pad}}}"
    body = ",\n".join(f"{inner}{_dumps(v, level + 1)}" for v in value)
    return f"[\n{body}\n{pad}]"


def render_json(report: FleetReport) -> str:
    return _dumps(as_dict(report)) + "\n"

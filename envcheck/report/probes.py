"""`envcheck probe`: each probe's outcome, its cases as a table, and matrices (SDPA backends) as grids.

A probe's message and stderr are a child's output (or a snapshot's text): both formats write them inert
(envcheck/support/output_text.py), so an escape sequence in them is shown, not obeyed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict

from envcheck.facts.probe_results import ProbeResult
from envcheck.report.interface import ProbeFormat, unreachable
from envcheck.support.output_text import inert, inert_json
from envcheck.support.patterns import lazy

# "cuda:0/backend=flash,dtype=float16": a cell of a device's backend x dtype grid.
_GRID_CASE = lazy(r"(?P<device>[^/]+)/backend=(?P<row>[^,]+),dtype=(?P<col>.+)")


def _cell(case: Mapping[str, object]) -> str:
    status = str(case.get("status", "?"))
    return "ok" if status == "ok" else f"{status}: {case.get('error_class') or ''}".rstrip(": ")


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]
    out.insert(1, "  ".join("-" * w for w in widths))
    return ["    " + line for line in out]


def _grids(cases: Mapping[str, Mapping[str, object]]) -> tuple[list[str], set[str]]:
    grids: dict[str, dict[str, dict[str, str]]] = {}
    used: set[str] = set()
    for name, case in cases.items():
        m = _GRID_CASE.fullmatch(name)
        if m:
            grids.setdefault(m["device"], {}).setdefault(m["row"], {})[m["col"]] = _cell(case)
            used.add(name)
    lines: list[str] = []
    for device, grid in sorted(grids.items()):
        cols = sorted({c for row in grid.values() for c in row})
        rows = [[f"{device} backend", *cols]] + [[r, *(grid[r].get(c, "-") for c in cols)] for r in sorted(grid)]
        lines += ["", *_table(rows)]
    return lines, used


def render_text(results: Mapping[str, ProbeResult], from_cache: bool) -> str:
    lines = []
    for name, r in results.items():
        took = f" in {r.wall_s:.2f} s" if r.wall_s is not None else ""
        head = f"{name}: {r.status}{took}"
        if r.error_class or r.message:
            head += f" — {r.error_class + ': ' if r.error_class else ''}{r.message or ''}"
        lines.append(head)
        for key, value in r.details.items():
            if key != "traceback" and not isinstance(value, dict) and value not in (None, [], ""):
                shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
                lines.append(f"    {key}: {shown[:200]}")
        grid_lines, used = _grids(r.cases)
        rest = {k: v for k, v in r.cases.items() if k not in used}
        if rest:
            rows = [["case", "status", "detail"]]
            for case_name, case in rest.items():
                detail = str(case.get("message") or case.get("out_dtype") or "")
                rows.append([case_name, _cell(case), detail[:90]])
            lines += _table(rows)
        lines += grid_lines
        if r.stderr_tail and r.status in ("crashed", "timeout"):
            lines += ["    stderr (last lines):", *("      " + t for t in r.stderr_tail.splitlines()[-8:])]
        lines.append("")
    lines.append("(cached results: the environment has not changed; --no-cache runs them again)" if from_cache
                 else "")
    # The whole text at once: it writes no escape sequence of its own, so every one found came from a result.
    return inert("\n".join(lines).rstrip()) + "\n"


def render_json(results: Mapping[str, ProbeResult]) -> str:
    return inert_json(json.dumps({name: asdict(r) for name, r in results.items()}, indent=2, ensure_ascii=False)) + "\n"


def render(results: Mapping[str, ProbeResult], fmt: ProbeFormat | str, *, from_cache: bool) -> str:
    """The results in format `fmt` (a ProbeFormat, or its value); `from_cache` says where they came from."""
    fmt = ProbeFormat(fmt)
    if fmt is ProbeFormat.TEXT:
        return render_text(results, from_cache)
    if fmt is ProbeFormat.JSON:
        return render_json(results)
    unreachable(fmt)

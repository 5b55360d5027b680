"""What every reporter shares: the order findings are shown in and the one-line tally."""

from __future__ import annotations

from envcheck.model import Finding, Report, Severity, Status

# Problems first, worst first; within a status, by rule id (the engine's order).
_STATUS_ORDER = {Status.ERROR: 0, Status.FAIL: 1, Status.WARN: 2, Status.INFO: 3, Status.SKIPPED: 4,
                 Status.PASS: 5, Status.NA: 6}


def problems(report: Report) -> list[Finding]:
    """Findings a person must read: failures, warnings, infos, and rules that could not be evaluated."""
    shown = [f for f in report.findings if f.status.is_finding or f.status is Status.ERROR]
    return sorted(shown, key=lambda f: (_STATUS_ORDER[f.status], f.rule_id))


def tally(report: Report) -> str:
    """"2 problems (1 error, 1 warning); 10 passed, 3 n/a, 1 skipped" or "no problems; 10 passed, ..."."""
    parts = []
    by_severity = {s: 0 for s in Severity}
    for f in report.findings:
        if f.status.is_finding:
            by_severity[f.severity] += 1
    n_problems = sum(by_severity.values())
    errors = report.count(Status.ERROR)
    if n_problems:
        detail = ", ".join(f"{n} {s.value}{'s' if n != 1 and s is not Severity.INFO else ''}"
                           for s, n in by_severity.items() if n)
        parts.append(f"{n_problems} problem{'s' if n_problems != 1 else ''} ({detail})")
    else:
        parts.append("no problems")
    rest = [f"{report.count(Status.PASS)} passed", f"{report.count(Status.NA)} n/a"]
    if report.count(Status.SKIPPED):
        rest.append(f"{report.count(Status.SKIPPED)} skipped")
    if errors:
        rest.append(f"{errors} rule error{'s' if errors != 1 else ''}")
    return f"{parts[0]}; " + ", ".join(rest)

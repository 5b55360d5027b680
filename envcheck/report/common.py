"""What every reporter shares: the order findings are shown in, the one-line tally, and long commands wrapped."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from envcheck.rules.model import Finding, Report, Severity, Status

# Problems first, worst first; within a status, by rule id (the engine's order).
_STATUS_ORDER = {Status.ERROR: 0, Status.FAIL: 1, Status.WARN: 2, Status.INFO: 3, Status.SKIPPED: 4,
                 Status.PASS: 5, Status.NA: 6}


def problems(report: Report) -> list[Finding]:
    """Findings a person must read: failures, warnings, infos, and rules that could not be evaluated; first those
    the error output that came with the facts shows (what `envcheck explain` was asked about)."""
    shown = [f for f in report.findings if f.status.is_finding or f.status is Status.ERROR]
    return sorted(shown, key=lambda f: (not f.observed, _STATUS_ORDER[f.status], f.rule_id))


def plural(n: int, word: str) -> str:
    """"1 error", "2 errors": `n` and `word`, with an s unless `n` is 1."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def tally(report: Report) -> str:
    """"1 error, 2 warnings, 1 note; 10 passed, 3 n/a, 1 skipped" or "no problems; 10 passed, 3 n/a", then what the
    verdicts did not see: "no problems; torch is not installed here, so 60 rules about torch were
    not checked; 40 passed, 107 n/a" (envcheck/rules/unseen.py)."""
    by_severity = {s: 0 for s in Severity}
    for f in report.findings:
        if f.status.is_finding:
            by_severity[f.severity] += 1
    head = [plural(n, word) for n, word in ((by_severity[Severity.ERROR], "error"),
                                             (by_severity[Severity.WARNING], "warning"),
                                             (by_severity[Severity.INFO], "note")) if n]
    if not by_severity[Severity.ERROR] and not by_severity[Severity.WARNING]:
        head.insert(0, "no problems")
    rest = [f"{report.count(Status.PASS)} passed", f"{report.count(Status.NA)} n/a"]
    if report.count(Status.SKIPPED):
        rest.append(f"{report.count(Status.SKIPPED)} skipped")
    if report.count(Status.ERROR):
        rest.append(plural(report.count(Status.ERROR), "rule error"))
    return "; ".join([", ".join(head), *report.unseen, ", ".join(rest)])


def command_lines(argv: Sequence[str], width: int) -> list[str]:
    """The command shell-quoted, split at argument boundaries into lines of at most `width` characters (an argument
    longer than that gets a line of its own), each line but the last ending in ` \\`: a POSIX shell joins them back
    into the one command, so a long `pip install` of many requirements still pastes as printed.
    """
    lines: list[str] = []
    for word in map(shlex.quote, argv):
        if lines and len(lines[-1]) + 1 + len(word) + len(" \\") <= width:
            lines[-1] += " " + word
        else:
            lines.append(word if not lines else "    " + word)
    return [line + " \\" for line in lines[:-1]] + lines[-1:]

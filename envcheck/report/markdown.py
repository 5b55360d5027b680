"""Markdown for bug reports and CI step summaries: a verdict line, a table of problems, then each one in full."""

from __future__ import annotations

from envcheck.model import Report, Status
from envcheck.report.common import problems, tally
from envcheck.templates import shell


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(report: Report) -> str:
    shown = problems(report)
    icon = ":x:" if any(f.status is Status.FAIL for f in shown) else (":warning:" if shown else ":white_check_mark:")
    out = [f"## {icon} envcheck {report.envcheck_version}", ""]
    if report.target is not None:
        out += [f"Checked `{report.target.python}`: {_cell(report.target.reason)}", ""]
    out += [f"**{_cell(tally(report))}** — `{report.python}`", ""]
    if shown:
        out += ["| | Rule | Severity | Problem |", "|---|---|---|---|"]
        for f in shown:
            out.append(f"| {f.status.value} | `{f.rule_id}` {f.name} | {f.severity.value} | {_cell(f.summary)} |")
        out.append("")
        for f in shown:
            out += [f"### `{f.rule_id}` {f.name}", ""]
            if f.status is Status.ERROR:
                out += [f"This rule could not be evaluated: {f.detail}", ""]
                continue
            out += [f.summary, "", f"**Why.** {f.why}", ""]
            if f.evidence:
                out += [f"**Evidence.** {f.evidence}", ""]
            out += [f"**Fix.** {f.fix}", ""]
            if f.commands:
                out += ["```sh", *(shell(argv) for argv in f.commands), "```", ""]
            if f.references:
                out += ["References: " + ", ".join(f"<{r}>" for r in f.references), ""]
    skipped = [f for f in report.findings if f.status is Status.SKIPPED]
    if skipped:
        out += ["<details><summary>Skipped rules</summary>", ""]
        out += [f"- `{f.rule_id}` {f.name}: needs {'; '.join(f.missing)}" for f in skipped]
        out += ["", "</details>", ""]
    if report.collection_problems:
        out += ["Collection problems:", "", *(f"- {p}" for p in report.collection_problems), ""]
    return "\n".join(out)

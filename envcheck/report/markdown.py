"""Markdown for bug reports and CI step summaries: a verdict line, a table of problems, then each one in full.

A rule that fired for several items is one row and one section: the items listed, the why and fix once, and
one merged command.
"""

from __future__ import annotations

from envcheck.model import Report, Status
from envcheck.report.common import tally
from envcheck.report.groups import Problem, grouped

_WIDTH = 100  # a merged command longer than this is continued on the next line (` \`), as in the text report


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(p: Problem) -> str:
    if p.status is Status.ERROR:
        summary = "could not be evaluated: " + "; ".join(p.details)
    elif len(p.findings) == 1:
        summary = p.first.summary
    else:
        summary = f"{p.first.summary} (and {len(p.findings) - 1} more)"
    return f"| {p.status.value} | `{p.rule_id}` {p.name} | {p.severity.value} | {_cell(summary)} |"


def _section(p: Problem) -> list[str]:
    out = [f"### `{p.rule_id}` {p.name}", ""]
    if p.status is Status.ERROR:
        return [*out, *(f"This rule could not be evaluated: {detail}" for detail in p.details), ""]
    if len(p.findings) == 1:
        out += [p.first.summary, ""]
    else:
        out += [*(f"- {summary}" for summary in p.summaries), ""]
    for label, texts in (("Why", p.whys), ("Evidence", p.evidence), ("Fix", p.fixes)):
        out += [line for text in texts for line in (f"**{label}.** {text}", "")]
    if p.commands:
        out += ["```sh", *(line for argv in p.commands for line in p.command_lines(argv, _WIDTH)), "```", ""]
    if p.references:
        out += ["References: " + ", ".join(f"<{r}>" for r in p.references), ""]
    return out


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    """Markdown: colour does not apply; the skipped rules are folded in a <details> block either way."""
    shown = grouped(report)
    icon = ":x:" if any(p.status is Status.FAIL for p in shown) else (":warning:" if shown else ":white_check_mark:")
    out = [f"## {icon} envcheck {report.envcheck_version}", ""]
    if report.target is not None:
        out += [f"Checked `{report.target.python}`: {_cell(report.target.reason)}", ""]
    if report.project:
        out += [f"Project {_cell(report.project)}", ""]
    out += [f"**{_cell(tally(report))}** — `{report.python}`", ""]
    if shown:
        out += ["| | Rule | Severity | Problem |", "|---|---|---|---|", *(_row(p) for p in shown), ""]
        for p in shown:
            out += _section(p)
    if report.installer and any(p.commands for p in shown):
        out += [f"Commands use {_cell(report.installer)}.", ""]
    skipped = [f for f in report.findings if f.status is Status.SKIPPED]
    if skipped:
        out += ["<details><summary>Skipped rules</summary>", ""]
        out += [f"- `{f.rule_id}` {f.name}: needs {'; '.join(f.missing)}" for f in skipped]
        out += ["", "</details>", ""]
    if report.collection_problems:
        out += ["Collection problems:", "", *(f"- {p}" for p in report.collection_problems), ""]
    return "\n".join(out)

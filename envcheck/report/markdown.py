"""Markdown for bug reports and CI step summaries: a verdict line, a table of problems, then each one in full.

A rule that fired for several items is one row and one section: the items listed, the why and fix once, and
one merged command.

Every text but a rule's id and name (which rules.py validates) is written through envcheck/report/quote.py: a pasted
report's GPU name may hold a link, HTML or a mention, and the issue-triage workflow posts this markdown as a comment.
"""

from __future__ import annotations

from envcheck.model import Report, Status
from envcheck.report.common import tally
from envcheck.report.groups import Problem, grouped
from envcheck.report.quote import md_code, md_fence, md_text, md_url, scrubbed

_WIDTH = 100  # a merged command longer than this is continued on the next line (` \`), as in the text report


def _row(p: Problem) -> str:
    if p.status is Status.ERROR:
        summary = "could not be evaluated: " + "; ".join(p.details)
    elif len(p.findings) == 1:
        summary = p.first.summary
    else:
        summary = f"{p.first.summary} (and {len(p.findings) - 1} more)"
    return f"| {p.status.value} | `{p.rule_id}` {p.name} | {p.severity.value} | {md_text(summary, cell=True)} |"


def _section(p: Problem) -> list[str]:
    out = [f"### `{p.rule_id}` {p.name}", ""]
    if p.status is Status.ERROR:
        return [*out, *(f"This rule could not be evaluated: {md_text(detail)}" for detail in p.details), ""]
    if len(p.findings) == 1:
        out += [md_text(p.first.summary), ""]
    else:
        out += [*(f"- {md_text(summary)}" for summary in p.summaries), ""]
    for label, texts in (("Why", p.whys), ("Evidence", p.evidence), ("Fix", p.fixes)):
        out += [line for text in texts for line in (f"**{label}.** {md_text(text)}", "")]
    if p.commands:
        out += [*md_fence([line for argv in p.commands for line in p.command_lines(argv, _WIDTH)], "sh"), ""]
    if p.references:
        out += ["References: " + ", ".join(map(md_url, p.references)), ""]
    return out


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    """Markdown: colour does not apply; the skipped rules are folded in a <details> block either way."""
    report = scrubbed(report)
    shown = grouped(report)
    icon = ":x:" if any(p.status is Status.FAIL for p in shown) else (":warning:" if shown else ":white_check_mark:")
    out = [f"## {icon} envcheck {report.envcheck_version}", ""]
    if report.target is not None:
        out += [f"Checked {md_code(report.target.python)}: {md_text(report.target.reason)}", ""]
    if report.project:
        out += [f"Project {md_text(report.project)}", ""]
    if report.explained:
        out += [f"Explained: {md_text(report.explained)}", ""]
    out += [f"**{tally(report)}** — {md_code(report.python)}", ""]
    if shown:
        out += ["| | Rule | Severity | Problem |", "|---|---|---|---|", *(_row(p) for p in shown), ""]
        for p in shown:
            out += _section(p)
    if report.installer and any(p.commands for p in shown):
        out += [f"Commands use {md_text(report.installer)}.", ""]
    skipped = [f for f in report.findings if f.status is Status.SKIPPED]
    if skipped:
        out += ["<details><summary>Skipped rules</summary>", ""]
        out += [f"- `{f.rule_id}` {f.name}: needs {md_text('; '.join(f.missing))}" for f in skipped]
        out += ["", "</details>", ""]
    if report.collection_problems:
        out += ["Collection problems:", "", *(f"- {md_text(p)}" for p in report.collection_problems), ""]
    return "\n".join(out)

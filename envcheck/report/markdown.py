"""Markdown for bug reports and CI step summaries: a verdict line, a table of problems, then each one in full.

A rule that fired for several items is one row and one section: the items listed, the why and fix once, and
one merged command.

Every text but a rule's id and name (which rules.py validates) is written through envcheck/report/quote.py: a pasted
report's GPU name may hold a link, HTML or a mention, and the issue-triage workflow posts this markdown as a comment.
"""

from __future__ import annotations

from collections.abc import Sequence

from envcheck.report.common import plural, tally
from envcheck.report.groups import Problem, grouped
from envcheck.report.quote import md_code, md_fence, md_text, md_url, scrubbed
from envcheck.rules.model import Report, Status

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
        out += [*(f"- {md_text(summary)}" for summary in p.listed()), ""]
    for label, texts in (("Why", p.whys), ("Evidence", p.evidence), ("Fix", p.fixes)):
        out += [line for text in texts for line in (f"**{label}.** {md_text(text)}", "")]
    if p.commands:
        out += [*md_fence([line for argv in p.commands for line in p.command_lines(argv, _WIDTH)], "sh"), ""]
    if p.references:
        out += ["References: " + ", ".join(map(md_url, p.references)), ""]
    return out


def render(report: Report, *, color: bool = False, verbose: bool = False, max_bytes: int | None = None) -> str:
    """Markdown: colour does not apply; the skipped rules are folded in a <details> block either way.

    With `max_bytes`, the document is at most that many bytes of UTF-8: cut after a whole problem (its row and its
    section together), never inside one, with a line saying how many problems, and which, were left out. A cut
    anywhere else could end inside a code span and free the `@mention` or link it held inert (the issue-triage
    workflow posts this markdown as a comment, whose size GitHub bounds)."""
    report = scrubbed(report)
    shown = grouped(report)
    icon = ":x:" if any(p.status is Status.FAIL for p in shown) else (":warning:" if shown else ":white_check_mark:")
    head = [f"## {icon} envcheck {report.envcheck_version}", ""]
    if report.target is not None:
        head += [f"Checked {md_code(report.target.python)}: {md_text(report.target.reason)}", ""]
    if report.project:
        head += [f"Project {md_text(report.project)}", ""]
    if report.explained:
        head += [f"Explained: {md_text(report.explained)}", ""]
    head += [f"**{tally(report)}** — {md_code(report.python)}", ""]
    rows = [_row(p) for p in shown]
    sections = [_section(p) for p in shown]
    tails = []  # what follows the problems, each part kept or left out whole
    skipped = [f for f in report.findings if f.status is Status.SKIPPED]
    if skipped:
        tails.append(["<details><summary>Skipped rules</summary>", "",
                      *(f"- `{f.rule_id}` {f.name}: needs {md_text('; '.join(f.missing))}" for f in skipped),
                      "", "</details>", ""])
    if report.collection_problems:
        tails.append(["Collection problems:", "", *(f"- {md_text(p)}" for p in report.collection_problems), ""])
    whole = _document(head, rows, sections, shown, report.installer, tails)
    if max_bytes is None or len(whole.encode("utf-8")) <= max_bytes:
        return whole
    return _cut(head, rows, sections, shown, report.installer, tails, max_bytes)


_TABLE_HEAD = ["| | Rule | Severity | Problem |", "|---|---|---|---|"]


def _document(head: list[str], rows: list[str], sections: list[list[str]], shown: list[Problem], installer: str,
              tails: list[list[str]], note: Sequence[str] = ()) -> str:
    out = list(head)
    if rows:
        out += [*_TABLE_HEAD, *rows, ""]
        for section in sections:
            out += section
    if installer and any(p.commands for p in shown):
        out += [f"Commands use {md_text(installer)}.", ""]
    for tail in tails:
        out += tail
    out += list(note)  # last: where a reader of a cut report, and of a comment, looks for what is missing
    return "\n".join(out)


def _cut(head: list[str], rows: list[str], sections: list[list[str]], shown: list[Problem], installer: str,
         tails: list[list[str]], max_bytes: int) -> str:
    """The report's first problems, as many as fit in `max_bytes` with the note saying what was left out, then the
    parts after them that still fit."""
    def size(lines: list[str]) -> int:
        return sum(len(line.encode("utf-8")) + 1 for line in lines)

    def note(kept: int, tails_kept: int) -> list[str]:
        left = [p.rule_id for p in shown[kept:]]
        listed = ", ".join(f"`{rule_id}`" for rule_id in left[:_LISTED])
        more = f" and {len(left) - _LISTED} more" if len(left) > _LISTED else ""
        what = [f"{plural(len(left), 'problem')} ({listed}{more})"] if left else []
        what += ["the skipped rules and collection problems"] if tails_kept < len(tails) else []
        return [f"**Cut to {max_bytes:,} bytes:** {' and '.join(what)} left out; `envcheck check` run here prints "
                "the whole report.", ""]

    budget = max_bytes - size(note(0, 0)) - size(_TABLE_HEAD) - 1 - size([f"Commands use {md_text(installer)}."])
    used = size(head)
    kept = 0
    while kept < len(shown) and used + size([rows[kept]]) + size(sections[kept]) <= budget:
        used += size([rows[kept]]) + size(sections[kept])
        kept += 1
    tails_kept = 0
    while tails_kept < len(tails) and used + size(tails[tails_kept]) <= budget:
        used += size(tails[tails_kept])
        tails_kept += 1
    text = _document(head, rows[:kept], sections[:kept], shown[:kept], installer, tails[:tails_kept],
                     note(kept, tails_kept))
    if len(text.encode("utf-8")) > max_bytes:  # the head alone is too long (a path of thousands of characters)
        text = "\n".join([head[0], "", *note(0, 0)])
    return text


_LISTED = 20  # rule ids named in the note about what was cut

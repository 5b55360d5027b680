"""The default report for a terminal: one quiet line when all is well, each problem with why/fix/commands if not.

A rule that fired for several items is one block: `[error ×12]`, the items as a list (the first ten without -v),
the why and fix once, and one merged command, continued over lines with a trailing backslash when it is long.

The report's texts are scrubbed of control characters first (envcheck/report/quote.py): the only escape sequences
written are the colours below.
"""

from __future__ import annotations

import textwrap

from envcheck.report.common import tally
from envcheck.report.groups import Problem, grouped
from envcheck.report.quote import scrubbed
from envcheck.rules.model import Report, Status

_WIDTH = 100
_MAX_ITEMS = 10  # items of one rule listed without -v; the merged command still covers every one
_MARK = {Status.FAIL: "✗", Status.WARN: "!", Status.INFO: "i", Status.ERROR: "?", Status.SKIPPED: "-",
         Status.PASS: "✓", Status.NA: "·"}
_LABEL = {Status.FAIL: "error", Status.WARN: "warning", Status.INFO: "info", Status.ERROR: "rule error",
          Status.SKIPPED: "skipped", Status.PASS: "pass", Status.NA: "n/a"}
# ANSI SGR codes: red, yellow, blue, magenta; bold and dim for structure.
_COLOR = {Status.FAIL: "31", Status.WARN: "33", Status.INFO: "34", Status.ERROR: "35", Status.SKIPPED: "2",
          Status.PASS: "32", Status.NA: "2"}


class _Style:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text


def _wrap(label: str, text: str, style: _Style) -> list[str]:
    """`    why: text...` with continuation lines aligned under the text, not under the label."""
    indent = " " * (4 + len(label) + 1)
    lines = textwrap.wrap(text, width=_WIDTH - len(indent), break_long_words=False, break_on_hyphens=False) or [""]
    return [f"    {style('1', label)} {lines[0]}", *(f"{indent}{line}" for line in lines[1:])]


def _item(text: str, prefix: str) -> list[str]:
    """A summary line, wrapped under its own start (a long summary is read, not scrolled)."""
    return textwrap.wrap(text, width=_WIDTH, initial_indent=prefix, subsequent_indent=" " * len(prefix),
                         break_long_words=False, break_on_hyphens=False) or [prefix.rstrip()]


def _problem(p: Problem, style: _Style, verbose: bool) -> list[str]:
    count = f" ×{len(p.findings)}" if len(p.findings) > 1 else ""
    head = f"{style(_COLOR[p.status], _MARK[p.status] + ' ' + p.rule_id)} {style('1', p.name)}"
    out = [f"{head}  [{_LABEL[p.status]}{count}]"]
    if p.status is Status.ERROR:
        out += [f"    this rule could not be evaluated: {detail}" for detail in p.details]
        return out
    if len(p.findings) == 1:
        out += _item(p.first.summary, "    ")
    else:
        shown = p.summaries if verbose else p.summaries[:_MAX_ITEMS]
        for summary in shown:
            out += _item(summary, "    - ")
        if len(shown) < len(p.summaries):
            out.append(f"    - … and {len(p.summaries) - len(shown)} more (-v lists every one)")
    for label, texts in (("why:", p.whys), ("evidence:", p.evidence), ("fix:", p.fixes)):
        for text in texts:
            out += _wrap(label, text, style)
    for argv in p.commands:
        first, *rest = p.command_lines(argv, _WIDTH - len("      $ "))
        out += [f"      {style('1', '$')} {first}", *(f"        {line}" for line in rest)]
    if p.references:
        one_line = "    see: " + " ".join(p.references)
        # Too long for one line: one address per line, each whole (a wrapped URL cannot be clicked).
        out += [style("2", line) for line in ([one_line] if len(one_line) <= _WIDTH else
                                              [f"    see: {p.references[0]}",
                                               *(f"         {r}" for r in p.references[1:])])]
    return out


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    report = scrubbed(report)
    style = _Style(color)
    # The first line names the checked interpreter and how it was chosen: checking the wrong one is the mistake
    # that no verdict below can reveal.
    lines: list[str] = [] if report.target is None else [report.target.line()]
    if report.project:
        lines.append(f"project {report.project}")
    if report.explained:
        lines.append(f"explained {report.explained}")
    for gap in report.collection_problems:
        lines.append(style("33", f"! could not collect everything: {gap}"))
    problems = grouped(report)
    for problem in problems:
        lines += _problem(problem, style, verbose)
        lines.append("")
    if verbose:
        for f in report.findings:
            if f.status in (Status.SKIPPED, Status.PASS, Status.NA):
                note = f"  (needs: {'; '.join(f.missing)})" if f.missing else ""
                lines.append(f"{style(_COLOR[f.status], _MARK[f.status])} {f.rule_id} {f.name}"
                             f"  [{_LABEL[f.status]}]{note}")
        lines.append("")
    if report.installer and any(p.commands for p in problems):
        lines.append(style("2", f"commands use {report.installer}"))
    lines += [style("2", note) for note in report.notes]
    # A snapshot read from a file says which file; an interpreter checked live is named by its path alone (the
    # header already says how it was chosen).
    where = f"{report.python} ({report.origin})" if report.origin.startswith("file:") else report.python
    hint = " (-v says why)" if not verbose and report.count(Status.SKIPPED) else ""
    lines.append(f"envcheck {report.envcheck_version}: {tally(report)}{hint} — {where}")
    return "\n".join(lines) + "\n"

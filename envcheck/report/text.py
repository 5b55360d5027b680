"""The default report for a terminal: one quiet line when all is well, each problem with why/fix/commands if not."""

from __future__ import annotations

import textwrap

from envcheck.model import Finding, Report, Status
from envcheck.report.common import problems, tally
from envcheck.templates import shell

_WIDTH = 100
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
    lines = textwrap.wrap(text, width=_WIDTH - len(indent)) or [""]
    return [f"    {style('1', label)} {lines[0]}", *(f"{indent}{line}" for line in lines[1:])]


def _problem(f: Finding, style: _Style) -> list[str]:
    head = f"{style(_COLOR[f.status], _MARK[f.status] + ' ' + f.rule_id)} {style('1', f.name)}"
    out = [f"{head}  [{_LABEL[f.status]}]"]
    if f.status is Status.ERROR:
        out.append(f"    this rule could not be evaluated: {f.detail}")
        return out
    out.append(f"    {f.summary}")
    if f.why:
        out += _wrap("why:", f.why, style)
    if f.evidence:
        out += _wrap("evidence:", f.evidence, style)
    if f.fix:
        out += _wrap("fix:", f.fix, style)
    for argv in f.commands:
        out.append(f"      {style('1', '$')} {shell(argv)}")
    if f.references:
        out.append(f"    {style('2', 'see: ' + ' '.join(f.references))}")
    return out


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    style = _Style(color)
    # The first line names the checked interpreter and how it was chosen: checking the wrong one is the mistake
    # that no verdict below can reveal.
    lines: list[str] = [] if report.target is None else [report.target.line()]
    for problem in report.collection_problems:
        lines.append(style("33", f"! could not collect everything: {problem}"))
    shown = problems(report)
    for f in shown:
        lines += _problem(f, style)
        lines.append("")
    if verbose:
        for f in report.findings:
            if f.status in (Status.SKIPPED, Status.PASS, Status.NA):
                note = f"  (needs: {'; '.join(f.missing)})" if f.missing else ""
                lines.append(f"{style(_COLOR[f.status], _MARK[f.status])} {f.rule_id} {f.name}"
                             f"  [{_LABEL[f.status]}]{note}")
        lines.append("")
    where = report.python if report.origin == "local" else f"{report.python} ({report.origin})"
    hint = " (-v says why)" if not verbose and report.count(Status.SKIPPED) else ""
    lines.append(f"envcheck {report.envcheck_version}: {tally(report)}{hint} — {where}")
    return "\n".join(lines) + "\n"

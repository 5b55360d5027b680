"""GitHub Actions workflow commands: one annotation per rule that found something (`::error title=EC0101 ...::msg`).

A rule that fired for several items is one annotation listing them, with the fix once and one merged command.
GitHub shows at most 10 annotations of each level per step and 50 per job, and drops the rest silently
(actions/toolkit, docs/problem-matchers.md, "Limitations"): one annotation per item would let nine missing
requirements of one distribution hide every other rule's annotation.

Annotations appear on the workflow run and, when a file is named, on that file in pull requests. Values are escaped
as the runner unescapes them (actions/toolkit, packages/core/src/command.ts): in the message `%`, CR and LF; in
properties also `:` and `,`, which would otherwise end the property. A message therefore stays on one line, and
nothing in a finding can start a workflow command of its own.

The report's texts are scrubbed of control characters first (envcheck/report/quote.py): the log viewer obeys ANSI
escapes. The one plain line is not a command, but it is escaped as data too (a newline in a path would start a line
of its own), and the runner looks for a `##[command]` anywhere in such a line (actions/runner,
ActionCommand.TryParse, tried when a line is not a `::` command): `plain_line` breaks that prefix. Error lines on
standard error are one line each, for the same reason (envcheck/cli/output.py).
"""

from __future__ import annotations

from envcheck.report.common import tally
from envcheck.report.groups import Problem, grouped
from envcheck.report.quote import scrubbed
from envcheck.rules.model import Report, Status
from envcheck.support.output_text import shell

LEVEL = {Status.FAIL: "error", Status.WARN: "warning", Status.INFO: "notice", Status.ERROR: "warning"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, *, title: str | None = None, file: str | None = None,
               line: int | None = None) -> str:
    """One workflow command line: `::LEVEL file=F,line=N,title=T::MESSAGE`, properties left out when None."""
    props = [f"{key}={escape_property(str(value))}" for key, value in (("file", file), ("line", line),
                                                                        ("title", title)) if value is not None]
    return f"::{level}{' ' + ','.join(props) if props else ''}::{escape_data(message)}"


def plain_line(text: str) -> str:
    """`text` for a log line that is not a workflow command: escaped as data (a newline in a machine's name or an
    interpreter's path would otherwise start a line of its own, which could be a `::add-mask::`), and an old-style
    `##[command]` in it written `##%5B`."""
    return escape_data(text).replace("##[", "##%5B")


def problem_message(p: Problem) -> str:
    """An annotation's message for one problem: its summaries, fixes, commands and references."""
    if p.status is Status.ERROR:
        return "this rule could not be evaluated: " + "; ".join(p.details)
    lines = [p.first.summary] if len(p.findings) == 1 else [f"- {summary}" for summary in p.listed()]
    lines += [f"fix: {text}" for text in p.fixes]
    lines += [f"$ {shell(argv)}" for argv in p.commands]
    if p.references:
        lines.append("see: " + " ".join(p.references))
    return "\n".join(lines)


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    """A notice naming the checked interpreter, the annotations, then one plain line; colour and verbosity do not
    apply."""
    report = scrubbed(report)
    # The notice comes first: the run's summary says which interpreter was checked, and why, even when all is well.
    lines = [] if report.target is None else [annotation("notice", report.target.line(), title="envcheck")]
    if report.explained:
        lines.append(annotation("notice", f"explained {report.explained}", title="envcheck"))
    for p in grouped(report):
        count = f" ×{len(p.findings)}" if len(p.findings) > 1 else ""  # as the text report counts them
        lines.append(annotation(LEVEL[p.status], problem_message(p), title=f"{p.rule_id} {p.name}{count}"))
    lines += [annotation("warning", p, title="envcheck could not collect everything")
              for p in report.collection_problems]
    # A plain line (no command): the run's log says what was checked even when nothing was annotated.
    lines.append(plain_line(f"envcheck {report.envcheck_version}: {tally(report)} — {report.python}"))
    return "\n".join(lines) + "\n"

"""GitHub Actions workflow commands: one annotation per problem (`::error title=EC0101 ...::message`).

Annotations appear on the workflow run and, when a file is named, on that file in pull requests. Values are escaped
as the runner unescapes them (actions/toolkit, packages/core/src/command.ts): in the message `%`, CR and LF; in
properties also `:` and `,`, which would otherwise end the property. A message therefore stays on one line, and
nothing in a finding can start a workflow command of its own.
"""

from __future__ import annotations

from envcheck.model import Finding, Report, Status
from envcheck.report.common import problems, tally
from envcheck.templates import shell

_LEVEL = {Status.FAIL: "error", Status.WARN: "warning", Status.INFO: "notice", Status.ERROR: "warning"}


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


def _message(f: Finding) -> str:
    if f.status is Status.ERROR:
        return f"this rule could not be evaluated: {f.detail}"
    lines = [f.summary]
    if f.fix:
        lines.append(f"fix: {f.fix}")
    lines += [f"$ {shell(argv)}" for argv in f.commands]
    if f.references:
        lines.append("see: " + " ".join(f.references))
    return "\n".join(lines)


def render(report: Report) -> str:
    # A notice first: the run's summary says which interpreter was checked, and why, even when all is well.
    lines = [] if report.target is None else [annotation("notice", report.target.line(), title="envcheck")]
    lines += [annotation(_LEVEL[f.status], _message(f), title=f"{f.rule_id} {f.name}") for f in problems(report)]
    lines += [annotation("warning", p, title="envcheck could not collect everything")
              for p in report.collection_problems]
    # A plain line (no command): the run's log says what was checked even when nothing was annotated.
    lines.append(f"envcheck {report.envcheck_version}: {tally(report)} — {report.python}")
    return "\n".join(lines) + "\n"

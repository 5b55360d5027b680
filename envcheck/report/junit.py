"""JUnit XML for CI test dashboards: one testcase per rule.

A rule that fired (fail or warn) is a `<failure>` whose type is its severity; a rule that could not be evaluated is
an `<error>`; a rule that was skipped (a fact it needs is unknown) or does not apply (n/a) is `<skipped>` with the
reason; a pass is a bare testcase, and an info finding a pass with the note in `<system-out>`. A `foreach` rule with
several items is still one testcase: its failure lists every item, then the why and fix once and the merged
command, as the text report does.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import groupby

from envcheck.report.common import tally
from envcheck.report.groups import LISTED, Problem
from envcheck.report.quote import scrubbed
from envcheck.rules.model import Finding, Report, Status
from envcheck.support.output_text import shell
from envcheck.support.patterns import lazy

# Characters XML 1.0 cannot hold at all, escaped or not (a probe's stderr may carry ANSI escapes or NULs). The report
# is scrubbed of control characters first (envcheck/report/quote.py); this catches what remains, such as a lone
# surrogate left by a file name that is not UTF-8.
_NOT_XML = lazy("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _details(p: Problem) -> str:
    """The failure's body, as the text report shows it: the items, the why and fix once, the merged commands."""
    lines = [p.first.summary] if len(p.findings) == 1 else [f"- {summary}" for summary in p.listed()]
    for label, texts in (("why", p.whys), ("evidence", p.evidence), ("fix", p.fixes)):
        lines += [f"{label}: {text}" for text in texts]
    lines += [f"$ {shell(argv)}" for argv in p.commands]
    if p.references:
        lines.append("see: " + " ".join(p.references))
    return "\n".join(lines)


def _message(findings: Sequence[Finding]) -> str:
    if len(findings) == 1:
        return findings[0].summary
    more = len(findings) - LISTED  # the message attribute names the first items, as the body lists them
    return f"{len(findings)} problems: " + "; ".join(f.summary for f in findings[:LISTED]) + \
        (f"; and {more} more" if more > 0 else "")


def _testcase(suite: ET.Element, findings: Sequence[Finding], python: str) -> str:
    """Add one rule's testcase; return its outcome: "failure", "error", "skipped" or "pass"."""
    first = findings[0]
    case = ET.SubElement(suite, "testcase", classname=_x(f"envcheck.{first.area or 'rules'}"),
                         name=_x(f"{first.rule_id} {first.name}"), time="0")
    statuses = {f.status for f in findings}
    if Status.ERROR in statuses:
        detail = "; ".join(f.detail for f in findings if f.status is Status.ERROR)
        ET.SubElement(case, "error", type="rule-error",
                      message=_x(f"this rule could not be evaluated: {detail}")).text = _x(detail)
        return "error"
    fired = [f for f in findings if f.status in (Status.FAIL, Status.WARN)]
    if fired:
        failure = ET.SubElement(case, "failure", type=fired[0].severity.value, message=_x(_message(fired)))
        failure.text = _x(_details(Problem.of(fired, python)))
        return "failure"
    if statuses <= {Status.SKIPPED, Status.NA}:
        if Status.SKIPPED in statuses:
            needs = sorted({m for f in findings for m in f.missing})
            message = "skipped: needs " + "; ".join(needs) if needs else "skipped"
        else:
            message = "n/a: the rule does not apply to this environment"
        ET.SubElement(case, "skipped", message=_x(message))
        return "skipped"
    notes = [f for f in findings if f.status is Status.INFO]
    if notes:
        ET.SubElement(case, "system-out").text = _x(_details(Problem.of(notes, python)))
    return "pass"


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    """JUnit XML; colour and verbosity do not apply (every rule is a testcase already)."""
    report = scrubbed(report)
    suites = ET.Element("testsuites", name="envcheck")
    suite = ET.SubElement(suites, "testsuite", name="envcheck")
    properties = ET.SubElement(suite, "properties")
    for name, value in (("python", report.python), ("origin", report.origin),
                        ("envcheck_version", report.envcheck_version)):
        ET.SubElement(properties, "property", name=name, value=_x(value))
    if report.project:
        ET.SubElement(properties, "property", name="project", value=_x(report.project))
    if report.explained:
        ET.SubElement(properties, "property", name="explained", value=_x(report.explained))
    if report.target is not None:
        ET.SubElement(properties, "property", name="target", value=_x(report.target.line()))
        ET.SubElement(properties, "property", name="target_source", value=report.target.source)
    outcomes = [_testcase(suite, list(group), report.python)
                for _, group in groupby(report.findings, key=lambda f: f.rule_id)]
    counts = {k: str(outcomes.count(k)) for k in ("failure", "error", "skipped")}
    for element in (suites, suite):
        element.set("tests", str(len(outcomes)))
        element.set("failures", counts["failure"])
        element.set("errors", counts["error"])
        element.set("skipped", counts["skipped"])
        element.set("time", "0")
    out = [f"envcheck {report.envcheck_version}: {tally(report)}"]
    out += [f"could not collect everything: {p}" for p in report.collection_problems]
    ET.SubElement(suite, "system-out").text = _x("\n".join(out))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"

"""The reports of `envcheck check --machine`, one per machine, in every format of `--format`.

Each machine's Report is rendered by the format's own reporter; this module only puts them together: the text and
markdown reports are a section per machine under a heading that names it and what it has, then one line per
machine; JSON is one document with one report per machine (each valid against report.schema.json) and the pin each
finding is about; JUnit a testsuite per machine; GitHub annotations are placed on the pin's line in the lock or
requirements file (the declaration's file where a finding is about no pin).
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from envcheck.machines.check import MachineReport, MachinesReport
from envcheck.machines.pins import Pin
from envcheck.report import json as json_report
from envcheck.report import junit, markdown, text
from envcheck.report.common import tally
from envcheck.report.github import LEVEL, annotation, plain_line, problem_message
from envcheck.report.groups import grouped
from envcheck.report.interface import ReportFormat, unreachable
from envcheck.report.quote import md_text, scrubbed
from envcheck.support.output_text import inert_json

SCHEMA_VERSION = 1


def _heading(m: MachineReport) -> str:
    """`machine NAME: what it has; pins from FILES; torch: where each file requires it` (the pin first, then every
    other requirement of torch a pin change changes with it)."""
    torch = m.pins.get("torch")
    places = [] if torch is None else [torch, *m.pins.elsewhere(torch)]
    where = f"; torch: {', '.join(f'{p.written} ({p.where})' for p in places)}" if places else ""
    return f"machine {m.machine.name}: {m.machine.describe()}; pins from {m.pins.source}{where}"


def _verdict(m: MachineReport, level: str) -> str:
    failed = bool(m.report.at_or_above(level)) if level != "never" else False
    return f"{'✗' if failed else '✓'} {m.machine.name}: {tally(m.report)}"


def _text(result: MachinesReport, color: bool, verbose: bool, level: str) -> str:
    parts = []
    for m in result.machines:
        parts.append(f"== {_heading(m)}\n" + text.render(m.report, color=color, verbose=verbose))
    summary = [f"{len(result.machines)} machine{'s' if len(result.machines) != 1 else ''} checked "
               f"(fail-on {level}):", *(f"  {_verdict(m, level)}" for m in result.machines)]
    return "\n".join([*parts, *summary]) + "\n"


def _markdown(result: MachinesReport, level: str) -> str:
    out = ["# envcheck: the machines the project deploys to", ""]
    out += [f"- {md_text(_verdict(m, level))}" for m in result.machines]
    out.append("")
    for m in result.machines:
        body = markdown.render(m.report)
        out += [f"## Machine `{m.machine.name}`", "", md_text(_heading(m)), "",
                # each report's own headings one level down, under its machine
                *("#" + line if line.startswith("#") else line for line in body.splitlines()), ""]
    return "\n".join(out)


def _pin_dict(pin: Pin, also: tuple[Pin, ...] = ()) -> dict[str, Any]:
    return {"name": pin.name, "written": pin.written, "version": pin.version, "file": pin.file, "line": pin.line,
            "index": pin.index,
            # the project's other requirements of the name, which a change of the pin changes with it
            "also": [{"written": p.written, "file": p.file, "line": p.line} for p in also]}


def _json(result: MachinesReport) -> str:
    machines = []
    for m in result.machines:
        d = m.machine
        machines.append({
            "name": d.name,
            "declared": {"file": d.file, "key": d.key, "platform": d.platform, "python": d.python,
                         "gpus": [{"name": name, "compute_capability": f"{c[0]}.{c[1]}"} for name, c in d.gpus],
                         "amd_gpus": list(d.amd_gpus), "driver": d.driver, "rocm": d.rocm},
            "pins_from": m.pins.source,
            "pins": [_pin_dict(p, m.pins.elsewhere(p)) for p in m.pins.pins],
            # finding i of `report` is about pin `about[i]` (its name), or null
            "about": [None if p is None else p.name for p in m.about],
            "report": json_report.as_dict(m.report),
        })
    data = {"schema": SCHEMA_VERSION, "machines": machines}
    return inert_json(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"


def _junit(result: MachinesReport) -> str:
    suites = ET.Element("testsuites", name="envcheck machines")
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for m in result.machines:
        # The machine's suite as the JUnit reporter writes it, read back: envcheck's own output (scrubbed, no DTD)
        own = junit.render(m.report).split("\n", 1)[1]
        suite = ET.fromstring(own).find("testsuite")  # noqa: S314 - envcheck's own output, not untrusted input
        if suite is None:  # pragma: no cover - junit.render always writes one
            continue
        suite.set("name", f"envcheck machine {m.machine.name}")
        for case in suite.iter("testcase"):
            case.set("classname", case.get("classname", "envcheck").replace("envcheck.",
                                                                          f"envcheck.{m.machine.name}.", 1))
        properties = suite.find("properties")
        if properties is None:  # pragma: no cover - junit.render always writes them
            properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="machine", value=m.machine.describe())
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        suites.append(suite)
    for key, value in totals.items():
        suites.set(key, str(value))
    suites.set("time", "0")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _relative(root: Path, file: str) -> str:
    """A project file as GitHub names it: relative to the working directory (the checkout) where it is inside it."""
    path = root / file
    try:
        return Path(os.path.relpath(path)).as_posix() if path.resolve().is_relative_to(Path.cwd().resolve()) \
            else path.as_posix()
    except ValueError:  # another drive (Windows)
        return path.as_posix()


def _github(result: MachinesReport) -> str:
    lines = []
    for m in result.machines:
        report = scrubbed(m.report)
        # grouped() keeps the report's own Finding objects: each problem's first finding finds its pin by identity
        about = {id(f): pin for f, pin in zip(report.findings, m.about, strict=True)}
        for p in grouped(report):
            pin = about.get(id(p.first))
            file, line = ((_relative(m.pins.root, pin.file), pin.line) if pin is not None
                          else (m.machine.file, None))
            count = f" ×{len(p.findings)}" if len(p.findings) > 1 else ""
            lines.append(annotation(LEVEL[p.status], problem_message(p), file=file, line=line,
                                    title=f"{p.rule_id} {p.name}{count} on {m.machine.name}"))
        lines.append(plain_line(f"envcheck {m.report.envcheck_version}: machine {m.machine.name}: {tally(m.report)}"))
    return "\n".join(lines) + "\n"


def render(result: MachinesReport, fmt: ReportFormat | str, *, color: bool = False, verbose: bool = False,
           fail_on: str = "error") -> str:
    """Every machine's report in format `fmt`; `fail_on` marks which machines fail in the summaries."""
    fmt = ReportFormat(fmt)
    if fmt is ReportFormat.TEXT:
        return _text(result, color, verbose, fail_on)
    if fmt is ReportFormat.JSON:
        return _json(result)
    if fmt is ReportFormat.MARKDOWN:
        return _markdown(result, fail_on)
    if fmt is ReportFormat.JUNIT:
        return _junit(result)
    if fmt is ReportFormat.GITHUB:
        return _github(result)
    unreachable(fmt)


"""`envcheck check --machine NAME`: the rule pack on the snapshot each declared machine would have, one report each.

Each machine's Facts come from the project's pins (facts.py) and are evaluated by the engine like any snapshot;
the project's generated rules (EC98xx: requirements unmet, lock drift) are left out, since the snapshot is made of
the pins themselves. Every finding is then said for the machine: its summary names the machine and the pin it is
about, and its commands (written for a local interpreter) become the change to the pins (fixes.py). Pure but for
reading the project's lock: no probe runs, nothing is installed.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from envcheck.derived import builds
from envcheck.derived.tables import CUDA_DRIVER, TORCH_BUILDS
from envcheck.engine import evaluate
from envcheck.errors import EnvcheckError
from envcheck.facts.snapshot import Facts, canonical_name
from envcheck.machines.declared import DeclaredMachine
from envcheck.machines.facts import facts_for
from envcheck.machines.fixes import Change, pin_change, read_command
from envcheck.machines.pins import Pin, Pins, pins_for
from envcheck.machines.recommend import per_machine
from envcheck.model import Finding, Report
from envcheck.project import generated_rules as project_rules
from envcheck.project.discover import Project
from envcheck.rule_pack import RulePack
from envcheck.unseen import said, unchecked

# Areas whose findings are about torch's build when nothing narrower names their pin.
_TORCH_AREAS = frozenset({"gpu", "torch", "wheels", "rocm", "attention", "multigpu"})
# Areas whose findings the build `recommend` chooses for the machine fixes (a build it has wheels and kernels for):
# a finding of another area without a command of its own (a bug of a torch release) is not fixed by it.
_BUILD_AREAS = frozenset({"gpu", "wheels", "rocm"})
_ITEM_NAMES = ("name", "dependency", "package", "distribution", "companion")


@dataclass(frozen=True)
class MachineReport:
    """One machine's verdicts, and the pin each finding is about."""

    machine: DeclaredMachine
    report: Report
    pins: Pins
    about: tuple[Pin | None, ...]  # per finding of `report`, in order: the pin it is about, or None


@dataclass(frozen=True)
class MachinesReport:
    """Every checked machine's report, in declaration order."""

    machines: tuple[MachineReport, ...]

    def failing(self, level: str) -> list[MachineReport]:
        """The machines with a finding at or above `level` (a --fail-on level)."""
        return [m for m in self.machines if m.report.at_or_above(level)]


def _pin_of(finding: Finding, pins: Pins) -> Pin | None:
    """The pin a finding is about: the one its item cites by line, or names; else the pin its summary names first;
    else torch's, for the areas about torch's build."""
    item = finding.item or {}
    for key in ("source", "requirer"):
        cited = next((p for p in pins.pins if item.get(key) == p.where), None)
        if cited is not None:
            return cited
    own = pins.requires_python
    for key in _ITEM_NAMES:
        named = pins.get(item[key]) if item.get(key) else None
        if named is None and own is not None and canonical_name(item.get(key, "")) == own.name:
            named = own
        if named is not None:
            return named
    first: tuple[int, Pin] | None = None
    for pin in pins.pins:
        spelled = re.escape(pin.name).replace(r"\-", "[-_.]")
        match = re.search(rf"(?<![\w.-]){spelled}(?![\w-])", finding.summary, re.IGNORECASE)
        if match is not None and (first is None or match.start() < first[0]):
            first = (match.start(), pin)
    if first is not None:
        return first[1]
    return pins.get("torch") if finding.area in _TORCH_AREAS else None


def _requirements(texts: tuple[str, ...]) -> tuple[Requirement, ...]:
    out = []
    for text in texts:
        try:
            out.append(Requirement(text))
        except InvalidRequirement:
            continue
    return tuple(out)


def _resolved(change: Change, within: Callable[[SpecifierSet], Change | None]) -> Change:
    """`change` with a torch range (`torch>=2.6`, written for a local interpreter whose resolver picks the build)
    made the build for this machine that the range admits, as `recommend` chooses it; as it was where none fits."""
    torch = next((r for r in change.install if canonical_name(r.name) == "torch" and r.specifier
                  and not any(s.operator in ("==", "===") for s in r.specifier)), None)
    chosen = None if torch is None else within(torch.specifier)
    if chosen is None:
        return change
    moved = {canonical_name(r.name) for r in chosen.install}
    rest = tuple(r for r in change.install if canonical_name(r.name) not in moved)
    return Change((*chosen.install, *rest), change.remove, chosen.index or change.index)


def _said(finding: Finding, machine: DeclaredMachine, pin: Pin | None, pins: Pins, scoped: bool,
          shared: tuple[str, ...], recommended: Change | None,
          within: Callable[[SpecifierSet], Change | None] = lambda _: None) -> Finding:
    """`finding` for the machine: named in the summary, its commands turned into pin changes."""
    if not finding.status.is_finding:
        return dataclasses.replace(finding, commands=())
    summary = f"{machine.name}: {finding.summary}"
    if pin is not None and pin.where not in finding.summary:
        summary += f" [{pin.written}, {pin.where}]"
    if pin is not None and pin is pins.requires_python:
        own = (f"The project's {pin.written} ({pin.where}) excludes Python {machine.python}, which {machine.name} "
               "is declared with: run the project there with a Python it supports, or change requires-python.")
        return dataclasses.replace(finding, summary=summary, fix=own, commands=())
    pixi = [shlex.join(c) for c in finding.commands if tuple(c[:2]) == ("pixi", "add")]
    if pixi:  # a pixi project: pixi changes its manifest and re-solves pixi.lock itself (commands/conda.py)
        fix = (f"{finding.fix} Run `{'`, then `'.join(pixi)}` in the project: pixi adds the requirement to "
               f"{pins.manifest or 'the manifest'} and re-solves {pins.lock_shown}, for every platform.").strip()
        return dataclasses.replace(finding, summary=summary, fix=fix, commands=())
    changes = [_resolved(c, within) for c in map(read_command, finding.commands) if c is not None]
    if (not changes and recommended is not None and finding.area in _BUILD_AREAS and pin is not None
            and pin.name in ("torch", *builds.MOVES_WITH_TORCH)):
        changes = [recommended]
    said = [s for s in (pin_change(c, pins, machine.platform, scoped) for c in changes) if s]
    if said and shared:
        said.append(f"The same pins install on {', '.join(shared)} ({machine.platform} too): `envcheck recommend "
                    "--machine all` says which pins suit every machine, or that none do.")
    fix = " ".join([finding.fix, *said]).strip()
    return dataclasses.replace(finding, summary=summary, fix=fix, commands=())


def _no_torch(machine: DeclaredMachine, pins: Pins, facts: Facts) -> str:
    """Why the machine's snapshot has no torch to look at, from the project's pins: what is true of a declared
    machine, where "the snapshot does not say" is not (its snapshot is made of the pins)."""
    pin = pins.get("torch")
    if pin is None and pins.lock is not None:
        return f"{pins.lock_shown} installs no torch on {machine.name}"
    if pin is None:
        read = ", ".join(f for f in pins.files if f != pins.lock_shown) or "its files"
        return (f"the project requires no torch on {machine.name} ({read}): whether a dependency pulls one in is "
                "not in its files")
    if pin.version is None:
        return (f"{pin.written} ({pin.where}) pins no one torch version: which one a resolver installs is not in "
                "the files")
    return (f"{pin.written} ({pin.where}) has no wheel for Python {facts.python.version} on {machine.platform}: it "
            "installs no torch there")


def check_machines(machines: tuple[DeclaredMachine, ...], project: Project | None, pack: RulePack,
                   ) -> MachinesReport:
    """Every machine's report on what `project` pins; `pack` is the check's chosen rules with their tables."""
    if project is None:
        raise EnvcheckError("--machine: no project here to read pins from (a lock, requirements.txt or "
                            "pyproject.toml at or above the working directory; --requirements FILE names one)")
    matrix = pack.tables[TORCH_BUILDS]
    rules = pack.only([r for r in pack.rules if not r.id.startswith(project_rules.RESERVED)])
    out = []
    for machine in machines:
        pins = pins_for(project, machine)
        facts = facts_for(machine, pins, matrix, pack.tables[CUDA_DRIVER])
        report = evaluate(rules, facts)
        rec = per_machine(matrix, machine, pins)
        recommended = None if not rec.requirements else Change(
            _requirements(rec.requirements), (), rec.index_url or None)
        about = tuple(_pin_of(f, pins) if f.status.is_finding else None for f in report.findings)
        shared = tuple(m.name for m in machines if m.platform == machine.platform and m is not machine)
        scoped = not shared and any(m.platform != machine.platform for m in machines)

        def within(spec: SpecifierSet, machine: DeclaredMachine = machine, pins: Pins = pins) -> Change | None:
            chosen = per_machine(matrix, machine, pins, spec)
            return None if chosen.choice is None or not chosen.requirements else Change(
                _requirements(chosen.requirements), (), chosen.index_url or None)

        findings = tuple(_said(f, machine, pin, pins, scoped, shared, recommended, within)
                         for f, pin in zip(report.findings, about, strict=True))
        count = unchecked(rules.rules, facts, report.findings)
        report = dataclasses.replace(report, findings=findings, python=f"machine {machine.name}", installer="",
                                     target=None, project=f"{project.root}: {pins.source}",
                                     unseen=(said(_no_torch(machine, pins, facts), count),) if count else ())
        out.append(MachineReport(machine, report, pins, about))
    return MachinesReport(tuple(out))

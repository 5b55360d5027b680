"""`envcheck check --machine NAME`: the rule pack on the snapshot each declared machine would have, one report each.

Each machine's Facts come from the project's pins (facts.py) and are evaluated by the engine like any snapshot;
the project's generated rules (EC98xx: requirements unmet, lock drift) are left out, since the snapshot is made of
the pins themselves. Every finding is then said for the machine: its summary names the machine and the pin it is
about, and its commands (written for a local interpreter) become the change to the pins (fixes.py). Pure but for
reading the project's lock: no probe runs, nothing is installed.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from envcheck.derived import builds
from envcheck.derived.tables import CUDA_DRIVER, TORCH_BUILDS
from envcheck.errors import EnvcheckError
from envcheck.facts.snapshot import Facts, canonical_name
from envcheck.machines.declared import DeclaredMachine
from envcheck.machines.facts import facts_for
from envcheck.machines.fixes import Change, pin_change, read_command
from envcheck.machines.pins import Pin, Pins, pins_for
from envcheck.machines.recommend import per_machine
from envcheck.rules import generated as project_rules
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Finding, Report
from envcheck.rules.rule_pack import RulePack
from envcheck.rules.unseen import said, unchecked
from envcheck.sources.project.discover import Project
from envcheck.support.patterns import lazy

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


# A word of a summary that may name a distribution: a pin is named where a word, or its head up to a `.`, is its
# name spelled with any of `-_.` between the parts ("torch" in "torch.cuda", "zope.interface").
_WORD = lazy(r"[\w.-]+")


class _PinIndex:
    """A machine's pins by where they are written and by name, built once: a finding is looked up in it, not by a
    scan of every pin (50,000 pinned requirements and a hundred findings)."""

    def __init__(self, pins: Pins) -> None:
        self.pins = pins
        self.by_where: dict[str, Pin] = {}
        self.by_name: dict[str, tuple[int, Pin]] = {}  # canonical name -> (its order, the first pin of that name)
        for i, pin in enumerate(pins.pins):
            self.by_where.setdefault(pin.where, pin)
            self.by_name.setdefault(pin.name, (i, pin))
        self.longest = max(map(len, self.by_name), default=0)  # no longer word can name a pin

    def named_in(self, summary: str) -> Pin | None:
        """The pin named first in `summary` (the earlier pin where two names start at one place)."""
        for word in _WORD.finditer(summary):
            text = word.group()
            # The heads no longer than the longest name: the cost of a word is bounded whatever its length.
            heads = [text[:i] for i, char in enumerate(text[:self.longest + 1]) if char == "."]
            heads += [text] if len(text) <= self.longest else []
            found = [self.by_name[name] for name in map(canonical_name, heads) if name in self.by_name]
            if found:
                return min(found, key=lambda item: item[0])[1]
        return None


def _pin_of(finding: Finding, index: _PinIndex) -> Pin | None:
    """The pin a finding is about: the one its item cites by line, or names; else the pin its summary names first;
    else torch's, for the areas about torch's build."""
    pins = index.pins
    item = finding.item or {}
    for key in ("source", "requirer"):
        cited = index.by_where.get(item[key]) if isinstance(item.get(key), str) else None
        if cited is not None:
            return cited
    own = pins.requires_python
    for key in _ITEM_NAMES:
        found = index.by_name.get(canonical_name(item[key])) if isinstance(item.get(key), str) and item[key] else None
        named = None if found is None else found[1]
        if named is None and own is not None and canonical_name(item.get(key, "")) == own.name:
            named = own
        if named is not None:
            return named
    first = index.named_in(finding.summary)
    if first is not None:
        return first
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
    if pixi:  # a pixi project: pixi changes its manifest and re-solves pixi.lock itself (remedy/commands/conda.py)
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
        index = _PinIndex(pins)
        about = tuple(_pin_of(f, index) if f.status.is_finding else None for f in report.findings)
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

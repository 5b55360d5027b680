"""`envcheck recommend --machine NAME`: the pins that suit each declared machine, and one set for all where one can.

Per machine, `envcheck.derived.builds.recommend` answers as for any described machine, keeping the project's pinned
torch release where a build of it fits and moving the pinned companions with torch. For several machines, `shared`
looks for one torch release and build that every machine can install and run: wheels for each one's platform and
Python, every GPU covered, each driver new enough (full compatibility first, then CUDA minor-version compatibility
for GPUs the build covers natively); the pinned release first, else the newest. Where no one build fits, it answers
per platform, since a requirement's marker can tell platforms apart but not GPUs. Pure: tables and pins in, text out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.derived import build_matrix as tb
from envcheck.derived import builds
from envcheck.derived.companions import pytorch_index
from envcheck.machines.declared import DeclaredMachine
from envcheck.machines.fixes import marker_for
from envcheck.machines.pins import Pins


@dataclass(frozen=True)
class Shared:
    """One torch build for a group of machines, or None when none fits them all."""

    machines: tuple[str, ...]
    choice: tb.Choice | None
    requirements: tuple[str, ...]
    index_url: str
    notes: tuple[str, ...]  # per machine, how it runs the build


def _driver(machine: DeclaredMachine) -> Version | None:
    try:
        return Version(machine.driver) if machine.driver else None
    except InvalidVersion:
        return None


def _runs(matrix: tb.BuildMatrix, variant: tb.Variant, machine: DeclaredMachine, minor: bool) -> str | None:
    """How `machine` runs `variant` ("native", "PTX JIT", "CUDA minor-version compatibility", "CPU"); None: not."""
    if machine.rocm is not None:
        return f"ROCm {'.'.join(map(str, variant.version))}" if variant.kind == "rocm" else None
    if not machine.gpus:
        return "CPU" if variant.kind in ("cpu", "cuda") else None
    driver = _driver(machine)
    if variant.kind != "cuda" or driver is None:
        return None
    status = tb.driver_status(matrix, variant, driver, machine.platform)
    if status not in (("ok", "minor-compat") if minor else ("ok",)):
        return None
    runs = [tb.runs_on(variant, cap) for _, cap in machine.gpus]
    usable = ("native", "ptx-jit") if status == "ok" else ("native",)
    if not all(r in usable for r in runs):
        return None
    how = "native code" if all(r == "native" for r in runs) else "PTX compiled at first use"
    return how + (f", driver {machine.driver} through CUDA minor-version compatibility" if status != "ok" else "")


def _fits(matrix: tb.BuildMatrix, release: tb.Release, machines: Sequence[DeclaredMachine],
          minor: bool) -> tuple[tb.Variant, tuple[str, ...]] | None:
    names: list[str] | None = None
    for machine in machines:
        builds_here = release.platforms.get(machine.platform)
        if builds_here is None or machine.python.rstrip("t") not in builds_here.python:
            return None
        here = [v.name for v in builds_here.variants]
        names = here if names is None else [n for n in names if n in here]
    best: tuple[tuple[bool, tuple[int, ...]], tb.Variant, tuple[str, ...]] | None = None
    for name in names or []:
        variants = [next(v for v in release.platforms[m.platform].variants if v.name == name) for m in machines]
        runs = [_runs(matrix, v, m, minor) for v, m in zip(variants, machines, strict=True)]
        if any(r is None for r in runs):
            continue
        score = (all("native" in (r or "") or r == "CPU" for r in runs), variants[0].version)
        if best is None or score > best[0]:
            best = (score, variants[0], tuple(f"{m.name}: {r}" for m, r in zip(machines, runs, strict=True)))
    return None if best is None else (best[1], best[2])


def shared(matrix: tb.BuildMatrix, machines: Sequence[DeclaredMachine], pins: Pins | None) -> Shared:
    """The one build every machine of `machines` installs and runs: the pinned torch release first, else the
    newest; a choice of None when there is none."""
    pinned = pins.get("torch") if pins is not None else None
    keep = tb.release(matrix, pinned.version) if pinned is not None and pinned.version else None
    order = ([keep] if keep is not None else []) + [r for r in reversed(matrix.releases) if r is not keep]
    names = tuple(m.name for m in machines)
    for minor in (False, True):
        for release in order:
            found = _fits(matrix, release, machines, minor)
            if found is None:
                continue
            variant, notes = found
            companions = [n for n in builds.MOVES_WITH_TORCH if pins is not None and pins.get(n) is not None]
            tagged = variant.kind != "cpu" or not any(m.platform.startswith("macos") for m in machines)
            tag = f"+{variant.name}" if tagged else ""
            made_for = tb.companions(matrix, release.version)
            reqs = [f"torch=={release.version}{tag}"]
            reqs += [f"{n}=={made_for[n]}{tag if n in ('torchvision', 'torchaudio') else ''}"
                     for n in companions if n in made_for]
            return Shared(names, tb.Choice(release, variant, ()), tuple(reqs), pytorch_index(variant.name), notes)
    return Shared(names, None, (), "", ())


def per_machine(matrix: tb.BuildMatrix, machine: DeclaredMachine, pins: Pins | None,
                within: SpecifierSet | None = None) -> builds.Recommendation:
    """`envcheck recommend` for one declared machine, keeping the pinned torch release where a build of it fits and
    moving the pinned companions with torch; no choice, with the reason, for GPUs declared without a driver.
    `within`: only torch releases it admits (what a finding's fix asks for, `>=2.6`)."""
    driver = _driver(machine)
    if machine.gpus and driver is None:
        return builds.Recommendation(None, (), "", (f"{machine.name} declares NVIDIA GPUs without a valid driver "
                                                    "version: add `driver` to its declaration",))
    torch = pins.get("torch") if pins is not None else None
    companions = tuple(n for n in builds.MOVES_WITH_TORCH if pins is not None and pins.get(n) is not None)
    installed = tuple((p.name, p.version) for p in (pins.pins if pins is not None else ())
                      if p.version and p.name in ("torch", *companions))
    planned = builds.Machine(machine.platform, machine.python.rstrip("t"), machine.gpus, driver, machine.driver or "",
                             torch.version if torch is not None else None, companions, installed)
    return builds.recommend(matrix, planned, within)


def _line(rec: builds.Recommendation) -> str:
    if rec.choice is None:
        return "no torch build fits"
    if rec.nothing_to_change:
        return f"the pinned {rec.described} already suits it (nothing to change)"
    return f"{' '.join(rec.requirements)} from {rec.index_url}"


def render_text(machines: Sequence[DeclaredMachine], recs: Sequence[builds.Recommendation],
                together: Shared | None, by_platform: Sequence[Shared]) -> str:
    lines = []
    for machine, rec in zip(machines, recs, strict=True):
        lines += [f"{machine.name} ({machine.describe()}): {_line(rec)}", *(f"  {b}" for b in rec.because)]
    if together is not None:
        lines.append("")
        if together.choice is not None:
            lines.append(f"every machine at once ({', '.join(together.machines)}): {' '.join(together.requirements)}"
                         f" from {together.index_url}")
            lines += [f"  {note}" for note in together.notes]
        else:
            lines.append(f"every machine at once ({', '.join(together.machines)}): no one torch build installs and "
                         "runs on all of them; per platform, each pin with its marker:")
            for group in by_platform:
                platform = next(m.platform for m in machines if m.name == group.machines[0])
                if group.choice is None:
                    lines.append(f"  {platform} ({', '.join(group.machines)}): no one build fits these machines")
                    continue
                marker = marker_for(platform)
                lines.append(f"  {platform} ({', '.join(group.machines)}), from {group.index_url}:")
                lines += [f"    {req}; {marker}" for req in group.requirements]
                lines += [f"    {note}" for note in group.notes]
    return "\n".join(lines) + "\n"


def _shared_json(s: Shared) -> dict[str, object]:
    return {"machines": list(s.machines),
            "torch": None if s.choice is None else str(s.choice.release.version),
            "variant": None if s.choice is None else s.choice.variant.name,
            "requirements": list(s.requirements), "index_url": s.index_url or None, "notes": list(s.notes)}


def render_json(machines: Sequence[DeclaredMachine], recs: Sequence[builds.Recommendation],
                together: Shared | None, by_platform: Sequence[Shared]) -> str:
    data = {
        "machines": [{"name": m.name, "described": m.describe(),
                      "recommended": None if r.choice is None else {"torch": str(r.choice.release.version),
                                                                    "variant": r.choice.variant.name},
                      "nothing_to_change": r.nothing_to_change, "requirements": list(r.requirements),
                      "index_url": r.index_url or None, "because": list(r.because)}
                     for m, r in zip(machines, recs, strict=True)],
        "together": None if together is None else _shared_json(together),
        "per_platform": [_shared_json(s) for s in by_platform],
    }
    return json.dumps(data, indent=2) + "\n"


def plan(matrix: tb.BuildMatrix, machines: Sequence[DeclaredMachine], pins_of: dict[str, Pins | None],
         ) -> tuple[list[builds.Recommendation], Shared | None, list[Shared]]:
    """Each machine's recommendation; with several machines, the one set for all (or None) and, when there is none,
    one per platform."""
    recs = [per_machine(matrix, m, pins_of.get(m.name)) for m in machines]
    if len(machines) < 2:
        return recs, None, []
    first = pins_of.get(machines[0].name)
    together = shared(matrix, machines, first)
    groups: list[Shared] = []
    if together.choice is None:
        for platform in dict.fromkeys(m.platform for m in machines):
            group = [m for m in machines if m.platform == platform]
            groups.append(shared(matrix, group, pins_of.get(group[0].name)))
    return recs, together, groups

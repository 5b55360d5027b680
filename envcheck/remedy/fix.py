"""`envcheck fix`, the pure part: findings -> an ordered, deduplicated plan of commands; the plan as text (the outcome
afterwards: envcheck/report/outcome.py).

Running the plan is the CLI's job; nothing here starts a process.

How the plan is made:
- Commands come from `Finding.commands`: argv tuples already rendered for the checked interpreter.
- Duplicates go: the same argv asked for by several findings runs once. A command a finding repeats on purpose
  (EC0103 uninstalls twice: pip removes one copy of a duplicated distribution per call) keeps the largest count
  any one finding asks for.
- Removals run before installs, so an install is never undone by a later uninstall of another finding; within
  each group the findings' order (rule id) is kept. `rm -rf PATHS`, which remedy/commands/installers.py writes for what
  pip cannot remove (a distribution without RECORD, metadata pip fails on), is a removal that waits for --allow-other;
  while the removal of metadata pip fails on waits, the pip steps wait with it.
- `pip install` commands of the checked interpreter (and `uv pip install` ones) with the same options are merged
  into one command, so the resolver sees every requirement at once instead of the second install quietly undoing
  the first (an upgrade of torch that drags NumPy back to 2). Two requirements of one distribution then meet in one
  resolution: pip finds a version satisfying both or fails with both named, and the plan stops there. A command is
  merged only when every option is a known flag without a value and every argument is a PEP 508 requirement;
  anything else (an index URL, a local path, `-r FILE`) runs on its own, unchanged.
- Every install names a distribution once, with the range all its findings accept (`numpy<2.6,>=2.1` for
  `numpy>=2.0`, `numpy<2.6,>=2.0` and `numpy>=2.1`: envcheck/support/specifiers.py), and the plan never holds two
  installs that disagree: where no version meets what the findings ask for one distribution (in one command or across
  several), it is left out of every install and `Plan.conflicts` says so, to be decided by hand.
- Only installer commands run without an opt-in: `PYTHON -m pip ...` for the checked interpreter, `uv pip ...`
  (given `--python PYTHON` when it names no interpreter) and `conda` / `mamba` / `micromamba` run by the uv or
  conda envcheck found (the same file, not the same name), and `PYTHON -m ensurepip`, which
  remedy/commands/installers.py puts first where the environment has neither pip nor uv and which therefore runs before
  everything else. Anything else (`python -m venv`, a pip of another interpreter, a project's `./conda`) needs
  `--allow-other`.
- So does an installer command that only rules from outside the shipped pack ask for (a project's rule-dirs,
  the rules made from its files), when it passes more than requirements by name and harmless flags: an index, a
  path or a VCS link, a requirements file. envcheck/remedy/consent.py says exactly what runs and what waits; a command
  the shipped pack asks for too is the pack's, and runs, unless a requirement it names is one an installer reads as
  a file, a folder or a link (`evil-1.0-py3-none-any.whl` from a project's `require` or an installed package's
  metadata): that waits for --allow-other whoever asks.
- Each step says why (the summaries of the findings that asked for it) and, given the facts, what it keeps and
  what it changes: "keeps torch 2.13.0+cpu; replaces torchvision 0.20.0 with 0.28.0+cpu". torch-family commands
  were already planned by envcheck/remedy/commands/planner.py when the findings were made; this only describes them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from envcheck.facts.snapshot import Distribution, Facts, canonical_name
from envcheck.remedy.consent import PLAIN_FLAGS, file_named, not_an_installer, unvetted
from envcheck.remedy.consent import PREFIX as _PREFIX
from envcheck.remedy.consent import installer as _installer
from envcheck.rules.model import Finding
from envcheck.support.output_text import shell
from envcheck.support.versions import parse_requirement, parse_version

if TYPE_CHECKING:
    from envcheck.remedy.fix_steps import InstallGroup, Step
    from envcheck.remedy.found_tools import Found

_REMOVE = ("uninstall", "remove")
# Options that take no value and mean the same for every requirement of a merged command.
_MERGEABLE_FLAGS = PLAIN_FLAGS


@dataclass(frozen=True)
class Plan:
    """What `fix` would run, in order, and what it leaves to be done by hand."""

    python: str  # the checked interpreter
    steps: tuple[Step, ...]  # in the order they run
    by_hand: tuple[Finding, ...]  # findings without a command: their `fix` says what to do
    installer_line: str = ""  # which installer the commands use and why (Report.installer)
    conflicts: tuple[str, ...] = ()  # distributions left out of every install: no version meets every finding

    def runnable(self, allow_other: bool) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if allow_other or not s.needs_opt_in)

    def held_back(self, allow_other: bool) -> tuple[Step, ...]:
        return () if allow_other else tuple(s for s in self.steps if s.needs_opt_in)


# `python -m MODULE ARGS` as it runs: `-m` puts the working folder first on sys.path, so a project's `pip/` folder
# would run instead of pip. `-c` puts it there too (as ''), but this program removes it before importing anything
# (`sys` is built in), then runs the module as `-m` does. It works from Python 3.8 on, unlike `-P` (3.11), and
# keeps PYTHONPATH and the user site, which `-I` would drop: pip must see the environment as its user's programs do.
_RUN_MODULE = ("import sys; sys.path[:1] = [p for p in sys.path[:1] if p]; name = sys.argv.pop(1); "
               "import runpy; runpy.run_module(name, run_name='__main__', alter_sys=True)")


def as_run(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The argv that runs for a step: the step's own, except that `PYTHON -m MODULE ...` becomes the same module
    run without the working folder on sys.path (the plan shows the command as a user would type it)."""
    if len(argv) >= 3 and argv[1] == "-m" and not argv[2].startswith("-"):
        return (argv[0], "-c", _RUN_MODULE, *argv[2:])
    return argv


def _targeted(argv: tuple[str, ...], installer: str | None, prefix: int, python: str) -> tuple[str, ...]:
    """uv pip targets the active virtual environment unless told: point it at the checked interpreter."""
    if installer == "uv" and not any(a in ("--python", "-p") or a.startswith("--python=") for a in argv):
        return (*argv[:prefix], "--python", python, *argv[prefix:])
    return argv


def _install_parts(step: Step, python: str) -> tuple[tuple[str, ...], frozenset[str], tuple[str, ...]] | None:
    """(head, flags, requirements) of a mergeable install; None: it runs alone, as written."""
    if step.installer not in ("pip", "uv") or step.removes:
        return None
    prefix = _PREFIX[step.installer]
    head = list(step.argv[:prefix])
    if head[-1] != "install":
        return None
    rest = list(step.argv[prefix:])
    if step.installer == "uv" and "--python" in rest:  # put there by _targeted, or by the rule: part of the head
        i = rest.index("--python")
        head += rest[i:i + 2]
        del rest[i:i + 2]
    flags = [a for a in rest if a.startswith("-")]
    reqs = [a for a in rest if not a.startswith("-")]
    if any(f not in _MERGEABLE_FLAGS for f in flags):
        return None
    for arg in reqs:
        try:
            Requirement(arg)
        except InvalidRequirement:
            return None
    return tuple(head), frozenset(flags), tuple(reqs)


def _merged(steps: list[Step], python: str) -> list[Step]:
    if not steps:
        return []  # most reports' plans: their classes are never defined
    from envcheck.remedy.fix_steps import InstallGroup, Step

    out: list[Step] = []
    groups: dict[tuple[tuple[str, ...], frozenset[str]], InstallGroup] = {}
    for step in steps:
        parts = _install_parts(step, python)
        if parts is None:
            out.append(step)
            continue
        head, flags, reqs = parts
        group = groups.get((head, flags))
        if group is None:
            groups[head, flags] = InstallGroup(len(out), dict.fromkeys(reqs), dict.fromkeys(step.rules),
                                         dict.fromkeys(step.why))
            out.append(step)
            continue
        group.requirements.update(dict.fromkeys(reqs))
        group.rules.update(dict.fromkeys(step.rules))
        group.why.update(dict.fromkeys(step.why))
        group.merged = True
    for (head, flags), group in groups.items():
        if group.merged:  # built once, not once per install that joins
            out[group.index] = Step((*head, *sorted(flags), *group.requirements), out[group.index].installer, False,
                                    tuple(group.rules), tuple(group.why))
    return out


def plan(findings: Iterable[Finding], python: str, installer_line: str = "", facts: Facts | None = None, *,
         outside_pack: Collection[str] = ()) -> Plan:
    """The commands that fix `findings` in `python`, deduplicated, ordered and merged (see the module docstring);
    with the `facts` the findings were made from, each step also says what it keeps and what it changes, and only
    the uv and conda those facts name are installers. `outside_pack`: the ids of the rules that are not from the
    shipped pack (rules.shipped), whose installer commands are vetted before they run unasked."""
    counts: dict[tuple[str, ...], int] = {}
    # Ordered sets (dicts), not lists: thousands of findings may ask for one command.
    sources: dict[tuple[str, ...], dict[str, None]] = {}
    reasons: dict[tuple[str, ...], dict[str, None]] = {}
    by_hand: list[Finding] = []
    for finding in findings:
        if not finding.commands:
            by_hand.append(finding)
            continue
        for argv, n in Counter(tuple(c) for c in finding.commands).items():
            counts[argv] = max(counts.get(argv, 0), n)
            sources.setdefault(argv, {})[finding.rule_id] = None
            reasons.setdefault(argv, {})[f"{finding.rule_id} {finding.summary}"] = None
    found = None if facts is None else _found(facts)
    prefix_dir = None if facts is None else facts.python.prefix
    steps = []
    for argv, n in counts.items():
        from envcheck.remedy.fix_steps import Step  # only a plan with commands makes steps: most reports' have none

        installer, prefix = _installer(argv, python, found)
        # `rm -rf PATHS` (remedy/commands/installers.py): what pip cannot remove, removed by name; held for
        # --allow-other
        removes = (installer is not None and argv[prefix - 1] in _REMOVE) or argv[:2] == ("rm", "-rf")
        target = _targeted(argv, installer, prefix, python)
        if installer is None:
            held = not_an_installer(argv, found)
        elif all(rule in outside_pack for rule in sources[argv]):  # the pack asking for it too makes it the pack's
            held = unvetted(target, installer, python, prefix_dir)
        else:  # the pack's rules fill names in from the environment and the project: none may name a file
            held = file_named(target, installer)
        steps += [Step(target, installer, removes, tuple(sources[argv]), tuple(reasons[argv]), held=held)] * n
    # pip itself first where it has to be bootstrapped, then removals, then installs.
    first = [s for s in steps if s.installer == "ensurepip"]
    ordered = first + [s for s in steps if s.removes] + [s for s in steps if not s.removes and not s.needs_opt_in
                                                          and s.installer != "ensurepip"]
    asked_by: dict[str, tuple[str, ...]] = {}  # a requirement -> the findings that ask for it, before merging
    for step in steps:
        for slot in _requirement_slots(step) or ():
            asked_by[step.argv[slot]] = tuple(dict.fromkeys((*asked_by.get(step.argv[slot], ()), *step.rules)))
    ordered = _merged(ordered, python) + [s for s in steps if s.needs_opt_in and not s.removes]
    ordered, conflicts = _agreed(ordered, asked_by)
    if facts is not None:
        ordered = [replace(s, effect=effect(s, facts, python)) for s in _behind_held_removals(ordered, facts)]
    return Plan(python=python, steps=tuple(ordered), by_hand=tuple(by_hand), installer_line=installer_line,
                conflicts=conflicts)


def _found(facts: Facts) -> Found:
    """The uv and conda the facts name (their class is imported only for a plan made from facts)."""
    from envcheck.remedy.found_tools import Found

    return Found.of(facts)


# Options of pip / uv installs that take a value: the value is not a requirement.
_VALUED = frozenset({"--python", "-p", "--index-url", "-i", "--extra-index-url", "--default-index", "--index",
                     "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--platform", "--python-version",
                     "--implementation", "--abi", "--upgrade-strategy", "--progress-bar", "--src"})


def _requirement_slots(step: Step) -> list[int] | None:
    """The positions of the requirements in an install step's argv; None for a step that is not an install, or one
    whose arguments are not all requirements and options (`-r FILE`, `-e PATH`, a path): left as it is."""
    if step.removes or step.installer not in ("pip", "uv"):
        return None
    prefix = _PREFIX[step.installer]
    if step.argv[prefix - 1] != "install":
        return None
    slots: list[int] = []
    i = prefix
    while i < len(step.argv):
        arg = step.argv[i]
        if arg in _VALUED:
            i += 2
            continue
        if arg in ("-r", "--requirement", "-c", "--constraint", "-e", "--editable"):
            return None
        if not arg.startswith("-"):
            if parse_requirement(arg) is None or "/" in arg or arg.startswith("."):
                return None
            slots.append(i)
        i += 1
    return slots


def _with_requirements(step: Step, slots: list[int], reqs: tuple[str, ...]) -> Step:
    """`step` with the requirements at `slots` replaced by `reqs` (written where the first one was)."""
    first, rest = slots[0], set(slots[1:])
    return replace(step, argv=(*step.argv[:first], *reqs, *(a for i, a in enumerate(step.argv) if i > first
                                                             and i not in rest)))


def _agreed(steps: list[Step], asked_by: dict[str, tuple[str, ...]]) -> tuple[list[Step], tuple[str, ...]]:
    """Every install names a distribution once, with the intersection of what its findings ask; a distribution
    no one version can satisfy (within one install, or across the plan's installs) is left out of all of them,
    with a line saying so, naming the findings that asked (`asked_by`). An install left with no requirement goes."""
    if not steps:  # nothing to agree on (most plans): and support.specifiers' classes go undefined
        return [], ()
    from envcheck.support import specifiers

    conflicts: list[str] = []
    out: list[Step] = []
    for step in steps:
        slots = _requirement_slots(step)
        if not slots:
            out.append(step)
            continue
        written = tuple(step.argv[i] for i in slots)
        merged = specifiers.merge(written)
        conflicts += [_conflict(name, [(r, asked_by.get(r, step.rules)) for r in reqs])
                      for name, reqs in merged.unsatisfiable]
        if merged.requirements:
            out.append(step if merged.requirements == written else
                       _with_requirements(step, slots, merged.requirements))
    # Across installs: what two installs ask for one distribution must have a version in common.
    asked: dict[str, list[tuple[int, int, Requirement]]] = {}  # name -> (step, slot, requirement)
    for index, step in enumerate(out):
        for slot in _requirement_slots(step) or ():
            req = parse_requirement(step.argv[slot])
            if req is not None and req.marker is None and not req.url:
                asked.setdefault(canonical_name(req.name), []).append((index, slot, req))
    dropped: dict[int, set[int]] = {}
    for entries in asked.values():
        if len({index for index, _, _ in entries}) < 2:
            continue
        together = SpecifierSet(",".join(str(req.specifier) for _, _, req in entries if req.specifier))
        if specifiers.satisfiable(together):
            continue
        who = [(out[index].argv[slot], asked_by.get(out[index].argv[slot], out[index].rules))
               for index, slot, _ in entries]
        conflicts.append(_conflict(entries[0][2].name, who))
        for index, slot, _ in entries:
            dropped.setdefault(index, set()).add(slot)
    kept: list[Step] = []
    for index, step in enumerate(out):
        gone = dropped.get(index)
        if not gone:
            kept.append(step)
        elif len(gone) < len(_requirement_slots(step) or ()):
            kept.append(replace(step, argv=tuple(a for i, a in enumerate(step.argv) if i not in gone)))
    return kept, tuple(dict.fromkeys(conflicts))


def _conflict(name: str, asked: list[tuple[str, tuple[str, ...]]]) -> str:
    """"no numpy release meets numpy<2 (EC1103) and numpy>=2.1 (EC0101) together, ..."."""
    parts = [f"{req} ({', '.join(rules)})" for req, rules in dict.fromkeys(asked)]
    return (f"no {name} release meets {' and '.join(parts)} together, so no command installs {name}: decide "
            "which finding to follow, then check again")


def _behind_held_removals(steps: list[Step], facts: Facts) -> list[Step]:
    """pip fails on metadata it cannot read (remedy/commands/installers.py removes that first): while its removal waits
    for --allow-other, the pip steps wait with it, since they could only fail."""
    from envcheck.remedy.commands.installers import pip_blockers

    folders = {d.metadata_dir for d in pip_blockers(facts, install=True)}
    held = next((s for s in steps if s.removes and s.needs_opt_in and folders.intersection(s.argv[2:])), None)
    if held is None:
        return steps
    why = f"waits for `{shell(held.argv)}`: pip fails on that metadata until it is gone"
    return [replace(s, held=why) if s.installer in ("pip", "ensurepip") and not s.held else s for s in steps]


def _names(step: Step) -> tuple[list[Requirement], list[str]]:
    """(requirements installed, names removed) by a pip / uv / conda step."""
    reqs: list[Requirement] = []
    names: list[str] = []
    args = iter(step.argv[_PREFIX[step.installer or "pip"]:])  # not list.pop(0): a merged step has thousands
    for arg in args:
        if arg in ("--python", "-p", "--index-url", "-i", "--extra-index-url", "-r", "-c"):
            next(args, None)  # an option's value, not a requirement
        elif not arg.startswith("-"):
            try:
                req = Requirement(arg)
            except InvalidRequirement:
                continue
            (names.append(req.name) if step.removes else reqs.append(req))
    return reqs, names


def _change(req: Requirement, facts: Facts) -> str:
    dist = facts.active(req.name)
    specs = list(req.specifier)
    pinned = specs[0].version if len(specs) == 1 and specs[0].operator == "==" else None
    if dist is None:
        return f"installs {req.name} {pinned}" if pinned is not None else f"installs {req}"
    if pinned is None:
        wanted = f"a release of {req.name}{req.specifier}" if req.specifier else "the release the resolver picks"
        return f"replaces {req.name} {dist.version} with {wanted}"
    have, want = parse_version(dist.version), parse_version(pinned)
    if have is not None and want is not None and have == want:
        return f"reinstalls {req.name} {pinned}"
    return f"replaces {req.name} {dist.version} with {pinned}"


def _requires_torch(dist: Distribution) -> bool:
    return any((r := parse_requirement(line)) is not None and canonical_name(r.name) == "torch"
               for line in dist.requires)


def effect(step: Step, facts: Facts, python: str) -> str:
    """What `step` keeps and changes in the environment of `facts`, in one line; "" for other commands."""
    if step.installer not in ("pip", "uv", "conda"):
        return ""
    reqs, removed = _names(step)
    parts = [_change(r, facts) for r in reqs]
    parts += [f"removes {n} {d.version}" if (d := facts.active(n)) is not None else f"removes {n}" for n in removed]
    torch = facts.active("torch")
    named = {canonical_name(r.name) for r in reqs} | {canonical_name(n) for n in removed}
    tied = any(_requires_torch(d) for r in reqs if (d := facts.active(r.name)) is not None)
    if torch is not None and "torch" not in named and ("--no-deps" in step.argv or tied):
        parts.insert(0, f"keeps torch {torch.version}")
    return "; ".join(parts)


def commands(findings: Iterable[Finding], python: str) -> tuple[tuple[str, ...], ...]:
    """Every command of `findings`, as `envcheck fix` would run them (deduplicated, ordered, installs merged).

    The reports show a rule that fired for several items with these: one `pip install` of every missing
    requirement instead of one command per item, and the same line `envcheck fix` then runs.
    """
    return tuple(step.argv for step in plan(findings, python).steps)


# --- text --------------------------------------------------------------------------------------------------------


def render_plan(the_plan: Plan, *, allow_other: bool) -> str:
    runnable, held = the_plan.runnable(allow_other), the_plan.held_back(allow_other)
    noun = "command" if len(runnable) == 1 else "commands"
    lines = [f"envcheck fix: {len(runnable)} {noun} for {the_plan.python}"]
    if the_plan.installer_line:
        lines.append(f"installer: {the_plan.installer_line}")
    for i, step in enumerate(runnable, 1):
        lines.append(f"  {i}. {shell(step.argv)}    ({', '.join(step.rules)})")
        lines += [f"       {step.effect}"] if step.effect else []
        lines += [f"       why: {why}" for why in step.why]
    if held:
        lines.append("not run without --allow-other:")
        for step in held:
            lines.append(f"  -  {shell(step.argv)}    ({', '.join(step.rules)})")
            lines += [f"       {step.held}"] if step.held else []
    if the_plan.by_hand or the_plan.conflicts:
        lines.append("by hand (no command to run):")
        lines += [f"  -  {f.rule_id} {f.name}: {f.fix}" for f in the_plan.by_hand]
        lines += [f"  -  {line}" for line in the_plan.conflicts]
    return "\n".join(lines) + "\n"

"""The torch-family planner: a finding's install command for torch or a companion, rewritten to keep what works.

Pure: facts, the companion tables and the finding's item in; argv tuples out. The engine passes every command of
every finding through `plan_commands` before writing it for the environment's installer
(envcheck/remedy/commands/installers.py), so the reports and `envcheck fix` print and run the same planned commands.

What it guarantees, for `PYTHON -m pip install ...` commands that name torch, torchvision, torchaudio, torchcodec
or xformers (any other command passes unchanged, but for the PEP 508 markers of its requirements):

- The variant stays. torch's variant is its local version tag (`+cpu`, `+cu128`, `+rocm6.4`; none for a torch
  from PyPI), and every torch-family install goes to that variant's index (`https://download.pytorch.org/whl/cpu`)
  with that tag pinned where the index tags its wheels (torch, torchvision, torchaudio). A torch from PyPI gets no
  index option: the configured index (PyPI, or the mirror the user set) is where its builds came from.
- torch stays when only a companion is wrong: the companion is pinned to the release made for the installed torch
  (rules/data/torch-companions.toml, xformers.toml), with `--no-deps` when it replaces an installed one, so the
  resolver cannot move torch, and `--force-reinstall` only where the same version string is installed (the build
  is what differs, and pip would otherwise keep it). A torch requirement that a companion's own pin asks for never
  changes torch: the companion moves instead. Where the tables know no release for this torch, torch is pinned as
  installed beside the companion and the resolver picks the companion release whose pin it meets.
- torch changes only when torch is the problem (another package requires another torch, torch is missing or
  reinstalled), and then the installed companions move with it in the same command, pinned to the releases made
  for the new torch where the requirement pins one release, else left to the resolver on the same index.
- A torch that is not installed is installed as `envcheck recommend` would: the newest release within the
  requirement that has a build for this machine (the CPU build where no NVIDIA GPU is usable, a CUDA build the
  driver runs otherwise), pinned, from that build's index, with the companions the command names pinned to the
  releases made for it (torch-builds.toml). Without the build matrix or NVML's answer the command is left as it is.
- A reinstall of the same torch with its dependencies (`--force-reinstall torch==X`, torch-import-fails' repair)
  does not download every dependency again when some are what is wrong: torch's unmet requirements are installed
  by a command of their own (the same one requirement-not-installed asks for, so the plan runs it once) and torch
  is reinstalled with `--no-deps`.

The PyTorch index base can be pointed elsewhere with the environment variable ENVCHECK_TORCH_INDEX_BASE (a mirror,
or a test's local index); companions.pytorch_index reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import Requirement
from packaging.version import Version

from envcheck.derived import build_matrix as tb
from envcheck.derived.companions import Companion, companion_release, installed_torch, pytorch_index
from envcheck.facts.snapshot import Facts, canonical_name
from envcheck.support.versions import marker_env, marker_holds, parse_requirement, parse_version

if TYPE_CHECKING:
    from envcheck.remedy.commands.install_parts import PipInstall, TorchVariant

TORCH = "torch"
# The PyTorch indexes tag these wheels with the variant (`torchvision-0.28.0+cpu`); xformers' and torchcodec's
# wheels there carry no tag, so pinning one would find nothing.
_TAGGED = frozenset({"torch", "torchvision", "torchaudio"})
_INDEX_OPTIONS = frozenset({"-i", "--index-url", "--extra-index-url", "--default-index", "--index"})


def _parse(argv: Sequence[str], python: str) -> PipInstall | None:
    if len(argv) < 5 or argv[0] != python or tuple(argv[1:4]) != ("-m", "pip", "install"):
        return None
    from envcheck.remedy.commands.install_parts import PipInstall  # only for a pip install: most findings have none

    flags: list[str] = []
    index: list[str] = []
    reqs: list[Requirement] = []
    others: list[str] = []
    rest = list(argv[4:])
    while rest:
        arg = rest.pop(0)
        if arg in _INDEX_OPTIONS and rest:
            index += [arg, rest.pop(0)]
        elif arg.startswith("-"):
            (flags if "=" not in arg and arg not in ("-r", "-c", "-e") else others).append(arg)
        else:
            req = parse_requirement(arg)
            if req is None:
                others.append(arg)
            else:
                reqs.append(req)
    return PipInstall(tuple(argv[:4]), tuple(flags), tuple(index), tuple(reqs), tuple(others))


def _without_marker(req: Requirement, facts: Facts) -> str:
    """The requirement as a command line states it: a marker that holds here is dropped (the finding exists
    because it held); one that does not hold, or cannot be evaluated, stays for pip to judge."""
    if req.marker is None:
        return str(req)
    try:
        holds = req.marker.evaluate(marker_env(facts))
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        holds = False
    if not holds:
        return str(req)
    bare = Requirement(str(req))
    bare.marker = None
    return str(bare)


def _torch(facts: Facts) -> TorchVariant | None:
    found = installed_torch(facts)
    if found is None:
        return None
    from envcheck.remedy.commands.install_parts import TorchVariant

    local = Version(found.text).local
    return TorchVariant(found.text, found.version, local, None if local is None else found.index)


def _pin(name: str, version: str, torch: TorchVariant) -> str:
    """`name==version`, with torch's variant tag where the index tags `name` and the version has none."""
    exact = "*" not in version and "+" not in version
    if exact and torch.tag is not None and canonical_name(name) in _TAGGED:
        version = f"{version}+{torch.tag}"
    return f"{name}=={version}"


def _exact(req: Requirement) -> str | None:
    """X.Y.Z when `req` pins one version (`==X.Y.Z`, `===X.Y.Z`), else None."""
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None


def _installed_version(facts: Facts, name: str) -> str | None:
    dist = facts.active(name)
    return None if dist is None else dist.version


def _satisfied(installed: str | None, pinned: str) -> bool:
    """Does the installed version meet `pinned` already? `==0.28.0` is met by `0.28.0+cu130`: pip keeps it."""
    have = parse_version(installed)
    return have is not None and Requirement(pinned).specifier.contains(have, prereleases=True)


def _index(torch: TorchVariant) -> tuple[str, ...]:
    return () if torch.index is None else ("--index-url", torch.index)


def _command(head: tuple[str, ...], flags: Iterable[str], reqs: Iterable[str], torch: TorchVariant) -> tuple[str, ...]:
    return (*head, *dict.fromkeys(flags), *reqs, *_index(torch))


def _companions_of(facts: Facts, tables: Mapping[str, Companion]) -> list[str]:
    """The companions installed here whose build the planner can speak for (not conda's: conda pins them)."""
    out = []
    for name in sorted(tables):
        dist = facts.active(name)
        if dist is not None and dist.installer != "conda":
            out.append(name)
    return out


def _companion_step(parsed: PipInstall, req: Requirement, facts: Facts, tables: Mapping[str, Companion],
                    torch: TorchVariant) -> tuple[str, ...]:
    """Install companion `req` for the installed torch, torch untouched."""
    name = canonical_name(req.name)
    installed = _installed_version(facts, name)
    flags = [f for f in parsed.flags if f not in ("--force-reinstall", "--no-deps", "-U", "--upgrade")]
    exact = _exact(req)
    release = None if name not in tables else companion_release(tables[name], torch.release)
    if exact is None and release is None:
        # No release known for this torch: pin torch as it is and let the resolver pick the companion whose own
        # torch pin it meets.
        return _command(parsed.head, flags, (f"{TORCH}=={torch.text}", req.name), torch)
    pinned = _pin(req.name, exact or (release or ""), torch)
    if installed is not None:
        flags.append("--no-deps")  # its requirements are there; without them the resolver cannot move torch
        if _satisfied(installed, pinned):
            flags.append("--force-reinstall")  # the pin is met already: only a reinstall changes the build
    return _command(parsed.head, flags, (pinned,), torch)


def _target(parsed: PipInstall, torch: TorchVariant) -> TorchVariant:
    """The variant a torch change installs: the installed one, unless the command names another PyTorch index
    (a finding whose fix is another build, such as a CUDA torch for a GPU the CPU build cannot use)."""
    urls = [parsed.index[i + 1] for i in range(0, len(parsed.index), 2) if parsed.index[i] in ("-i", "--index-url")]
    if not urls or (torch.index is not None and urls[-1].rstrip("/") == torch.index.rstrip("/")):
        return torch
    tag = urls[-1].rstrip("/").rsplit("/", 1)[-1]
    if _variant_index(tag) != urls[-1].rstrip("/"):
        return torch  # not a PyTorch variant index (PyPI, a private index): the variant stays
    from envcheck.remedy.commands.install_parts import TorchVariant

    return TorchVariant(torch.text, torch.release, tag, urls[-1].rstrip("/"))


def _variant_index(tag: str) -> str:
    return pytorch_index(tag).rstrip("/")


def _unmet(facts: Facts, name: str) -> list[str]:
    """The requirements of the installed `name` (outside extras, markers evaluated here) that what is installed
    does not meet, each as a command line states it (a marker that holds is dropped)."""
    dist = facts.active(name)
    if dist is None:
        return []
    env = marker_env(facts)
    out = []
    for line in dist.requires:
        req = parse_requirement(line)
        if req is None or (req.marker is not None and marker_holds(req.marker, env) is not True):
            continue
        target = facts.active(req.name)
        version = None if target is None else parse_version(target.version)
        if target is None and not facts.absence_known(req.name):
            continue
        if version is None or not req.specifier.contains(version, prereleases=True):
            out.append(_without_marker(req, facts))
    return out


def _torch_step(parsed: PipInstall, req: Requirement, named: Sequence[Requirement], facts: Facts,
                tables: Mapping[str, Companion], torch: TorchVariant) -> tuple[tuple[str, ...], ...]:
    """torch is the problem: change it within its variant (or to the one the command names), and move the
    installed companions, and those the command names, with it in the same command. A reinstall of the same
    torch with its dependencies installs the unmet ones first and then torch alone."""
    target = _target(parsed, torch)
    exact = _exact(req)
    if exact is not None:
        wanted = [_pin(TORCH, exact, target)]
    else:
        bare = Requirement(str(req))
        bare.marker = None
        wanted = [str(bare)]
    new = parse_version(exact) if exact is not None else None
    moving = new is None or new.public != torch.release.public or target is not torch
    asked: dict[str, Requirement] = {canonical_name(r.name): r for r in named}
    if moving:
        for name in sorted({*_companions_of(facts, tables), *asked}):
            pinned = _exact(asked[name]) if name in asked else None
            release = pinned or (None if new is None or name not in tables
                                 else companion_release(tables[name], Version(new.base_version)))
            wanted.append(name if release is None else _pin(name, release, target))
    flags = parsed.flags
    if moving:  # a reinstall of the same torch (`--no-deps`, `--force-reinstall`) keeps its flags; a move does not
        flags = tuple(f for f in flags if f not in ("--no-deps", "--force-reinstall"))
    elif "--force-reinstall" in flags and "--no-deps" not in flags:
        unmet = _unmet(facts, TORCH)
        if unmet:  # those are the repair; the rest of torch's dependencies are not downloaded again
            plain = tuple(f for f in flags if f != "--force-reinstall")
            return ((*parsed.head, *plain, *unmet),
                    _command(parsed.head, (*flags, "--no-deps"), wanted, target))
    return (_command(parsed.head, flags, wanted, target),)


def _fresh(parsed: PipInstall, ours: Sequence[Requirement], facts: Facts,
           matrix: tb.BuildMatrix) -> tuple[str, ...] | None:
    """torch is not installed: the command that installs it as `envcheck recommend` would, within the command's
    requirement on torch, with the companions it names pinned to the releases made for that torch; None when
    that cannot be told (no NVML answer, a platform or Python the matrix lacks, no release in range)."""
    from envcheck.derived import builds  # only a command that installs a missing torch needs the build matrix

    machine = builds.machine_of(facts)
    if machine is None or parsed.index:
        return None
    torch_req = next((r for r in ours if canonical_name(r.name) == TORCH), None)
    within = torch_req.specifier if torch_req is not None and torch_req.specifier else None
    names = tuple(dict.fromkeys((*machine.companions, *(canonical_name(r.name) for r in ours
                                                        if canonical_name(r.name) in builds.MOVES_WITH_TORCH))))
    rec = builds.recommend(matrix, replace(machine, companions=names), within)
    if rec.choice is None or not rec.requirements:
        return None
    pinned = {canonical_name(r.split("==")[0]) for r in rec.requirements}
    unpinned = [r.name for r in ours if canonical_name(r.name) not in pinned]  # the matrix names no release
    return (*parsed.head, *parsed.flags, *rec.requirements, *unpinned, "--index-url", rec.index_url)


def plan_command(argv: Sequence[str], facts: Facts, tables: Mapping[str, Companion],
                 item: Mapping[str, str] | None = None, matrix: tb.BuildMatrix | None = None,
                 ) -> tuple[tuple[str, ...], ...]:
    """The commands that carry out `argv` for this environment (see the module docstring). `matrix`: the build
    matrix, for a torch that is not installed (without it such a command is left as it is)."""
    python = facts.python.executable
    parsed = _parse(argv, python)
    if parsed is None or parsed.others:
        return (tuple(argv),)
    family = {TORCH, *tables}
    ours = [r for r in parsed.reqs if canonical_name(r.name) in family]
    rest = [r for r in parsed.reqs if canonical_name(r.name) not in family]
    torch = _torch(facts)
    fresh = None if torch is not None or not ours or matrix is None else _fresh(parsed, ours, facts, matrix)
    out: list[tuple[str, ...]] = []
    if rest or (torch is None and fresh is None) or not ours:
        reqs = [_without_marker(r, facts) for r in (parsed.reqs if torch is None and fresh is None else rest)]
        out.append((*parsed.head, *parsed.flags, *reqs, *parsed.index))
    if torch is None:
        return tuple(out) if fresh is None else (*out, fresh)
    requirer = canonical_name((item or {}).get("package", ""))
    torch_req = next((r for r in ours if canonical_name(r.name) == TORCH), None)
    named = [r for r in ours if canonical_name(r.name) != TORCH]
    if torch_req is not None and requirer not in tables:
        out += _torch_step(parsed, torch_req, named, facts, tables, torch)
        return tuple(dict.fromkeys(out))
    if torch_req is not None:  # a companion's pin on torch: the companion is what is wrong, never torch
        named = [*named, Requirement(requirer)]
    for req in named:
        out.append(_companion_step(parsed, req, facts, tables, torch))
    return tuple(dict.fromkeys(out))


def plan_commands(argvs: Iterable[Sequence[str]], facts: Facts, tables: Mapping[str, Companion],
                  item: Mapping[str, str] | None = None, matrix: tb.BuildMatrix | None = None,
                  ) -> tuple[tuple[str, ...], ...]:
    """Every command of a finding, planned (see `plan_command`), in order, each once."""
    out: list[tuple[str, ...]] = []
    for argv in argvs:  # a command a rule repeats on purpose (EC0103's two uninstalls) stays repeated
        out += plan_command(argv, facts, tables, item, matrix)
    return tuple(out)

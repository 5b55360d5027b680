"""From what a report's text says (envcheck/sources/reports/prose/) to one `Found`: per fact, the heaviest statements
decide, and when they disagree the fact stays unknown and a problem names the lines.

Versions agree when one extends the other ("2.1" and "2.1.2+cu121": the longer is taken). A torch version with a
local build ("+cu121") states its CUDA build, which no other statement overrides. WSL2 named anywhere makes Windows
the host rather than the platform. Every fact keeps the line it was read from (`Found.at`), and the Found's `where`
lists what was read, line by line, in words the report's reader can check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from envcheck.derived import amd_gpus, nvidia_gpus
from envcheck.sources.reports.found import Found, Gpu, Package, cuda_of_local_version
from envcheck.sources.reports.prose.said import GpuSaid, Said
from envcheck.sources.reports.prose.words import Platform, torch_version_of

__all__ = ["found_of"]

_MAX_LISTED = 12  # facts named in `where`; more are counted
_MAX_NOTES = 4


def _parts(version: str) -> list[str]:
    return version.replace("+", ".").split(".")


def _agree(a: str, b: str) -> bool:
    pa, pb = _parts(a), _parts(b)
    shorter = min(len(pa), len(pb))
    return pa[:shorter] == pb[:shorter]


def _decide(said: Sequence[Said], agree: Callable[[Any, Any], bool], what: str,
            problems: list[str]) -> Said | None:
    """The statement that decides a fact: among the heaviest, the most precise when they all agree; None (and a
    problem) when they disagree."""
    if not said:
        return None
    top = max(s.tier for s in said)
    heaviest = [s for s in said if s.tier == top]
    first = heaviest[0]
    for other in heaviest[1:]:
        if not agree(first.value, other.value):
            problems.append(f"the text states {what} differently (line {first.line}: {_text(first)}; line "
                            f"{other.line}: {_text(other)}): left unknown")
            return None
    return max(heaviest, key=lambda s: len(str(s.value)))


def _text(said: Said) -> str:
    value = said.value
    if isinstance(value, Platform):
        return value.label
    if said.fact in ("gpu", "amd_gpu"):
        return " + ".join(f"{g.name}" + (f" x{g.many}" if g.many > 1 else "") for g in value)
    if said.fact == "package":
        return f"{value[0]} {value[1]}"
    return str(value)


def _platforms_agree(a: Platform, b: Platform) -> bool:
    return a.platform == b.platform and (a.machine is None or b.machine is None or a.machine == b.machine)


def _gpus_agree(a: tuple[GpuSaid, ...], b: tuple[GpuSaid, ...]) -> bool:
    """The same GPUs, or names of one product ("Orin" and "Jetson Orin Nano"): the capabilities and counts agree."""
    table = nvidia_gpus.shipped()
    return {g.name for g in a} == {g.name for g in b} or [
        (nvidia_gpus.capability_of_name(table, g.name), g.many) for g in a] == [
        (nvidia_gpus.capability_of_name(table, g.name), g.many) for g in b]


def _amd_gpus_agree(a: tuple[GpuSaid, ...], b: tuple[GpuSaid, ...]) -> bool:
    """The same AMD GPUs, or names of one target ("RX 7900 XTX" and "RX 7900 XT"): the targets and counts agree."""
    return [(_gfx(g.name), g.many) for g in a] == [(_gfx(g.name), g.many) for g in b]


def _gfx(name: str) -> str | None:
    found = amd_gpus.lookup(amd_gpus.shipped(), name)
    return None if found is None else found[1]


def found_of(said: Sequence[Said], cut: int | None = None) -> Found | None:
    """The Found the statements make; None when they decide nothing. `cut`: the line at which reading stopped
    (too many statements)."""
    problems: list[str] = [] if cut is None else [
        f"the text states more than {len(said)} facts; what it states from line {cut} on was not read"]
    by_fact: dict[str, list[Said]] = {}
    for s in said:
        key = f"package:{s.value[0]}" if s.fact == "package" else s.fact
        by_fact.setdefault(key, []).append(s._replace(value=torch_version_of(s.value)) if key == "torch" else s)
    if any(s.value.wsl for s in by_fact.get("platform", ())):
        by_fact["platform"] = [s for s in by_fact["platform"] if s.value.platform != "win32"]
    chosen: dict[str, Said] = {}
    for key, group in by_fact.items():
        if key == "note":
            continue
        agree: Callable[[Any, Any], bool] = (
            _platforms_agree if key == "platform" else _gpus_agree if key == "gpu"
            else _amd_gpus_agree if key == "amd_gpu"
            else (lambda a, b: _agree(a[1], b[1])) if key.startswith("package:") else
            (lambda a, b: a == b) if key in ("machine", "libc") else _agree)
        decided = _decide(group, agree, _what(key), problems)
        if decided is not None and key == "platform":
            decided = _merged(decided, [s for s in group if s.tier == decided.tier])
        if decided is not None:
            chosen[key] = decided
    return _found(chosen, by_fact.get("note", []), problems)


def _merged(decided: Said, agreeing: list[Said]) -> Said:
    """One platform from statements that agree: "Jetson" says aarch64, "Ubuntu 20.04" says glibc 2.31."""
    values: list[Platform] = [s.value for s in agreeing]
    machine = next((v.machine for v in values if v.machine), None)
    libc = next((v.libc for v in values if v.libc), None)
    label = ", ".join(dict.fromkeys(v.label for v in values))
    merged = Platform(decided.value.platform, machine, libc, label, any(v.wsl for v in values))
    return decided._replace(value=merged)


def _what(key: str) -> str:
    names = {"torch": "torch's version", "torch_cuda": "torch's CUDA build", "torch_hip": "torch's ROCm build",
             "python": "the Python version", "driver": "the driver version", "driver_cuda": "the driver's CUDA",
             "gpu": "the GPUs", "amd_gpu": "the AMD GPUs", "platform": "the OS", "machine": "the architecture",
             "libc": "the glibc version"}
    return names.get(key, f"{key.partition(':')[2]}'s version")


def _found(chosen: dict[str, Said], notes: list[Said], problems: list[str]) -> Found | None:
    at: dict[str, Said] = {}
    torch = chosen.get("torch")
    cuda, hip = chosen.get("torch_cuda"), chosen.get("torch_hip")
    rocm = hip is not None
    if torch is not None:
        at["torch_version"] = torch
        local = cuda_of_local_version(torch.value)
        if local is not None:  # the version's own build decides: "+cu121" is CUDA 12.1 whatever else is said
            cuda = hip = None
            rocm = local[1] is not None
    # AMD GPUs by gfx target are what the ROCm facts describe, and only a ROCm torch's (as collect_env states them):
    # named beside a CUDA or CPU torch, or one whose build is not stated, they are left out.
    if rocm and "amd_gpu" in chosen:
        at["amd_gpus"] = chosen["amd_gpu"]
    for field, said in (("torch_cuda", cuda), ("torch_hip", hip), ("python_version", chosen.get("python")),
                        ("driver_version", chosen.get("driver")), ("cuda_driver_version", chosen.get("driver_cuda")),
                        ("gpus", chosen.get("gpu"))):
        if said is not None:
            at[field] = said
    platform: Said | None = chosen.get("platform")
    machine, libc = chosen.get("machine"), chosen.get("libc")
    if platform is not None:
        at["sys_platform"] = platform
        if platform.value.machine is not None and machine is None:
            machine = platform
        if platform.value.libc is not None and libc is None and platform.value.platform == "linux":
            libc = platform
    if machine is not None:
        at["machine"] = machine
    if libc is not None:
        at["libc"] = libc
    packages = tuple(Package(s.value[0], s.value[1]) for k, s in chosen.items() if k.startswith("package:"))
    if not at and not packages:
        return None
    value = {field: s.value for field, s in at.items()}
    where_of = {field: f"prose, line {s.line}" for field, s in at.items()}
    where_of.update({f"package:{p.name}": f"prose, line {chosen['package:' + p.name].line}" for p in packages})
    return Found(
        fmt="prose", where=_where(at, packages, chosen, notes), packages=packages,
        torch_version=value.get("torch_version"), torch_cuda=value.get("torch_cuda"),
        torch_hip=value.get("torch_hip"), python_version=value.get("python_version"),
        sys_platform=platform.value.platform if platform is not None else None,
        machine=_machine(machine), libc=_libc(libc),
        driver_version=value.get("driver_version"), cuda_driver_version=value.get("cuda_driver_version"),
        gpus=None if "gpus" not in value else tuple(Gpu(name=g.name) for g in value["gpus"] for _ in range(g.many)),
        amd_gpus=None if "amd_gpus" not in value else tuple(
            _gfx(g.name) or "" for g in value["amd_gpus"] for _ in range(g.many)),
        problems=tuple(problems), at=tuple(sorted(where_of.items())))


def _machine(said: Said | None) -> str | None:
    if said is None:
        return None
    value = said.value
    return value.machine if isinstance(value, Platform) else str(value)


def _libc(said: Said | None) -> tuple[str, str] | None:
    if said is None:
        return None
    value = said.value
    return value.libc if isinstance(value, Platform) else (str(value[0]), str(value[1]))


def _where(at: dict[str, Said], packages: tuple[Package, ...], chosen: dict[str, Said], notes: list[Said]) -> str:
    """"prose (line 4: torch 2.5.1+cu121; line 6: GPU RTX 4090 x2; ...)": what was read, by line."""
    labels: list[tuple[int, str]] = []
    for field, said in at.items():
        if field in ("machine", "libc") and isinstance(said.value, Platform):
            continue
        labels.append((said.line, _label(field, said)))
    labels += [(chosen[f"package:{p.name}"].line, f"{p.name} {p.version}") for p in packages]
    seen = dict.fromkeys(s.value for s in notes)
    labels += [(next(s.line for s in notes if s.value == note), note) for note in list(seen)[:_MAX_NOTES]]
    labels.sort()
    shown = "; ".join(f"line {line}: {label}" for line, label in labels[:_MAX_LISTED])
    more = len(labels) - _MAX_LISTED
    return f"prose ({shown}{f'; and {more} more' if more > 0 else ''})"


def _label(field: str, said: Said) -> str:
    value = said.value
    if isinstance(value, Platform):
        details = [d for d in (value.machine, None if value.libc is None else f"glibc {value.libc[1]}") if d]
        return f"{value.label} ({', '.join([value.platform, *details])})"
    words = {"torch_version": "torch {}", "torch_cuda": "torch CUDA build {}", "torch_hip": "torch ROCm build {}",
             "python_version": "Python {}", "driver_version": "driver {}", "cuda_driver_version": "driver's CUDA {}",
             "machine": "{}", "libc": "glibc {}"}
    if field == "gpus":
        return "GPU " + _text(said)
    if field == "amd_gpus":
        return "GPU " + " + ".join(f"{g.name} ({_gfx(g.name)})" + (f" x{g.many}" if g.many > 1 else "") for g in value)
    if field == "libc":
        return f"glibc {value[1]}"
    return words.get(field, "{}").format(value)

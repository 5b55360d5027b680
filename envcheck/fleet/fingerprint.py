"""What makes two machines "the same environment": a flat view of the facts, and a digest of it.

The view maps a key ("torch", "driver", "package:numpy", "env:NCCL_DEBUG", "probe:sdpa/cpu/...") to a value in
words. It holds every fact a rule can read, except what differs between otherwise identical machines by nature:
host names, paths (interpreter, prefixes, working directory, package locations), GPU UUIDs and PCI bus ids, probe
timings, and PATH. Two nodes with equal views get equal verdicts, so the rule pack is evaluated once per distinct
view (a group), and the keys whose values differ between groups are the fleet's differences table.

Pure: no I/O. docs/fleet.md lists the keys.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from typing import Any

from envcheck.facts.gpu_device import GpuDevice
from envcheck.facts.gpus import NvmlFacts
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.snapshot import Distribution, Facts, TorchBuild

# PATH holds per-user and per-job entries (module systems, job-local tool folders) and says nothing about torch
# that the distributions and the interpreter do not; the probe cache leaves it out for the same reason.
IGNORED_ENV = frozenset({"PATH"})
# torch-build probe details that matter across machines (what NCCL, cuDNN and GPU code torch ships and sees).
_BUILD_DETAILS = ("cuda_available", "cuda_compiled_version", "cudnn_version", "nccl_version", "cxx11_abi",
                  "arch_list")

# Sections, in the order the differences table shows them; a key's section is its prefix up to ":" or ".".
_SECTION_ORDER = ("envcheck", "python", "platform", "torch", "nvml", "driver", "gpus", "probe", "package", "module",
                  "source", "partial-installs", "env")
# What a key absent from one view means, by section (a package that is not installed, an unset variable...).
ABSENT = {"package": "not installed", "env": "unset", "module": "not looked up", "source": "not looked up",
          "probe": "not run", "torch": "-", "driver": "-", "gpus": "none"}


def section(key: str) -> str:
    for sep in (":", "."):
        head, found, _ = key.partition(sep)
        if found:
            return head
    return key


def sort_key(key: str) -> tuple[int, str]:
    name = section(key)
    rank = _SECTION_ORDER.index(name) if name in _SECTION_ORDER else len(_SECTION_ORDER)
    return rank, key


def absent_value(key: str) -> str:
    return ABSENT.get(section(key), "-")


def view(facts: Facts) -> dict[str, str]:
    """The comparable facts of one environment: key -> value in words (see the module docstring)."""
    py = facts.python
    out: dict[str, str] = {"envcheck": facts.envcheck_version or "?"}
    out["python"] = f"{py.version} ({py.implementation})"
    out["python.environment"] = ", ".join(
        name for name, on in (("venv", py.virtualenv), ("conda", py.conda), ("externally managed",
                              py.externally_managed), ("user site", py.user_site is not None)) if on) or "system"
    for key, value in sorted(py.marker_environment.items()):
        out[f"python.marker.{key}"] = value
    libc = py.libc
    out["platform"] = f"{py.system} {py.machine}" + (f" {libc['name']} {libc['version']}" if libc else "")
    out["platform.kernel"] = py.release
    _torch(facts.torch, out)
    _nvml(facts.nvml, out)
    for name, result in sorted(facts.probes.items()):
        _probe(name, result, out)
    for name, version in sorted(packages(facts.distributions).items()):
        out[f"package:{name}"] = version
    for name, module in sorted(facts.modules.items()):
        out[f"module:{name}"] = "unknown" if module.error else ("found" if module.found else "not found")
    for file, source in sorted(facts.sources.items()):
        if source.error or source.path is None:
            out[f"source:{file}"] = "unreadable" if source.error else "no such file"
            continue
        for pattern, hit in sorted(source.matches.items()):
            out[f"source:{file}:{pattern}"] = "matches" if hit else "no match"
    if facts.partial_installs:
        out["partial-installs"] = ", ".join(sorted(facts.partial_installs))
    for name, value in sorted(facts.env.items()):
        if name not in IGNORED_ENV:
            out[f"env:{name}"] = value
    return out


def packages(distributions: tuple[Distribution, ...]) -> dict[str, str]:
    """Canonical name -> its versions in words: every install, the imported one first, and how each is odd."""
    found: dict[str, str] = {}
    first_location: dict[str, str] = {}
    for d in distributions:  # the hot loop of `fleet merge`: hundreds per snapshot, kept plain
        version = d.version
        if d.editable:
            version += " (editable)"
        if d.problems:
            version += " (broken metadata)"
        name = d.canonical_name
        if name not in found:
            found[name] = version
            first_location[name] = d.location
        else:  # a second install: whether it is in another folder decides the duplicate-install rules
            where = "" if d.location == first_location[name] else " (another folder)"
            found[name] = f"{found[name]}, {version}{where}"
    return found


def torch_version(torch: TorchBuild | None) -> str:
    """"2.6.0+cu124", "not installed", or why version.py could not be read."""
    if torch is None:
        return "not installed"
    return torch.version or f"unreadable ({torch.problem or 'no version'})"


def torch_build(torch: TorchBuild) -> str:
    """"CUDA 12.4", "ROCm 6.2" or "CPU"."""
    return f"CUDA {torch.cuda}" if torch.cuda else f"ROCm {torch.hip}" if torch.hip else "CPU"


def _torch(torch: TorchBuild | None, out: dict[str, str]) -> None:
    out["torch"] = torch_version(torch)
    if torch is None:
        return
    out["torch.build"] = torch_build(torch)
    out["torch.git_version"] = (torch.git_version or "-")[:12]  # a commit: 12 hex digits tell them apart
    if torch.debug is True:
        out["torch.debug"] = "debug build"


def _nvml(nvml: NvmlFacts | None, out: dict[str, str]) -> None:
    if nvml is None:
        out["nvml"] = "not collected"
        return
    out["nvml"] = nvml.status
    if nvml.driver_version:
        out["driver"] = nvml.driver_version
    if nvml.cuda_driver_version:
        out["driver.cuda"] = nvml.cuda_driver_version
    models = Counter(gpu_model(d) for d in nvml.devices)
    if models:
        out["gpus"] = ", ".join(f"{n} x {m}" for m, n in sorted(models.items()))


def gpu_model(gpu: GpuDevice) -> str:
    """"NVIDIA H100 80GB HBM3 (9.0, 81559 MiB)": what makes two GPUs the same model for the fleet."""
    memory = "memory ?" if gpu.memory_total_mib is None else f"{gpu.memory_total_mib} MiB"
    extras = [gpu.compute_capability or "capability ?", memory]
    if gpu.mig_mode:
        extras.append("MIG")
    if gpu.error:
        extras.append("unreadable")
    return f"{gpu.name or 'unknown GPU'} ({', '.join(extras)})"


def _probe(name: str, result: ProbeResult, out: dict[str, str]) -> None:
    out[f"probe:{name}"] = _outcome(result.status, result.error_class, result.message)
    for case, data in sorted(result.cases.items()):
        out[f"probe:{name}/{case}"] = _outcome(str(data.get("status")), data.get("error_class"), data.get("message"))
    if name == "torch-build":
        for detail in _BUILD_DETAILS:
            if result.details.get(detail) is not None:
                out[f"probe:{name}.{detail}"] = _text(result.details[detail])


def _outcome(status: str, error_class: object, message: object) -> str:
    text = status
    if error_class:
        text += f" {error_class}"
    if message and status != "ok":
        text += f": {message}"
    return text


def _text(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(map(str, value))
    return str(value)


def fingerprint(view_: Mapping[str, str]) -> str:
    """A short digest of a view: equal exactly when the views are (collisions aside)."""
    # Length-prefixed pairs: unambiguous whatever the keys and values hold, and cheaper than a JSON text (this runs
    # once per snapshot in `fleet merge`).
    material = "".join(f"{len(k)}:{k}{len(v)}:{v}" for k, v in sorted(view_.items()))
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()[:16]

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

from envcheck.facts._collector import canonical_name
from envcheck.facts.snapshot import Facts

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
    return snapshot_view(facts.to_dict())


def snapshot_view(data: Mapping[str, Any]) -> dict[str, str]:
    """view() of a snapshot in its JSON form, without building Facts: `fleet merge` reads a thousand snapshots
    this way and builds Facts only for one snapshot per group. Raises KeyError, TypeError, AttributeError or
    ValueError on a malformed snapshot (the caller then reads it with Facts.from_dict for a precise error)."""
    out: dict[str, str] = {"envcheck": data.get("envcheck_version") or "?"}
    py = data["python"]
    out["python"] = f"{py['version']} ({py['implementation']})"
    out["python.environment"] = ", ".join(
        name for name, on in (("venv", py.get("virtualenv")), ("conda", py.get("conda")),
                              ("externally managed", py.get("externally_managed")),
                              ("user site", py.get("user_site") is not None)) if on is True) or "system"
    for key, value in sorted(py["marker_environment"].items()):
        out[f"python.marker.{key}"] = _str(value)
    libc = py.get("libc")
    out["platform"] = f"{py['system']} {py['machine']}" + (f" {libc['name']} {libc['version']}" if libc else "")
    out["platform.kernel"] = _str(py["release"])
    _torch(data.get("torch"), out)
    _nvml(data.get("nvml"), out)
    for name, result in sorted((data.get("probes") or {}).items()):
        _probe(name, result, out)
    packages: dict[str, str] = {}
    first_location: dict[str, object] = {}
    for d in data["distributions"]:  # the hot loop of `fleet merge`: hundreds per snapshot, kept plain
        name = d.get("canonical_name") or canonical_name(d["name"])
        version = d["version"]
        if not isinstance(version, str):
            raise TypeError(f"distribution {name}: version is not a string")
        if d.get("editable") is True:
            version += " (editable)"
        if d.get("problems"):
            version += " (broken metadata)"
        if name not in packages:
            packages[name] = version
            first_location[name] = d.get("location")
        else:  # a second install: whether it is in another folder decides the duplicate-install rules
            where = "" if d.get("location") == first_location[name] else " (another folder)"
            packages[name] = f"{packages[name]}, {version}{where}"
    for name in sorted(packages):
        out[f"package:{name}"] = packages[name]
    for name, module in sorted((data.get("modules") or {}).items()):
        out[f"module:{name}"] = "unknown" if module.get("error") else (
            "found" if module.get("found") is True else "not found")
    for file, source in sorted((data.get("sources") or {}).items()):
        if source.get("error") or source.get("path") is None:
            out[f"source:{file}"] = "unreadable" if source.get("error") else "no such file"
            continue
        for pattern, hit in sorted((source.get("matches") or {}).items()):
            out[f"source:{file}:{pattern}"] = "matches" if hit is True else "no match"
    if data.get("partial_installs"):
        out["partial-installs"] = ", ".join(sorted(map(_str, data["partial_installs"])))
    for name, value in sorted((data.get("env") or {}).items()):
        if name not in IGNORED_ENV:
            out[f"env:{name}"] = _str(value)
    return out


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _torch(torch: Mapping[str, Any] | None, out: dict[str, str]) -> None:
    if torch is None:
        out["torch"] = "not installed"
        return
    out["torch"] = torch.get("version") or f"unreadable ({torch.get('problem') or 'no version'})"
    cuda, hip = torch.get("cuda"), torch.get("hip")
    out["torch.build"] = f"CUDA {cuda}" if cuda else f"ROCm {hip}" if hip else "CPU"
    out["torch.git_version"] = (torch.get("git_version") or "-")[:12]  # a commit: 12 hex digits tell them apart
    if torch.get("debug") is True:
        out["torch.debug"] = "debug build"


def _nvml(nvml: Mapping[str, Any] | None, out: dict[str, str]) -> None:
    if nvml is None:
        out["nvml"] = "not collected"
        return
    out["nvml"] = _str(nvml["status"])
    if nvml.get("driver_version"):
        out["driver"] = nvml["driver_version"]
    if nvml.get("cuda_driver_version"):
        out["driver.cuda"] = nvml["cuda_driver_version"]
    models = Counter(gpu_model(d.get("name"), d.get("compute_capability"), d.get("memory_total_mib"),
                               d.get("mig_mode"), d.get("error")) for d in nvml.get("devices") or ())
    if models:
        out["gpus"] = ", ".join(f"{n} x {m}" for m, n in sorted(models.items()))


def gpu_model(name: str | None, capability: str | None, memory_mib: object, mig: object, error: str | None) -> str:
    """"NVIDIA H100 80GB HBM3 (9.0, 81559 MiB)": what makes two GPUs the same model for the fleet."""
    memory = f"{memory_mib} MiB" if isinstance(memory_mib, int) and not isinstance(memory_mib, bool) else "memory ?"
    extras = [capability or "capability ?", memory]
    if mig is True:
        extras.append("MIG")
    if error:
        extras.append("unreadable")
    return f"{name or 'unknown GPU'} ({', '.join(extras)})"


def _probe(name: str, result: Mapping[str, Any], out: dict[str, str]) -> None:
    out[f"probe:{name}"] = _outcome(_str(result["status"]), result.get("error_class"), result.get("message"))
    for case, data in sorted((result.get("cases") or {}).items()):
        if isinstance(data, dict):  # as ProbeResult reads them
            out[f"probe:{name}/{case}"] = _outcome(str(data.get("status")), data.get("error_class"),
                                                   data.get("message"))
    if name == "torch-build":
        details = result.get("details") or {}
        for detail in _BUILD_DETAILS:
            if details.get(detail) is not None:
                out[f"probe:{name}.{detail}"] = _text(details[detail])


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

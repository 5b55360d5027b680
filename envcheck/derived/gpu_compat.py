"""GPU compatibility facts derived from NVML, torch's build and the torch-build probe: pure functions of Facts.

This module exports them as derived facts (`DERIVATIONS`). Tables (which driver a CUDA runtime needs) are data in
rules/data/cuda-driver.toml, read and validated with the rule pack (`parse_cuda_driver`), never constants here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from envcheck.derived import build_matrix
from envcheck.derived.common import Derivation, Item, Table, Values, of_facts, without_cuda_torch
from envcheck.errors import RuleError, check_table_head
from envcheck.facts.gpus import NvmlFacts
from envcheck.facts.snapshot import Facts
from envcheck.support.versions import major_minor, parse_version

NATIVE_BF16 = (8, 0)  # Ampere: bfloat16 tensor-core math; earlier GPUs emulate it (slowly) or kernels refuse it


@dataclass(frozen=True)
class CudaDriverTable:
    """rules/data/cuda-driver.toml, parsed."""

    # "linux" | "windows" -> CUDA major -> the oldest driver that runs every runtime of that major (NVIDIA's exact
    # floor, e.g. 525.60.13); a major absent on a platform has no minor version compatibility there (13.x, Windows).
    minor_compat_floor: dict[str, dict[int, Version]]
    toolkit_minimum: dict[str, dict[tuple[int, int], Version]]  # "linux" | "windows" -> (major, minor) -> driver


_PLATFORMS = ("linux", "windows")


def parse_cuda_driver(data: dict[str, Any], file: str) -> CudaDriverTable:
    """The table from its parsed TOML; anything malformed is a RuleError naming `file` and the key."""

    def versions(key: str, table: object) -> dict[str, Version]:
        if not isinstance(table, dict) or not table:
            raise RuleError(file, "expected a non-empty table", key=key)
        out = {}
        for name, value in table.items():
            try:
                out[name] = Version(value)
            except (InvalidVersion, TypeError):
                raise RuleError(file, f"expected a driver version, got {value!r}", key=f"{key}.{name}") from None
        return out

    check_table_head(data, file, ("minor-compatibility", "toolkit-minimum-driver"), schema=False)
    table = data.get("minor-compatibility")
    if not isinstance(table, dict) or not table:
        raise RuleError(file, "expected a non-empty table", key="minor-compatibility")
    floors: dict[str, dict[int, Version]] = {}
    for platform, by_major in table.items():
        if platform not in _PLATFORMS or not isinstance(by_major, dict):
            raise RuleError(file, "expected a CUDA major and a driver branch per platform, such as "
                            f"[minor-compatibility.linux] \"12\" = \"525.60.13\", got {platform!r} = {by_major!r}",
                            key=f"minor-compatibility.{platform}")
        floors[platform] = {}
        for name, version in versions(f"minor-compatibility.{platform}", by_major).items():
            if not name.isdigit():
                raise RuleError(file, "expected a CUDA major such as \"12\"",
                                key=f"minor-compatibility.{platform}.{name}")
            floors[platform][int(name)] = version
    if "linux" not in floors:
        raise RuleError(file, "expected a table of floors for linux", key="minor-compatibility.linux")
    floors.setdefault("windows", {})
    minimums: dict[str, dict[tuple[int, int], Version]] = {}
    toolkits = data.get("toolkit-minimum-driver")
    for platform in _PLATFORMS:
        key = f"toolkit-minimum-driver.{platform}"
        parsed = versions(key, toolkits.get(platform) if isinstance(toolkits, dict) else None)
        minimums[platform] = {}
        for name, version in parsed.items():
            release = major_minor(name)
            if release is None:
                raise RuleError(file, "expected a CUDA release such as \"12.4\"", key=f"{key}.{name}")
            minimums[platform][release] = version
    return CudaDriverTable(floors, minimums)


def driver_vs_torch_cuda(facts: Facts, table: CudaDriverTable) -> str | None:
    """"ok", "minor-compat", "too-old" or "n/a" (no CUDA torch, or no driver); None when it cannot be told. Where
    the platform is not stated (a report), the answer is the one Linux's and Windows' driver tables agree on."""
    if without_cuda_torch(facts):
        return "n/a"  # it needs no NVIDIA driver
    runtime = major_minor(facts.torch.cuda if facts.torch is not None else None)
    nvml = facts.nvml
    if runtime is None or nvml is None:
        return None
    if nvml.status in ("no-driver", "driver-not-loaded"):
        return "n/a"  # no driver at all is another finding than an old one
    if facts.python.platform:
        return _driver_vs_runtime(nvml, table, runtime, "windows" if facts.python.platform == "win32" else "linux")
    answers = {_driver_vs_runtime(nvml, table, runtime, platform) for platform in _PLATFORMS}
    return answers.pop() if len(answers) == 1 else None


def _driver_vs_runtime(nvml: NvmlFacts, table: CudaDriverTable, runtime: tuple[int, int], platform: str) -> str | None:
    driver = parse_version(nvml.driver_version)
    supported = major_minor(nvml.cuda_driver_version)
    if supported is not None:
        if supported >= runtime:
            return "ok"
        if supported[0] != runtime[0]:
            return "too-old"  # minor version compatibility never crosses a major
    else:
        # NVML gave no CUDA version: the driver's own version against the toolkit's minimum driver.
        minimum = table.toolkit_minimum[platform].get(runtime)
        oldest = min(table.toolkit_minimum[platform], default=None)
        if minimum is None and driver is not None and oldest is not None and runtime < oldest \
                and driver >= table.toolkit_minimum[platform][oldest]:
            return "ok"  # a driver runs every older runtime: one that runs the table's oldest runs this one
        if driver is None or minimum is None:
            return None
        if driver >= minimum:
            return "ok"
        # Below the toolkit's minimum; a driver at or above the major's floor supports at least major.0.
    floors = table.minor_compat_floor[platform]
    floor = floors.get(runtime[0])
    if floor is None:
        known = [major for by_major in table.minor_compat_floor.values() for major in by_major]
        # Majors before the first floor had no minor version compatibility, nor has a major NVIDIA lists as N/A
        # on this platform (13.x on Windows); a major newer than any in the table is not known yet.
        return "too-old" if runtime[0] <= max(known) else None
    if driver is None:
        return None
    return "minor-compat" if driver >= floor else "too-old"


def devices_without_native_bf16(facts: Facts) -> list[Item] | None:
    """GPUs of compute capability below 8.0; None when NVML does not know the devices."""
    nvml = facts.nvml
    if nvml is None or not nvml.devices_known:
        return None
    out: list[Item] = []
    unknown = False
    for device in nvml.devices:
        if not device.accessible:
            continue  # NVML_ERROR_NO_PERMISSION: not this user's GPU (a cgroup-restricted node)
        capability = major_minor(device.compute_capability)
        if capability is None:
            unknown = True
        elif capability < NATIVE_BF16:
            out.append({"index": str(device.index), "name": device.name or "?",
                        "compute_capability": device.compute_capability or ""})
    # Some device without a capability might lack bf16 too: an empty answer would then be a guess.
    return None if unknown and not out else sorted(out, key=lambda i: int(i["index"]))


def _arch_list(facts: Facts) -> list[str] | None:
    probe = facts.probes.get("torch-build")
    archs: Any = None if probe is None else probe.details.get("arch_list")
    if isinstance(archs, str):
        archs = archs.split()
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
        return None
    return list(archs)


def arch_coverage(facts: Facts, table: CudaDriverTable | None = None) -> list[Item] | None:
    """Each GPU and how torch's compiled archs cover it; None without NVML devices or the probe's arch list.

    With the driver table, PTX counts only where the driver can JIT it: a driver that runs torch's CUDA only
    through minor version compatibility cannot compile PTX from the newer toolkit (CUDA compatibility guide), so
    such a GPU has no kernels ("none"), not "ptx-jit".
    """
    if without_cuda_torch(facts):
        return []  # no CUDA kernels to cover any GPU with
    nvml = facts.nvml
    archs = _arch_list(facts)
    if nvml is None or not nvml.devices_known or archs is None:
        return None
    jit_ok = table is None or driver_vs_torch_cuda(facts, table) != "minor-compat"
    out = []
    for device in nvml.devices:
        if not device.accessible:
            continue  # a GPU this user may not open runs none of its kernels, and judging it would be a guess
        capability = major_minor(device.compute_capability)
        covered = "unknown" if capability is None else build_matrix.coverage(archs, capability)
        if covered == "ptx-jit" and not jit_ok:
            covered = "none"
        out.append({
            "index": str(device.index), "name": device.name or "?",
            "compute_capability": device.compute_capability or "",
            "coverage": covered,
            "build_archs": " ".join(archs),
        })
    return sorted(out, key=lambda i: int(i["index"]))


# rules/data/cuda-driver.toml, as the derivations read it (`tables[CUDA_DRIVER]`).
CUDA_DRIVER = Table("cuda-driver", parse_cuda_driver)


def _driver_vs_torch_cuda(derived: Values) -> Any:
    return driver_vs_torch_cuda(derived.facts, derived.tables[CUDA_DRIVER])


_GPU_FIELDS = ("index", "name", "compute_capability")

DERIVATIONS: list[Derivation] = [
    Derivation("gpu.driver-vs-torch-cuda",
               "`\"ok\"` (the driver supports torch's CUDA runtime), `\"minor-compat\"` (it runs only through "
               "CUDA minor version compatibility: same major, driver at or above the major's floor, 450.80.02 / "
               "525.60.13 / 580 on Linux and 452.39 / 527.41 / none on Windows for CUDA 11 / 12 / 13; "
               "features of the newer minor and PTX JIT need a newer "
               "driver), `\"too-old\"`, or `\"n/a\"` (no torch, a CPU or ROCm build, or no driver installed). "
               "Unknown when NVML could not read the driver or `torch/version.py` is unreadable. The floors "
               "and each toolkit's minimum driver are data: `rules/data/cuda-driver.toml`", (),
               _driver_vs_torch_cuda),
    Derivation("gpu.devices-without-native-bf16",
               "GPUs of compute capability below 8.0 (no native bfloat16): `index`, `name`, "
               "`compute_capability`. Unknown when NVML could not list the GPUs",
               _GPU_FIELDS, of_facts(devices_without_native_bf16)),
]

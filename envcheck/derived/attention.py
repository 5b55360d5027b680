"""Attention kernels as the sdpa probe saw them: pure functions of Facts, exported as
derived facts (`DERIVATIONS`).

The probe's backend matrix runs scaled_dot_product_attention on every CUDA device with one backend allowed at a
time (case `cuda:N/backend=flash,dtype=float16`, see docs/probes.md). A case can raise for reasons that have
nothing to do with the kernel (out of memory, a GPU busy in exclusive-process mode, "no kernel image", a sticky
error of an earlier case), so only torch's own refusal counts: `can_use_flash_attention` said False, or, where
torch has no such API (2.0, 2.1), the same device ran the math backend fine with the same inputs.
"""

from __future__ import annotations

import re
from typing import Any

from envcheck.derived.common import Derivation, Item, of_facts
from envcheck.facts.snapshot import Facts
from envcheck.support.patterns import lazy

_FLASH_CASE = lazy(r"cuda:(\d+)/backend=flash,dtype=float16")
# torch's preamble lines, which say that a kernel was not used but not why, and lines about other backends:
# select_sdp_backend warns about the memory-efficient kernel first ("... has been runtime disabled").
_PREAMBLE = lazy(r"kernel not used because|No available kernel|^Memory efficient kernel not used|"
                 r"has been runtime disabled", re.I)
_FLASH_HEADER = "Flash attention kernel not used because"
_TRIGGERED = lazy(r"\s*\(Triggered internally at [^)]*\)\s*$")


def _device_names(facts: Facts) -> dict[int, dict[str, Any]]:
    """CUDA index -> the torch-build probe's description of that device (name, capability)."""
    build = facts.probes.get("torch-build")
    devices = build.details.get("devices") if build is not None else None
    out: dict[int, dict[str, Any]] = {}
    for device in devices if isinstance(devices, list) else []:
        if isinstance(device, dict) and isinstance(device.get("index"), int):
            out[device["index"]] = device
    return out


def _reason(case: dict[str, Any]) -> str:
    """torch's most specific explanation: can_use's first reason that says why, else the first such line of the
    SDPA call's warnings after torch's "Flash attention kernel not used because" header, else the error itself."""
    for key in ("reasons", "warnings"):
        lines = [_TRIGGERED.sub("", str(line).removeprefix("UserWarning: ")).strip() for line in case.get(key) or []]
        if key == "warnings":
            # Only what follows the flash header is about flash; before it come the other backends' warnings.
            header = next((i for i, line in enumerate(lines) if _FLASH_HEADER.lower() in line.lower()), None)
            lines = [] if header is None else lines[header + 1:]
        for line in lines:
            if line and not _PREAMBLE.search(line):
                return line
    return str(case.get("message") or "no reason given")


def _refused(cases: dict[str, dict[str, Any]], index: int, case: dict[str, Any]) -> bool:
    """Whether the flash case's error is torch refusing the flash kernel, not some other failure of the case."""
    if case.get("status") != "error":
        return False
    can_use = case.get("can_use")
    if can_use is not None:
        return can_use is False
    math = cases.get(f"cuda:{index}/backend=math,dtype=float16") or {}
    return math.get("status") == "ok"


def _bare_uuid(uuid: object) -> str | None:
    """A UUID without the "GPU-" / "MIG-" prefix NVML writes and torch does not, lower case."""
    if not isinstance(uuid, str) or not uuid:
        return None
    for prefix in ("GPU-", "MIG-"):
        uuid = uuid.removeprefix(prefix)
    return uuid.lower()


def nvml_device_of(facts: Facts, torch_uuid: object) -> Any:
    """The NVML GPU a probe's device is, matched by UUID (CUDA's numbering need not be NVML's): the GPU itself,
    or the parent of a MIG instance; None when no UUID matches."""
    wanted = _bare_uuid(torch_uuid)
    if wanted is None or facts.nvml is None:
        return None
    for device in facts.nvml.devices:
        if _bare_uuid(device.uuid) == wanted or wanted in (_bare_uuid(u) for u in device.mig_uuids):
            return device
    return None


def sdpa_flash_unavailable(facts: Facts) -> list[Item] | None:
    """CUDA devices on which SDPA's FlashAttention kernel did not run (fp16 inputs); None when the sdpa probe
    did not run to completion (--static, skipped, crashed, timed out)."""
    probe = facts.probes.get("sdpa")
    if probe is None or probe.status != "ok":
        return None
    names = _device_names(facts)
    out = []
    for case_name, case in probe.cases.items():
        match = _FLASH_CASE.fullmatch(case_name)
        if match is None or not _refused(probe.cases, int(match.group(1)), case):
            continue
        index = int(match.group(1))
        device = names.get(index, {})
        gpu = nvml_device_of(facts, device.get("uuid"))
        name = device.get("name") or (gpu.name if gpu is not None else None)
        capability = device.get("capability") or (gpu.compute_capability if gpu is not None else None)
        error = f"{case.get('error_class') or 'error'}: {case.get('message') or ''}".strip()
        out.append({
            "device": f"cuda:{index}", "name": str(name or "?"),
            "capability": str(capability or "?"), "error": error, "reason": _reason(case),
        })
    return sorted(out, key=lambda i: int(i["device"].split(":")[1]))


DERIVATIONS: list[Derivation] = [
    Derivation("attention.sdpa-flash-unavailable",
               "CUDA devices on which the `sdpa` probe's case `cuda:N/backend=flash,dtype=float16` raised: "
               "`device` (\"cuda:0\"), `name`, `capability` (from the `torch-build` probe, \"?\" without it), "
               "`error`, `reason` (torch's own explanation, e.g. `Flash attention only supports gpu "
               "architectures in the range [sm80, sm90]...`). Unknown when the probe did not run to completion",
               ("device", "name", "capability", "error", "reason"), of_facts(sdpa_flash_unavailable)),
]

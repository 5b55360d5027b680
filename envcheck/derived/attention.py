"""Attention kernels as the sdpa probe saw them: pure functions of Facts, registered in envcheck/derived/derive.py.

The probe's backend matrix runs scaled_dot_product_attention on every CUDA device with one backend allowed at a
time (case `cuda:N/backend=flash,dtype=float16`, see docs/probes.md); a case that raised means torch could not
use that kernel there, and its `reasons` / `warnings` hold torch's own explanation.
"""

from __future__ import annotations

import re
from typing import Any

from envcheck.derived.common import Item
from envcheck.facts.snapshot import Facts

_FLASH_CASE = re.compile(r"cuda:(\d+)/backend=flash,dtype=float16")
# torch's preamble lines, which say that a kernel was not used but not why.
_PREAMBLE = re.compile(r"kernel not used because|No available kernel|^Memory efficient kernel not used", re.I)


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
    """torch's most specific explanation: the first reason or warning that says why, else the error itself."""
    lines = [str(line) for key in ("reasons", "warnings") for line in (case.get(key) or [])]
    for line in lines:
        text = line.split(": ", 1)[1] if line.startswith("UserWarning: ") else line
        if text.strip() and not _PREAMBLE.search(text):
            return text.strip()
    return str(case.get("message") or "no reason given")


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
        if match is None or case.get("status") != "error":
            continue
        index = int(match.group(1))
        device = names.get(index, {})
        error = f"{case.get('error_class') or 'error'}: {case.get('message') or ''}".strip()
        out.append({
            "device": f"cuda:{index}", "name": str(device.get("name") or "?"),
            "capability": str(device.get("capability") or "?"), "error": error, "reason": _reason(case),
        })
    return sorted(out, key=lambda i: int(i["device"].split(":")[1]))

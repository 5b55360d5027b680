"""Facts for more than one GPU: NCCL's version, which devices CUDA_VISIBLE_DEVICES names, mixed GPU models.

NCCL comes with torch's CUDA wheels as an `nvidia-nccl-cu*` distribution (torch pins its version); the `torch-build`
probe asks the imported torch which NCCL it actually loaded (`torch.cuda.nccl.version()`), which differs from the
wheel when another libnccl.so.2 wins the loader's search (LD_LIBRARY_PATH, LD_PRELOAD, a system NCCL).

CUDA_VISIBLE_DEVICES is parsed the way the CUDA runtime does: comma-separated entries, each a device index, a GPU
UUID (or a unique prefix of one, `GPU-8f6b`), or a MIG instance (`MIG-...`); the runtime stops at the first entry
that names no device, so every GPU listed after it is hidden too. GPUs come from NVML, which lists every GPU of the
machine whatever the variable says; GPUs this user may not open (another job's, on a cgroup-restricted node) are
not counted, as CUDA does not enumerate them either.
This module exports them as derived facts (`DERIVATIONS`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from envcheck.derived.common import Derivation, Item, of_facts
from envcheck.facts.snapshot import Facts, canonical_name
from envcheck.support.patterns import lazy

if TYPE_CHECKING:
    from envcheck.facts.gpu_device import GpuDevice

# An empty value or a leading negative index hides every GPU: rules/environment.toml (EC0202) reports that, so the
# per-entry check leaves such values alone.
_HIDES_ALL = lazy(r"^\s*(-\d.*)?$")
VISIBLE_FIELDS = ("entry", "position", "reason", "visible", "indices")
NCCL_FIELDS = ("version", "source")


def _env_unknown(facts: Facts) -> bool:
    return "env" in facts.unknown


def visible_devices_missing(facts: Facts) -> list[Item] | None:
    """The entries of CUDA_VISIBLE_DEVICES that name no GPU of this machine, in order: an index at or beyond the
    number of GPUs, a `GPU-` UUID no GPU has, a `MIG-` instance where no GPU is in MIG mode, or text that is none of
    these. None when the environment or NVML's device list is unknown, or a GPU's UUID could not be read."""
    if _env_unknown(facts):
        return None
    value = facts.env.get("CUDA_VISIBLE_DEVICES")
    if value is None or _HIDES_ALL.match(value):
        return []
    nvml = facts.nvml
    if nvml is None or not nvml.devices_known:
        return None
    devices = nvml.accessible_devices
    mig = any(d.mig_mode for d in devices)
    out: list[Item] = []
    for position, raw in enumerate(value.split(","), start=1):
        entry = raw.strip()
        reason = _missing(entry, devices, mig)
        if reason is None:
            continue
        if reason == "?":
            return None
        count = len(devices)
        indices = f"0 to {count - 1}" if count > 1 else ("0" if count == 1 else "none")
        out.append({"entry": entry, "position": str(position), "reason": reason, "visible": str(count),
                    "indices": indices})
    return out


def _missing(entry: str, devices: tuple[GpuDevice, ...], mig: bool) -> str | None:
    """Why `entry` names no GPU, None when it names one, "?" when that cannot be told."""
    count = len(devices)
    if re.fullmatch(r"\d+", entry):
        if mig:
            return None  # CUDA's indices then count MIG instances, which NVML's GPU list does not show
        if int(entry) < count:
            return None
        there = f"indices 0 to {count - 1}" if count > 1 else ("index 0" if count == 1 else "none")
        return f"this machine has {count} GPU{'' if count == 1 else 's'} CUDA can use ({there})"
    if re.fullmatch(r"-\d+", entry):
        return "a negative index ends the list"
    lowered = entry.lower()
    if lowered.startswith("gpu-"):
        if any(d.uuid is None for d in devices):
            return "?"
        if any((d.uuid or "").lower().startswith(lowered) for d in devices):
            return None
        return "no GPU of this machine has a UUID that starts with it"
    if lowered.startswith("mig-"):
        if not mig:
            return "no GPU of this machine is in MIG mode"
        known = [u.lower() for d in devices for u in d.mig_uuids]
        if not known or any(u.startswith(lowered) for u in known):
            return None  # NVML listed no instances to compare with: not judged
        return "no MIG instance of this machine has that UUID"
    return "it is neither a device index, a GPU UUID nor a MIG instance"


def mixed_models(facts: Facts) -> list[Item] | None:
    """The GPU models of a machine that has more than one (an RTX 4090 beside an RTX 3060): `name`, `indices`
    (NVML's, in PCI bus order). Empty for one model; None when NVML could not list the GPUs."""
    nvml = facts.nvml
    if nvml is None or not nvml.devices_known:
        return None
    models: dict[str, list[str]] = {}
    for device in nvml.accessible_devices:
        models.setdefault(device.name or "?", []).append(str(device.index))
    if len(models) < 2:
        return []
    return [{"name": name, "indices": " ".join(indices)} for name, indices in sorted(models.items())]


def _nccl_wheel(facts: Facts) -> tuple[str, str] | None:
    """(name, version) of the nvidia-nccl-cu* wheel that the installed torch's CUDA major loads, or the only one."""
    wheels = {canonical_name(d.name): d.version for d in facts.distributions
              if canonical_name(d.name).startswith("nvidia-nccl-cu")}
    if not wheels:
        return None
    cuda = facts.torch.cuda if facts.torch is not None else None
    if cuda:
        wanted = f"nvidia-nccl-cu{cuda.split('.')[0]}"
        if wanted in wheels:
            return wanted, wheels[wanted]
    name = sorted(wheels)[0]
    return name, wheels[name]


def _probed_nccl(facts: Facts) -> str | None:
    probe = facts.probes.get("torch-build")
    if probe is None or probe.status != "ok":
        return None
    found = probe.details.get("nccl_version")
    return str(found) if isinstance(found, (str, int)) and str(found) else None


def nccl_version(facts: Facts) -> list[Item]:
    """The NCCL torch uses: what `torch.cuda.nccl.version()` said in the `torch-build` probe, else the version of
    the installed nvidia-nccl-cu* wheel. Empty when neither is known (no CUDA torch, or a conda or source build
    whose NCCL is not a wheel, checked without the probe)."""
    probed = _probed_nccl(facts)
    if probed is not None:
        return [{"version": probed, "source": "torch.cuda.nccl.version() in the torch-build probe"}]
    wheel = _nccl_wheel(facts)
    if wheel is not None:
        return [{"version": wheel[1], "source": f"the installed {wheel[0]} wheel"}]
    return []


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def nccl_other_than_wheel(facts: Facts) -> list[Item] | None:
    """One item when the NCCL torch loaded (probe) is not the version of the nvidia-nccl-cu* wheel torch depends on:
    `loaded`, `wheel`, `wheel_version`. Empty without such a wheel; None when the probe did not report NCCL."""
    wheel = _nccl_wheel(facts)
    if wheel is None or facts.torch is None or not facts.torch.cuda:
        return []
    probed = _probed_nccl(facts)
    if probed is None:
        return None
    if _release(probed) == _release(wheel[1]):
        return []
    return [{"loaded": probed, "wheel": wheel[0], "wheel_version": wheel[1]}]


def bitsandbytes_cuda_override(facts: Facts) -> list[Item] | None:
    """One item when BNB_CUDA_VERSION makes bitsandbytes load a native library for another CUDA than torch's:
    `value`, `library` (`libbitsandbytes_cuda118`), `torch_cuda` ("12.4", or "none (CPU build)"). Empty when it is
    unset, empty, or names torch's own CUDA; None when the environment is unknown."""
    if _env_unknown(facts):
        return None
    value = facts.env.get("BNB_CUDA_VERSION", "").strip()
    if not value:
        return []
    cuda = facts.torch.cuda if facts.torch is not None else None
    if cuda and value == "".join(cuda.split(".")[:2]):
        return []
    return [{"value": value, "library": f"libbitsandbytes_cuda{value}", "torch_cuda": cuda or "none (CPU build)"}]


IFNAME_FIELDS = ("variable", "value", "missing", "interfaces")


def nccl_ifname_missing(facts: Facts) -> list[Item] | None:
    """One item when NCCL_SOCKET_IFNAME, a list of interface-name prefixes (`=name` an exact name), matches no
    interface of this machine, so that NCCL finds none to bootstrap on. An exclusion list (`^docker,lo`) is not
    judged. None when the environment or the interfaces are unknown."""
    if _env_unknown(facts):
        return None
    value = facts.env.get("NCCL_SOCKET_IFNAME", "").strip()
    if len(value) < 2 or value.startswith("^"):  # NCCL ignores a one-character value
        return []
    if facts.network is None:
        return None
    interfaces = facts.network.interfaces
    prefixes = [p.strip() for p in value.split(",") if p.strip()]
    for prefix in prefixes:
        exact = prefix.startswith("=")
        name = prefix[1:] if exact else prefix
        if any(i == name if exact else i.startswith(name) for i in interfaces):
            return []
    return [{"variable": "NCCL_SOCKET_IFNAME", "value": value, "missing": ", ".join(prefixes),
             "interfaces": ", ".join(interfaces) or "none"}]


def gloo_ifname_missing(facts: Facts) -> list[Item] | None:
    """One item when GLOO_SOCKET_IFNAME, a list of exact interface names, names one this machine lacks (torch's
    Gloo backend then fails with `Unable to find address for: NAME`). None when unknown."""
    if _env_unknown(facts):
        return None
    value = facts.env.get("GLOO_SOCKET_IFNAME", "").strip()
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        return []
    if facts.network is None:
        return None
    missing = [n for n in names if n not in facts.network.interfaces]
    if not missing:
        return []
    return [{"variable": "GLOO_SOCKET_IFNAME", "value": value, "missing": ", ".join(missing),
             "interfaces": ", ".join(facts.network.interfaces) or "none"}]


DERIVATIONS: list[Derivation] = [
    Derivation("nccl.version",
               "one item, the NCCL torch uses: `version`, `source` (`torch.cuda.nccl.version()` in the "
               "`torch-build` probe when it ran, else the installed `nvidia-nccl-cu*` wheel). Empty when neither "
               "is known", NCCL_FIELDS, of_facts(nccl_version)),
    Derivation("nccl.loaded-other-than-wheel",
               "one item when the NCCL that torch loaded (`torch-build` probe) is another version than the "
               "`nvidia-nccl-cu*` wheel for torch's CUDA major: `loaded`, `wheel`, `wheel_version`. Empty "
               "without such a wheel; unknown without the probe", ("loaded", "wheel", "wheel_version"),
               of_facts(nccl_other_than_wheel)),
    Derivation("gpu.mixed-models",
               "the GPU models of a machine with more than one model: `name`, `indices` (NVML's, PCI bus "
               "order). Empty for one model; unknown without NVML's GPUs", ("name", "indices"),
               of_facts(mixed_models)),
    Derivation("gpu.visible-devices-missing",
               "the entries of `CUDA_VISIBLE_DEVICES` that name no GPU CUDA can use here: an index at or beyond "
               "the number of GPUs, a `GPU-` UUID (or prefix) no GPU has, a `MIG-` instance where no GPU is in "
               "MIG mode or NVML lists other instances, other text: `entry`, `position` (1-based), `reason`, "
               "`visible` (the number of GPUs), `indices` (\"0 to 3\", \"0\", or \"none\"). A value that hides "
               "every GPU (empty, or a leading negative index: see `cuda-visible-devices-hides-every-gpu`) and "
               "indices on a machine with MIG enabled are not "
               "judged; unknown without NVML's GPUs",
               VISIBLE_FIELDS, of_facts(visible_devices_missing)),
    Derivation("network.nccl-socket-ifname-missing",
               "one item when `NCCL_SOCKET_IFNAME` (interface-name prefixes, `=name` for an exact name) matches "
               "no network interface of this machine: `variable`, `value`, `missing` (the prefixes), "
               "`interfaces` (the machine's). An exclusion list (`^docker,lo`) is not judged; unknown without "
               "the `network` facts", IFNAME_FIELDS, of_facts(nccl_ifname_missing)),
    Derivation("network.gloo-socket-ifname-missing",
               "one item when `GLOO_SOCKET_IFNAME` (exact interface names) names an interface this machine "
               "lacks: `variable`, `value`, `missing` (the names not found), `interfaces`. Unknown without the "
               "`network` facts", IFNAME_FIELDS, of_facts(gloo_ifname_missing)),
    Derivation("bitsandbytes.cuda-override",
               "one item when `BNB_CUDA_VERSION` makes bitsandbytes load the native library of another CUDA "
               "than torch's: `value`, `library` (`libbitsandbytes_cuda118`), `torch_cuda` (\"12.4\", or "
               "\"none (CPU build)\"). Empty when it is unset, empty or torch's own CUDA",
               ("value", "library", "torch_cuda"), of_facts(bitsandbytes_cuda_override)),
]

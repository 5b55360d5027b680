"""AMD GPU facts without NVML: the amdgpu driver's KFD topology in sysfs, read as text in envcheck's own process.

The HIP runtime that a ROCm build of torch loads finds its GPUs through the kernel's KFD interface: every GPU agent
is a node under /sys/class/kfd/kfd/topology/nodes/N whose `properties` file states, one `key value` pair a line,
its ISA as `gfx_target_version` (major * 10000 + minor * 100 + stepping: 110000 is gfx1100, 90010 is gfx90a) with
CPU nodes at 0. Compute needs /dev/kfd and the GPU's render node /dev/dri/renderD<minor> open for reading and
writing (the `render` / `video` groups). Reading these is a handful of small files: no subprocess, no library,
milliseconds. Machine-wide, like NVML: read here even when `--python` checks another interpreter.

Every failure becomes a status and a reason; nothing here raises. `root` is injectable so that tests read a
recorded tree (tests/fixtures/rocm/).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from envcheck.facts._reader import Reader
from envcheck.support.patterns import lazy

if TYPE_CHECKING:
    from envcheck.facts.amd_gpu import AmdGpu

# With these statuses `devices` is the complete list (possibly empty): no AMD GPU is usable beyond those listed.
KNOWN_DEVICE_STATUSES = frozenset({"ok", "no-kfd"})
STATUSES = KNOWN_DEVICE_STATUSES | {
    "unavailable",  # not Linux: the KFD interface (and PyTorch's ROCm wheels) exist on Linux only
    "error",  # the topology exists but could not be read; `reason` says why
}
ACCESS = frozenset({"ok", "no-permission", "missing"})
NO_KFD_REASON = ("no KFD topology (/sys/class/kfd): the amdgpu kernel driver is not loaded, so no AMD GPU can run "
                 "compute here")
# WSL2 reaches the Windows driver's GPUs through /dev/dxg: there is no KFD topology, yet AMD's WSL builds of ROCm
# may see a GPU, so the GPUs are unknown rather than absent.
WSL_REASON = "WSL2 (/dev/dxg): GPUs are reached through the Windows driver, which has no KFD topology to read"
TOPOLOGY = "sys/class/kfd/kfd/topology/nodes"
_NODE = lazy(r"\d{1,4}")
_TARGET = lazy(r"gfx(\d{1,2}\d[0-9a-f])")
GFX = lazy(r"gfx\d{2,3}[0-9a-f]")  # a gfx target's name, as rules/data/rocm-archs.toml and torch's arch list write it
# The variable that makes the ROCm runtime report another target for every GPU (`override_target`).
OVERRIDE = "HSA_OVERRIDE_GFX_VERSION"
_AMD_VENDOR = 0x1002
_MAX_PROPERTIES_BYTES = 64 * 1024  # a real properties file is about 1 KB


@dataclass(frozen=True)
class RocmFacts:
    """The AMD GPUs and the ROCm stack of the machine, or why they could not be read."""

    status: str  # one of STATUSES
    reason: str | None  # in words, for any status but "ok"
    devices: tuple[AmdGpu, ...]
    kfd_access: str | None  # /dev/kfd for this user: one of ACCESS; None when not known
    kfd_group: str | None = None  # the group that owns /dev/kfd ("render"); None when unknown
    driver_version: str | None = None  # /sys/module/amdgpu/version: set by AMD's packaged (DKMS) driver only
    rocm_version: str | None = None  # /opt/rocm/.info/version of a system ROCm install ("6.2.0-66"); None: none

    @property
    def devices_known(self) -> bool:
        """True when `devices` is the complete list (possibly empty)."""
        return self.status in KNOWN_DEVICE_STATUSES

    @classmethod
    def from_reader(cls, r: Reader) -> RocmFacts:
        return cls(status=r.choice("status", STATUSES), reason=r.opt_text("reason"),
                   devices=r.list_of("devices", _device, optional=True),
                   kfd_access=_opt_access(r, "kfd_access"), kfd_group=r.opt_text("kfd_group"),
                   driver_version=r.opt_text("driver_version"), rocm_version=r.opt_text("rocm_version"))


def _opt_access(r: Reader, name: str) -> str | None:
    return r.choice(name, ACCESS) if r.opt_text(name) is not None else None


def _device(r: Reader) -> AmdGpu:
    """One AMD GPU of a snapshot, read; the class is imported only here and where the topology lists a GPU (a check
    of a machine without AMD GPUs never defines it)."""
    from envcheck.facts.amd_gpu import AmdGpu

    return AmdGpu(index=r.integer("index", minimum=0), node=r.opt_integer("node", minimum=0),
                  gfx_target=r.text("gfx_target"), gfx_target_version=r.integer("gfx_target_version", minimum=0),
                  device_id=r.opt_integer("device_id", minimum=0), simd_count=r.opt_integer("simd_count", minimum=0),
                  pci_bus_id=r.opt_text("pci_bus_id"), render_access=_opt_access(r, "render_access"))


# ------------------------------------------------------------------------------------------------- parsing


def parse_properties(text: str) -> dict[str, int]:
    """A KFD `properties` file: `key value` lines with integer values; other lines are skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def gfx_name(version: int) -> str | None:
    """The LLVM target of a KFD gfx_target_version: 110000 -> "gfx1100", 90010 -> "gfx90a"; None for 0 (a CPU)."""
    if version <= 0:
        return None
    major, minor, stepping = version // 10000, version // 100 % 100, version % 100
    if minor > 9 or stepping > 15:
        return None  # no such ISA: the stepping is one hex digit and the minor one decimal digit
    return f"gfx{major}{minor}{stepping:x}"


def gfx_version(target: str) -> int | None:
    """The inverse of gfx_name: "gfx1100" -> 110000, "gfx90a" -> 90010; None for a name that is no gfx target."""
    found = _TARGET.fullmatch(target)
    if found is None:
        return None
    digits = found.group(1)
    return int(digits[:-2]) * 10000 + int(digits[-2]) * 100 + int(digits[-1], 16)


def override_target(value: str) -> str | None:
    """The target HSA_OVERRIDE_GFX_VERSION makes the runtime report: "10.3.0" -> "gfx1030", "9.0.10" -> "gfx90a";
    None when the value is not three decimal numbers (the runtime then ignores it)."""
    parts = value.strip().split(".")
    if len(parts) != 3 or not all(p.isdigit() and len(p) <= 3 for p in parts):
        return None
    major, minor, stepping = (int(p) for p in parts)
    return gfx_name(major * 10000 + minor * 100 + stepping) if major > 0 else None


def pci_bus_id(properties: dict[str, int]) -> str | None:
    """ "DDDD:BB:DD.F" from KFD's `domain` and `location_id` (bus << 8 | device << 3 | function)."""
    if "location_id" not in properties:
        return None
    location, domain = properties["location_id"], properties.get("domain", 0)
    return f"{domain:04x}:{location >> 8 & 0xFF:02x}:{location >> 3 & 0x1F:02x}.{location & 0x7}"


def gpus_of(nodes: list[tuple[int, dict[str, int]]]) -> tuple[AmdGpu, ...]:
    """The GPU nodes among (node number, properties), in node order; a node that states no ISA is a CPU, and one
    of another vendor (a KFD node need not be AMD's) is left out."""
    from envcheck.facts.amd_gpu import AmdGpu

    out: list[AmdGpu] = []
    for node, props in sorted(nodes):
        target = gfx_name(props.get("gfx_target_version", 0))
        vendor = props.get("vendor_id")
        if target is None or (vendor is not None and vendor != _AMD_VENDOR):
            continue
        out.append(AmdGpu(index=len(out), node=node, gfx_target=target,
                          gfx_target_version=props["gfx_target_version"], device_id=props.get("device_id"),
                          simd_count=props.get("simd_count"), pci_bus_id=pci_bus_id(props)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------- collection


def collect_rocm(root: Path = Path("/"), *, platform: str = sys.platform) -> RocmFacts:
    """The machine's AMD GPUs from the KFD topology under `root`; never raises."""
    if not platform.startswith("linux"):
        return RocmFacts("unavailable", "the KFD interface exists on Linux only", (), None)
    topology = root / TOPOLOGY
    try:
        names = [p.name for p in topology.iterdir() if _NODE.fullmatch(p.name)]
    except FileNotFoundError:
        if (root / "dev/dxg").exists():
            return RocmFacts("unavailable", WSL_REASON, (), None)
        return RocmFacts("no-kfd", NO_KFD_REASON, (), _access(root / "dev/kfd"), _group(root / "dev/kfd"),
                         _first_line(root / "sys/module/amdgpu/version"), _first_line(root / "opt/rocm/.info/version"))
    except OSError as exc:
        return RocmFacts("error", f"cannot list {topology}: {exc.strerror or exc}", (), None)
    nodes: list[tuple[int, dict[str, int]]] = []
    for name in names:
        path = topology / name / "properties"
        try:
            with path.open("rb") as fh:
                text = fh.read(_MAX_PROPERTIES_BYTES).decode("ascii", errors="replace")
        except OSError as exc:
            return RocmFacts("error", f"cannot read {path}: {exc.strerror or exc}", (), None)
        nodes.append((int(name), parse_properties(text)))
    devices = tuple(_with_render_access(root, d, props) for d, props in _paired(gpus_of(nodes), nodes))
    return RocmFacts("ok", None, devices, _access(root / "dev/kfd"), _group(root / "dev/kfd"),
                     _first_line(root / "sys/module/amdgpu/version"), _first_line(root / "opt/rocm/.info/version"))


def _paired(gpus: tuple[AmdGpu, ...], nodes: list[tuple[int, dict[str, int]]]
            ) -> list[tuple[AmdGpu, dict[str, int]]]:
    by_node = dict(nodes)
    return [(gpu, by_node.get(gpu.node, {}) if gpu.node is not None else {}) for gpu in gpus]


def _with_render_access(root: Path, gpu: AmdGpu, props: dict[str, int]) -> AmdGpu:
    minor = props.get("drm_render_minor")
    if not minor:  # 0 or absent: the kernel states no render node for it
        return gpu
    return replace(gpu, render_access=_access(root / f"dev/dri/renderD{minor}"))


def _access(path: Path) -> str:
    """Whether this process may open `path` for reading and writing, as the HIP runtime does."""
    if not path.exists():
        return "missing"
    return "ok" if os.access(path, os.R_OK | os.W_OK) else "no-permission"


def _group(path: Path) -> str | None:
    try:
        import grp  # POSIX only; reached on Linux only
        return grp.getgrgid(path.stat().st_gid).gr_name
    except (OSError, KeyError):
        return None


def _first_line(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            line = fh.read(256).decode("ascii", errors="replace").strip().splitlines()
    except OSError:
        return None
    return line[0].strip() if line and line[0].strip() else None

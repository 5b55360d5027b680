"""One AMD GPU as the KFD topology lists it (envcheck/facts/rocm.py holds the machine's answer, `RocmFacts`, whose
`devices` are these, and reads them). Imported where a GPU is listed or read: a check of a machine without AMD GPUs
never defines it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AmdGpu:
    """One AMD GPU as the KFD topology lists it."""

    index: int  # its place among the GPU nodes in node order: the HIP device index without *_VISIBLE_DEVICES
    node: int | None  # the KFD topology node number (CPU nodes are not GPUs); None when read from a report
    gfx_target: str  # "gfx1100": the ISA its kernels must be compiled for
    gfx_target_version: int  # 110000, as the kernel states it
    device_id: int | None  # PCI device id (0x744c for a Radeon RX 7900 XTX); None when not stated
    simd_count: int | None
    pci_bus_id: str | None  # "0000:86:00.0" from `domain` and `location_id`; None when not stated
    render_access: str | None = None  # /dev/dri/renderD<minor>: one of facts/rocm.py's ACCESS; None when not known

"""One NVIDIA GPU as NVML lists it (envcheck/facts/gpus.py holds the driver's answer, `NvmlFacts`, whose `devices`
are these). Imported where a GPU is listed or read: a check of a machine without NVIDIA GPUs never defines it."""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.facts._reader import Reader

NO_PERMISSION_PREFIX = "no-permission: "  # GpuDevice.error of a GPU this user may not open


@dataclass(frozen=True)
class GpuDevice:
    """One GPU as NVML indexes it (PCI bus order, which CUDA follows only with CUDA_DEVICE_ORDER=PCI_BUS_ID: a
    probe's cuda:N is matched to it by UUID, never by index)."""

    index: int
    name: str | None  # "NVIDIA H100 80GB HBM3"
    uuid: str | None  # "GPU-..." (or "MIG-..." for a MIG instance)
    pci_bus_id: str | None  # "00000000:17:00.0"
    compute_capability: str | None  # "9.0"; None when NVML could not tell
    memory_total_mib: int | None
    mig_mode: bool | None  # current MIG mode; None where unsupported
    error: str | None = None  # a per-device NVML failure (the other fields may then be None)
    mig_uuids: tuple[str, ...] = ()  # "MIG-..." of its MIG instances, which CUDA sees instead of the GPU

    @property
    def accessible(self) -> bool:
        """False for a GPU NVML counts but this user may not open (NVML_ERROR_NO_PERMISSION on its handle: a GPU
        of another job on a cgroup-restricted SLURM or Kubernetes node); device predicates leave it out."""
        return not (self.error or "").startswith(NO_PERMISSION_PREFIX)

    @classmethod
    def from_reader(cls, r: Reader) -> GpuDevice:
        return cls(
            index=r.integer("index", minimum=0), name=r.opt_text("name"), uuid=r.opt_text("uuid"),
            pci_bus_id=r.opt_text("pci_bus_id"), compute_capability=r.opt_text("compute_capability"),
            memory_total_mib=r.opt_integer("memory_total_mib", minimum=0), mig_mode=r.opt_flag("mig_mode"),
            error=r.opt_text("error"), mig_uuids=r.texts("mig_uuids"),
        )

"""GPU and driver facts from NVML: what the machine has, independent of any Python package.

NVML answers without creating a CUDA context, in milliseconds. Every NVML failure is a status with a readable
reason, because "no driver", "no permission" and "driver upgraded without a reboot" call for different fixes, and
only some of them mean "there is no GPU".
"""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.facts._reader import Reader

# `status` values. With these, the device list is complete (possibly empty): there is no usable NVIDIA GPU
# beyond those listed. With any other status the devices are unknown and GPU predicates are unknown too.
KNOWN_DEVICE_STATUSES = frozenset({"ok", "no-driver", "driver-not-loaded"})
STATUSES = KNOWN_DEVICE_STATUSES | {
    "no-permission",  # NVML_ERROR_NO_PERMISSION: the user may not open /dev/nvidia*
    "driver-mismatch",  # NVML_ERROR_LIB_RM_VERSION_MISMATCH: driver upgraded, kernel module not reloaded
    "gpu-lost",  # NVML_ERROR_GPU_IS_LOST: fell off the bus
    "not-supported",  # NVML_ERROR_NOT_SUPPORTED at init
    "unavailable",  # no NVML to ask although a GPU may be there: bindings missing, Jetson/Tegra, WSL2 without it
    "no-gpu-access",  # inside a container without the GPUs granted (no --gpus, device rules lost: NVML error 999)
    "timeout",  # NVML did not answer in time (a hung GPU or driver)
    "error",  # anything else; `reason` says what
}
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


@dataclass(frozen=True)
class NvmlFacts:
    """The NVIDIA driver and GPUs, or why NVML could not say."""

    status: str  # one of STATUSES
    reason: str | None  # in words, for any status but "ok"
    driver_version: str | None  # "550.54.15"
    cuda_driver_version: str | None  # the newest CUDA runtime this driver supports: "12.4"
    devices: tuple[GpuDevice, ...]

    @property
    def accessible_devices(self) -> tuple[GpuDevice, ...]:
        """The GPUs this user can open: the ones CUDA can use, and the ones device predicates judge."""
        return tuple(d for d in self.devices if d.accessible)

    @property
    def devices_known(self) -> bool:
        """True when `devices` is the complete list (possibly empty)."""
        return self.status in KNOWN_DEVICE_STATUSES

    @classmethod
    def from_reader(cls, r: Reader) -> NvmlFacts:
        return cls(status=r.choice("status", STATUSES), reason=r.opt_text("reason"),
                   driver_version=r.opt_text("driver_version"), cuda_driver_version=r.opt_text("cuda_driver_version"),
                   devices=r.list_of("devices", GpuDevice.from_reader, optional=True))

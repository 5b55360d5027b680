"""GPU and driver facts from NVML: what the machine has, independent of any Python package.

NVML answers without creating a CUDA context, in milliseconds. Every NVML failure is a status with a readable
reason, because "no driver", "no permission" and "driver upgraded without a reboot" call for different fixes, and
only some of them mean "there is no GPU".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from envcheck.facts._reader import Reader

if TYPE_CHECKING:
    from envcheck.facts.gpu_device import GpuDevice

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
                   devices=r.list_of("devices", _device, optional=True))


def _device(r: Reader) -> GpuDevice:
    """One GPU of a snapshot, read; the class is imported only here and where NVML lists a GPU (a check of a
    machine without NVIDIA GPUs never defines it)."""
    from envcheck.facts.gpu_device import GpuDevice

    return GpuDevice.from_reader(r)

"""NVML facts: the NVIDIA driver and GPUs, read through nvidia-ml-py (the `pynvml` module) in envcheck's process.

NVML is machine-wide, so it is read here even when `--python` checks another interpreter: that interpreter need
not have the bindings. NVML creates no CUDA context and runs no third-party Python beyond NVIDIA's ctypes
bindings. Every failure becomes a status and a reason (envcheck.facts.gpus.STATUSES); nothing here raises.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from envcheck.facts.gpus import GpuDevice, NvmlFacts

NO_DRIVER_REASON = "NVML library not found: no NVIDIA driver is installed"

# NVML error constants (looked up on the module, so a fake or an old pynvml works) -> (status, reason).
# Errors are told apart by value: the NVMLError_* subclasses are generated at import time, and an old pynvml
# lacks the newer ones (it then raises plain NVMLError with the value set).
_KNOWN_ERRORS: tuple[tuple[str, str, str], ...] = (
    ("NVML_ERROR_LIBRARY_NOT_FOUND", "no-driver", NO_DRIVER_REASON),
    ("NVML_ERROR_DRIVER_NOT_LOADED", "driver-not-loaded",
     "the NVIDIA driver is installed but its kernel module is not loaded (no NVIDIA GPU, or the module failed to "
     "load: see `dmesg`)"),
    ("NVML_ERROR_NO_PERMISSION", "no-permission",
     "no permission to open the NVIDIA devices (/dev/nvidia*): the user or the container lacks access to them"),
    ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "driver-mismatch",
     "the NVIDIA kernel module and user-space driver differ: reboot after a driver upgrade"),
    ("NVML_ERROR_GPU_IS_LOST", "gpu-lost",
     "a GPU has fallen off the bus (NVML: GPU is lost): reset it or reboot, and look for Xid errors in `dmesg`"),
    ("NVML_ERROR_NOT_SUPPORTED", "not-supported", "NVML does not support this system"),
)
# A device query that answers one of these leaves that field unknown; it is not a device failure
# (MIG mode on a GeForce card, memory on some integrated GPUs, a symbol an old driver lacks).
_FIELD_UNAVAILABLE = ("NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_FUNCTION_NOT_FOUND")
_MIB = 1024 * 1024


def collect_nvml() -> NvmlFacts:
    """The driver and every GPU NVML sees, or the status and reason why NVML could not say."""
    if not _library_present(sys.platform):
        # Not importing the bindings at all keeps a machine without a driver at no measurable cost.
        return _failed("no-driver", NO_DRIVER_REASON)
    try:
        with warnings.catch_warnings():
            # PyPI `pynvml` 13 is a deprecated wrapper around nvidia-ml-py whose .pth import hook warns on the
            # first `import pynvml*`; the module it leaves is nvidia-ml-py's, which is the one wanted.
            warnings.filterwarnings("ignore", message="The pynvml package is deprecated", category=FutureWarning)
            nv = importlib.import_module("pynvml")
    except Exception as exc:  # noqa: BLE001 - a missing or broken binding is a fact, never a crash
        return _failed("unavailable", f"the NVML bindings (nvidia-ml-py) are not importable: "
                                      f"{type(exc).__name__}: {exc}")
    try:
        return _collect(nv)
    except Exception as exc:  # noqa: BLE001 - the checker must survive whatever bindings it finds
        return _failed("error", f"reading NVML failed: {type(exc).__name__}: {exc}")


def _library_present(platform: str) -> bool:
    """Whether the NVML shared library loads, looked for where nvidia-ml-py looks for it."""
    if platform.startswith("win"):
        return any(p.is_file() for p in (
            # os.environ is case-insensitive on Windows, where these are spelt WINDIR and ProgramFiles.
            Path(os.environ.get("WINDIR", "C:/Windows"), "System32", "nvml.dll"),  # DCH drivers
            Path(os.environ.get("PROGRAMFILES", "C:/Program Files"), "NVIDIA Corporation", "NVSMI", "nvml.dll"),
        ))
    import ctypes  # only here: most of the static check never needs it

    try:
        ctypes.CDLL("libnvidia-ml.so.1")  # dlopen's own search (ld.so.cache, LD_LIBRARY_PATH), like pynvml
    except OSError:
        return False
    return True


def _failed(status: str, reason: str) -> NvmlFacts:
    return NvmlFacts(status=status, reason=reason, driver_version=None, cuda_driver_version=None, devices=())


def _collect(nv: ModuleType) -> NvmlFacts:
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        return _failed(*_describe(nv, exc))
    try:
        driver = _text(_quiet(nv, nv.nvmlSystemGetDriverVersion))
        cuda = _cuda_driver_version(nv)
        try:
            count = int(nv.nvmlDeviceGetCount())
        except nv.NVMLError as exc:
            status, reason = _describe(nv, exc)
            return NvmlFacts(status=status, reason=reason, driver_version=driver, cuda_driver_version=cuda,
                             devices=())
        devices = tuple(_device(nv, index) for index in range(count))
        return NvmlFacts(status="ok", reason=None, driver_version=driver, cuda_driver_version=cuda, devices=devices)
    finally:
        # nvmlInit is reference-counted: without the matching shutdown a long-lived caller leaks the handle.
        with contextlib.suppress(nv.NVMLError):
            nv.nvmlShutdown()


def _cuda_driver_version(nv: ModuleType) -> str | None:
    """The newest CUDA runtime the driver supports, "12.4" (NVML encodes it as 12040)."""
    # _v2 asks the libcuda that is actually loaded (a cuda-compat libcuda raises it) but fails when no libcuda is
    # found, as in a container without the driver's user-space libraries; the old call answers from the driver.
    value = None
    for name in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"):
        call = getattr(nv, name, None)
        if call is not None:
            value = _quiet(nv, call)
            if value is not None:
                break
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def _device(nv: ModuleType, index: int) -> GpuDevice:
    """One GPU; a failure keeps what was read before it in the device and names itself in `error`."""
    reader = _DeviceReader(nv)
    handle = reader.read(lambda: nv.nvmlDeviceGetHandleByIndex(index))
    if handle is None:
        return GpuDevice(index=index, name=None, uuid=None, pci_bus_id=None, compute_capability=None,
                         memory_total_mib=None, mig_mode=None, error=reader.error)
    name = _text(reader.read(lambda: nv.nvmlDeviceGetName(handle)))
    uuid = _text(reader.read(lambda: nv.nvmlDeviceGetUUID(handle)))
    pci = reader.read(lambda: nv.nvmlDeviceGetPciInfo(handle))
    capability = reader.read(lambda: nv.nvmlDeviceGetCudaComputeCapability(handle))
    memory = reader.read(lambda: nv.nvmlDeviceGetMemoryInfo(handle))
    mig = reader.read(lambda: nv.nvmlDeviceGetMigMode(handle))  # [current, pending]
    total = getattr(memory, "total", None)
    return GpuDevice(
        index=index, name=name, uuid=uuid, pci_bus_id=_text(getattr(pci, "busId", None)),
        compute_capability=None if capability is None else f"{capability[0]}.{capability[1]}",
        memory_total_mib=total // _MIB if isinstance(total, int) else None,
        mig_mode=None if mig is None else mig[0] == getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1),
        error=reader.error,
    )


class _DeviceReader:
    """Reads the fields of one device; after a real failure it stops asking, since a lost GPU can make every
    further call wait for a timeout."""

    def __init__(self, nv: ModuleType) -> None:
        self.nv = nv
        self.error: str | None = None

    def read(self, call: Callable[[], Any]) -> Any:
        if self.error is not None:
            return None
        try:
            return call()
        except AttributeError:
            return None  # an old pynvml without this query
        except self.nv.NVMLError as exc:
            if _is(self.nv, exc, _FIELD_UNAVAILABLE):
                return None
            status, reason = _describe(self.nv, exc)
            self.error = f"{status}: {reason}"
            return None


def _quiet(nv: ModuleType, call: Callable[[], Any]) -> Any:
    """call(), or None when NVML refuses: for machine-wide values that are useful but not essential."""
    try:
        return call()
    except nv.NVMLError:
        return None


def _is(nv: ModuleType, exc: BaseException, names: tuple[str, ...]) -> bool:
    value = getattr(exc, "value", None)
    return value is not None and any(value == getattr(nv, n, None) for n in names)


def _describe(nv: ModuleType, exc: BaseException) -> tuple[str, str]:
    """(status, reason) of an NVML error."""
    for constant, status, reason in _KNOWN_ERRORS:
        if _is(nv, exc, (constant,)):
            return status, reason
    try:
        message = str(exc)  # the real NVMLError.__str__ may call into NVML for an unknown code
    except Exception:  # noqa: BLE001 - a message is a nicety; the value is still reported
        message = type(exc).__name__
    return "error", f"NVML error {getattr(exc, 'value', '?')}: {message}"


def _text(value: object) -> str | None:
    """NVML strings as str: older pynvml returns bytes."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)

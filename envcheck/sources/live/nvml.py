"""NVML facts: the NVIDIA driver and GPUs, read through nvidia-ml-py (the `pynvml` module) in envcheck's process.

NVML is machine-wide, so it is read here even when `--python` checks another interpreter: that interpreter need
not have the bindings. NVML creates no CUDA context and runs no third-party Python beyond NVIDIA's ctypes
bindings. Every failure becomes a status and a reason (envcheck.facts.gpus.STATUSES); nothing here raises.

NVML can block: a GPU in a bad state makes nvmlInit or a device query wait (the known `nvidia-smi` hang), and
nvmlDeviceGetHandleByIndex initializes the GPU, seconds per GPU without persistence mode. So the reading runs in a
daemon thread and envcheck waits for it at most `timeout_s`; a thread stuck in the driver is left behind (a daemon
thread does not keep the process alive) and the facts say "timeout".
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import warnings

# The model's classes are imported where facts are built, not here: a replayed static check
# (envcheck/pipeline/replay.py) asks `without_library` alone on a machine without NVIDIA's driver, and must not pay
# for the dataclasses.
TYPE_CHECKING = False  # not typing's, for the same reason
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    from envcheck.facts.gpu_device import GpuDevice
    from envcheck.facts.gpus import NvmlFacts

NO_DRIVER_REASON = "NVML library not found: no NVIDIA driver is installed"
DEFAULT_TIMEOUT_S = 30.0  # generous: initializing 8 GPUs without persistence mode takes seconds each
TEGRA_REASON = ("Jetson / Tegra (integrated GPU): NVIDIA ships no NVML for it, so envcheck cannot list its GPU; "
                "CUDA may still work there (see the torch-build probe)")
WSL_REASON = ("WSL2: the NVML library the Windows driver provides (/usr/lib/wsl/lib/libnvidia-ml.so.1) is not on "
              "the loader's path; install or update the NVIDIA driver on Windows, not inside WSL")
CONTAINER_REASON = ("inside a container with no NVIDIA device nodes (/dev/nvidiactl): it was started without GPU "
                    "access (`docker run --gpus all`, or the NVIDIA runtime / device plugin); the host's GPUs are not "
                    "visible here")
CGROUP_REASON = ("NVML error 999 (Unknown Error) inside a container: the container lost access to the GPUs, most "
                 "often after `systemctl daemon-reload` on a cgroup v2 host reset the container's device rules "
                 "(NVIDIA/nvidia-container-toolkit#251); restart the container")

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


def collect_nvml(timeout_s: float = DEFAULT_TIMEOUT_S) -> NvmlFacts:
    """The driver and every GPU NVML sees, or the status and reason why NVML could not say, within `timeout_s`."""
    box: list[NvmlFacts] = []

    def work() -> None:
        try:
            box.append(_collect_unbounded())
        except BaseException as exc:  # noqa: BLE001 - nothing may escape the thread unreported
            box.append(_failed("error", f"reading NVML failed: {type(exc).__name__}: {exc}"))

    worker = threading.Thread(target=work, name="envcheck-nvml", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if not box:
        return _failed("timeout", f"NVML did not answer within {timeout_s:g} s: a GPU or the driver is hung (the "
                                  "state in which `nvidia-smi` hangs too); look for Xid errors in `dmesg`")
    return box[0]


def without_library() -> tuple[str, str] | None:
    """(status, reason) when NVML's library does not load here (nothing else is then asked), else None."""
    if _library_present(sys.platform):
        return None
    platform = _platform_without_nvml()
    return ("no-driver", NO_DRIVER_REASON) if platform is None else ("unavailable", platform)


def _collect_unbounded() -> NvmlFacts:
    absent = without_library()
    if absent is not None:
        # Not importing the bindings at all keeps a machine without a driver at no measurable cost.
        return _failed(*absent)
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
        from pathlib import Path

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


def _platform_without_nvml() -> str | None:
    """Why NVML is absent although a GPU may be there (Jetson / Tegra, WSL2), else None."""
    if not sys.platform.startswith("linux"):
        return None
    if _exists("/etc/nv_tegra_release") or b"nvidia,tegra" in _read_bytes("/proc/device-tree/compatible"):
        return TEGRA_REASON
    if _exists("/dev/dxg") or b"microsoft" in _read_bytes("/proc/sys/kernel/osrelease").lower():
        return WSL_REASON
    return None


def _in_container() -> bool:
    """Docker leaves /.dockerenv, podman /run/.containerenv; Kubernetes pods have their service-account mount."""
    return any(_exists(p) for p in ("/.dockerenv", "/run/.containerenv",
                                    "/var/run/secrets/kubernetes.io/serviceaccount"))


def _exists(path: str) -> bool:
    return os.path.exists(path)  # noqa: PTH110 - no pathlib here (see the imports)


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:  # noqa: PTH123 - no pathlib here (see the imports)
            return fh.read(4096)
    except OSError:
        return b""


def _init_failure(nv: ModuleType, exc: BaseException) -> NvmlFacts:
    """nvmlInit's error as facts. In a container, the two errors a missing GPU grant gives get their real cause."""
    status, reason = _describe(nv, exc)
    if _in_container():
        if _is(nv, exc, ("NVML_ERROR_DRIVER_NOT_LOADED",)) and not _exists("/dev/nvidiactl"):
            return _failed("no-gpu-access", CONTAINER_REASON)
        if _is(nv, exc, ("NVML_ERROR_UNKNOWN",)):
            return _failed("no-gpu-access", CGROUP_REASON)
    return _failed(status, reason)


def _failed(status: str, reason: str) -> NvmlFacts:
    from envcheck.facts.gpus import NvmlFacts

    return NvmlFacts(status=status, reason=reason, driver_version=None, cuda_driver_version=None, devices=())


def _collect(nv: ModuleType) -> NvmlFacts:
    from envcheck.facts.gpus import NvmlFacts

    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        return _init_failure(nv, exc)
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
        import contextlib  # here: a machine without the driver never gets this far

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
    from envcheck.facts.gpu_device import GpuDevice

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
    mig_enabled = None if mig is None else mig[0] == getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1)
    total = getattr(memory, "total", None)
    return GpuDevice(
        index=index, name=name, uuid=uuid, pci_bus_id=_text(getattr(pci, "busId", None)),
        compute_capability=None if capability is None else f"{capability[0]}.{capability[1]}",
        memory_total_mib=total // _MIB if isinstance(total, int) else None,
        mig_mode=mig_enabled, error=reader.error,
        mig_uuids=_mig_uuids(nv, reader, handle) if mig_enabled else (),
    )


def _mig_uuids(nv: ModuleType, reader: _DeviceReader, handle: Any) -> tuple[str, ...]:
    """The UUIDs ("MIG-...") of the MIG instances of a GPU in MIG mode: CUDA (and torch) see those instances, not
    the parent GPU, so a probe's device is matched to NVML through them."""
    count = reader.read(lambda: nv.nvmlDeviceGetMaxMigDeviceCount(handle))
    out = []
    for slot in range(int(count) if isinstance(count, int) else 0):
        try:
            child = nv.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
            uuid = _text(nv.nvmlDeviceGetUUID(child))
        except AttributeError:
            break  # an old pynvml without MIG queries
        except nv.NVMLError:
            continue  # NVML_ERROR_NOT_FOUND: an empty slot
        if uuid:
            out.append(uuid)
    return tuple(out)


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

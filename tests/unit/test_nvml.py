"""NVML facts through a fake `pynvml`: a real module object in sys.modules with the real error values and classes.

The fake answers like nvidia-ml-py (and like older pynvml that returned bytes); each NVML failure must become the
status and reason of envcheck.facts.gpus, never an exception. The real bindings are checked where they can be
without a GPU: their error constants, and their answer on a machine without a driver.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import sys
import threading
import types
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _fakes import facts_dict, gpu_dict, nvml_dict

from envcheck.facts.gpu_device import GpuDevice
from envcheck.facts.gpus import STATUSES, NvmlFacts
from envcheck.sources.live import collect as collect_mod
from envcheck.sources.live import nvml

# The values of nvidia-ml-py 13.615 (pynvml.py), and its class names for them.
ERRORS = {
    "NVML_ERROR_UNINITIALIZED": (1, "Uninitialized", "NVMLError_Uninitialized"),
    "NVML_ERROR_NOT_SUPPORTED": (3, "Not Supported", "NVMLError_NotSupported"),
    "NVML_ERROR_NO_PERMISSION": (4, "Insufficient Permissions", "NVMLError_NoPermission"),
    "NVML_ERROR_DRIVER_NOT_LOADED": (9, "Driver Not Loaded", "NVMLError_DriverNotLoaded"),
    "NVML_ERROR_LIBRARY_NOT_FOUND": (12, "NVML Shared Library Not Found", "NVMLError_LibraryNotFound"),
    "NVML_ERROR_FUNCTION_NOT_FOUND": (13, "Function Not Found", "NVMLError_FunctionNotFound"),
    "NVML_ERROR_GPU_IS_LOST": (15, "GPU is lost", "NVMLError_GpuIsLost"),
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": (18, "RM has detected an NVML/RM version mismatch.",
                                           "NVMLError_LibRmVersionMismatch"),
    "NVML_ERROR_UNKNOWN": (999, "Unknown Error", "NVMLError_Unknown"),
}
V = {name: value for name, (value, _, _) in ERRORS.items()}
GIB = 1024**3


@dataclass
class FakeGpu:
    name: str
    uuid: str
    bus_id: str
    capability: tuple[int, int]
    memory_bytes: int
    mig: list[int] | int  # [current, pending], or an error value (NOT_SUPPORTED on GeForce)
    fail: dict[str, int] = field(default_factory=dict)  # query name -> NVML error value it raises


H100 = FakeGpu("NVIDIA H100 80GB HBM3", "GPU-8c7e1c5a-0000-0000-0000-000000000001", "00000000:17:00.0", (9, 0),
               81559 * 1024 * 1024, [1, 1])
RTX4090 = FakeGpu("NVIDIA GeForce RTX 4090", "GPU-8c7e1c5a-0000-0000-0000-000000000002", "00000000:65:00.0",
                  (8, 9), 24 * GIB, V["NVML_ERROR_NOT_SUPPORTED"])


@dataclass
class FakeNvml:
    """What the fake `pynvml` answers, and the calls it saw."""

    gpus: list[FakeGpu] = field(default_factory=lambda: [H100, RTX4090])
    init_error: int | None = None
    count_error: int | None = None
    driver: str = "550.54.15"
    cuda_v2: int = 12040  # or an error value to raise, with cuda_v2_error
    cuda_v2_error: int | None = None
    cuda_v1: int = 12040
    cuda_v1_error: int | None = None
    as_bytes: bool = False  # pynvml before 11.x returned bytes for strings
    calls: list[str] = field(default_factory=list)

    def module(self, *, with_subclasses: bool = True, with_v2: bool = True) -> types.ModuleType:
        """A `pynvml` module object: constants, the NVMLError hierarchy and the calls envcheck makes."""
        mod = types.ModuleType("pynvml")
        fake = self

        class NVMLError(Exception):
            _valClassMapping: dict[int, type[NVMLError]] = {}  # noqa: RUF012 - as in pynvml

            def __new__(cls, value: int) -> NVMLError:
                # Like pynvml: NVMLError(value) becomes the subclass registered for that value.
                if cls is NVMLError:
                    cls = NVMLError._valClassMapping.get(value, cls)
                obj = Exception.__new__(cls)
                obj.value = value  # type: ignore[attr-defined]
                return obj

            def __init__(self, value: int) -> None:
                super().__init__(value)

            def __str__(self) -> str:
                texts = {v: text for v, text, _ in ERRORS.values()}
                return texts.get(self.value, f"NVML Error with code {self.value}")  # type: ignore[attr-defined]

        mod.NVMLError = NVMLError  # type: ignore[attr-defined]
        for name, (value, _, class_name) in ERRORS.items():
            setattr(mod, name, value)
            if with_subclasses:
                sub = type(class_name, (NVMLError,), {})
                NVMLError._valClassMapping[value] = sub
                setattr(mod, class_name, sub)
        mod.NVML_DEVICE_MIG_ENABLE = 1  # type: ignore[attr-defined]

        def text(value: str) -> str | bytes:
            return value.encode() if fake.as_bytes else value

        def call(name: str, error: int | None = None) -> None:
            fake.calls.append(name)
            if error is not None:
                raise NVMLError(error)

        def device(handle: FakeGpu, query: str) -> FakeGpu:
            call(f"{query}[{fake.gpus.index(handle)}]", handle.fail.get(query))
            return handle

        def get_handle(index: int) -> FakeGpu:
            call(f"nvmlDeviceGetHandleByIndex[{index}]", fake.gpus[index].fail.get("nvmlDeviceGetHandleByIndex"))
            return fake.gpus[index]

        def mig_mode(h: FakeGpu) -> list[int]:
            device(h, "nvmlDeviceGetMigMode")
            if isinstance(h.mig, int):
                raise NVMLError(h.mig)
            return h.mig

        functions: dict[str, Any] = {
            "nvmlInit": lambda: call("nvmlInit", fake.init_error),
            "nvmlShutdown": lambda: call("nvmlShutdown"),
            "nvmlSystemGetDriverVersion": lambda: (call("driver"), text(fake.driver))[1],
            "nvmlSystemGetCudaDriverVersion": lambda: (call("cuda_v1", fake.cuda_v1_error), fake.cuda_v1)[1],
            "nvmlDeviceGetCount": lambda: (call("count", fake.count_error), len(fake.gpus))[1],
            "nvmlDeviceGetHandleByIndex": get_handle,
            "nvmlDeviceGetName": lambda h: text(device(h, "nvmlDeviceGetName").name),
            "nvmlDeviceGetUUID": lambda h: text(device(h, "nvmlDeviceGetUUID").uuid),
            "nvmlDeviceGetPciInfo": lambda h: types.SimpleNamespace(
                busId=text(device(h, "nvmlDeviceGetPciInfo").bus_id)),
            "nvmlDeviceGetCudaComputeCapability": lambda h: device(h, "nvmlDeviceGetCudaComputeCapability").capability,
            "nvmlDeviceGetMemoryInfo": lambda h: types.SimpleNamespace(
                total=device(h, "nvmlDeviceGetMemoryInfo").memory_bytes, free=0, used=0),
            "nvmlDeviceGetMigMode": mig_mode,
        }
        if with_v2:
            functions["nvmlSystemGetCudaDriverVersion_v2"] = lambda: (call("cuda_v2", fake.cuda_v2_error),
                                                                      fake.cuda_v2)[1]
        for name, fn in functions.items():
            setattr(mod, name, fn)
        return mod

    def device_calls(self, index: int) -> list[str]:
        return [c for c in self.calls if c.endswith(f"[{index}]")]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeNvml]:
    """A fake `pynvml` in sys.modules, with the NVML shared library taken to be present."""
    state = FakeNvml()
    monkeypatch.setattr(nvml, "_library_present", lambda platform: True)
    monkeypatch.setattr(nvml, "_in_container", lambda: False)  # the container cases set it themselves
    monkeypatch.setitem(sys.modules, "pynvml", state.module())
    yield state


def install(monkeypatch: pytest.MonkeyPatch, state: FakeNvml, **options: bool) -> None:
    """Replaces the fake module by one built with `options` (an older pynvml)."""
    monkeypatch.setitem(sys.modules, "pynvml", state.module(**options))


H100_FACT = GpuDevice(index=0, name="NVIDIA H100 80GB HBM3", uuid=H100.uuid, pci_bus_id="00000000:17:00.0",
                      compute_capability="9.0", memory_total_mib=81559, mig_mode=True)
RTX4090_FACT = GpuDevice(index=1, name="NVIDIA GeForce RTX 4090", uuid=RTX4090.uuid, pci_bus_id="00000000:65:00.0",
                         compute_capability="8.9", memory_total_mib=24576, mig_mode=None)


def test_two_devices(fake: FakeNvml) -> None:
    """Driver, CUDA version and both GPUs are read; MIG NotSupported on the GeForce leaves mig_mode None, no error."""
    facts = nvml.collect_nvml()
    assert facts == NvmlFacts(status="ok", reason=None, driver_version="550.54.15", cuda_driver_version="12.4",
                              devices=(H100_FACT, RTX4090_FACT))
    assert facts.devices_known
    assert fake.calls[0] == "nvmlInit" and fake.calls[-1] == "nvmlShutdown"
    assert fake.calls.count("nvmlShutdown") == 1


def test_mig_disabled_is_false(fake: FakeNvml) -> None:
    """A MIG-capable GPU with MIG off (current mode 0, pending 1) reports mig_mode False: the current mode counts."""
    fake.gpus = [FakeGpu(**{**asdict(H100), "mig": [0, 1]})]
    [device] = nvml.collect_nvml().devices
    assert device.mig_mode is False


def test_bytes_from_older_pynvml(fake: FakeNvml) -> None:
    """Strings returned as bytes (pynvml before 11) become str: driver, name, UUID and PCI bus id."""
    fake.as_bytes = True
    facts = nvml.collect_nvml()
    assert facts.driver_version == "550.54.15"
    assert facts.devices == (H100_FACT, RTX4090_FACT)
    assert all(isinstance(d.name, str) and isinstance(d.uuid, str) and isinstance(d.pci_bus_id, str)
               for d in facts.devices)


@pytest.mark.parametrize(
    ("error", "status", "reason"),
    [
        pytest.param("NVML_ERROR_LIBRARY_NOT_FOUND", "no-driver",
                     "NVML library not found: no NVIDIA driver is installed", id="library-not-found"),
        pytest.param("NVML_ERROR_DRIVER_NOT_LOADED", "driver-not-loaded", "kernel module is not loaded",
                     id="driver-not-loaded"),
        pytest.param("NVML_ERROR_NO_PERMISSION", "no-permission", "no permission to open the NVIDIA devices",
                     id="no-permission"),
        pytest.param("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "driver-mismatch",
                     "the NVIDIA kernel module and user-space driver differ: reboot after a driver upgrade",
                     id="driver-mismatch"),
        pytest.param("NVML_ERROR_GPU_IS_LOST", "gpu-lost", "fallen off the bus", id="gpu-lost"),
        pytest.param("NVML_ERROR_NOT_SUPPORTED", "not-supported", "does not support", id="not-supported"),
        pytest.param("NVML_ERROR_UNKNOWN", "error", "NVML error 999: Unknown Error", id="unknown-error"),
    ],
)
@pytest.mark.parametrize("subclasses", [True, False], ids=["subclass", "plain-NVMLError"])
def test_init_failure_is_a_status(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch, error: str, status: str,
                                  reason: str, subclasses: bool) -> None:
    """nvmlInit's error becomes its status and reason, by value even when pynvml raises plain NVMLError; no
    shutdown follows a failed init."""
    fake.init_error = V[error]
    install(monkeypatch, fake, with_subclasses=subclasses)
    facts = nvml.collect_nvml()
    assert (facts.status, facts.devices, facts.driver_version, facts.cuda_driver_version) == (status, (), None, None)
    assert facts.reason is not None and reason in facts.reason
    assert facts.status in STATUSES
    assert "nvmlShutdown" not in fake.calls


def test_gpu_lost_on_one_device(fake: FakeNvml) -> None:
    """A GPU lost mid-read keeps what was read before, names the failure, and is not asked again; the other GPU
    and the overall status are unaffected."""
    fake.gpus = [H100, FakeGpu(**{**asdict(RTX4090), "fail": {"nvmlDeviceGetPciInfo": V["NVML_ERROR_GPU_IS_LOST"]}})]
    facts = nvml.collect_nvml()
    assert facts.status == "ok" and facts.devices_known
    lost = facts.devices[1]
    assert facts.devices[0] == H100_FACT
    assert (lost.index, lost.name, lost.uuid) == (1, RTX4090.name, RTX4090.uuid)
    assert (lost.pci_bus_id, lost.compute_capability, lost.memory_total_mib, lost.mig_mode) == (None,) * 4
    assert lost.error is not None and lost.error.startswith("gpu-lost: ")
    assert fake.device_calls(1)[-1] == "nvmlDeviceGetPciInfo[1]"
    assert fake.calls[-1] == "nvmlShutdown"


def test_device_handle_failure(fake: FakeNvml) -> None:
    """A device whose handle cannot be had is listed by index with every field None and the NVML error."""
    fake.gpus = [FakeGpu(**{**asdict(H100), "fail": {"nvmlDeviceGetHandleByIndex": V["NVML_ERROR_UNKNOWN"]}}),
                 RTX4090]
    first, second = nvml.collect_nvml().devices
    assert first == GpuDevice(index=0, name=None, uuid=None, pci_bus_id=None, compute_capability=None,
                              memory_total_mib=None, mig_mode=None, error="error: NVML error 999: Unknown Error")
    assert second == RTX4090_FACT


def test_unsupported_field_is_unknown_not_an_error(fake: FakeNvml) -> None:
    """Memory NotSupported (integrated GPUs) and a function an old driver lacks leave that field None, no error."""
    fake.gpus = [FakeGpu(**{**asdict(H100), "fail": {"nvmlDeviceGetMemoryInfo": V["NVML_ERROR_NOT_SUPPORTED"],
                                                     "nvmlDeviceGetMigMode": V["NVML_ERROR_FUNCTION_NOT_FOUND"]}})]
    [device] = nvml.collect_nvml().devices
    assert (device.memory_total_mib, device.mig_mode, device.error) == (None, None, None)
    assert device.compute_capability == "9.0"


def test_query_missing_from_old_pynvml(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pynvml too old to have a query (MIG mode, compute capability) leaves those fields None, without an error."""
    module = sys.modules["pynvml"]
    monkeypatch.delattr(module, "nvmlDeviceGetMigMode")
    monkeypatch.delattr(module, "nvmlDeviceGetCudaComputeCapability")
    device = nvml.collect_nvml().devices[0]
    assert (device.compute_capability, device.mig_mode, device.error) == (None, None, None)
    assert (device.name, device.memory_total_mib) == (H100.name, 81559)


def test_device_count_failure(fake: FakeNvml) -> None:
    """When the GPUs cannot be counted the devices are unknown, and the driver versions already read are kept."""
    fake.count_error = V["NVML_ERROR_NO_PERMISSION"]
    facts = nvml.collect_nvml()
    assert (facts.status, facts.driver_version, facts.cuda_driver_version, facts.devices) == (
        "no-permission", "550.54.15", "12.4", ())
    assert not facts.devices_known
    assert fake.calls[-1] == "nvmlShutdown"


def test_module_not_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the driver present but no importable pynvml, the status is "unavailable" and says what to install."""
    monkeypatch.setattr(nvml, "_library_present", lambda platform: True)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    facts = nvml.collect_nvml()
    assert (facts.status, facts.devices) == ("unavailable", ())
    assert facts.reason is not None and "nvidia-ml-py" in facts.reason
    assert not facts.devices_known


@pytest.mark.parametrize(
    ("v2", "v2_error", "v1_error", "expected", "asked"),
    [
        pytest.param(True, None, None, "12.4", ["cuda_v2"], id="v2"),
        pytest.param(False, None, None, "12.2", ["cuda_v1"], id="old-pynvml-without-v2"),
        pytest.param(True, "NVML_ERROR_LIBRARY_NOT_FOUND", None, "12.2", ["cuda_v2", "cuda_v1"], id="v2-no-libcuda"),
        pytest.param(True, "NVML_ERROR_FUNCTION_NOT_FOUND", None, "12.2", ["cuda_v2", "cuda_v1"],
                     id="old-driver-without-v2"),
        pytest.param(True, "NVML_ERROR_UNKNOWN", "NVML_ERROR_UNKNOWN", None, ["cuda_v2", "cuda_v1"], id="neither"),
    ],
)
def test_cuda_driver_version_falls_back(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch, v2: bool,
                                        v2_error: str | None, v1_error: str | None, expected: str | None,
                                        asked: list[str]) -> None:
    """_v2 is asked first; when it is missing or fails (no libcuda) the old call answers, and the status stays ok."""
    fake.cuda_v1 = 12020
    fake.cuda_v2_error = V[v2_error] if v2_error else None
    fake.cuda_v1_error = V[v1_error] if v1_error else None
    install(monkeypatch, fake, with_v2=v2)
    facts = nvml.collect_nvml()
    assert (facts.status, facts.cuda_driver_version) == ("ok", expected)
    assert [c for c in fake.calls if c.startswith("cuda_")] == asked


@pytest.mark.parametrize(("encoded", "decoded"), [(12040, "12.4"), (11080, "11.8"), (13000, "13.0"), (12090, "12.9")])
def test_cuda_version_decoding(fake: FakeNvml, encoded: int, decoded: str) -> None:
    """NVML's integer CUDA version decodes as major = v // 1000, minor = (v % 1000) // 10."""
    fake.cuda_v2 = encoded
    assert nvml.collect_nvml().cuda_driver_version == decoded


def test_broken_bindings_are_an_error_status(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-NVML exception from the bindings becomes status "error" naming it, and NVML is still shut down."""
    module = sys.modules["pynvml"]

    def broken() -> int:
        raise TypeError("an unexpected binding")

    monkeypatch.setattr(module, "nvmlDeviceGetCount", broken)
    facts = nvml.collect_nvml()
    assert facts.status == "error"
    assert facts.reason == "reading NVML failed: TypeError: an unexpected binding"
    assert fake.calls[-1] == "nvmlShutdown"


def test_no_library_means_no_import(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without libnvidia-ml the answer is "no-driver" (devices known: none) and the bindings are never touched."""
    monkeypatch.setattr(nvml, "_library_present", lambda platform: False)
    facts = nvml.collect_nvml()
    assert facts == NvmlFacts(status="no-driver", reason=nvml.NO_DRIVER_REASON, driver_version=None,
                              cuda_driver_version=None, devices=())
    assert facts.devices_known
    assert fake.calls == []


def test_library_lookup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """libnvidia-ml.so.1 is looked up with dlopen; on Windows nvml.dll in System32 or NVSMI counts."""
    import ctypes

    def absent(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", absent)
    assert not nvml._library_present("linux")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: object())
    assert nvml._library_present("linux")
    monkeypatch.setenv("WINDIR", str(tmp_path))
    monkeypatch.setenv("PROGRAMFILES", str(tmp_path / "pf"))
    assert not nvml._library_present("win32")
    (tmp_path / "System32").mkdir()
    (tmp_path / "System32" / "nvml.dll").write_bytes(b"")
    assert nvml._library_present("win32")


class _DeprecatedWrapperHook(importlib.abc.MetaPathFinder):
    """What PyPI `pynvml` 13's .pth installs: warn on the first import of pynvml*, then let others find it."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.startswith("pynvml"):
            import warnings

            warnings.warn("The pynvml package is deprecated. Please install nvidia-ml-py instead.", FutureWarning,
                          stacklevel=2)


class _ModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `pynvml` as the given module object."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(name, self) if name == "pynvml" else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def test_deprecated_wrapper_warning_is_filtered(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch) -> None:
    """The FutureWarning of the deprecated `pynvml` wrapper's import hook does not escape (warnings are errors
    under pytest here, so an unfiltered one would turn the import into "unavailable")."""
    module = sys.modules["pynvml"]
    monkeypatch.delitem(sys.modules, "pynvml")  # the fixture's setitem puts back the original afterwards
    monkeypatch.setattr(sys, "meta_path", [_DeprecatedWrapperHook(), _ModuleFinder(module), *sys.meta_path])
    facts = nvml.collect_nvml()
    assert facts.status == "ok", facts.reason
    assert fake.calls[0] == "nvmlInit"


def test_real_bindings_define_every_error_used() -> None:
    """nvidia-ml-py (the dependency) defines every error constant envcheck decodes, with the values faked here."""
    real = pytest.importorskip("pynvml")
    names = {name for name, _, _ in nvml._KNOWN_ERRORS} | set(nvml._FIELD_UNAVAILABLE)
    assert {name: getattr(real, name, None) for name in names} == {name: V[name] for name in names}
    assert real.NVML_DEVICE_MIG_ENABLE == 1
    assert issubclass(real.NVMLError_LibraryNotFound, real.NVMLError)


def test_real_bindings_without_a_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real nvidia-ml-py on a machine without libnvidia-ml raises LibraryNotFound, which reads "no-driver"."""
    real = pytest.importorskip("pynvml")
    if nvml._library_present(sys.platform):
        pytest.skip("this machine has an NVIDIA driver")
    monkeypatch.setitem(sys.modules, "pynvml", real)
    monkeypatch.setattr(nvml, "_library_present", lambda platform: True)  # let the bindings find out themselves
    facts = nvml.collect_nvml()
    assert (facts.status, facts.reason) == ("no-driver", nvml.NO_DRIVER_REASON)


# --- wiring: live collection always has NVML facts; saved snapshots keep theirs --------------------------------

SENTINEL = NvmlFacts(status="no-permission", reason="from the test", driver_version=None, cuda_driver_version=None,
                     devices=())


@pytest.mark.parametrize("foreign", [False, True], ids=["local", "python"])
def test_collect_adds_nvml_from_this_process(monkeypatch: pytest.MonkeyPatch, foreign: bool) -> None:
    """collect() sets Facts.nvml from envcheck's own process, also when --python runs the collector elsewhere."""
    monkeypatch.setattr(collect_mod, "collect_nvml", lambda: SENTINEL)
    facts = collect_mod.collect({}, python=sys.executable if foreign else None)
    assert facts.nvml == SENTINEL
    assert facts.origin == (f"python:{sys.executable}" if foreign else "local")


def test_saved_snapshot_keeps_its_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot read from a file keeps its own NVML section, or none; this machine's GPUs are never mixed in."""
    monkeypatch.setattr(collect_mod, "collect_nvml", lambda: SENTINEL)
    without = collect_mod.loads(json.dumps(facts_dict()), "env.json")
    assert without.nvml is None
    saved = collect_mod.loads(json.dumps(facts_dict(nvml=nvml_dict(gpu_dict()))), "env.json").nvml
    assert saved is not None and saved.status == "ok"
    assert [(d.name, d.compute_capability) for d in saved.devices] == [("NVIDIA H100 80GB HBM3", "9.0")]


# --- time bound, containers, platforms without NVML, GPUs the user may not open, MIG ---------------------------


def test_hung_nvml_is_a_timeout_not_a_hang(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU that makes NVML block (nvmlInit never returns) costs the time bound, and the facts say "timeout"
    with devices unknown, never "no GPU"."""
    release = threading.Event()
    module = sys.modules["pynvml"]
    monkeypatch.setattr(module, "nvmlInit", lambda: release.wait(30))
    try:
        facts = nvml.collect_nvml(timeout_s=0.2)
    finally:
        release.set()  # lets the abandoned reader finish
    assert (facts.status, facts.devices) == ("timeout", ())
    assert facts.reason is not None and "0.2 s" in facts.reason
    assert not facts.devices_known


def test_hung_device_query_is_a_timeout(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch) -> None:
    """A device handle that blocks (NVML initializing a GPU in a bad state) bounds the whole reading too."""
    release = threading.Event()
    module = sys.modules["pynvml"]
    monkeypatch.setattr(module, "nvmlDeviceGetHandleByIndex", lambda index: release.wait(30))
    try:
        facts = nvml.collect_nvml(timeout_s=0.2)
    finally:
        release.set()
    assert facts.status == "timeout"


@pytest.mark.parametrize(
    ("error", "nodes", "status", "reason"),
    [
        pytest.param("NVML_ERROR_DRIVER_NOT_LOADED", False, "no-gpu-access", "--gpus", id="started-without-gpus"),
        pytest.param("NVML_ERROR_DRIVER_NOT_LOADED", True, "driver-not-loaded", "kernel module is not loaded",
                     id="device-nodes-present"),
        pytest.param("NVML_ERROR_UNKNOWN", True, "no-gpu-access", "systemctl daemon-reload", id="error-999"),
    ],
)
def test_container_without_gpu_access(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch, error: str, nodes: bool,
                                      status: str, reason: str) -> None:
    """In a container, the errors a missing GPU grant gives are "no-gpu-access" with the real cause, and the
    devices are unknown rather than known to be none."""
    fake.init_error = V[error]
    monkeypatch.setattr(nvml, "_in_container", lambda: True)
    monkeypatch.setattr(nvml, "_exists", lambda path: nodes and path == "/dev/nvidiactl")
    facts = nvml.collect_nvml()
    assert facts.status == status
    assert facts.reason is not None and reason in facts.reason
    assert facts.devices_known is (status == "driver-not-loaded")


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        pytest.param({"/etc/nv_tegra_release": b"# R35 (release)"}, "Jetson / Tegra", id="jetson"),
        pytest.param({"/proc/device-tree/compatible": b"nvidia,p3737-0000+p3701-0000\0nvidia,tegra234\0"},
                     "Jetson / Tegra", id="tegra-device-tree"),
        pytest.param({"/dev/dxg": b""}, "WSL2", id="wsl2"),
        pytest.param({"/proc/sys/kernel/osrelease": b"5.15.153.1-microsoft-standard-WSL2"}, "WSL2",
                     id="wsl2-kernel"),
    ],
)
def test_platforms_without_nvml_are_unavailable(monkeypatch: pytest.MonkeyPatch, files: dict[str, bytes],
                                                reason: str) -> None:
    """Jetson has no NVML and WSL2 may lack it on the loader's path: "unavailable" with why, not "no driver"."""
    monkeypatch.setattr(nvml, "_library_present", lambda platform: False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(nvml, "_exists", lambda path: path in files)
    monkeypatch.setattr(nvml, "_read_bytes", lambda path: files.get(path, b""))
    facts = nvml.collect_nvml()
    assert facts.status == "unavailable" and not facts.devices_known
    assert facts.reason is not None and reason in facts.reason


def test_plain_linux_without_library_is_no_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without NVML and with no sign of Tegra or WSL2, the machine has no NVIDIA driver."""
    monkeypatch.setattr(nvml, "_library_present", lambda platform: False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(nvml, "_exists", lambda path: False)
    monkeypatch.setattr(nvml, "_read_bytes", lambda path: b"6.8.0-45-generic")
    assert nvml.collect_nvml().status == "no-driver"


def test_gpu_the_user_may_not_open(fake: FakeNvml) -> None:
    """nvmlDeviceGetCount counts GPUs whose handle is NO_PERMISSION (another job's GPU under cgroups): such a GPU
    is listed but not accessible, the overall status stays ok, and device predicates see only the other GPU."""
    fake.gpus = [FakeGpu(**{**asdict(H100), "fail": {"nvmlDeviceGetHandleByIndex": V["NVML_ERROR_NO_PERMISSION"]}}),
                 RTX4090]
    facts = nvml.collect_nvml()
    assert facts.status == "ok" and facts.devices_known
    locked, mine = facts.devices
    assert locked.error is not None and locked.error.startswith("no-permission: ")
    assert (locked.accessible, mine.accessible) == (False, True)
    assert facts.accessible_devices == (RTX4090_FACT,)


def test_mig_instances_are_listed_by_uuid(fake: FakeNvml, monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU in MIG mode lists its instances' "MIG-..." UUIDs (what CUDA and torch see); empty slots are skipped."""
    module = sys.modules["pynvml"]
    instances = {0: "MIG-11111111-0000-0000-0000-000000000000", 2: "MIG-22222222-0000-0000-0000-000000000000"}

    def handle(parent: FakeGpu, slot: int) -> str:
        if slot not in instances:
            raise module.NVMLError(V["NVML_ERROR_NOT_SUPPORTED"])  # NVML: NOT_FOUND for an empty slot
        return f"mig:{slot}"

    def uuid(h: object) -> str:
        return instances[int(h.split(":")[1])] if isinstance(h, str) else h.uuid  # type: ignore[attr-defined]

    monkeypatch.setattr(module, "nvmlDeviceGetMaxMigDeviceCount", lambda h: 7, raising=False)
    monkeypatch.setattr(module, "nvmlDeviceGetMigDeviceHandleByIndex", handle, raising=False)
    monkeypatch.setattr(module, "nvmlDeviceGetUUID", uuid)
    h100, rtx = nvml.collect_nvml().devices
    assert h100.mig_mode is True and h100.mig_uuids == (instances[0], instances[2])
    assert rtx.mig_uuids == ()  # MIG not supported: not asked

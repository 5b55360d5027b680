"""Derived GPU facts: driver vs torch's CUDA runtime, GPUs without native bf16, and torch's arch coverage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _fakes import build_facts, gpu_dict, nvml_dict, torch_dict

from envcheck.derived import build_matrix
from envcheck.derived import tables as tables_mod
from envcheck.derived.derive import DERIVATIONS, Derived
from envcheck.errors import RuleError
from envcheck.rules import rule_pack
from envcheck.rules.rule_pack import builtin_rules_dir

FLOORS = '[minor-compatibility.linux]\n"12" = "525.60.13"\n'
NO_DRIVER = nvml_dict(status="no-driver", driver=None, cuda=None)
TABLES = tables_mod.load([builtin_rules_dir()])


def _derived(name: str, **facts: Any) -> Any:
    return Derived(build_facts(**facts), TABLES).get(name)


def _build_probe(archs: object) -> dict[str, Any]:
    """The torch-build probe's result with `archs` as its arch list."""
    return {"torch-build": {"status": "ok", "details": {"arch_list": archs}}}


@pytest.mark.parametrize(
    ("torch", "nvml", "platform", "expected"),
    [
        pytest.param(torch_dict(cuda="12.4"), nvml_dict(cuda="12.4"), "linux", "ok", id="same-version"),
        pytest.param(torch_dict(cuda="12.1"), nvml_dict(driver="570.86.10", cuda="12.8"), "linux", "ok",
                     id="newer-driver"),
        pytest.param(torch_dict(cuda="11.8"), nvml_dict(driver="580.65.06", cuda="13.0"), "linux", "ok",
                     id="newer-major-driver"),
        pytest.param(torch_dict(cuda="12.8"), nvml_dict(driver="550.54.15", cuda="12.4"), "linux", "minor-compat",
                     id="minor-compat-12"),
        pytest.param(torch_dict(cuda="11.8"), nvml_dict(driver="470.82.01", cuda="11.4"), "linux", "minor-compat",
                     id="minor-compat-11"),
        pytest.param(torch_dict(cuda="12.4"), nvml_dict(driver="524.99", cuda="12.0"), "linux", "too-old",
                     id="same-major-below-floor"),
        # NVIDIA's floors are full versions, per platform: the branch number alone is not enough
        pytest.param(torch_dict(cuda="11.8"), nvml_dict(driver="450.51.06", cuda="11.0"), "linux", "too-old",
                     id="branch-450-below-450.80.02"),
        pytest.param(torch_dict(cuda="11.8"), nvml_dict(driver="450.80.02", cuda="11.0"), "linux", "minor-compat",
                     id="exactly-450.80.02"),
        pytest.param(torch_dict(cuda="11.8"), nvml_dict(driver="451.82", cuda="11.0"), "win32", "too-old",
                     id="windows-11-below-452.39"),
        pytest.param(torch_dict(cuda="12.4"), nvml_dict(driver="526.98", cuda="12.0"), "win32", "too-old",
                     id="windows-12-below-527.41"),
        pytest.param(torch_dict(cuda="12.4"), nvml_dict(driver="527.41", cuda="12.0"), "win32", "minor-compat",
                     id="windows-12-at-527.41"),
        pytest.param(torch_dict(cuda="13.2"), nvml_dict(driver="581.15", cuda="13.0"), "linux", "minor-compat",
                     id="linux-13-minor-compat"),
        pytest.param(torch_dict(cuda="13.2"), nvml_dict(driver="581.15", cuda="13.0"), "win32", "too-old",
                     id="windows-13-has-no-minor-compat"),
        pytest.param(torch_dict(cuda="11.7"), nvml_dict(driver="515.43.04", cuda=None), "linux", "ok",
                     id="table-11.7-row"),
        pytest.param(torch_dict(cuda="13.1"), nvml_dict(driver="590.44.01", cuda=None), "linux", "ok",
                     id="table-13.1-row"),
        pytest.param(torch_dict(cuda="12.1"), nvml_dict(driver="520.61.05", cuda="11.8"), "linux", "too-old",
                     id="older-major"),
        pytest.param(torch_dict(cuda="13.0"), nvml_dict(driver="575.51.03", cuda="12.9"), "linux", "too-old",
                     id="cuda-13-on-12-driver"),
        pytest.param(torch_dict(cuda="10.2"), nvml_dict(driver="418.39", cuda="10.1"), "linux", "too-old",
                     id="cuda-10-had-no-minor-compat"),
        pytest.param(torch_dict(cuda="14.1"), nvml_dict(driver="600.1", cuda="14.0"), "linux", None,
                     id="major-not-in-table"),
        # no NVML CUDA version: the driver against the toolkit's minimum driver (rules/data/cuda-driver.toml)
        pytest.param(torch_dict(cuda="12.4"), nvml_dict(driver="550.54.15", cuda=None), "linux", "ok",
                     id="table-ok"),
        pytest.param(torch_dict(cuda="12.6"), nvml_dict(driver="550.54.15", cuda=None), "linux", "minor-compat",
                     id="table-minor-compat"),
        pytest.param(torch_dict(cuda="12.4"), nvml_dict(driver="470.82.01", cuda=None), "linux", "too-old",
                     id="table-too-old"),
        pytest.param(torch_dict(cuda="12.4"), nvml_dict(driver="551.61", cuda=None), "win32", "ok",
                     id="table-windows"),
        pytest.param(torch_dict(cuda="12.4"), nvml_dict(driver="550.54.15", cuda=None), "win32", "minor-compat",
                     id="table-windows-is-another-table"),
        pytest.param(torch_dict(cuda="12.7"), nvml_dict(driver="550.54.15", cuda=None), "linux", None,
                     id="table-no-such-toolkit"),
        # nothing to compare
        pytest.param(None, nvml_dict(), "linux", "n/a", id="no-torch"),
        pytest.param(torch_dict("2.6.0+cpu", cuda=None), nvml_dict(), "linux", "n/a", id="cpu-torch"),
        pytest.param(torch_dict("2.5.1+rocm6.2", cuda=None, hip="6.2.41133"), nvml_dict(), "linux", "n/a",
                     id="rocm-torch"),
        pytest.param(torch_dict(cuda="12.4"), NO_DRIVER, "linux", "n/a", id="no-driver"),
        pytest.param(torch_dict(cuda="12.4"), nvml_dict(status="driver-not-loaded", driver=None, cuda=None), "linux",
                     "n/a", id="driver-not-loaded"),
        # genuinely unknown
        pytest.param(torch_dict(cuda="12.4"), None, "linux", None, id="no-nvml-facts"),
        pytest.param(torch_dict(cuda="12.4"), nvml_dict(status="no-permission", driver=None, cuda=None), "linux",
                     None, id="no-permission"),
        pytest.param(torch_dict(version=None, cuda=None, problem="unreadable"), nvml_dict(), "linux", None,
                     id="torch-version-py-unreadable"),
    ],
)
def test_driver_vs_torch_cuda(torch: dict[str, Any] | None, nvml: dict[str, Any] | None, platform: str,
                              expected: str | None) -> None:
    """NVML's CUDA version >= torch's is ok; below it within a major, the driver branch's floor decides."""
    value = _derived("gpu.driver-vs-torch-cuda", torch=torch, nvml=nvml, python={"platform": platform})
    assert value == expected


@pytest.mark.parametrize(
    ("nvml", "expected"),
    [
        pytest.param(nvml_dict(gpu_dict(0, "9.0"), gpu_dict(1, "7.5", "Tesla T4"), gpu_dict(2, "6.1", "GTX 1080")),
                     [{"index": "1", "name": "Tesla T4", "compute_capability": "7.5"},
                      {"index": "2", "name": "GTX 1080", "compute_capability": "6.1"}], id="mixed"),
        pytest.param(nvml_dict(gpu_dict(0, "8.0"), gpu_dict(1, "8.6")), [], id="all-ampere-or-newer"),
        pytest.param(nvml_dict(gpu_dict(0, "10.0")), [], id="two-digit-major"),
        pytest.param(NO_DRIVER, [], id="no-driver-no-gpus"),
        pytest.param(nvml_dict(gpu_dict(0, "7.0", "V100"), gpu_dict(1, None, error="gpu-lost: lost")),
                     [{"index": "0", "name": "V100", "compute_capability": "7.0"}], id="one-unknown-one-found"),
        pytest.param(nvml_dict(gpu_dict(0, "9.0"), gpu_dict(1, None, error="gpu-lost: lost")), None,
                     id="one-unknown-none-found"),
        pytest.param(nvml_dict(status="no-permission", driver=None, cuda=None), None, id="devices-unknown"),
        pytest.param(None, None, id="no-nvml-facts"),
    ],
)
def test_devices_without_native_bf16(nvml: dict[str, Any] | None, expected: list[dict[str, str]] | None) -> None:
    """GPUs below compute capability 8.0 are listed; unknown only when an unreadable GPU could change the answer."""
    assert _derived("gpu.devices-without-native-bf16", nvml=nvml) == expected


CU124_ARCHS = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]


@pytest.mark.parametrize(
    ("capability", "archs", "expected"),
    [
        pytest.param((8, 6), CU124_ARCHS, "native", id="exact-cubin"),
        pytest.param((8, 9), CU124_ARCHS, "native", id="same-major-higher-minor"),
        pytest.param((8, 0), ["sm_86"], "none", id="higher-minor-cubin-does-not-run"),
        pytest.param((12, 0), CU124_ARCHS, "none", id="blackwell-on-cu124"),
        pytest.param((12, 0), [*CU124_ARCHS, "compute_90"], "ptx-jit", id="ptx-jit-forward"),
        pytest.param((8, 6), ["sm_90", "compute_90"], "none", id="ptx-newer-than-device"),
        pytest.param((9, 0), ["sm_90a"], "native", id="arch-specific-exact"),
        pytest.param((10, 0), ["sm_90a", "compute_90a"], "none", id="arch-specific-elsewhere"),
        pytest.param((10, 3), ["sm_100f"], "native", id="family-cubin"),
        pytest.param((12, 0), ["sm_100f", "compute_100f"], "none", id="family-is-one-major"),
        pytest.param((3, 7), CU124_ARCHS, "none", id="too-old-for-build"),
        pytest.param((10, 0), ["sm_100", "compute_120"], "native", id="three-digit-arch"),
        pytest.param((9, 0), ["gfx90a", "lto_90"], "none", id="not-cuda-arch"),
    ],
)
def test_coverage_rule(capability: tuple[int, int], archs: list[str], expected: str) -> None:
    """The CUDA binary compatibility rule: cubins within a major upwards, sm_XYa exactly, PTX for any newer GPU (one
    implementation, envcheck/derived/build_matrix.py, serves the probe's arch list and the build matrix's)."""
    assert build_matrix.coverage(archs, capability) == expected


TWO_GPUS = nvml_dict(gpu_dict(0, "9.0"), gpu_dict(1, "12.0", "NVIDIA GeForce RTX 5090"))


@pytest.mark.parametrize(
    ("torch", "nvml", "probes", "expected"),
    [
        pytest.param(torch_dict(), TWO_GPUS, _build_probe(CU124_ARCHS), [("0", "native"), ("1", "none")],
                     id="blackwell-not-in-cu124"),
        pytest.param(torch_dict(), TWO_GPUS, _build_probe("sm_90 compute_90"), [("0", "native"), ("1", "ptx-jit")],
                     id="arch-list-as-string"),
        pytest.param(torch_dict(), NO_DRIVER, _build_probe(CU124_ARCHS), [], id="no-gpus"),
        pytest.param(torch_dict(), nvml_dict(gpu_dict(0, None, error="gpu-lost: x")), _build_probe(CU124_ARCHS),
                     [("0", "unknown")], id="capability-unknown"),
        pytest.param(torch_dict(cuda=None), TWO_GPUS, {}, [], id="cpu-torch"),
        pytest.param(None, TWO_GPUS, {}, [], id="no-torch"),
        # Without the probe's list, the build matrix's list for 2.5.1+cu124 decides (envcheck/derived/builds.py).
        pytest.param(torch_dict(), TWO_GPUS, {}, [("0", "native"), ("1", "none")], id="probe-not-run"),
        pytest.param(torch_dict(), TWO_GPUS, _build_probe(None), [("0", "native"), ("1", "none")],
                     id="probe-without-arch-list"),
        pytest.param(torch_dict(), TWO_GPUS, _build_probe([]), [("0", "native"), ("1", "none")],
                     id="empty-arch-list"),
        pytest.param(torch_dict("2.5.0a0+git1234"), TWO_GPUS, {}, None, id="probe-not-run-build-not-in-matrix"),
        pytest.param(torch_dict(), None, _build_probe(CU124_ARCHS), None, id="no-nvml-facts"),
        pytest.param(torch_dict(), nvml_dict(status="driver-mismatch", driver=None, cuda=None),
                     _build_probe(CU124_ARCHS), None, id="devices-unknown"),
        # PTX needs a driver that can JIT it: one running CUDA 12.8 through minor compatibility cannot
        pytest.param(torch_dict("2.7.0+cu128", cuda="12.8"), nvml_dict(gpu_dict(0, "12.0"), cuda="12.4"),
                     _build_probe("sm_90 compute_90"), [("0", "none")], id="ptx-on-minor-compat-driver"),
        pytest.param(torch_dict("2.7.0+cu128", cuda="12.8"), nvml_dict(gpu_dict(0, "12.0"), driver="570.86.10",
                     cuda="12.8"), _build_probe("sm_90 compute_90"), [("0", "ptx-jit")], id="ptx-on-current-driver"),
        # a GPU this user may not open (NVML_ERROR_NO_PERMISSION) is left out, not "unknown"
        pytest.param(torch_dict(), nvml_dict(gpu_dict(0, "9.0"), gpu_dict(1, None, name=None,
                     error="no-permission: no permission to open the NVIDIA devices")), _build_probe(CU124_ARCHS),
                     [("0", "native")], id="inaccessible-gpu-left-out"),
    ],
)
def test_arch_coverage(torch: dict[str, Any] | None, nvml: dict[str, Any] | None, probes: dict[str, Any],
                       expected: list[tuple[str, str]] | None) -> None:
    """Every NVML GPU gets its coverage by the probe's arch list, else the matrix's; unknown without either list
    or the devices."""
    items = _derived("gpu.arch-coverage", torch=torch, nvml=nvml, probes=probes)
    if expected is None:
        assert items is None
        return
    assert [(i["index"], i["coverage"]) for i in items] == expected
    assert all(set(i) == set(DERIVATIONS["gpu.arch-coverage"].fields) for i in items)


def test_arch_coverage_item() -> None:
    """An item names the GPU, its capability and the build's archs, as `foreach` templates use them."""
    [item] = _derived("gpu.arch-coverage", torch=torch_dict(), nvml=nvml_dict(gpu_dict(0, "12.0", "RTX 5090")),
                      probes=_build_probe(CU124_ARCHS))
    assert {k: item[k] for k in ("index", "name", "compute_capability", "coverage", "build_archs", "evidence")} == {
        "index": "0", "name": "RTX 5090", "compute_capability": "12.0", "coverage": "none",
        "build_archs": "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90", "evidence": "the torch-build probe's arch list"}


@pytest.mark.parametrize(
    ("name", "nvml", "expected"),
    [
        pytest.param("gpu.devices-not-in-build", TWO_GPUS, ["1"], id="not-in-build"),
        pytest.param("gpu.devices-needing-ptx-jit", TWO_GPUS, [], id="no-ptx-jit"),
        pytest.param("gpu.devices-not-in-build", nvml_dict(gpu_dict(0, "9.0"), gpu_dict(1, None, error="x")), None,
                     id="unknown-device-could-be-uncovered"),
        pytest.param("gpu.devices-not-in-build", nvml_dict(gpu_dict(0, "12.0"), gpu_dict(1, None, error="x")), ["0"],
                     id="found-despite-unknown-device"),
    ],
)
def test_coverage_views(name: str, nvml: dict[str, Any], expected: list[str] | None) -> None:
    """The filtered views list the GPUs of one coverage; unknown when an unreadable GPU could be among them."""
    items = _derived(name, torch=torch_dict(), nvml=nvml, probes=_build_probe(CU124_ARCHS))
    assert (None if items is None else [i["index"] for i in items]) == expected


def test_shipped_cuda_driver_table() -> None:
    """rules/data/cuda-driver.toml loads: NVIDIA's exact floors per platform and a minimum driver per toolkit."""
    table = TABLES[tables_mod.CUDA_DRIVER]
    floors = {platform: {major: str(v) for major, v in by_major.items()}
              for platform, by_major in table.minor_compat_floor.items()}
    assert floors == {"linux": {11: "450.80.2", 12: "525.60.13", 13: "580"}, "windows": {11: "452.39", 12: "527.41"}}
    linux = table.toolkit_minimum["linux"]
    assert str(linux[(12, 4)]) == "550.54.14" and str(linux[(13, 0)]) == "580.65.6"
    assert {(11, m) for m in range(9)} <= set(linux) and {(13, 1), (13, 2)} <= set(linux)
    assert (12, 8) in table.toolkit_minimum["windows"] and (13, 0) not in table.toolkit_minimum["windows"]
    # Every toolkit after a major's first is at or above the major's floor (11.0 predates NVIDIA's 11.x floor).
    for platform in ("linux", "windows"):
        for (major, minor), driver in table.toolkit_minimum[platform].items():
            floor = table.minor_compat_floor[platform].get(major)
            if floor is not None and minor > 0:
                assert driver >= floor, (platform, major, minor, driver)


def test_cuda_driver_table_is_found_where_the_rules_are() -> None:
    """The table lives in the rule pack's data/ folder, wherever the pack is (checkout or wheel)."""
    assert TABLES.files["cuda-driver"] == str(builtin_rules_dir() / "data" / "cuda-driver.toml")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        pytest.param('[minor-compatibility]\n"12" = "525"\n', "minor-compatibility.12", id="floor-not-per-platform"),
        pytest.param('[minor-compatibility.linux]\n"12" = 525\n', "minor-compatibility.linux.12",
                     id="floor-not-a-version"),
        pytest.param('[minor-compatibility.linux]\nx = "525.60.13"\n', "minor-compatibility.linux.x",
                     id="major-not-a-number"),
        pytest.param('[minor-compatibility.windows]\n"12" = "527.41"\n', "minor-compatibility.linux",
                     id="linux-floors-missing"),
        pytest.param(f'{FLOORS}[toolkit-minimum-driver.linux]\n"12.4" = "5x"\n',
                     "toolkit-minimum-driver.linux.12.4", id="bad-driver-version"),
        pytest.param(f'{FLOORS}[toolkit-minimum-driver.linux]\n"12" = "550"\n',
                     "toolkit-minimum-driver.linux.12", id="toolkit-not-major-minor"),
        pytest.param(f'{FLOORS}[toolkit-minimum-driver.linux]\n"12.4" = "550"\n',
                     "toolkit-minimum-driver.windows", id="platform-missing"),
        pytest.param("", "minor-compatibility", id="empty"),
        pytest.param(f'{FLOORS}[toolkits]\n', "toolkits", id="unknown-key"),
    ],
)
def test_malformed_cuda_driver_table(tmp_path: Path, text: str, key: str) -> None:
    """A malformed table in a rule directory's data/ is one RuleError naming the file and the key when the pack
    loads, not a wrong answer (nor an error verdict) later."""
    path = tmp_path / "data" / "cuda-driver.toml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RuleError) as info:
        rule_pack.load([tmp_path])
    assert info.value.key == key
    assert info.value.file == str(path)


def test_rule_loader_skips_data_tables() -> None:
    """rules/data/*.toml are tables for derivations: the loader reads only the rule files beside them."""
    files = rule_pack.load_files([builtin_rules_dir()])
    assert files and all(f.path.parent == builtin_rules_dir() for f in files)
    assert (builtin_rules_dir() / "data" / "cuda-driver.toml").is_file()


def test_inaccessible_gpu_does_not_make_bf16_unknown() -> None:
    """A GPU NVML counts but the user may not open is not judged: the accessible T4 still lacks native bf16."""
    nvml = nvml_dict(gpu_dict(0, "7.5", "Tesla T4"), gpu_dict(1, None, name=None, error="no-permission: denied"))
    items = _derived("gpu.devices-without-native-bf16", torch=torch_dict(), nvml=nvml)
    assert [i["index"] for i in items] == ["0"]


# --- attention.sdpa-flash-unavailable: only torch's refusal of the flash kernel counts (EC0606) ---------------

FLASH = "cuda:0/backend=flash,dtype=float16"
MATH = "cuda:0/backend=math,dtype=float16"
T4_BUILD = {"status": "ok", "details": {"devices": [{"index": 0, "name": "Tesla T4", "capability": "7.5",
                                                    "uuid": "8c7e1c5a-0000-0000-0000-000000000001"}]}}


def _flash(cases: dict[str, dict[str, Any]], build: dict[str, Any] | None = None,
           nvml: dict[str, Any] | None = None) -> Any:
    probes = {"sdpa": {"status": "ok", "cases": cases}, "torch-build": build or T4_BUILD}
    return _derived("attention.sdpa-flash-unavailable", torch=torch_dict(), nvml=nvml, probes=probes)


def _error(message: str, **extra: Any) -> dict[str, Any]:
    return {"status": "error", "error_class": "RuntimeError", "message": message, **extra}


@pytest.mark.parametrize(
    ("cases", "flagged"),
    [
        pytest.param({FLASH: _error("No available kernel. Aborting execution.", can_use=False,
                                    reasons=["Flash attention only supports gpu architectures in the range [sm80, "
                                             "sm90]. Attempting to run on a sm 7.5 gpu."])}, True, id="can-use-false"),
        pytest.param({FLASH: _error("CUDA out of memory. Tried to allocate 2.00 MiB", can_use=True, reasons=[])},
                     False, id="oom-while-flash-allowed"),
        pytest.param({FLASH: _error("CUDA error: CUDA-capable device(s) is/are busy or unavailable", can_use=None),
                      MATH: _error("CUDA error: CUDA-capable device(s) is/are busy or unavailable")}, False,
                     id="busy-gpu-exclusive-mode"),
        pytest.param({FLASH: _error("CUDA error: no kernel image is available for execution on the device"),
                      MATH: _error("CUDA error: no kernel image is available for execution on the device")}, False,
                     id="no-kernel-image"),
        pytest.param({FLASH: _error("No available kernel. Aborting execution."),
                      MATH: {"status": "ok", "out_dtype": "float16"}}, True, id="torch-2.0-math-ran"),
    ],
)
def test_flash_unavailable_needs_torchs_refusal(cases: dict[str, dict[str, Any]], flagged: bool) -> None:
    """An error of the flash case counts only when torch refused flash (can_use False, or the math backend ran on
    the same device), never for OOM, a busy GPU or a missing kernel image."""
    items = _flash(cases)
    assert bool(items) is flagged


def test_flash_reason_skips_other_backends_warnings() -> None:
    """Without can_use reasons, the reason is the first flash line after torch's header, not the mem-efficient
    warning before it, and without the (Triggered internally at ...) suffix."""
    warnings = [
        "UserWarning: Memory efficient kernel not used because: (Triggered internally at sdp_utils.cpp:718.)",
        "UserWarning: Memory Efficient attention has been runtime disabled. (Triggered internally at x.cpp:1.)",
        "UserWarning: Flash attention kernel not used because: (Triggered internally at sdp_utils.cpp:720.)",
        "UserWarning: Flash attention only supports gpu architectures in the range [sm80, sm90]. Attempting to run "
        "on a sm 7.5 gpu. (Triggered internally at ../aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:201.)",
    ]
    [item] = _flash({FLASH: _error("No available kernel.", warnings=warnings),
                     MATH: {"status": "ok", "out_dtype": "float16"}})
    assert item["reason"] == ("Flash attention only supports gpu architectures in the range [sm80, sm90]. "
                              "Attempting to run on a sm 7.5 gpu.")


@pytest.mark.parametrize("nvml_uuid", ["GPU-8c7e1c5a-0000-0000-0000-000000000001", "MIG-parent"],
                         ids=["gpu-uuid", "mig-instance"])
def test_flash_device_matched_to_nvml_by_uuid(nvml_uuid: str) -> None:
    """Where the torch-build probe could not name the device, NVML's GPU with the same UUID does: torch's bare
    UUID against NVML's "GPU-..." or one of a MIG parent's "MIG-..." instances, whatever the index order."""
    build = {"status": "ok", "details": {"devices": [{"index": 0, "name": None, "capability": None,
                                                     "uuid": "8c7e1c5a-0000-0000-0000-000000000001"}]}}
    other = gpu_dict(0, "9.0", "NVIDIA H100 80GB HBM3")
    target = gpu_dict(1, "7.5", "Tesla T4", uuid=nvml_uuid)
    if nvml_uuid == "MIG-parent":
        target = gpu_dict(1, "7.5", "Tesla T4", uuid="GPU-ffffffff-0000-0000-0000-000000000000",
                          mig_mode=True, mig_uuids=["MIG-8c7e1c5a-0000-0000-0000-000000000001"])
    [item] = _flash({FLASH: _error("No available kernel.", can_use=False, reasons=["sm 7.5"])}, build,
                    nvml_dict(other, target))
    assert (item["name"], item["capability"]) == ("Tesla T4", "7.5")

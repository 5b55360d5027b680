"""Derived GPU facts: driver vs torch's CUDA runtime, GPUs without native bf16, and torch's arch coverage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import build_facts, gpu_dict, nvml_dict, torch_dict

from envcheck import rules as rules_mod
from envcheck.derived import gpu_compat
from envcheck.derived import tables as tables_mod
from envcheck.derived.derive import DERIVATIONS, Derived
from envcheck.errors import RuleError
from envcheck.rules import builtin_rules_dir

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
    """The CUDA binary compatibility rule: cubins within a major upwards, sm_XYa exactly, PTX for any newer GPU."""
    assert gpu_compat.coverage(capability, archs) == expected


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
    """rules/data/cuda-driver.toml loads: floors for CUDA 11-13 and a minimum driver per toolkit and platform."""
    table = TABLES[tables_mod.CUDA_DRIVER]
    assert table.minor_compat_floor == {11: 450, 12: 525, 13: 580}
    linux = table.toolkit_minimum["linux"]
    assert str(linux[(12, 4)]) == "550.54.14" and str(linux[(13, 0)]) == "580.65.6"
    assert (12, 8) in table.toolkit_minimum["windows"]
    # Every toolkit's own minimum is at or above its major's floor, or the data contradicts itself.
    for platform in ("linux", "windows"):
        for (major, _), driver in table.toolkit_minimum[platform].items():
            assert driver.release[0] >= table.minor_compat_floor[major], (platform, major, driver)


def test_cuda_driver_table_is_found_where_the_rules_are() -> None:
    """The table lives in the rule pack's data/ folder, wherever the pack is (checkout or wheel)."""
    assert TABLES.files["cuda-driver"] == str(builtin_rules_dir() / "data" / "cuda-driver.toml")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        pytest.param('[minor-compatibility]\n"12" = "525"\n', "minor-compatibility.12", id="floor-not-an-int"),
        pytest.param("[minor-compatibility]\nx = 525\n", "minor-compatibility.x", id="major-not-a-number"),
        pytest.param('[minor-compatibility]\n"12" = 525\n[toolkit-minimum-driver.linux]\n"12.4" = "5x"\n',
                     "toolkit-minimum-driver.linux.12.4", id="bad-driver-version"),
        pytest.param('[minor-compatibility]\n"12" = 525\n[toolkit-minimum-driver.linux]\n"12" = "550"\n',
                     "toolkit-minimum-driver.linux.12", id="toolkit-not-major-minor"),
        pytest.param('[minor-compatibility]\n"12" = 525\n[toolkit-minimum-driver.linux]\n"12.4" = "550"\n',
                     "toolkit-minimum-driver.windows", id="platform-missing"),
        pytest.param("", "minor-compatibility", id="empty"),
        pytest.param('[minor-compatibility]\n"12" = 525\n[toolkits]\n', "toolkits", id="unknown-key"),
    ],
)
def test_malformed_cuda_driver_table(tmp_path: Path, text: str, key: str) -> None:
    """A malformed table in a rule directory's data/ is one RuleError naming the file and the key when the pack
    loads, not a wrong answer (nor an error verdict) later."""
    path = tmp_path / "data" / "cuda-driver.toml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RuleError) as info:
        rules_mod.load([tmp_path])
    assert info.value.key == key
    assert info.value.file == str(path)


def test_rule_loader_skips_data_tables() -> None:
    """rules/data/*.toml are tables for derivations: the loader reads only the rule files beside them."""
    files = rules_mod.load_files([builtin_rules_dir()])
    assert files and all(f.path.parent == builtin_rules_dir() for f in files)
    assert (builtin_rules_dir() / "data" / "cuda-driver.toml").is_file()

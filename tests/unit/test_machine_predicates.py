"""The gpu, driver and probe predicates over recorded NVML and probe facts: true, false, or unknown naming why."""

from __future__ import annotations

from typing import Any

import pytest
from _fakes import build_facts, gpu_dict, nvml_dict

from envcheck.errors import RuleError
from envcheck.rules.conditions import Context, parse
from envcheck.rules.conditions.where import Where

H100 = gpu_dict(0, "9.0", "NVIDIA H100 80GB HBM3", 81559)
T4 = gpu_dict(1, "7.5", "Tesla T4", 15360)
RTX4090 = gpu_dict(1, "8.9", "NVIDIA GeForce RTX 4090", 24564)
LOST = gpu_dict(2, None, None, None, error="gpu-lost: a GPU has fallen off the bus")
NO_DRIVER = nvml_dict(status="no-driver", driver=None, cuda=None)
NOT_LOADED = nvml_dict(status="driver-not-loaded", driver=None, cuda=None)
NO_PERMISSION = nvml_dict(status="no-permission", driver=None, cuda=None)
UNAVAILABLE = nvml_dict(status="unavailable", driver=None, cuda=None)
MISMATCH = nvml_dict(status="driver-mismatch", driver=None, cuda=None)
SDPA_ERROR = {"status": "error", "error_class": "RuntimeError",
              "message": "Expected query, key, and value to have the same dtype, but got query.dtype: float"}
SDPA = {"sdpa": {"status": "ok", "cases": {"cpu/fp32-q/fp16-kv/eager": SDPA_ERROR,
                                           "cpu/fp16/eager": {"status": "ok"},
                                           "cuda:0/bf16/flash": {"status": "skipped", "message": "no CUDA device"}}}}


@pytest.mark.parametrize(
    ("condition", "nvml", "value"),
    [
        # gpu: device keys, match any (default) / all
        pytest.param({"capability": "<8.0"}, nvml_dict(H100, T4), True, id="any-pre-ampere"),
        pytest.param({"capability": "<8.0"}, nvml_dict(H100, RTX4090), False, id="any-none-pre-ampere"),
        pytest.param({"capability": ">=8.0", "match": "all"}, nvml_dict(H100, RTX4090), True, id="all-ampere"),
        pytest.param({"capability": ">=8.0", "match": "all"}, nvml_dict(H100, T4), False, id="all-but-one"),
        pytest.param({"capability": ">=8.0", "match": "all"}, nvml_dict(), False, id="all-of-zero-devices"),
        pytest.param({"capability": ">=8.0", "match": "all"}, NO_DRIVER, False, id="all-without-driver"),
        pytest.param({"capability": "<8.0"}, NO_DRIVER, False, id="any-without-driver"),
        pytest.param({"capability": "<8.0"}, NOT_LOADED, False, id="any-driver-not-loaded"),
        pytest.param({"name": "RTX 40"}, nvml_dict(H100, RTX4090), True, id="name-regex"),
        pytest.param({"name": "^Tesla"}, nvml_dict(H100, RTX4090), False, id="name-no-match"),
        pytest.param({"memory_gib": ">=24"}, nvml_dict(RTX4090), True, id="memory-24564-mib-is-24.0-gib"),
        pytest.param({"memory_gib": ">=80"}, nvml_dict(H100), False, id="memory-h100-80gb-is-79.6-gib"),
        pytest.param({"capability": ">=9.0", "memory_gib": ">=79"}, nvml_dict(T4, H100), True,
                     id="keys-hold-for-one-device"),
        pytest.param({"capability": "<8.0", "memory_gib": ">=79"}, nvml_dict(T4, H100), False,
                     id="keys-split-across-devices"),
        # gpu: count
        pytest.param({"count": ">1"}, nvml_dict(H100, T4), True, id="count"),
        pytest.param({"count": ">1"}, nvml_dict(H100), False, id="count-too-few"),
        pytest.param({"count": ">0"}, NO_DRIVER, False, id="count-without-driver"),
        pytest.param({"count": ">1", "name": "RTX 40"}, nvml_dict(H100, T4), False, id="count-and-name"),
        # gpu: a device NVML could not read
        pytest.param({"capability": "<8.0"}, nvml_dict(H100, LOST), None, id="any-unknown-device"),
        pytest.param({"capability": "<8.0"}, nvml_dict(T4, LOST), True, id="any-found-despite-unknown"),
        pytest.param({"capability": ">=8.0", "match": "all"}, nvml_dict(H100, LOST), None, id="all-unknown-device"),
        pytest.param({"capability": ">=8.0", "match": "all"}, nvml_dict(T4, LOST), False,
                     id="all-false-despite-unknown"),
        pytest.param({"count": ">2"}, nvml_dict(H100, T4, LOST), True, id="unknown-device-still-counts"),
        # gpu: NVML could not list the devices
        pytest.param({"count": ">0"}, None, None, id="no-nvml-facts"),
        pytest.param({"count": ">0"}, NO_PERMISSION, None, id="no-permission"),
        pytest.param({"capability": ">=8.0", "match": "all"}, MISMATCH, None, id="driver-mismatch"),
        pytest.param({"count": ">0"}, UNAVAILABLE, None, id="bindings-unavailable"),
    ],
)
def test_gpu(condition: dict[str, Any], nvml: dict[str, Any] | None, value: bool | None) -> None:
    """`gpu` holds for one device (or every one with match = "all"); unknown only when NVML could not tell."""
    out = parse({"gpu": condition}, Where("<test>", "EC9999", "when")).evaluate(Context(build_facts(nvml=nvml)))
    assert out.value is value
    assert bool(out.missing) == (value is None)


@pytest.mark.parametrize(
    ("condition", "nvml", "value"),
    [
        pytest.param({"version": "<525.60.13"}, nvml_dict(driver="470.82.01"), True, id="version-old"),
        pytest.param({"version": "<525.60.13"}, nvml_dict(driver="550.54.15"), False, id="version-new"),
        pytest.param({"cuda": "<12.4"}, nvml_dict(cuda="12.2"), True, id="cuda-old"),
        pytest.param({"cuda": "<12.4"}, nvml_dict(cuda="12.4"), False, id="cuda-new"),
        pytest.param({"version": ">=550", "cuda": ">=12.4"}, nvml_dict(), True, id="both-keys"),
        pytest.param({"version": "<525"}, NO_DRIVER, False, id="version-without-driver"),
        pytest.param({"cuda": "<12.4"}, NOT_LOADED, False, id="cuda-driver-not-loaded"),
        pytest.param({"version": "<525"}, NO_PERMISSION, None, id="version-no-permission"),
        pytest.param({"version": "<525"}, nvml_dict(driver="not-a-version"), None, id="version-unparsable"),
        pytest.param({"version": "<525"}, None, None, id="no-nvml-facts"),
        pytest.param({"status": "driver-mismatch"}, MISMATCH, True, id="status"),
        pytest.param({"status": ["no-driver", "driver-not-loaded"]}, NOT_LOADED, True, id="status-list"),
        pytest.param({"status": "driver-mismatch"}, nvml_dict(), False, id="status-other"),
        pytest.param({"status": "driver-mismatch"}, NO_PERMISSION, False, id="status-other-failure"),
        pytest.param({"status": "driver-mismatch"}, UNAVAILABLE, None, id="status-never-asked"),
        pytest.param({"status": "unavailable"}, UNAVAILABLE, True, id="status-unavailable-asked"),
        pytest.param({"status": "ok", "version": "<525"}, nvml_dict(driver="470.82.01"), True, id="status-and-version"),
    ],
)
def test_driver(condition: dict[str, Any], nvml: dict[str, Any] | None, value: bool | None) -> None:
    """`driver` compares the driver and its CUDA version; false without a driver, unknown when NVML could not say."""
    out = parse({"driver": condition}, Where("<test>", "EC9999", "when")).evaluate(Context(build_facts(nvml=nvml)))
    assert out.value is value
    assert bool(out.missing) == (value is None)


@pytest.mark.parametrize(
    ("condition", "probes", "value"),
    [
        pytest.param({"name": "sdpa", "case": "cpu/fp32-q/fp16-kv/eager", "error": "RuntimeError"}, SDPA, True,
                     id="case-raised"),
        pytest.param({"name": "sdpa", "case": "cpu/fp32-q/fp16-kv/eager", "message": "same dtype"}, SDPA, True,
                     id="case-message"),
        pytest.param({"name": "sdpa", "case": "cpu/fp32-q/fp16-kv/eager", "error": "TypeError"}, SDPA, False,
                     id="case-other-error"),
        pytest.param({"name": "sdpa", "case": "cpu/fp16/eager", "error": "RuntimeError"}, SDPA, False,
                     id="case-ok"),
        pytest.param({"name": "sdpa", "case": "cuda:0/bf16/flash", "status": "error"}, SDPA, None,
                     id="case-skipped"),
        pytest.param({"name": "sdpa", "case": "cuda:0/bf16/flash", "status": "skipped"}, SDPA, True,
                     id="case-skipped-asked"),
        pytest.param({"name": "sdpa", "case": "cuda:1/fp16/flash", "status": "error"}, SDPA, None,
                     id="case-not-tried"),
        pytest.param({"name": "sdpa", "status": "ok"}, SDPA, True, id="probe-status"),
        pytest.param({"name": "sdpa", "status": "error"}, {}, None, id="probe-not-run"),
        pytest.param({"name": "apex-fused-norm", "status": "error"},
                     {"apex-fused-norm": {"status": "crashed", "error_class": "SIGSEGV"}}, None, id="crashed"),
        pytest.param({"name": "apex-fused-norm", "status": "crashed"},
                     {"apex-fused-norm": {"status": "crashed", "error_class": "SIGSEGV"}}, True, id="crashed-asked"),
    ],
)
def test_probe(condition: dict[str, Any], probes: dict[str, Any], value: bool | None) -> None:
    """`probe` matches a probe's or a case's status, error class and message; what did not run is unknown."""
    out = parse({"probe": condition}, Where("<test>", "EC9999", "when")).evaluate(Context(build_facts(probes=probes)))
    assert out.value is value
    assert bool(out.missing) == (value is None)


def test_unknown_gpu_names_the_nvml_status() -> None:
    """An unknown GPU outcome names NVML's status and reason, so the skipped verdict says what to fix."""
    nvml = nvml_dict(status="no-permission", reason="no permission to open the NVIDIA devices", driver=None,
                     cuda=None)
    out = parse({"gpu": {"count": ">0"}}, Where("<test>", None, "when")).evaluate(Context(build_facts(nvml=nvml)))
    assert out.missing == frozenset({"GPUs (NVML: no-permission: no permission to open the NVIDIA devices)"})


@pytest.mark.parametrize(
    ("condition", "key", "message"),
    [
        pytest.param({"gpu": {"match": "all"}}, "when.gpu", "needs at least one of", id="gpu-match-alone"),
        pytest.param({"gpu": {}}, "when.gpu", "needs at least one of", id="gpu-empty"),
        pytest.param({"gpu": {"count": ">0", "match": "most"}}, "when.gpu.match", "'any' or 'all'", id="gpu-match"),
        pytest.param({"gpu": {"capability": "8.0+"}}, "when.gpu.capability", "invalid version specifier",
                     id="gpu-specifier"),
        pytest.param({"gpu": {"vram": ">=24"}}, "when.gpu.vram", "unknown key", id="gpu-unknown-key"),
        pytest.param({"driver": {"status": "broken"}}, "when.driver.status", "expected one of", id="driver-status"),
        pytest.param({"driver": {}}, "when.driver", "needs at least one of", id="driver-empty"),
        pytest.param({"probe": {"name": "nope", "status": "ok"}}, "when.probe.name", "unknown probe",
                     id="probe-name"),
        pytest.param({"probe": {"name": "sdpa"}}, "when.probe", "needs at least one of", id="probe-nothing-asked"),
        pytest.param({"probe": {"name": "sdpa", "message": "("}}, "when.probe.message", "invalid regular expression",
                     id="probe-regex"),
    ],
)
def test_machine_predicate_errors(condition: dict[str, Any], key: str, message: str) -> None:
    """A malformed gpu, driver or probe predicate is a RuleError naming the key."""
    with pytest.raises(RuleError) as info:
        parse(condition, Where("<test>", "EC9999", "when"))
    assert info.value.key == key
    assert message in info.value.detail

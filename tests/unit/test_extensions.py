"""Compiled extensions as derived facts: import failures sorted by cause, local version tags, torch's C++11 ABI."""

from __future__ import annotations

from typing import Any

import pytest
from _fakes import dist_dict, facts_dict, torch_dict

from envcheck.derived import extensions
from envcheck.facts.snapshot import Facts


def _facts(*dists: dict[str, Any], torch: dict[str, Any] | None = None, probes: dict[str, Any] | None = None,
           platform: str = "linux") -> Facts:
    raw = facts_dict(dists=list(dists), torch=torch, probes=probes or {})
    raw["python"]["marker_environment"]["sys_platform"] = platform
    return Facts.from_dict(raw, file="<test>")


def _imports(case: dict[str, Any]) -> Facts:
    return _facts(dist_dict("numpy", "2.1.0"), probes={"extension-imports": {"status": "ok", "cases": {"x": case}}})


@pytest.mark.parametrize(("case", "kind"), [
    pytest.param({"status": "error", "message": "/p/x.so: undefined symbol: _ZN2at4_ops15sum"}, "undefined-symbol",
                 id="linux-undefined-symbol"),
    pytest.param({"status": "error", "message": "dlopen(x.so, 2): Symbol not found: __ZN3c10"}, "undefined-symbol",
                 id="macos-symbol-not-found"),
    pytest.param({"status": "error", "message": "DLL load failed while importing _C: The specified procedure could "
                                                "not be found."}, "undefined-symbol", id="windows-procedure"),
    pytest.param({"status": "error", "message": "operator torchvision::nms does not exist"}, "missing-operator",
                 id="operator"),
    pytest.param({"status": "error", "message": "No such operator torch_scatter::scatter_max"}, "missing-operator",
                 id="no-such-operator"),
    pytest.param({"status": "error", "message": "numpy.core.multiarray failed to import",
                  "stderr": "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.0"}, "numpy-abi",
                 id="numpy-1x-on-stderr"),
    pytest.param({"status": "error", "message": "numpy.dtype size changed, may indicate binary incompatibility. "
                                                "Expected 96 from C header, got 88 from PyObject"}, "numpy-abi",
                 id="numpy-dtype-size"),
    pytest.param({"status": "error", "message": "DLL load failed while importing _ext: The specified module could "
                                                "not be found."}, "missing-library", id="windows-dll"),
    pytest.param({"status": "error", "message": "libcudart.so.11.0: cannot open shared object file"},
                 "missing-library", id="linux-so"),
    pytest.param({"status": "crashed", "error_class": "SIGSEGV", "message": "killed"}, "crash", id="crash"),
    pytest.param({"status": "timeout", "message": "did not finish"}, "crash", id="hang"),
    pytest.param({"status": "error", "message": "No module named 'scipy'"}, "other", id="other"),
])
def test_import_failures_are_sorted_by_cause(case: dict[str, Any], kind: str) -> None:
    """Each failure lands in exactly one kind, by the loader's or library's own words."""
    facts = _imports({**case, "version": "1.0", "module": "x"})
    kinds = ("undefined-symbol", "missing-operator", "numpy-abi", "missing-library", "crash", "other")
    found = {k for k in kinds if extensions.import_failures(facts, k)}
    assert found == {kind}


def test_undefined_symbol_item() -> None:
    """The item names the symbol, the module and the installed torch and NumPy."""
    facts = _facts(dist_dict("torch", "2.3.0"), dist_dict("numpy", "1.26.4"), torch=torch_dict("2.3.0", "12.1"),
                   probes={"extension-imports": {"status": "ok", "cases": {"flash-attn": {
                       "status": "error", "error_class": "ImportError", "version": "2.5.6+cu122torch2.2cxx11abiFALSE",
                       "module": "flash_attn", "message": "/p/f.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"}}}})
    assert extensions.import_failures(facts, "undefined-symbol") == [{
        "name": "flash-attn", "version": "2.5.6+cu122torch2.2cxx11abiFALSE", "release": "2.5.6",
        "module": "flash_attn", "error": "ImportError: /p/f.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
        "symbol": "_ZN3c104cuda9SetDeviceEi", "torch": "2.3.0", "numpy": "1.26.4"}]


def test_import_failures_unknown_without_the_probe() -> None:
    """No probe (--static) or a probe that did not finish: unknown, never an empty list that would pass."""
    assert extensions.import_failures(_facts(), "undefined-symbol") is None
    crashed = _facts(probes={"extension-imports": {"status": "crashed", "message": "SIGKILL"}})
    assert extensions.import_failures(crashed, "crash") is None


@pytest.mark.parametrize(("version", "torch", "cuda", "aspects"), [
    pytest.param("2.1.1+pt20cu118", "2.1.0+cu118", "11.8", {"torch"}, id="pyg-other-minor"),
    pytest.param("2.1.1+pt21cu118", "2.1.0+cu118", "11.8", set(), id="pyg-same"),
    pytest.param("2.1.2+pt23cu118", "2.3.0+cu121", "12.1", {"cuda"}, id="pyg-other-cuda-major"),
    pytest.param("2.1.2+pt23cu121", "2.3.1+cu124", "12.4", set(), id="pyg-same-major-other-minor"),
    pytest.param("2.1.2+pt23cu121", "2.3.0+cpu", None, {"cuda"}, id="pyg-cuda-on-cpu-torch"),
    pytest.param("2.1.2+pt23cpu", "2.3.0+cu121", "12.1", set(), id="pyg-cpu-on-cuda-torch"),
    pytest.param("1.6.3+pt113cu117", "1.13.1+cu117", "11.7", set(), id="pyg-torch-1-13"),
    pytest.param("2.5.8+cu122torch2.3cxx11abiFALSE", "2.2.2+cu121", "12.1", {"torch"}, id="flash-attn-other-minor"),
    pytest.param("2.7.4+cu12torch2.6cxx11abiFALSE", "2.6.0+cu124", "12.4", set(), id="flash-attn-cuda-major-only"),
    pytest.param("2.5.8", "2.2.2+cu121", "12.1", set(), id="untagged"),
    pytest.param("0.20.1+cu124", "2.5.1+cu124", "12.4", set(), id="pytorch-index-tag-is-not-read"),
])
def test_local_tags(version: str, torch: str, cuda: str | None, aspects: set[str]) -> None:
    """A local tag's torch minor and CUDA major are compared with the installed torch's."""
    facts = _facts(dist_dict("torch", torch), dist_dict("ext", version), torch=torch_dict(torch, cuda))
    found = {a for a in ("torch", "cuda") if extensions.tag_mismatches(facts, a)}
    assert found == aspects


@pytest.mark.parametrize(("tag", "abi", "fires"), [
    pytest.param("cxx11abiTRUE", False, True, id="true-on-pre-cxx11-torch"),
    pytest.param("cxx11abiFALSE", False, False, id="false-on-pre-cxx11-torch"),
    pytest.param("cxx11abiFALSE", True, True, id="false-on-cxx11-torch"),
])
def test_abi_tag_against_the_probe(tag: str, abi: bool, fires: bool) -> None:
    """The ABI in flash-attn's tag is compared with what the torch-build probe read from torch._C."""
    facts = _facts(dist_dict("torch", "2.2.0"), dist_dict("flash-attn", f"2.5.5+cu118torch2.2{tag}"),
                   torch=torch_dict("2.2.0", "11.8"),
                   probes={"torch-build": {"status": "ok", "details": {"cxx11_abi": abi}}})
    assert bool(extensions.tag_mismatches(facts, "abi")) is fires


@pytest.mark.parametrize(("torch", "installer", "platform", "abi"), [
    pytest.param("2.5.1", "pip", "linux", False, id="pypi-2.5-pre-cxx11"),
    pytest.param("2.7.0+cu126", "uv", "linux", True, id="2.7-cxx11"),
    pytest.param("2.6.0", "pip", "linux", False, id="2.6-pypi-cuda-12.4"),
    pytest.param("2.6.0+cu126", "pip", "linux", True, id="2.6-cuda-12.6"),
    pytest.param("2.7.0", "conda", "linux", None, id="conda-unknown"),
    pytest.param("2.7.0", "pip", "win32", None, id="not-linux"),
    pytest.param("2.8.0.dev20250601", "pip", "linux", None, id="nightly-unknown"),
])
def test_static_cxx11_abi(torch: str, installer: str, platform: str, abi: bool | None) -> None:
    """Without the probe, the ABI is what the official Linux wheels of that release use, else unknown."""
    cuda = "12.6" if torch.endswith("cu126") else "12.4"
    facts = _facts(dist_dict("torch", torch, installer=installer), torch=torch_dict(torch, cuda), platform=platform)
    assert extensions.torch_cxx11_abi(facts) is abi


def test_a_companion_the_companion_rules_report_is_not_reported_again() -> None:
    """A CUDA torchvision next to a CPU torch fails to import, but EC0703 already names the build to install: the
    import fact leaves torchvision to it and keeps every other failed extension."""
    from envcheck.derived.derive import Derived
    from envcheck.rules import rule_pack

    failed = {"status": "error", "error_class": "RuntimeError", "module": "x",
              "message": "operator torchvision::nms does not exist"}
    facts = _facts(dist_dict("torch", "2.13.0+cpu"), dist_dict("torchvision", "0.28.0", "torch==2.13.0"),
                   dist_dict("torch-scatter", "2.1.2"), torch=torch_dict("2.13.0+cpu", None),
                   probes={"extension-imports": {"status": "ok", "cases": {
                       "torchvision": {**failed, "version": "0.28.0"},
                       "torch-scatter": {**failed, "version": "2.1.2",
                                         "message": "operator torch_scatter::scatter_max does not exist"}}}})
    derived = Derived(facts, rule_pack.load().tables)
    assert [c["name"] for c in derived.get("companions.torchvision-build-mismatch")] == ["torchvision"]
    assert [i["name"] for i in derived.get("extensions.import-missing-operator")] == ["torch-scatter"]
    assert [i["name"] for i in extensions.import_failures(facts, "missing-operator")] == ["torch-scatter",
                                                                                           "torchvision"]

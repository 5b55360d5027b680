"""Multi-GPU facts: NCCL's version, CUDA_VISIBLE_DEVICES entries, mixed GPU models, bitsandbytes' override."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _fakes import build_facts, dist_dict, facts_dict, gpu_dict, nvml_dict, torch_dict

from envcheck.derived import multigpu
from envcheck.facts.snapshot import Facts
from envcheck.sources.live.collect import collect_network

TWO = nvml_dict(gpu_dict(0), gpu_dict(1))


@pytest.mark.parametrize(("value", "nvml", "entries"), [
    pytest.param("0,1", TWO, [], id="both-exist"),
    pytest.param("1,0", TWO, [], id="reordered"),
    pytest.param("0,3", TWO, ["3"], id="index-beyond"),
    pytest.param("7", nvml_dict(gpu_dict(0)), ["7"], id="one-gpu-node"),
    pytest.param("GPU-00000001", TWO, [], id="uuid-prefix"),
    pytest.param("GPU-deadbeef", TWO, ["GPU-deadbeef"], id="foreign-uuid"),
    pytest.param("MIG-1234", TWO, ["MIG-1234"], id="mig-without-mig-mode"),
    pytest.param("0,-1", TWO, ["-1"], id="negative-later"),
    pytest.param("cuda:0", TWO, ["cuda:0"], id="not-an-entry"),
    pytest.param("", TWO, [], id="empty-left-to-EC0202"),
    pytest.param("-1", TWO, [], id="leading-negative-left-to-EC0202"),
    pytest.param("5", nvml_dict(gpu_dict(0, mig_mode=True)), [], id="indices-under-mig-not-judged"),
])
def test_visible_devices_missing(value: str, nvml: dict[str, Any], entries: list[str]) -> None:
    """Each entry naming no GPU is reported; valid entries and values EC0202 covers are not."""
    facts = build_facts(env={"CUDA_VISIBLE_DEVICES": value}, nvml=nvml)
    found = multigpu.visible_devices_missing(facts)
    assert found is not None and [i["entry"] for i in found] == entries


def test_visible_devices_unknown_without_nvml_devices() -> None:
    """Without NVML's device list the entries cannot be judged: unknown, not clean."""
    facts = build_facts(env={"CUDA_VISIBLE_DEVICES": "3"}, nvml=nvml_dict(status="error"))
    assert multigpu.visible_devices_missing(facts) is None


def test_nccl_version_prefers_the_probe_over_the_wheel() -> None:
    """The probe's answer is the NCCL torch loaded; the wheel's version stands in without the probe."""
    dists = [dist_dict("torch", "2.5.1+cu124"), dist_dict("nvidia-nccl-cu12", "2.21.5")]
    static = build_facts(dists=dists, torch=torch_dict())
    probed = build_facts(dists=dists, torch=torch_dict(),
                         probes={"torch-build": {"status": "ok", "details": {"nccl_version": "2.18.1"}}})
    assert [i["version"] for i in multigpu.nccl_version(static)] == ["2.21.5"]
    assert [i["version"] for i in multigpu.nccl_version(probed)] == ["2.18.1"]
    assert multigpu.nccl_other_than_wheel(static) is None
    assert multigpu.nccl_other_than_wheel(probed) == [
        {"loaded": "2.18.1", "wheel": "nvidia-nccl-cu12", "wheel_version": "2.21.5"}]


def test_mixed_models_lists_each_model_with_its_indices() -> None:
    """Two models are reported with NVML's indices; identical GPUs are not."""
    mixed = build_facts(nvml=nvml_dict(gpu_dict(0, name="NVIDIA GeForce RTX 3060"),
                                       gpu_dict(1, name="NVIDIA GeForce RTX 4090"),
                                       gpu_dict(2, name="NVIDIA GeForce RTX 3060")))
    assert multigpu.mixed_models(mixed) == [{"name": "NVIDIA GeForce RTX 3060", "indices": "0 2"},
                                            {"name": "NVIDIA GeForce RTX 4090", "indices": "1"}]
    assert multigpu.mixed_models(build_facts(nvml=TWO)) == []


@pytest.mark.parametrize(("value", "torch", "library"), [
    pytest.param("118", torch_dict(), "libbitsandbytes_cuda118", id="other-cuda"),
    pytest.param("124", torch_dict(), None, id="torch-own-cuda"),
    pytest.param("", torch_dict(), None, id="empty"),
    pytest.param("121", torch_dict("2.5.1+cpu", None), "libbitsandbytes_cuda121", id="cpu-torch"),
])
def test_bitsandbytes_override(value: str, torch: dict[str, Any], library: str | None) -> None:
    """BNB_CUDA_VERSION is reported when it names another CUDA than torch's."""
    found = multigpu.bitsandbytes_cuda_override(build_facts(env={"BNB_CUDA_VERSION": value}, torch=torch))
    assert [i["library"] for i in found or ()] == ([library] if library else [])


def _with_network(env: dict[str, str], interfaces: list[str] | None) -> Any:
    data = facts_dict(env=env)
    data["network"] = None if interfaces is None else {"interfaces": interfaces}
    return Facts.from_dict(data, file="<test>")


@pytest.mark.parametrize(("value", "reported"), [
    pytest.param("eth0", True, id="missing-name"),
    pytest.param("en", False, id="prefix-matches"),
    pytest.param("=ens5", False, id="exact-match"),
    pytest.param("=ens", True, id="exact-needs-the-whole-name"),
    pytest.param("eth,ib", True, id="no-prefix-matches"),
    pytest.param("eth,ens", False, id="second-prefix-matches"),
    pytest.param("^docker,lo", False, id="exclusion-not-judged"),
    pytest.param("e", False, id="one-character-ignored-by-nccl"),
])
def test_nccl_socket_ifname(value: str, reported: bool) -> None:
    """NCCL_SOCKET_IFNAME is reported when none of its prefixes (or `=` exact names) matches an interface."""
    found = multigpu.nccl_ifname_missing(_with_network({"NCCL_SOCKET_IFNAME": value}, ["docker0", "ens5", "lo"]))
    assert bool(found) is reported


def test_gloo_socket_ifname_reports_each_missing_name() -> None:
    """GLOO_SOCKET_IFNAME names exact interfaces; each one missing is listed, and nothing is judged without facts."""
    facts = _with_network({"GLOO_SOCKET_IFNAME": "eth0,ib0,bond1"}, ["eth0", "lo"])
    assert [i["missing"] for i in multigpu.gloo_ifname_missing(facts) or ()] == ["ib0, bond1"]
    assert multigpu.gloo_ifname_missing(_with_network({"GLOO_SOCKET_IFNAME": "bond1"}, None)) is None
    assert multigpu.gloo_ifname_missing(_with_network({}, None)) == []  # unset: nothing to judge, even unknown
    assert multigpu.nccl_ifname_missing(_with_network({}, None)) == []


def test_network_facts_round_trip_and_real_collection() -> None:
    """This machine's interfaces are collected without a subprocess and survive the snapshot's JSON form."""
    found = collect_network()
    assert found is not None and found.interfaces == tuple(sorted(found.interfaces))
    facts = _with_network({}, list(found.interfaces))
    again = Facts.from_dict(json.loads(json.dumps(facts.to_dict())), file="<round trip>")
    assert again.network == found
    assert Facts.from_dict(facts_dict(), file="<older>").network is None

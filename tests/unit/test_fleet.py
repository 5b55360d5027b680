"""The fleet report without torch: fingerprints, grouping, differences, fleet checks, reporters, `fleet merge`.

Recorded snapshots under tests/fixtures/fleet/ (derived from clean-cuda-venv.json, see its README): node-a and
node-b have the same environment (node-b's venv path and GPU UUIDs differ), node-c has another torch, NCCL,
driver and GPU model. tests/unit/test_fleet_gather.py covers the gather; tests/e2e/test_fleet_real.py runs real
torchrun.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
from _fakes import FIXTURES, POISON, write_tree
from click.testing import CliRunner

import envcheck
from envcheck.cli import click_cli
from envcheck.cli.fleet_cli import fleet
from envcheck.errors import EnvcheckError
from envcheck.facts.gpu_device import GpuDevice
from envcheck.facts.gpus import NvmlFacts
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.snapshot import Facts
from envcheck.fleet import checkdoc, checks, local, merge
from envcheck.fleet.distributed import RankEnv
from envcheck.fleet.fingerprint import fingerprint, view
from envcheck.fleet.model import Member, spans
from envcheck.fleet.report import render_json, render_text
from envcheck.rules import rule_pack
from envcheck.sources.live import collect as collect_mod

FLEET = FIXTURES / "fleet"
NODES = [str(FLEET / f"node-{n}.json") for n in "abc"]
SCHEMA = json.loads((Path(envcheck.__file__).parent / "schemas" / "fleet.schema.json").read_text(encoding="utf-8"))


def _facts(name: str) -> Facts:
    return collect_mod.load(str(FLEET / f"{name}.json"))


def _report(*facts: Facts, hosts: list[str] | None = None, ignore: list[str] | None = None) -> Any:
    members, by_fp = [], {}
    for i, f in enumerate(facts):
        fp = fingerprint(view(f))
        by_fp.setdefault(fp, f)
        members.append(Member(host=(hosts or [f"n{j}" for j in range(len(facts))])[i], label=f"f{i}", fingerprint=fp))
    return merge.build(members, by_fp, rule_pack.load(), ignore_checks=ignore or [])


def _root() -> click.Group:
    """The envcheck command line with `fleet` on it, as `cli.add_command(fleet)` in envcheck/cli/click_cli.py makes
    it."""
    return click_cli._Group(name="envcheck", commands={**click_cli.cli.commands, "fleet": fleet})


def _invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(_root(), list(args), env=env)


# --- fingerprint ----------------------------------------------------------------------------------------------------

def _nvml(**changes: Any) -> Callable[[Facts], Facts]:
    def apply(f: Facts) -> Facts:
        assert f.nvml is not None
        return dataclasses.replace(f, nvml=dataclasses.replace(f.nvml, **changes))
    return apply


def _probe(result: ProbeResult) -> Callable[[Facts], Facts]:
    return lambda f: dataclasses.replace(f, probes={"torch-import": result})


SAME = [
    pytest.param(lambda f: dataclasses.replace(f, host="elsewhere"), id="host"),
    pytest.param(lambda f: dataclasses.replace(f, python=dataclasses.replace(
        f.python, executable="/x/bin/python", prefix="/x", cwd="/home/u", path=("/home/u", "/x/lib"))), id="paths"),
    pytest.param(lambda f: dataclasses.replace(f, distributions=tuple(
        dataclasses.replace(d, location="/x/lib", metadata_dir="/x/lib/m") for d in f.distributions)),
        id="dist-locations"),
    pytest.param(lambda f: dataclasses.replace(f, env={**f.env, "PATH": "/other/bin"}), id="PATH"),
    pytest.param(_nvml(devices=tuple(dataclasses.replace(d, uuid="GPU-other", pci_bus_id="0:1:0")
                                     for d in _facts("node-a").nvml.devices)), id="gpu-uuids"),  # type: ignore[union-attr]
    pytest.param(lambda f: dataclasses.replace(f, problems=("an unreadable folder /x",)), id="problems"),
]
DIFFERENT = [
    pytest.param(lambda f: dataclasses.replace(f, env={**f.env, "NCCL_DEBUG": "INFO"}), "env:NCCL_DEBUG",
                 id="env-var"),
    pytest.param(lambda f: dataclasses.replace(f, torch=dataclasses.replace(f.torch, version="2.6.1")), "torch",
                 id="torch"),
    pytest.param(_nvml(driver_version="560.1"), "driver", id="driver"),
    pytest.param(_nvml(devices=_facts("node-a").nvml.devices[:4]), "gpus", id="gpu-count"),  # type: ignore[union-attr]
    pytest.param(lambda f: dataclasses.replace(f, distributions=f.distributions[1:]), "package:typing-extensions",
                 id="package-removed"),
    pytest.param(_probe(ProbeResult(status="crashed", error_class="SIGSEGV")), "probe:torch-import", id="probe"),
]


@pytest.mark.parametrize("change", SAME)
def test_fingerprint_ignores_what_differs_between_identical_machines(change: Callable[[Facts], Facts]) -> None:
    """Host names, paths, GPU UUIDs, PATH and collection problems do not make two environments different."""
    facts = _facts("node-a")
    assert fingerprint(view(change(facts))) == fingerprint(view(facts))


@pytest.mark.parametrize(("change", "key"), DIFFERENT)
def test_fingerprint_changes_with_what_rules_read(change: Callable[[Facts], Facts], key: str) -> None:
    """A version, a variable, the GPUs or a probe outcome changes the fingerprint, and the view names the key."""
    facts = _facts("node-a")
    changed = view(change(facts))
    assert fingerprint(changed) != fingerprint(view(facts))
    assert changed.get(key) != view(facts).get(key)


def test_view_of_a_real_collection_with_probe_results() -> None:
    """A snapshot collected here, with probe results of every shape, has the same view after a trip through JSON."""
    facts = collect_mod.collect(collect_mod.request_for({"json", "no_such_module"}, {"json/__init__.py": {"dumps"}}))
    facts = dataclasses.replace(facts, probes={
        "torch-build": ProbeResult(status="ok", details={"nccl_version": "2.21.5", "arch_list": ["sm_80", "sm_90"]}),
        "sdpa": ProbeResult(status="error", error_class="RuntimeError", message="Expected query...",
                            cases={"cpu/a": {"status": "ok"}, "cpu/b": {"status": "error", "error_class": "E"}}),
    })
    raw = json.loads(json.dumps(facts.to_dict()))
    assert view(Facts.from_dict(raw)) == view(facts)
    assert view(facts)["probe:torch-build.arch_list"] == "sm_80 sm_90"
    assert view(facts)["probe:sdpa/cpu/b"] == "error E"
    assert view(facts)["module:no_such_module"] == "not found" and view(facts)["source:json/__init__.py:dumps"] == (
        "matches")


def test_malformed_snapshot_is_failed_with_the_key(tmp_path: Path) -> None:
    """A snapshot that does not fit the format is a failed node, its reason the reader's error naming the key."""
    raw = json.loads(Path(NODES[0]).read_text(encoding="utf-8"))
    raw["distributions"][1]["version"] = 2.6
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    members, facts = merge.load_members([str(bad), NODES[1]])
    assert members[0].error is not None and "distributions[1].version" in members[0].error
    assert members[1].fingerprint in facts


def test_a_second_install_elsewhere_is_not_the_same_as_one_in_the_same_folder() -> None:
    """Two installs of one version differ for the duplicate-install rules by folder, and so do their views."""
    a = _facts("node-a")
    numpy = next(d for d in a.distributions if d.canonical_name == "numpy")
    same = _with(a, distributions=(*a.distributions, numpy))
    elsewhere = _with(a, distributions=(*a.distributions, dataclasses.replace(numpy, location="/usr/lib/python3")))
    assert view(same)["package:numpy"] == "2.1.3, 2.1.3"
    assert view(elsewhere)["package:numpy"] == "2.1.3, 2.1.3 (another folder)"


def test_probe_timings_do_not_change_the_fingerprint() -> None:
    """Two runs of the same probe differ in wall time and details such as the import time; the view does not."""
    facts = _facts("node-a")
    one = _probe(ProbeResult(status="ok", details={"import_s": 1.5}, wall_s=1.6))(facts)
    two = _probe(ProbeResult(status="ok", details={"import_s": 3.0}, wall_s=3.1))(facts)
    assert fingerprint(view(one)) == fingerprint(view(two))


# --- merge of the recorded snapshots --------------------------------------------------------------------------------

def test_fixture_snapshots_group_by_environment() -> None:
    """node-a and node-b share environment 1 (despite other paths and GPU UUIDs); node-c is environment 2."""
    members, by_fp = merge.load_members(NODES)
    report = merge.build(members, by_fp, rule_pack.load(), expected=3)
    assert [(g.id, g.nodes) for g in report.groups] == [(1, ("node-a", "node-b")), (2, ("node-c",))]
    assert [(n.name, n.group) for n in report.nodes] == [("node-a", 1), ("node-b", 1), ("node-c", 2)]
    assert report.complete
    assert report.groups[0].report.python == "/opt/venv/bin/python"  # node-a's: the first member of the group


def test_fixture_differences_table() -> None:
    """The differences are the torch, NCCL, driver and GPU facts that differ, with each environment's value."""
    members, by_fp = merge.load_members(NODES)
    report = merge.build(members, by_fp, rule_pack.load())
    assert {d.key: d.values for d in report.differences} == {
        "torch": {1: "2.6.0+cu124", 2: "2.5.1+cu121"},
        "torch.build": {1: "CUDA 12.4", 2: "CUDA 12.1"},
        "torch.git_version": {1: "a8d6afb511a6", 2: "5c3e1f2b9d0a"},
        "driver": {1: "550.54.15", 2: "535.104.05"},
        "driver.cuda": {1: "12.4", 2: "12.2"},
        "gpus": {1: "8 x NVIDIA H100 80GB HBM3 (9.0, 81559 MiB)", 2: "8 x NVIDIA A100-SXM4-80GB (8.0, 81920 MiB)"},
        "package:nvidia-nccl-cu12": {1: "2.21.5", 2: "2.20.5"},
        "package:torch": {1: "2.6.0+cu124", 2: "2.5.1+cu121"},
    }
    assert [d.key for d in report.differences][:3] == ["torch", "torch.build", "torch.git_version"]


def test_fixture_cross_node_findings() -> None:
    """torch, its CUDA build and NCCL differ (errors); the driver and the GPU model differ (warnings)."""
    members, by_fp = merge.load_members(NODES)
    report = merge.build(members, by_fp, rule_pack.load())
    found = {f.check_id: (f.name, f.severity.value, f.values) for f in report.findings}
    ab, c = ("node-a", "node-b"), ("node-c",)
    assert found == {
        "EC1001": ("fleet-torch-versions-differ", "error", (("2.6.0+cu124", ab), ("2.5.1+cu121", c))),
        "EC1002": ("fleet-torch-cuda-builds-differ", "error", (("CUDA 12.4", ab), ("CUDA 12.1", c))),
        "EC1003": ("fleet-nccl-versions-differ", "error", (("2.21.5", ab), ("2.20.5", c))),
        "EC1004": ("fleet-driver-versions-differ", "warning", (("550.54.15", ab), ("535.104.05", c))),
        "EC1005": ("fleet-gpu-models-differ", "warning",
                   (("NVIDIA H100 80GB HBM3", ab), ("NVIDIA A100-SXM4-80GB", c))),
    }
    assert report.failing("error")


def test_identical_nodes_have_no_differences_or_findings() -> None:
    """Two snapshots of one environment from two hosts: one group of two nodes, nothing differs, exit code 0."""
    report = _report(_facts("node-a"), _facts("node-b"), hosts=["x", "y"])
    assert len(report.groups) == 1 and report.groups[0].nodes == ("x", "y")
    assert report.differences == () and report.findings == ()
    assert not report.failing("warning")


def test_rules_are_evaluated_once_per_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hundred identical nodes cost one evaluation of the rule pack."""
    calls: list[Facts] = []
    real = merge.evaluate
    monkeypatch.setattr(merge, "evaluate", lambda rules, facts: calls.append(facts) or real(rules, facts))
    facts = _facts("node-a")
    _report(*[facts] * 100)
    assert len(calls) == 1


# --- fleet checks on constructed fleets -----------------------------------------------------------------------------

def _with(facts: Facts, **changes: Any) -> Facts:
    return dataclasses.replace(facts, **changes)


def _gpu(name: str, index: int = 0) -> GpuDevice:
    return GpuDevice(index=index, name=name, uuid=f"GPU-{index}", pci_bus_id=None, compute_capability="9.0",
                     memory_total_mib=81559, mig_mode=None)


def test_python_and_package_versions_differ() -> None:
    """Another Python minor version is EC1006; a package at another version, or missing, is one EC1007 each."""
    a = _facts("node-a")
    numpy_other = tuple(dataclasses.replace(d, version="1.26.4") if d.canonical_name == "numpy" else d
                        for d in a.distributions)
    b = _with(a, python=dataclasses.replace(a.python, version="3.12.1"), distributions=numpy_other[1:])
    report = _report(a, b)
    found = {(f.check_id, f.item) for f in report.findings}
    assert found == {("EC1006", None), ("EC1007", "numpy"), ("EC1007", "typing-extensions")}
    numpy = next(f for f in report.findings if f.item == "numpy")
    assert numpy.values == (("1.26.4", ("n1",)), ("2.1.3", ("n0",)))
    missing = next(f for f in report.findings if f.item == "typing-extensions")
    assert dict(missing.values) == {"4.12.2": ("n0",), "not installed": ("n1",)}


def test_mixed_gpu_models_within_one_node() -> None:
    """One node with two GPU models is a mix too, even when every node is alike."""
    a = _facts("node-a")
    assert a.nvml is not None
    mixed = _with(a, nvml=dataclasses.replace(a.nvml, devices=(_gpu("NVIDIA H100 80GB HBM3"), _gpu("NVIDIA L4", 1))))
    report = _report(mixed, mixed)
    (finding,) = report.findings
    assert finding.check_id == "EC1005"
    assert finding.values == (("NVIDIA H100 80GB HBM3, NVIDIA L4", ("n0", "n1")),)
    assert finding.summary.startswith("mixed GPU models on the same nodes")


def test_unknown_values_are_not_differences() -> None:
    """A node whose NVML failed has no known driver: it is left out of the driver comparison, not counted."""
    a = _facts("node-a")
    assert a.nvml is not None
    broken = _with(a, nvml=NvmlFacts(status="no-permission", reason="no access", driver_version=None,
                                     cuda_driver_version=None, devices=()))
    report = _report(a, broken)
    assert {f.check_id for f in report.findings} == set()  # nvml status differs (a difference), no finding
    assert "nvml" in {d.key for d in report.differences}


def test_a_node_without_driver_among_gpu_nodes_is_a_driver_difference() -> None:
    """"no driver" is a value: a node where the driver is missing differs from those that have one."""
    a = _facts("node-a")
    none = _with(a, nvml=NvmlFacts(status="no-driver", reason="none", driver_version=None, cuda_driver_version=None,
                                   devices=()))
    report = _report(a, none)
    (finding,) = [f for f in report.findings if f.check_id == "EC1004"]
    assert dict(finding.values) == {"550.54.15": ("n0",), "no driver": ("n1",)}


def test_nccl_version_prefers_the_probe() -> None:
    """NCCL as torch reports it wins over the version of an nvidia-nccl wheel."""
    a = _facts("node-a")
    assert checks.nccl_version(a) == "2.21.5"
    probed = _with(a, probes={"torch-build": ProbeResult(status="ok", details={"nccl_version": "2.23.4"})})
    assert checks.nccl_version(probed) == "2.23.4"
    assert checks.nccl_version(_with(a, distributions=a.distributions[:6])) is None


def test_fleet_check_ids_do_not_collide_with_rules() -> None:
    """Fleet checks have ids and names of their own, outside the rule pack's."""
    pack = rule_pack.load()
    assert not {c.id for c in checks.CHECKS} & {r.id for r in pack}
    assert not {c.name for c in checks.CHECKS} & {r.name for r in pack}
    assert all(c.id.startswith("EC10") for c in checks.CHECKS)


# --- nodes ----------------------------------------------------------------------------------------------------------

def test_ranks_merge_into_nodes_by_host_and_environment() -> None:
    """Ranks on one host with one environment are one node; another environment or a failure on that host is
    another node; ranks never heard from are grouped by reason."""
    a, c = _facts("node-a"), _facts("node-c")
    fa, fc = fingerprint(view(a)), fingerprint(view(c))
    members = [
        Member(host="h1", label="rank 0", rank=0, fingerprint=fa), Member(host="h1", label="rank 1", rank=1,
                                                                          fingerprint=fa),
        Member(host="h1", label="rank 2", rank=2, fingerprint=fc),
        Member(host="h2", label="rank 3", rank=3, error="collection failed: boom"),
        Member(host="", label="rank 4", rank=4, error="no answer"), Member(host="", label="rank 5", rank=5,
                                                                          error="no answer"),
    ]
    report = merge.build(members, {fa: a, fc: c}, rule_pack.load(), expected=6)
    assert [(n.display, n.group, n.error) for n in report.nodes] == [
        ("h1 (ranks 0-1)", 1, None), ("h1 (rank 2)", 2, None), ("h2 (rank 3)", None, "collection failed: boom"),
        ("(unknown host) (ranks 4-5)", None, "no answer"),
    ]
    assert not report.complete and report.failing("never")
    (failed,) = [f for f in report.findings if f.check_id == "EC1000"]
    assert dict(failed.values) == {"collection failed: boom": ("h2 (rank 3)",),
                                   "no answer": ("(unknown host) (ranks 4-5)",)}


@pytest.mark.parametrize(("numbers", "text"), [
    pytest.param((0,), "0", id="one"), pytest.param((0, 1, 2, 3), "0-3", id="run"),
    pytest.param((7, 0, 1, 2, 5, 8), "0-2, 5, 7-8", id="mixed"),
])
def test_rank_spans(numbers: tuple[int, ...], text: str) -> None:
    """Rank lists print as ranges."""
    assert spans(numbers) == text


# --- the local rank's GPU -------------------------------------------------------------------------------------------

def _machine(gpus: int) -> Facts:
    a = _facts("node-a")
    assert a.nvml is not None
    return _with(a, nvml=dataclasses.replace(a.nvml, devices=a.nvml.devices[:gpus]))


@pytest.mark.parametrize(("gpus", "local_rank", "visible", "expected"), [
    pytest.param(8, 3, None, "GPU-a03-0000-0000-0000-000000000000", id="by-uuid"),
    pytest.param(2, 3, None, "GPU-a01-0000-0000-0000-000000000000", id="wraps-around"),
    pytest.param(8, 1, "4,5", "5", id="from-visible-devices"),
    pytest.param(8, 0, "GPU-x, GPU-y", "GPU-x", id="visible-uuids"),
    pytest.param(8, 0, "", None, id="none-visible"),
    pytest.param(8, 0, "-1", None, id="hidden"),
    pytest.param(0, 0, None, None, id="no-gpu"),
    pytest.param(8, None, None, None, id="no-local-rank"),
])
def test_local_device(gpus: int, local_rank: int | None, visible: str | None, expected: str | None) -> None:
    """Each rank probes the local_rank-th visible GPU, wrapping around; with none visible, nothing is narrowed."""
    environ = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert local.local_device(_machine(gpus), local_rank, environ) == expected


# --- snapshots ------------------------------------------------------------------------------------------------------

def test_snapshot_records_and_round_trips_the_host(tmp_path: Path) -> None:
    """`envcheck facts` records the host name; it survives a trip through JSON; an old snapshot reads as ""."""
    import socket

    facts = collect_mod.collect(collect_mod.request_for(set(), {}))
    assert facts.host == socket.gethostname() != ""
    assert Facts.from_dict(json.loads(json.dumps(facts.to_dict()))).host == facts.host
    raw = facts.to_dict()
    del raw["host"]
    assert Facts.from_dict(raw).host == ""


def test_unreadable_and_missing_snapshots_are_failed_nodes(tmp_path: Path) -> None:
    """A file that is not a snapshot, or is absent, is a node that failed, named by its file; the exit code is 1
    even with --fail-on never."""
    bad = tmp_path / "facts-n7.json"
    bad.write_text("{", encoding="utf-8")
    result = _invoke("fleet", "merge", NODES[0], str(bad), str(tmp_path / "facts-n8.json"), "--format", "json",
                     "--fail-on", "never")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    failed = {n["name"]: n["error"] for n in doc["nodes"] if n["status"] == "failed"}
    assert set(failed) == {"facts-n7.json", "facts-n8.json"}
    assert "is not JSON" in failed["facts-n7.json"] and "no such file" in failed["facts-n8.json"]
    assert doc["complete"] is False and [f["id"] for f in doc["findings"]] == ["EC1000"]


def test_snapshot_without_host_is_named_by_its_file(tmp_path: Path) -> None:
    """A snapshot from before the `host` key is named by its file name."""
    raw = json.loads(Path(NODES[0]).read_text(encoding="utf-8"))
    del raw["host"]
    old = tmp_path / "gpu-17.json"
    old.write_text(json.dumps(raw), encoding="utf-8")
    members, _ = merge.load_members([str(old)])
    assert members[0].host == "gpu-17.json"


# --- the command and its reports ------------------------------------------------------------------------------------

def test_merge_command_text_report() -> None:
    """One headline, each environment with its nodes and verdicts, the differences and the fleet checks; exit 1."""
    result = _invoke("fleet", "merge", *NODES, "--no-color")
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert out.startswith("envcheck fleet: 3 nodes (3 snapshots) in 2 environments\n")
    assert "Environment 1: node-a, node-b\n" in out and "Environment 2: node-c\n" in out
    assert "torch: env 1: 2.6.0+cu124; env 2: 2.5.1+cu121" in out
    for check_id in ("EC1001", "EC1002", "EC1003", "EC1004", "EC1005"):
        assert check_id in out
    assert out.rstrip().endswith("3 fleet errors, 2 fleet warnings; complete")


def test_merge_command_json_document() -> None:
    """--format json: nodes, groups, differences and findings, valid against envcheck/schemas/fleet.schema.json."""
    result = _invoke("fleet", "merge", *NODES, "--format", "json")
    doc = json.loads(result.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert [(n["name"], n["group"], n["files"]) for n in doc["nodes"]] == [
        ("node-a", 1, [NODES[0]]), ("node-b", 1, [NODES[1]]), ("node-c", 2, [NODES[2]])]
    assert doc["summary"] == {"nodes": 3, "failed": 0, "groups": 2, "members": 3}
    assert doc["differences"][0] == {"key": "torch", "values": {"1": "2.6.0+cu124", "2": "2.5.1+cu121"}}
    assert [f["id"] for f in doc["findings"]] == ["EC1001", "EC1002", "EC1003", "EC1004", "EC1005"]
    node_c = doc["nodes"][2]
    assert [p["id"] for p in node_c["problems"]] == [
        f["id"] for f in doc["groups"][1]["findings"] if f["status"] in ("fail", "warn", "info", "error")]


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    """The fleet report schema is itself valid."""
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize(("ignore", "left"), [
    pytest.param("EC1005", {"EC1001", "EC1002", "EC1003", "EC1004"}, id="by-id"),
    pytest.param("fleet-gpu-models-differ,fleet-driver-versions-differ", {"EC1001", "EC1002", "EC1003"},
                 id="by-name"),
    pytest.param("EC10", set(), id="by-prefix"),
])
def test_ignore_fleet_checks(ignore: str, left: set[str]) -> None:
    """--ignore takes fleet check ids, names and id prefixes as it takes rules'."""
    result = _invoke("fleet", "merge", *NODES, "--format", "json", "--ignore", ignore)
    assert {f["id"] for f in json.loads(result.stdout)["findings"]} == left


def test_unknown_selector_is_a_usage_error() -> None:
    """An --ignore entry that names no rule and no fleet check is exit 2."""
    result = _invoke("fleet", "merge", *NODES, "--ignore", "EC7777")
    assert result.exit_code == 2
    assert "EC7777" in result.output


def test_fleet_outside_torchrun_is_a_usage_error() -> None:
    """Without torchrun's variables `envcheck fleet` says how to start it, exit 2."""
    env = {v: "" for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")}
    result = _invoke("fleet", "--static", env=env)
    assert result.exit_code == 2
    assert "torchrun --nproc-per-node N -m envcheck fleet" in result.output
    assert "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT are not set" in result.output


@pytest.mark.parametrize(("environ", "message"), [
    pytest.param({"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "must be integers",
                 id="not-a-number"),
    pytest.param({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "not within",
                 id="out-of-range"),
    pytest.param({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h"}, "MASTER_PORT is not set", id="no-port"),
])
def test_rank_environment_errors(environ: dict[str, str], message: str) -> None:
    """Bad or missing torchrun variables are one clear error."""
    with pytest.raises(EnvcheckError, match=message):
        RankEnv.from_environ(environ)


def test_rank_environment_namespace_is_per_run_and_restart() -> None:
    """The store keys of one torchrun run and restart do not meet another's."""
    base = {"RANK": "1", "WORLD_SIZE": "4", "MASTER_ADDR": "h", "MASTER_PORT": "1", "LOCAL_RANK": "1"}
    one = RankEnv.from_environ({**base, "TORCHELASTIC_RUN_ID": "r1", "TORCHELASTIC_RESTART_COUNT": "0"})
    two = RankEnv.from_environ({**base, "TORCHELASTIC_RUN_ID": "r1", "TORCHELASTIC_RESTART_COUNT": "1"})
    assert (one.rank, one.world_size, one.local_rank) == (1, 4, 1)
    assert one.namespace != two.namespace


def test_text_report_lists_many_environments_one_line_per_fact() -> None:
    """Beyond a few environments the differences are one line per fact, nothing cut."""
    a = _facts("node-a")
    fleet_facts = [_with(a, env={**a.env, "NCCL_ALGO": f"algo{i}"}) for i in range(7)]
    text = render_text(_report(*fleet_facts))
    assert "envcheck fleet: 7 nodes (7 snapshots) in 7 environments" in text
    assert "  env:NCCL_ALGO: env 1: algo0; env 2: algo1;" in text
    assert json.loads(render_json(_report(*fleet_facts)))["summary"]["groups"] == 7


def test_merge_never_imports_torch(tmp_path: Path) -> None:
    """`fleet merge` and importing the fleet package run without torch: a torch that raises on import is never hit."""
    write_tree(tmp_path / "poison", {"torch/__init__.py": POISON})
    code = ("import sys; from envcheck.cli.fleet_cli import fleet; import envcheck.fleet.merge, envcheck.fleet.local; "
            "fleet.main(['merge', *sys.argv[1:], '--format', 'json'], standalone_mode=False)")  # returns, no exit
    path = [str(tmp_path / "poison"), str(Path(envcheck.__file__).parents[1])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    proc = subprocess.run([sys.executable, "-c", code, *NODES], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["summary"]["groups"] == 2


def test_fleet_is_registered_on_the_command_line() -> None:
    """`envcheck fleet` is a command of the envcheck CLI (envcheck/cli/click_cli.py: `cli.add_command(fleet)`)."""
    assert click_cli.cli.commands.get("fleet") is fleet


# --- fleet checks as rules: documentation, policy -------------------------------------------------------------------

FLEET_MD = Path(__file__).resolve().parents[2] / "docs" / "fleet.md"


def test_fleet_md_check_section_is_current() -> None:
    """docs/fleet.md's check section is exactly `envcheck rule --fleet --format markdown`; stale, it says how to fix."""
    result = _invoke("rule", "--fleet", "--format", "markdown")
    assert result.exit_code == 0, result.output
    text = FLEET_MD.read_text(encoding="utf-8")
    begin, end = text.find(checkdoc.BEGIN), text.find(checkdoc.END)
    assert 0 <= begin < end, "docs/fleet.md lacks the generated fleet check section"
    assert text[begin:end + len(checkdoc.END) + 1] == result.stdout, (
        f"docs/fleet.md is stale: replace its fleet check section with the output of `{checkdoc.REGENERATE}`")
    assert all(f"### {c.id}\n" in result.stdout for c in checks.CHECKS)


@pytest.mark.parametrize("selector", ["EC1001", "ec1001", "fleet-torch-versions-differ"])
def test_rule_command_documents_a_fleet_check(selector: str) -> None:
    """`envcheck rule EC1001` (id in any case, or name) explains the fleet check like a rule: why, fix, trigger."""
    result = _invoke("rule", selector)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "EC1001 fleet-torch-versions-differ  [error, fleet]"
    assert any(line.startswith("  Why: torch.distributed does not check") for line in lines)
    assert any(line.startswith("  Trigger: Compares torch versions between the fleet's environments") for line in lines)


def test_rule_command_json_lists_rules_and_fleet_checks_alike() -> None:
    """Asked for a pack rule and fleet checks, `--format json` gives both with the same keys, area "fleet"."""
    result = _invoke("rule", "EC0101", "--fleet", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [d["id"] for d in data] == ["EC0101", *(c.id for c in checks.CHECKS)]
    assert {frozenset(d) for d in data} == {frozenset(data[0])}
    assert {d["area"] for d in data[1:]} == {"fleet"}


def test_rule_command_still_refuses_unknown_ids() -> None:
    """An id that is neither a rule nor a fleet check is a usage error naming it."""
    result = _invoke("rule", "EC1099")
    assert result.exit_code == 2 and "EC1099" in result.output


def _config(tmp_path: Path, body: str) -> str:
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[project]\nname = 'x'\n\n[tool.envcheck]\n{body}\n", encoding="utf-8")
    return str(path)


def _merge_json(*options: str) -> tuple[int, dict[str, Any]]:
    result = _invoke("fleet", "merge", *NODES, "--format", "json", *options)
    return result.exit_code, json.loads(result.stdout) if result.stdout.startswith("{") else {"output": result.output}


def test_fleet_enforces_the_projects_require_on_every_node(tmp_path: Path) -> None:
    """A `require` of [tool.envcheck] becomes policy rule EC9901, evaluated in every environment of the fleet."""
    config = _config(tmp_path, 'require = ["numpy>=3"]')
    code, doc = _merge_json("--config", config, "--ignore", "EC10")
    assert code == 1
    for group in doc["groups"]:
        (policy,) = [f for f in group["findings"] if f["id"] == "EC9901"]
        assert policy["status"] == "fail"
    code, doc = _merge_json("--no-config", "--ignore", "EC10")
    assert all(f["id"] != "EC9901" for g in doc["groups"] for f in g["findings"])


def test_fleet_takes_fail_on_and_ignore_from_the_configuration(tmp_path: Path) -> None:
    """The configuration's fail-on sets the exit code's threshold; its ignore takes fleet checks with a reason."""
    errors = "EC0,EC1001,EC1002,EC1003"  # EC0: the pack, whose warnings would count too
    never = _config(tmp_path, 'fail-on = "never"')
    assert _merge_json("--config", never)[0] == 0
    warning = _config(tmp_path, 'fail-on = "warning"\nignore = { EC1004 = "one driver upgrade at a time" }')
    code, doc = _merge_json("--config", warning, "--ignore", errors)
    assert code == 1 and {f["id"] for f in doc["findings"]} == {"EC1005"}
    code, doc = _merge_json("--config", warning, "--ignore", f"{errors},EC1005")
    assert code == 0 and doc["findings"] == []
    assert _merge_json("--config", warning, "--ignore", errors, "--fail-on", "error")[0] == 0


def test_unknown_ignore_in_the_configuration_names_its_key(tmp_path: Path) -> None:
    """A configured ignore that names no rule and no fleet check is exit 2, naming the configuration key."""
    config = _config(tmp_path, 'ignore = { EC7777 = "typo" }')
    result = _invoke("fleet", "merge", *NODES, "--config", config)
    assert result.exit_code == 2
    assert "tool.envcheck.ignore.EC7777" in result.output


@pytest.mark.parametrize(("compare", "values", "fires"), [
    pytest.param(checks.differ, {"2.6.0": ["a"]}, False, id="differ-one-value"),
    pytest.param(checks.differ, {"2.6.0": ["a"], "2.5.1": ["b"]}, True, id="differ-two-values"),
    pytest.param(checks.mixed, {"NVIDIA L4": ["a", "b"]}, False, id="mixed-one-model"),
    pytest.param(checks.mixed, {"NVIDIA H100, NVIDIA L4": ["a"]}, True, id="mixed-within-a-node"),
    pytest.param(checks.mixed, {"NVIDIA L4": ["a"], "NVIDIA H100": ["b"]}, True, id="mixed-across-nodes"),
])
def test_check_comparisons(compare: Callable[[Any], bool], values: dict[str, list[str]], fires: bool) -> None:
    """A check fires on more than one value; the GPU check also on one node that lists several models."""
    assert compare(values) is fires


def test_every_check_says_what_it_compares() -> None:
    """Every fleet check but EC1000 (the nodes without facts) compares a value or a value per item, never both."""
    for check in checks.CHECKS:
        kinds = (check.value is not None) + (check.items is not None)
        assert kinds == (0 if check is checks.RANKS_FAILED else 1), check.id

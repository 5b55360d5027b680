"""AMD GPU facts from recorded KFD topology trees, the gfx-target table, and the ROCm derivations."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _fakes import facts_dict, python_dict

import envcheck
from envcheck.derived import build_matrix as tb
from envcheck.derived import rocm as rocm_derived
from envcheck.derived.derive import DERIVATIONS, Derived
from envcheck.errors import FactsError, RuleError
from envcheck.facts import amd_gpu, rocm
from envcheck.facts.snapshot import Facts
from envcheck.rules import rule_pack
from envcheck.sources.live.collect import collect, request_for
from envcheck.support import toml

FIXTURES = Path(__file__).parents[1] / "fixtures" / "rocm"
TABLE_FILE = Path(envcheck.__file__).parent.parent / "rules" / "data" / "rocm-archs.toml"
SCHEMA = jsonschema.Draft202012Validator(json.loads(
    (Path(envcheck.__file__).parent / "schemas" / "facts.schema.json").read_text(encoding="utf-8")))
TABLE = rocm_derived.parse(toml.loads(TABLE_FILE.read_text(encoding="utf-8")), str(TABLE_FILE))
MATRIX = tb.load()


def _machine(tmp_path: Path, recording: str, *, kfd: bool = True, render: bool = False) -> Path:
    """A copy of a recorded tree with the device nodes a real machine has (regular files stand in for them)."""
    root = tmp_path / recording
    shutil.copytree(FIXTURES / recording, root)
    if kfd:
        (root / "dev").mkdir()
        (root / "dev" / "kfd").write_bytes(b"")
    if render:
        (root / "dev" / "dri").mkdir(parents=True, exist_ok=True)
        (root / "dev" / "dri" / "renderD128").write_bytes(b"")
    return root


# ----------------------------------------------------------------------------------------------- collection


def test_mi300x_node_is_read_from_its_recorded_topology(tmp_path: Path) -> None:
    """The MI300X recording gives one GPU (node 2, gfx942, its PCI address) and skips the two CPU nodes."""
    facts = rocm.collect_rocm(_machine(tmp_path, "mi300x", render=True), platform="linux")
    assert (facts.status, facts.reason, facts.kfd_access) == ("ok", None, "ok")
    assert facts.devices == (amd_gpu.AmdGpu(index=0, node=2, gfx_target="gfx942", gfx_target_version=90402,
                                         device_id=0x74A1, simd_count=1216, pci_bus_id="0000:47:00.0",
                                         render_access="ok"),)


def test_rx7900xtx_recording_reads_as_gfx1100(tmp_path: Path) -> None:
    """The RX 7900 XTX recording (no CPU node) is one gfx1100 GPU at 0000:86:00.0 whose render node is absent."""
    facts = rocm.collect_rocm(_machine(tmp_path, "rx7900xtx"), platform="linux")
    [gpu] = facts.devices
    assert (gpu.index, gpu.node, gpu.gfx_target, gpu.device_id, gpu.pci_bus_id, gpu.render_access) == (
        0, 1, "gfx1100", 0x744C, "0000:86:00.0", "missing")


def test_no_topology_means_no_amd_gpu(tmp_path: Path) -> None:
    """Without /sys/class/kfd the list is known and empty, and /dev/kfd is reported missing."""
    facts = rocm.collect_rocm(tmp_path, platform="linux")
    assert (facts.status, facts.devices, facts.devices_known, facts.kfd_access) == ("no-kfd", (), True, "missing")


def test_wsl_without_kfd_leaves_the_gpus_unknown(tmp_path: Path) -> None:
    """Under WSL2 (/dev/dxg, no KFD) the GPUs are unknown, not absent: AMD's WSL stack may still reach one."""
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "dxg").write_bytes(b"")
    facts = rocm.collect_rocm(tmp_path, platform="linux")
    assert (facts.status, facts.devices_known) == ("unavailable", False)


def test_other_platforms_are_unavailable(tmp_path: Path) -> None:
    """Off Linux nothing is read and the GPUs are unknown."""
    facts = rocm.collect_rocm(_machine(tmp_path, "mi300x"), platform="darwin")
    assert (facts.status, facts.devices_known) == ("unavailable", False)


def test_unreadable_properties_are_an_error_not_a_crash(tmp_path: Path) -> None:
    """A node whose properties cannot be read makes the status `error` with the path in the reason."""
    root = _machine(tmp_path, "rx7900xtx")
    bad = root / rocm.TOPOLOGY / "3" / "properties"
    bad.mkdir(parents=True)  # a directory where the file should be
    facts = rocm.collect_rocm(root, platform="linux")
    assert facts.status == "error" and str(bad) in (facts.reason or "")
    assert not facts.devices_known


def test_kfd_without_permission_names_its_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A /dev/kfd this user may not open reads as `no-permission`, with the group that owns it."""
    root = _machine(tmp_path, "mi300x")
    monkeypatch.setattr(rocm.os, "access", lambda path, mode: False)
    facts = rocm.collect_rocm(root, platform="linux")
    assert facts.kfd_access == "no-permission"
    assert facts.kfd_group is not None  # the file's group, as the system names it


def test_driver_and_rocm_versions_are_read_when_present(tmp_path: Path) -> None:
    """The packaged driver's version and /opt/rocm/.info/version are recorded as written."""
    root = _machine(tmp_path, "rx7900xtx")
    (root / "sys/module/amdgpu").mkdir(parents=True)
    (root / "sys/module/amdgpu/version").write_text("6.8.5\n")
    (root / "opt/rocm/.info").mkdir(parents=True)
    (root / "opt/rocm/.info/version").write_text("6.2.0-66\n")
    facts = rocm.collect_rocm(root, platform="linux")
    assert (facts.driver_version, facts.rocm_version) == ("6.8.5", "6.2.0-66")


def test_collect_records_rocm_facts_of_this_machine() -> None:
    """A collected snapshot always carries the `rocm` section, whatever the machine has."""
    facts = collect(request_for(set(), {}), use_cache=False)
    assert facts.rocm is not None and facts.rocm.status in rocm.STATUSES


@pytest.mark.parametrize(("version", "target"), [
    (90010, "gfx90a"), (90402, "gfx942"), (90500, "gfx950"), (100300, "gfx1030"), (110000, "gfx1100"),
    (110501, "gfx1151"), (120001, "gfx1201"), (0, None), (91600, None),
])
def test_gfx_name(version: int, target: str | None) -> None:
    """KFD's gfx_target_version maps to LLVM target names, the stepping written in hex; 0 is a CPU."""
    assert rocm.gfx_name(version) == target


@pytest.mark.parametrize(("value", "target"), [
    ("10.3.0", "gfx1030"), ("11.0.0", "gfx1100"), ("9.0.10", "gfx90a"), (" 9.4.2 ", "gfx942"), ("11", None),
    ("x.y.z", None), ("0.0.0", None),
])
def test_override_target(value: str, target: str | None) -> None:
    """HSA_OVERRIDE_GFX_VERSION's three decimal numbers name a target; anything else names none."""
    assert rocm.override_target(value) == target


def test_properties_parser_skips_what_is_not_a_key_and_a_number() -> None:
    """Malformed lines are skipped rather than guessed."""
    assert rocm.parse_properties("a 1\nb\nc x\nd 2 3\ne 04\n") == {"a": 1, "e": 4}


# ----------------------------------------------------------------------------------------------- snapshot


def _snapshot(**rocm_section: Any) -> dict[str, Any]:
    data = facts_dict()
    data["rocm"] = {"status": "ok", "reason": None, "kfd_access": "ok", "kfd_group": "render",
                    "driver_version": None, "rocm_version": None,
                    "devices": [{"index": 0, "node": 1, "gfx_target": "gfx1100", "gfx_target_version": 110000,
                                 "device_id": 29772, "simd_count": 192, "pci_bus_id": "0000:86:00.0",
                                 "render_access": "ok"}], **rocm_section}
    return data


def test_rocm_section_round_trips_and_is_valid() -> None:
    """The `rocm` section survives to_dict / JSON / from_dict unchanged and matches facts.schema.json."""
    data = _snapshot()
    facts = Facts.from_dict(copy.deepcopy(data))
    written = json.loads(json.dumps(facts.to_dict()))
    assert written["rocm"] == data["rocm"]
    SCHEMA.validate(written)
    assert Facts.from_dict(written) == facts


def test_snapshot_without_rocm_reads_as_not_collected() -> None:
    """An older snapshot without the key has rocm None, and the schema accepts it."""
    data = facts_dict()
    SCHEMA.validate(data)
    assert Facts.from_dict(data).rocm is None


@pytest.mark.parametrize(("change", "key"), [
    ({"status": "fine"}, "rocm.status"),
    ({"kfd_access": "yes"}, "rocm.kfd_access"),
    ({"devices": [{"index": -1, "node": 1, "gfx_target": "gfx1100", "gfx_target_version": 1}]},
     "rocm.devices[0].index"),
])
def test_malformed_rocm_section_names_the_key(change: dict[str, Any], key: str) -> None:
    """A bad value is one FactsError naming its key, and the schema refuses it too."""
    data = _snapshot(**change)
    with pytest.raises(FactsError) as info:
        Facts.from_dict(data, file="env.json")
    assert info.value.key == key
    assert list(SCHEMA.iter_errors(data))


def test_schema_statuses_are_the_codes() -> None:
    """facts.schema.json lists exactly the statuses and access values the reader accepts."""
    defs = SCHEMA.schema["$defs"]
    assert set(defs["rocm"]["properties"]["status"]["enum"]) == rocm.STATUSES
    assert set(defs["device_access"]["enum"]) == rocm.ACCESS


# ----------------------------------------------------------------------------------------------- the table


def test_every_variant_in_the_table_is_a_published_rocm_build() -> None:
    """Each (series, rocmX.Y) row names a ROCm variant that torch-builds.toml lists for that release on Linux."""
    published = {(r.series, v.name) for r in MATRIX.releases
                 for v in (r.platforms.get("linux-x86_64").variants if "linux-x86_64" in r.platforms else ())
                 if v.kind == "rocm"}
    assert set(TABLE.builds) <= published, sorted(set(TABLE.builds) - published)


def test_override_targets_are_in_the_lists_they_rescue() -> None:
    """Every override stands in with a target that some release's wheels carry, never with the GPU's own."""
    carried = {a for archs in TABLE.builds.values() for a in archs}
    for gpu, (target, _) in TABLE.overrides.items():
        assert target in carried and target != gpu


@pytest.mark.parametrize(("change", "key"), [
    ({"lists": {"x": "gfx900;sm_80"}}, "lists.x"),
    ({"release": [{"series": "2.5", "archs": {"rocm6.2": "nope"}}]}, "release[0].archs.rocm6.2"),
    ({"release": [{"series": "2.5", "archs": {"cu121": "a"}}]}, "release[0].archs.cu121"),
    ({"override": {"gfx1031": ["gfx1030", "11.0.0"]}}, "override.gfx1031"),
    ({"extra": 1}, "extra"),
])
def test_malformed_table_names_the_key(change: dict[str, Any], key: str) -> None:
    """A mistake in rocm-archs.toml is one RuleError naming the file and key."""
    data: dict[str, Any] = {"schema": 1, "lists": {"a": "gfx900"}, "release": [{"series": "2.5", "archs": {
        "rocm6.2": "a"}}], **change}
    with pytest.raises(RuleError) as info:
        rocm_derived.parse(data, "rocm-archs.toml")
    assert info.value.key == key


# ----------------------------------------------------------------------------------------------- derivations


def _facts(torch: str | None, *targets: str, env: dict[str, str] | None = None,
           probes: dict[str, Any] | None = None) -> Facts:
    data = facts_dict(env=env, python=python_dict(version="3.11.7"), probes=probes,
                      torch=None if torch is None else {
                          "location": "/x/torch", "version": torch, "cuda": None,
                          "hip": "6.2.41133" if "rocm" in torch else None, "git_version": None, "debug": False,
                          "fields": {}, "problem": None})
    versions = {"gfx906": 90006, "gfx1030": 100300, "gfx1031": 100301, "gfx1100": 110000, "gfx1102": 110002,
                "gfx1201": 120001, "gfx942": 90402}
    data["rocm"] = {"status": "ok", "kfd_access": "ok", "devices": [
        {"index": i, "node": i + 1, "gfx_target": t, "gfx_target_version": versions[t]} for i, t in enumerate(targets)]}
    return Facts.from_dict(data)


def test_probe_arch_list_decides_for_a_build_the_table_does_not_know() -> None:
    """For AMD's own wheels the torch-build probe's list (feature flags stripped) decides."""
    probes = {"torch-build": {"status": "ok", "details": {"arch_list": ["gfx90a:xnack-", "gfx1201"]}}}
    facts = _facts("2.4.0+rocm6.3.4.git7cecbf6d", "gfx1201", probes=probes)
    build = rocm_derived.installed_build(facts, TABLE)
    assert build is not None and build.archs == ("gfx90a", "gfx1201") and "probe" in build.evidence
    assert rocm_derived.uncovered(facts, TABLE, MATRIX, overridable=False) == []


def test_table_wins_where_the_bundled_rocblas_lacks_a_listed_target() -> None:
    """A Radeon VII (gfx906) on 2.9.0+rocm6.4 is not covered although torch's own arch list names gfx906, and the
    fix is the same release's rocm6.3 build, the last whose rocBLAS has gfx906 kernels."""
    probes = {"torch-build": {"status": "ok", "details": {"arch_list": ["gfx900", "gfx906", "gfx1100"]}}}
    facts = _facts("2.9.0+rocm6.4", "gfx906", probes=probes)
    [item] = rocm_derived.uncovered(facts, TABLE, MATRIX, overridable=False) or [{}]
    assert item["gfx_target"] == "gfx906" and "rocm-archs.toml" in item["evidence"]
    assert item["install"] == "torch==2.9.0+rocm6.3"


def test_unknown_build_is_unknown_not_uncovered() -> None:
    """A ROCm torch the table does not know (AMD's own wheels) leaves the coverage unknown."""
    facts = _facts("2.4.0+rocm6.3.4.git7cecbf6d", "gfx1201")
    assert rocm_derived.uncovered(facts, TABLE, MATRIX, overridable=False) is None


def test_recommendation_keeps_the_installed_release_when_it_fits() -> None:
    """A CUDA 2.7.1 on an RX 7900 XTX is told to take 2.7.1's newest ROCm variant, with torchvision moved too."""
    data = _facts("2.7.1+cu126", "gfx1100")
    facts = Facts.from_dict({**data.to_dict(), "distributions": [
        {"name": "torchvision", "version": "0.22.1+cu126", "location": "/x", "requires": []}]})
    rec = rocm_derived.recommend(facts, TABLE, MATRIX)
    assert rec is not None
    assert rec["install"] == "torch==2.7.1+rocm6.3 torchvision==0.22.1+rocm6.3"
    assert rec["index_url"].endswith("/rocm6.3")


def test_recommendation_for_a_gpu_no_release_carries_names_none() -> None:
    """A target in no list but rescued by an override is recommended with its override spelled out."""
    rec = rocm_derived.recommend(_facts("2.5.1+rocm6.2", "gfx1031"), TABLE, MATRIX)
    assert rec is not None and rec["install"] == ""  # the installed build is already the best there is
    assert "gfx1031 as gfx1030 with HSA_OVERRIDE_GFX_VERSION=10.3.0" in rec["because"]


def test_visible_devices_count_within_rocr_visible_devices() -> None:
    """HIP_VISIBLE_DEVICES indices count among the GPUs ROCR_VISIBLE_DEVICES leaves."""
    facts = _facts("2.7.1+rocm6.3", "gfx1100", "gfx1100", env={"ROCR_VISIBLE_DEVICES": "1",
                                                             "HIP_VISIBLE_DEVICES": "0,1"})
    assert rocm_derived.visible_out_of_range(facts) == [
        {"variable": "HIP_VISIBLE_DEVICES", "value": "0,1", "entry": "1", "count": "1"}]


def test_override_on_a_mixed_machine_flags_only_the_supported_gpu() -> None:
    """With 10.3.0 set, the gfx1100 card (carried by the wheels) is flagged and the gfx1031 one is not."""
    facts = _facts("2.5.1+rocm6.2", "gfx1031", "gfx1100", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    found = rocm_derived.override_on_supported(facts, TABLE)
    assert [(i["index"], i["gfx_target"], i["runs_as"]) for i in found or []] == [("1", "gfx1100", "gfx1030")]


def test_system_rocm_is_not_recommended_when_it_would_lose_a_gpu() -> None:
    """A Radeon VII on 2.8.0+rocm6.3 with a system ROCm 6.4 is told the versions differ, but not to move torch to
    rocm6.4, whose bundled rocBLAS has no gfx906 kernels."""
    data = _facts("2.8.0+rocm6.3", "gfx906").to_dict()
    data["rocm"]["rocm_version"] = "6.4.1-83"
    [item] = rocm_derived.system_rocm_other_version(Facts.from_dict(data), TABLE, MATRIX) or [{}]
    assert (item["system"], item["install"]) == ("6.4", "")
    assert "gfx906" in item["recommended"]


def test_same_rocm_major_minor_is_quiet() -> None:
    """A system ROCm 6.3.3 beside a torch built with HIP 6.3 is the same ROCm."""
    data = _facts("2.7.1+rocm6.3", "gfx1100").to_dict()
    data["rocm"]["rocm_version"] = "6.3.3-74"
    data["torch"]["hip"] = "6.3.42131-fa1d09cbd"
    assert rocm_derived.system_rocm_other_version(Facts.from_dict(data), TABLE, MATRIX) == []


def _with(facts: Facts, **rocm_changes: Any) -> Facts:
    data = facts.to_dict()
    data["rocm"].update(rocm_changes)
    return Facts.from_dict(data)


# A snapshot in which each list-valued ROCm derivation has items.
NONEMPTY = {
    "rocm.devices": _facts("2.5.1+rocm6.2", "gfx1100"),
    "rocm.recommended-build": _facts("2.5.1+rocm6.2", "gfx1201"),
    "rocm.gpus-not-in-build": _facts("2.5.1+rocm6.2", "gfx1201"),
    "rocm.gpus-needing-override": _facts("2.5.1+rocm6.2", "gfx1031"),
    "rocm.override-not-in-build": _facts("2.5.1+rocm6.2", "gfx1102", env={"HSA_OVERRIDE_GFX_VERSION": "11.0.2"}),
    "rocm.override-on-supported-gpus": _facts("2.5.1+rocm6.2", "gfx1100", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}),
    "rocm.devices-inaccessible": _with(_facts("2.5.1+rocm6.2", "gfx1100"), kfd_access="no-permission"),
    "rocm.system-rocm-other-version": _with(_facts("2.8.0+rocm6.3", "gfx1100"), rocm_version="6.4.1-83"),
    "rocm.visible-devices-out-of-range": _facts("2.5.1+rocm6.2", "gfx1100", env={"ROCR_VISIBLE_DEVICES": "3"}),
}


@pytest.mark.parametrize("name", sorted(NONEMPTY))
def test_rocm_derivations_declare_their_item_fields(name: str) -> None:
    """Every item of a ROCm derivation has exactly the fields it declares, all strings (rules validate against them)."""
    items = Derived(NONEMPTY[name], rule_pack.load().tables).get(name)
    assert items, f"{name} is empty here"
    for item in items:
        assert tuple(item) == DERIVATIONS[name].fields
        assert all(isinstance(v, str) for v in item.values())


def test_every_rocm_derivation_has_a_fields_case() -> None:
    """The table above covers every list-valued rocm.* derivation (tests/unit/test_derive.py leaves them to this
    file)."""
    assert set(NONEMPTY) == {n for n, d in DERIVATIONS.items() if n.startswith("rocm.") and d.fields}


# ----------------------------------------------------------------------------------------------- pasted reports


def test_collect_env_of_a_rocm_build_gives_its_gpu_targets() -> None:
    """A ROCm collect_env that names its GPU's target (pytorch/pytorch#152941, an MI100) yields the `rocm` GPUs
    with device access unknown, and the MI100 is covered by 2.7.0+rocm6.3."""
    from envcheck.sources.reports import read_report

    path = Path(__file__).parents[1] / "fixtures" / "reports" / "torch-2.7-rocm-mi100-cut.txt"
    facts = read_report(path.read_bytes(), str(path))
    assert facts.rocm is not None and facts.rocm.kfd_access is None
    assert [(d.gfx_target, d.gfx_target_version, d.node) for d in facts.rocm.devices] == [("gfx908", 90008, None)]
    assert facts.nvml is None  # no NVIDIA GPU facts from an AMD listing
    assert rocm_derived.uncovered(facts, TABLE, MATRIX, overridable=False) == []
    assert rocm_derived.uncovered(facts, TABLE, MATRIX, overridable=True) is None  # the environment is not stated


@pytest.mark.parametrize(("target", "version"), [("gfx1100", 110000), ("gfx90a", 90010), ("gfx942", 90402),
                                                 ("gfx1151", 110501), ("sm_90", None)])
def test_gfx_version_inverts_gfx_name(target: str, version: int | None) -> None:
    """A target name maps back to KFD's number, which maps back to the name."""
    assert rocm.gfx_version(target) == version
    assert version is None or rocm.gfx_name(version) == target

"""The extension release table: parsed and validated at pack load, and the derived facts that name the release of
an extension made for the installed torch (or the mmcv / mmengine an OpenMMLab package accepts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _fakes import dist_dict, facts_dict, torch_dict

from envcheck.derived import extension_releases, extensions
from envcheck.derived.derive import Derived
from envcheck.derived.tables import EXTENSION_RELEASES
from envcheck.errors import RuleError
from envcheck.facts.snapshot import Facts
from envcheck.rules import rule_pack

PACK = rule_pack.load()
TABLE = PACK.tables[EXTENSION_RELEASES]


def _facts(*dists: dict[str, Any], torch: dict[str, Any] | None = None,
           probes: dict[str, Any] | None = None) -> Facts:
    return Facts.from_dict(facts_dict(dists=list(dists), torch=torch, probes=probes or {}), file="<test>")


def _unmet(facts: Facts, dependency: str, name: str) -> list[dict[str, str]] | None:
    return extensions.unmet_release_needs(facts, TABLE, dependency, (name,))


@pytest.mark.parametrize(("data", "key"), [
    pytest.param({"x": {"symptom": "s"}}, "x", id="no-releases"),
    pytest.param({"x": {"releases": {"1.0": {"torch": "==2.0"}}}}, "x.symptom", id="no-symptom"),
    pytest.param({"x": {"symptom": "s", "releases": {"1.0": {"torch": "==2.0"}}, "colour": 1}}, "x.colour",
                 id="unknown-key"),
    pytest.param({"x": {"symptom": "s", "applies-to": "some", "releases": {"1.0": {"torch": "==2.0"}}}},
                 "x.applies-to", id="bad-applies-to"),
    pytest.param({"x": {"symptom": "s", "releases": {"one": {"torch": "==2.0"}}}}, "x.releases.one",
                 id="release-not-a-version"),
    pytest.param({"x": {"symptom": "s", "releases": {"1.0": {"torch": "2.0 or so"}}}}, "x.releases.1.0.torch",
                 id="bad-specifier"),
    pytest.param({"x": {"symptom": "s", "releases": {"1.0": {}}}}, "x.releases.1.0", id="empty-row"),
    pytest.param({"x": {"symptom": "s", "releases": {"1.0": {"cuda": ["12.x"]}}}}, "x.releases.1.0.cuda",
                 id="cuda-not-a-version"),
    pytest.param({"x": {"symptom": "s", "releases": {"1.0": {"torch": ">=2", "cuda": [12]}}}},
                 "x.releases.1.0.cuda", id="cuda-not-strings"),
])
def test_bad_table_is_one_error_naming_the_key(data: dict[str, Any], key: str) -> None:
    """Malformed table data is a RuleError that names the file and the key."""
    with pytest.raises(RuleError) as raised:
        extension_releases.parse(data, "extension-releases.toml")
    assert raised.value.file == "extension-releases.toml"
    assert raised.value.key == key


def test_a_bad_shipped_table_fails_the_pack_load(tmp_path: Path) -> None:
    """A rule directory whose extension-releases table is malformed does not load."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "extension-releases.toml").write_text('[vllm.releases]\n"0.6.3" = { torch = "=2" }\n')
    with pytest.raises(RuleError, match=r"extension-releases\.toml.*vllm"):
        rule_pack.load([tmp_path], use_cache=False)


@pytest.mark.parametrize(("torch", "expected"), [
    ("2.8.0", "torchao==0.14.0"),  # two releases were built for 2.8.0: the newer one
    ("2.9.1", "torchao==0.15.0"),
    ("2.13.0", "torchao==0.18.0"),  # a floor, not a pin
    ("2.4.1", ""),  # no release listed for it
])
def test_torchao_release_for_the_installed_torch(torch: str, expected: str) -> None:
    """The finding names the newest torchao built for exactly the installed torch, or none."""
    facts = _facts(dist_dict("torch", torch), dist_dict("torchao", "0.13.0"), torch=torch_dict(torch, "12.8"))
    found = _unmet(facts, "torch", "torchao")
    if torch == "2.8.0":
        assert found == []
        facts = _facts(dist_dict("torch", torch), dist_dict("torchao", "0.16.0"), torch=torch_dict(torch, "12.8"))
        found = _unmet(facts, "torch", "torchao")
    assert found is not None and [i["install"] for i in found] == [expected]


def test_source_builds_and_other_tags_are_not_judged() -> None:
    """A torchao built from source (`+git...`) is not the release's wheel; a conda install follows conda's pins."""
    torch = torch_dict("2.9.0", "12.8")
    assert _unmet(_facts(dist_dict("torch", "2.9.0"), dist_dict("torchao", "0.14.0+git1a2b3c"), torch=torch),
                  "torch", "torchao") == []
    conda = dist_dict("torchao", "0.14.0", installer="conda")
    assert _unmet(_facts(dist_dict("torch", "2.9.0"), conda, torch=torch), "torch", "torchao") == []


def test_unknown_for_a_nightly_torch() -> None:
    """Against a torch nightly no release table can speak: unknown, not a finding."""
    facts = _facts(dist_dict("torch", "2.10.0.dev20250901"), dist_dict("torchao", "0.14.0"),
                   torch=torch_dict("2.10.0.dev20250901", "12.8"))
    assert _unmet(facts, "torch", "torchao") is None


def test_flash_attn_wheels_count_cuda_majors() -> None:
    """flash-attn 2.7.4.post1 has CUDA 12 wheels only: next to a CUDA 11.8 torch 2.5 the release with a CUDA 11
    wheel for it is named."""
    facts = _facts(dist_dict("torch", "2.5.1+cu118"), dist_dict("flash-attn", "2.7.4.post1"),
                   torch=torch_dict("2.5.1+cu118", "11.8"))
    found = _unmet(facts, "torch", "flash-attn")
    assert found is not None and [(i["install"], i["needs"]) for i in found] == [
        ("flash-attn==2.7.3", ">=2.2,<2.7 (CUDA 12)")]


def test_flash_attn_wheel_tags_are_left_to_the_tag_rules() -> None:
    """A flash-attn wheel whose tag names its torch is judged by the tag rules, not the release table."""
    facts = _facts(dist_dict("torch", "2.6.0"), dist_dict("flash-attn", "2.5.8+cu122torch2.3cxx11abiFALSE"),
                   torch=torch_dict("2.6.0", "12.4"))
    assert _unmet(facts, "torch", "flash-attn") == []


def test_detectron2_rows_describe_prebuilt_wheels_only() -> None:
    """A `+cu113` detectron2 is the torch 1.10 wheel; an untagged one was built from source."""
    torch = torch_dict("2.1.0", "12.1")
    tagged = _unmet(_facts(dist_dict("torch", "2.1.0"), dist_dict("detectron2", "0.6+cu113"), torch=torch),
                    "torch", "detectron2")
    assert tagged is not None and [(i["needs"], i["install"]) for i in tagged] == [(">=1.8,<1.11", "")]
    assert _unmet(_facts(dist_dict("torch", "2.1.0"), dist_dict("detectron2", "0.6"), torch=torch),
                  "torch", "detectron2") == []


@pytest.mark.parametrize(("mmdet", "mmcv_dist", "mmcv", "fires"), [
    ("3.3.0", "mmcv", "2.2.0", True),
    ("3.3.0", "mmcv", "2.1.0", False),
    ("3.3.0", "mmcv-full", "1.7.2", True),  # open-mmlab/mmdetection#11476
    ("2.28.2", "mmcv-full", "1.7.2", False),
    ("2.28.2", "mmcv-full", "1.8.0", False),  # mmdet 2.x includes its maximum
])
def test_openmmlab_asserted_mmcv_range(mmdet: str, mmcv_dist: str, mmcv: str, fires: bool) -> None:
    """mmdet's import-time mmcv range is read against mmcv 2.x or mmcv-full 1.x, whichever provides `mmcv`."""
    facts = _facts(dist_dict("mmdet", mmdet), dist_dict(mmcv_dist, mmcv), dist_dict("mmengine", "0.10.4"))
    found = _unmet(facts, "mmcv", "mmdet")
    assert found is not None and bool(found) is fires
    if fires:
        assert found[0]["dependency"] == mmcv_dist and found[0]["installed"] == mmcv


def test_vllm_pin_is_one_finding_with_the_fix_that_keeps_torch() -> None:
    """vllm's exact torch pin, failed, is reported by the vllm fact with the vllm release for the installed torch,
    and `requirements.conflicting` leaves that pin out."""
    facts = _facts(dist_dict("torch", "2.5.1"), dist_dict("vllm", "0.6.3", "torch==2.4.0"),
                   torch=torch_dict("2.5.1", "12.4"))
    derived = Derived(facts, PACK.tables)
    assert [i["install"] for i in derived.get("extensions.vllm-for-other-torch")] == ["vllm==0.7.3"]
    assert [i for i in derived.get("requirements.conflicting") if i["package"] == "vllm"] == []
    assert [i["package"] for i in derived.get("requirements.unsatisfied")] == ["vllm"]


def test_flash_attn_without_any_wheel_for_this_torch_is_left_to_the_probe() -> None:
    """No flash-attn release has a wheel for torch 2.9: a build from source is the only way to have it, so the
    release table says nothing (the import probe judges it)."""
    facts = _facts(dist_dict("torch", "2.9.0"), dist_dict("flash-attn", "2.8.3"), torch=torch_dict("2.9.0", "12.8"))
    assert Derived(facts, PACK.tables).get("extensions.flash-attn-for-other-torch") == []


@pytest.mark.parametrize(("bnb", "torch", "cuda", "expected"), [
    ("0.46.0", "2.8.0+cu129", "12.9", ["bitsandbytes==0.50.1"]),  # bitsandbytes#1688: no libbitsandbytes_cuda129
    ("0.46.1", "2.8.0+cu129", "12.9", []),
    ("0.45.2", "2.7.0+cu128", "12.8", ["bitsandbytes==0.50.1"]),  # bitsandbytes#1510: no libbitsandbytes_cuda128
    ("0.50.0", "2.10.0+cu130", "13.0", []),  # from 0.50 the nearest library of the same major is loaded
    ("0.45.2", "2.7.0+cpu", None, []),  # a CPU torch loads the CPU library
])
def test_bitsandbytes_library_per_cuda_version(bnb: str, torch: str, cuda: str | None, expected: list[str]) -> None:
    """bitsandbytes is judged by the CUDA version of torch: an exact minor up to 0.49, the major from 0.50."""
    facts = _facts(dist_dict("torch", torch), dist_dict("bitsandbytes", bnb), torch=torch_dict(torch, cuda))
    found = _unmet(facts, "torch", "bitsandbytes")
    assert found is not None and [i["install"] for i in found] == expected

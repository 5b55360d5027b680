"""Wheel availability: torch requirements and PyTorch indexes judged against the build matrix."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from _fakes import dist_dict, facts_dict, torch_dict

from envcheck.derived import build_matrix as tb
from envcheck.derived import wheels
from envcheck.derived.derive import Derived
from envcheck.derived.tables import TORCH_BUILDS
from envcheck.facts.snapshot import Facts
from envcheck.rules import generated as project_rules
from envcheck.rules.rule_pack import load
from envcheck.sources.project.discover import discover

MATRIX = tb.load()
PACK = load()
MAC_INTEL = {"platform": "darwin", "machine": "x86_64", "system": "Darwin"}
MAC_ARM = {"platform": "darwin", "machine": "arm64", "system": "Darwin"}
LINUX_ARM = {"platform": "linux", "machine": "aarch64"}
WINDOWS = {"platform": "win32", "machine": "AMD64", "system": "Windows"}


def _facts(python: dict[str, Any], *requirements: str, dists: tuple[dict[str, Any], ...] = (),
           torch: dict[str, Any] | None = None, index_options: tuple[str, ...] = ()) -> Facts:
    data = facts_dict(python=python, dists=dists, torch=torch)
    data["python"]["marker_environment"].update(sys_platform=python.get("platform", "linux"),
                                                platform_machine=python.get("machine", "x86_64"))
    data["project"] = {"root": "/opt/project", "name": "demo", "files": ["pyproject.toml"],
                       "index_options": list(index_options), "locks": [],
                       "requirements": [{"requirement": r, "source": f"pyproject.toml: project.dependencies[{i}]",
                                         "kind": "project"} for i, r in enumerate(requirements)]}
    return Facts.from_dict(data, file="<test>")


def _kinds(facts: Facts) -> dict[str, list[str]]:
    """The requirements each derivation reports, by kind."""
    derived = Derived(facts, PACK.tables)
    return {kind: [i["requirement"] for i in derived.get(f"torch.requirement-without-wheel-for-{kind}")]
            for kind in ("platform", "python", "variant")}


@pytest.mark.parametrize(("python", "requirement", "kind"), [
    pytest.param({**MAC_INTEL, "version": "3.11.7"}, "torch>=2.3", "platform", id="intel-mac-after-2.2.2"),
    pytest.param({**MAC_INTEL, "version": "3.11.7"}, "torch==2.6.0", "platform", id="intel-mac-pinned"),
    pytest.param({**MAC_INTEL, "version": "3.13.1"}, "torch", "python", id="intel-mac-python-3.13"),
    pytest.param({"version": "3.13.1"}, "torch==2.4.1", "python", id="3.13-before-2.5"),
    pytest.param({"version": "3.14.0"}, "torch<2.9", "python", id="3.14-before-2.9"),
    pytest.param({"version": "3.8.18"}, "torch>=2.5", "python", id="dropped-python"),
    pytest.param({**MAC_ARM, "version": "3.11.7"}, "torch==2.5.1+cu124", "variant", id="cuda-on-a-mac"),
    pytest.param({**WINDOWS, "version": "3.11.7"}, "torch==2.5.1+rocm6.2", "variant", id="rocm-on-windows"),
])
def test_requirement_without_wheel_is_reported_once_by_its_kind(python: dict[str, Any], requirement: str,
                                                                  kind: str) -> None:
    """A torch requirement no published wheel satisfies here lands in exactly the derivation of its kind."""
    found = _kinds(_facts(python, requirement))
    assert found == {k: ([requirement] if k == kind else []) for k in found}


@pytest.mark.parametrize(("python", "requirement"), [
    pytest.param({**MAC_INTEL, "version": "3.11.7"}, "torch<2.3", id="intel-mac-2.2"),
    pytest.param({**MAC_ARM, "version": "3.12.4"}, "torch>=2.3", id="apple-silicon"),
    pytest.param({"version": "3.13.1"}, "torch>=2.4", id="3.13-with-2.5-in-range"),
    pytest.param({**LINUX_ARM, "version": "3.11.7"}, "torch==2.5.1", id="aarch64-pypi"),
    pytest.param({"version": "3.11.7"}, "torch>=99", id="newer-than-the-matrix"),
    pytest.param({**MAC_INTEL, "version": "3.11.7"}, "torch>=2.3; sys_platform == 'linux'", id="marker-elsewhere"),
])
def test_installable_or_unknown_requirements_are_not_reported(python: dict[str, Any], requirement: str) -> None:
    """Requirements with a wheel here, beyond the matrix, or whose marker excludes this interpreter pass."""
    assert _kinds(_facts(python, requirement)) == {"platform": [], "python": [], "variant": []}


def test_requirement_the_installed_torch_meets_is_left_to_unpublished_build() -> None:
    """A requirement the installed torch already satisfies is not judged again."""
    facts = _facts({**MAC_INTEL, "version": "3.11.7"}, "torch>=2.3",
                   dists=(dist_dict("torch", "2.5.1"),), torch=torch_dict("2.5.1", None))
    assert _kinds(facts)["platform"] == []


def test_installed_distribution_requiring_an_unavailable_torch_is_reported() -> None:
    """torchvision 0.18 requires torch 2.3.0, which an Intel Mac cannot install: the finding names torchvision."""
    facts = _facts({**MAC_INTEL, "version": "3.11.7"},
                   dists=(dist_dict("torch", "2.2.2"), dist_dict("torchvision", "0.18.0", "torch==2.3.0")),
                   torch=torch_dict("2.2.2", None))
    items = Derived(facts, PACK.tables).get("torch.requirement-without-wheel-for-platform")
    assert [(i["requirement"], i["source"], i["newest"]) for i in items] == [
        ("torch==2.3.0", "torchvision 0.18.0", "2.2.2")]


def test_index_without_wheels_for_the_platform() -> None:
    """A CUDA index on a Mac is reported; PyTorch's CPU index there, and a CUDA index on Linux, are not."""
    for python, url, reported in [(MAC_ARM, "https://download.pytorch.org/whl/cu121", True),
                                  (MAC_ARM, "https://download.pytorch.org/whl/cpu", False),
                                  ({}, "https://download.pytorch.org/whl/cu121", False),
                                  (WINDOWS, "https://download.pytorch.org/whl/rocm6.2", True),
                                  (MAC_ARM, "https://example.org/simple", False)]:
        facts = _facts(python, "torch", index_options=("--extra-index-url", url))
        found = wheels.index_without_wheel(facts, PACK.tables[TORCH_BUILDS])
        assert [i["url"] for i in found] == ([url] if reported else []), (python, url)


def test_constraints_require_nothing() -> None:
    """A constraint file's torch line limits torch where it is installed; it asks for no install, so no finding."""
    data = facts_dict(python={**MAC_INTEL, "version": "3.11.7"})
    data["project"] = {"root": "/opt/project", "name": None, "files": ["constraints.txt"], "index_options": [],
                       "locks": [], "requirements": [{"requirement": "torch>=2.3", "source": "constraints.txt:1",
                                                      "kind": "constraint"}]}
    assert _kinds(Facts.from_dict(data, file="<test>"))["platform"] == []


def test_tool_envcheck_require_is_judged_for_wheels_but_left_to_the_policy_rules(tmp_path: Path) -> None:
    """`[tool.envcheck] require = ["torch>=2.3"]` in a real pyproject.toml: on an Intel Mac EC1601 says no wheel
    exists, while EC9801 (the project's own requirements) is not generated for it: EC99xx reports it missing."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "0"\n\n[tool.envcheck]\nrequire = ["torch>=2.3", "not a requirement"]\n',
        encoding="utf-8")
    project = discover(tmp_path)
    assert project is not None
    data = facts_dict(python={**MAC_INTEL, "version": "3.11.7"})
    facts = dataclasses.replace(Facts.from_dict(data, file="<test>"), project=project.facts({}))
    assert [(d.requirement, d.kind) for d in facts.project.requirements] == [("torch>=2.3", "policy")]
    assert _kinds(facts)["platform"] == ["torch>=2.3"]
    assert project_rules.rules(project) == []
    assert Derived(facts, PACK.tables).get("project.unmet") == []

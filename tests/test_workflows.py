"""The GitHub workflows keep pip-audit's hygiene: no default token permissions, actions pinned by commit, no persisted
checkout credentials, and one final job that fails when any other job did not succeed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
_PINNED = re.compile(r"^\s*-?\s*uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # v\d+(\.\d+)*$")


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def test_there_are_workflows() -> None:
    """The CI and the action self-test are both here (a rename would silently skip the checks below)."""
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "action-self-test.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_no_default_permissions_and_each_job_asks(path: Path) -> None:
    """`permissions: {}` at the top; every job names its own, and none asks for more than reading the repository,
    except issue triage's comment job, which may write issues and reads nothing."""
    workflow = _load(path)
    assert workflow["permissions"] == {}
    for name, job in workflow["jobs"].items():
        allowed: tuple[dict[str, str], ...] = ({}, {"contents": "read"})
        if (path.name, name) == ("issue-triage.yml", "comment"):
            allowed = ({"issues": "write"},)
        assert job["permissions"] in allowed, name


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_no_expression_is_pasted_into_a_script(path: Path) -> None:
    """`${{ ... }}` never appears in a `run:` script: values reach scripts through `env:`, so no issue body, branch
    name or input can inject shell code (zizmor's template-injection)."""
    for job in _load(path)["jobs"].values():
        for step in job.get("steps", []):
            assert "${{" not in str(step.get("run", "")), step.get("name")


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_actions_are_pinned_by_commit_with_the_version_in_a_comment(path: Path) -> None:
    """Every remote `uses:` is owner/repo@<40-hex SHA> # vX.Y.Z; only this repository's own action is a path."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if "uses:" not in line or line.strip().startswith("#"):
            continue
        if re.match(r"^\s*-?\s*uses: \./(\s|$)", line):
            continue
        assert _PINNED.match(line), line


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_checkouts_do_not_persist_credentials(path: Path) -> None:
    """Each actions/checkout step sets persist-credentials: false, so later steps cannot read the token from .git."""
    for job in _load(path)["jobs"].values():
        for step in job.get("steps", []):
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_one_final_job_needs_every_other_job(path: Path) -> None:
    """`all-green` runs always, needs every other job, and fails unless each one's result is success."""
    jobs = _load(path)["jobs"]
    gate = jobs["all-green"]
    assert gate["if"] == "always()"
    assert sorted(gate["needs"]) == sorted(name for name in jobs if name != "all-green")
    (step,) = gate["steps"]
    assert step["env"] == {"NEEDS": "${{ toJSON(needs) }}"}
    assert 'all(.[]; .result == "success")' in step["run"]


def test_ci_runs_the_readme_gate_with_the_torch_index() -> None:
    """The Linux job runs `bash .ci/run` with PyTorch's CPU index given to the torch fixture; the static tier runs on
    macOS and Windows with the marker expression that leaves out torch, wheels and venvs."""
    jobs = _load(ROOT / ".github" / "workflows" / "ci.yml")["jobs"]
    (gate,) = [s for s in jobs["tests"]["steps"] if s.get("run") == "bash .ci/run"]
    assert gate["env"]["ENVCHECK_TEST_TORCH_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    tiers = {entry["os"]: entry["tests"] for entry in jobs["static"]["strategy"]["matrix"]["include"]}
    assert tiers == {"macos-latest": "not slow and not torch and not gpu",
                     "windows-latest": "not slow and not torch and not gpu and not posix"}
    assert 'python -m pytest -m "$TESTS"' in [s.get("run") for s in jobs["static"]["steps"]]

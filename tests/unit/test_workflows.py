"""The GitHub workflows keep pip-audit's hygiene: no default token permissions, actions pinned by commit, no persisted
checkout credentials, and one final job that fails when any other job did not succeed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
_PINNED = re.compile(r"^\s*-?\s*uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # v\d+(\.\d+)*$")


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def test_there_are_workflows() -> None:
    """The CI, the action self-test and the release are all here (a rename would silently skip the checks below)."""
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "action-self-test.yml", "release.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_no_default_permissions_and_each_job_asks(path: Path) -> None:
    """`permissions: {}` at the top; every job names its own, and none asks for more than reading the repository,
    except issue triage's comment job, which may write issues and reads nothing, and the release's publishing job,
    which alone may ask for an OIDC token (PyPI's trusted publishing) and write the GitHub release."""
    workflow = _load(path)
    assert workflow["permissions"] == {}
    for name, job in workflow["jobs"].items():
        allowed: tuple[dict[str, str], ...] = ({}, {"contents": "read"})
        if (path.name, name) == ("issue-triage.yml", "comment"):
            allowed = ({"issues": "write"},)
        if (path.name, name) == ("release.yml", "publish"):
            allowed = ({"contents": "write", "id-token": "write"},)
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


# --- the release ------------------------------------------------------------------------------------------------------

VERIFY = "python .ci/verify_dist.py dist --torch"


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def _runs(job: dict[str, Any]) -> list[str]:
    return [str(step.get("run", "")) for step in _steps(job)]


def _uses(job: dict[str, Any]) -> list[str]:
    return [str(step["uses"]).split("@")[0] for step in _steps(job) if "uses" in step]


def test_release_runs_on_version_tags_only() -> None:
    """The release starts on pushing a tag v<major>.<minor>.<patch>[suffix], on nothing else (PyYAML reads `on:` as
    True)."""
    assert _load(ROOT / ".github" / "workflows" / "release.yml")[True] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+*"]}}


def test_release_checks_the_tag_then_builds_once() -> None:
    """The build job checks the tag against the version and takes the CHANGELOG section first, then builds the
    sdist and the wheel, and hands both on as artifacts; it is the only job that builds."""
    jobs = _load(ROOT / ".github" / "workflows" / "release.yml")["jobs"]
    runs = _runs(jobs["build"])
    notes = next(i for i, run in enumerate(runs) if 'python .ci/release_notes.py "$TAG"' in run)
    build = next(i for i, run in enumerate(runs) if "python -m build --outdir dist ." in run)
    assert notes < build
    assert _steps(jobs["build"])[notes]["env"] == {"TAG": "${{ github.ref_name }}"}
    uploads = [step["with"] for step in _steps(jobs["build"])
               if str(step.get("uses", "")).startswith("actions/upload-artifact@")]
    assert [(u["name"], u["path"]) for u in uploads] == [("dist", "dist/"), ("release-notes", "notes/")]
    assert [name for name, job in jobs.items() if any("python -m build" in run for run in _runs(job))] == ["build"]


def test_ci_and_the_release_check_the_built_files_with_one_script() -> None:
    """CI's smoke job and the release's verify job run the same .ci/verify_dist.py, with the full check of the CPU
    torch from PyTorch's CPU index; the release checks the files the build job uploaded, on the oldest and newest
    Python."""
    ci = _load(ROOT / ".github" / "workflows" / "ci.yml")["jobs"]["smoke"]
    release = _load(ROOT / ".github" / "workflows" / "release.yml")["jobs"]["verify"]
    for job in (ci, release):
        (step,) = [s for s in _steps(job) if s.get("run") == VERIFY]
        assert step["env"] == {"ENVCHECK_TEST_TORCH_INDEX_URL": "https://download.pytorch.org/whl/cpu"}
        assert any("twine" in run for run in _runs(job))
    assert release["needs"] == "build"
    assert "actions/download-artifact" in _uses(release)
    assert release["strategy"]["matrix"]["python-version"] == ["3.10", "3.13"]


def test_release_publishes_only_verified_files_by_trusted_publishing() -> None:
    """The publishing job needs the build and its check, runs in the `pypi` environment, checks out nothing, uploads
    with PyPI's trusted publishing (no password or token input), and makes the GitHub release with the files and
    the CHANGELOG section; no other job asks for an OIDC token."""
    jobs = _load(ROOT / ".github" / "workflows" / "release.yml")["jobs"]
    publish = jobs["publish"]
    assert sorted(publish["needs"]) == ["build", "verify"]
    assert publish["environment"] == "pypi"
    assert _uses(publish) == ["actions/download-artifact", "actions/download-artifact", "pypa/gh-action-pypi-publish"]
    (upload,) = [s for s in _steps(publish) if str(s.get("uses", "")).startswith("pypa/gh-action-pypi-publish@")]
    assert not {"password", "user", "repository-url"} & set(upload.get("with", {}))
    (release,) = [run for run in _runs(publish) if run.startswith("gh release create")]
    assert '"$TAG" dist/*' in release and "--notes-file notes/release-notes.md" in release
    assert [n for n, job in jobs.items() if "id-token" in job["permissions"]] == ["publish"]

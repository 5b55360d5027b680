"""The composite GitHub Action (action.yml): its steps' shell scripts run here for real, with the variables the
runner would set (GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_ACTION_PATH) pointing at temporary files."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import BIN, clean_env

ROOT = Path(__file__).resolve().parent.parent
ACTION: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
WORKFLOW: dict[str, Any] = yaml.safe_load(
    (ROOT / ".github" / "workflows" / "action-self-test.yml").read_text(encoding="utf-8"))
_TIMEOUT_S = 600  # a guard against a hung pip, never a timing assertion


def _step(name: str) -> dict[str, Any]:
    (step,) = [s for s in ACTION["runs"]["steps"] if s["name"] == name]
    return step


INSTALL, RUN = _step("Install envcheck into the checked interpreter"), _step("Run envcheck")


def test_inputs_and_composite_shape() -> None:
    """Inputs python (default `python`), fail-on and args; a composite of bash steps; the exit code as an output."""
    assert {name: spec.get("default") for name, spec in ACTION["inputs"].items()} == \
        {"python": "python", "fail-on": "", "args": ""}
    assert ACTION["runs"]["using"] == "composite"
    assert all(step["shell"] == "bash" for step in ACTION["runs"]["steps"])
    assert ACTION["outputs"]["exit-code"]["value"] == "${{ steps.check.outputs.exit-code }}"
    assert INSTALL["env"]["ENVCHECK_SOURCE"] == "${{ github.action_path }}"


def test_inputs_reach_scripts_only_through_the_environment() -> None:
    """No `${{ ... }}` expression is pasted into a script, where an input could inject shell code."""
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step["run"], step["name"]
    assert RUN["env"] == {"ENVCHECK_PYTHON": "${{ inputs.python }}", "ENVCHECK_FAIL_ON": "${{ inputs.fail-on }}",
                          "ENVCHECK_ARGS": "${{ inputs.args }}", "NO_COLOR": "1"}


def test_self_test_workflow_uses_this_checkout() -> None:
    """Every job of the self-test workflow runs the action as `uses: ./`, after a checkout."""
    for job in WORKFLOW["jobs"].values():
        uses = [step.get("uses") for step in job["steps"]]
        assert uses[0] == "actions/checkout@v4" and "./" in uses


def _run_step(step: dict[str, Any], tmp_path: Path, python: str, **inputs: str) -> subprocess.CompletedProcess[str]:
    """The step's script under bash, as the runner runs it: inputs in the environment, cwd the workspace."""
    github = tmp_path / "github"
    github.mkdir(exist_ok=True)
    env = clean_env({
        "ENVCHECK_PYTHON": python, "ENVCHECK_FAIL_ON": inputs.get("fail_on", ""),
        "ENVCHECK_ARGS": inputs.get("args", ""), "ENVCHECK_SOURCE": str(ROOT), "NO_COLOR": "1",
        "GITHUB_STEP_SUMMARY": str(github / "summary.md"), "GITHUB_OUTPUT": str(github / "output"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
    })
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path / "workspace", env=env,
                          capture_output=True, text=True, timeout=_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)


def _outputs(tmp_path: Path) -> dict[str, str]:
    text = (tmp_path / "github" / "output").read_text(encoding="utf-8")
    return dict(line.split("=", 1) for line in text.splitlines())


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A project checkout with a policy the environment does not meet."""
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "pyproject.toml").write_text(
        '[tool.envcheck]\nrequire = ["no-such-dist-x>=1"]\nselect = ["EC01"]\n', encoding="utf-8")
    return tmp_path


def test_run_step_annotates_summarises_and_fails(workspace: Path) -> None:
    """Exit 1 with an ::error annotation per problem, the markdown report as the step summary, exit-code output 1."""
    proc = _run_step(RUN, workspace, sys.executable, args="--static")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    notice, annotation = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    assert notice.startswith("::notice title=envcheck::checked ")  # which interpreter, and how it was chosen
    assert annotation.startswith("::error title=EC9901 project-require-no-such-dist-x::the project requires "
                                 "no-such-dist-x>=1; found no-such-dist-x (not installed)%0Afix: ")
    summary = (workspace / "github" / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## :x: envcheck") and "`EC9901` project-require-no-such-dist-x" in summary
    assert _outputs(workspace) == {"exit-code": "1"}


def test_fail_on_never_passes_the_step(workspace: Path) -> None:
    """The fail-on input reaches --fail-on: with never, the same findings leave the step green (exit-code 0)."""
    proc = _run_step(RUN, workspace, sys.executable, args="--static", fail_on="never")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert any(line.startswith("::error title=EC9901") for line in proc.stdout.splitlines())
    assert _outputs(workspace) == {"exit-code": "0"}


def test_args_are_split_like_a_shell_without_expansion(workspace: Path) -> None:
    """Quoted arguments stay whole and `$HOME` or `;` are not interpreted: --require "a >= 1" is one argument."""
    proc = _run_step(RUN, workspace, sys.executable,
                     args="--static --no-config --select EC99 --require 'no-such-dist-y >= 2' --forbid '$HOME;x'")
    assert proc.returncode == 2, proc.stdout + proc.stderr  # `$HOME;x` reached envcheck verbatim: not PEP 508
    assert "--forbid: invalid requirement '$HOME;x'" in proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("::error title=envcheck::envcheck exited 2")
    ok = _run_step(RUN, workspace, sys.executable, args="--static --no-config --select EC99 "
                                                        "--require 'no-such-dist-y >= 2'")
    assert ok.returncode == 1
    assert "the project requires no-such-dist-y >= 2; found" in ok.stdout


@pytest.mark.slow
def test_whole_action_in_a_fresh_venv(workspace: Path) -> None:
    """Both steps in order: envcheck is installed from the action's own path into a fresh venv's python (which had
    no envcheck), then that interpreter is checked."""
    venv = workspace / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=_TIMEOUT_S, capture_output=True,
                   env=clean_env())
    python = str(venv / BIN / "python")
    install = _run_step(INSTALL, workspace, python)
    assert install.returncode == 0, install.stdout + install.stderr
    proc = _run_step(RUN, workspace, python, args="--static")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"^::error title=EC9901 project-require-no-such-dist-x::", proc.stdout, re.MULTILINE)
    assert proc.stdout.rstrip().endswith(f"— {python}")
    assert _outputs(workspace) == {"exit-code": "1"}

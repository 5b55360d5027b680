"""The CI recipe for the machines a project deploys to: the GitHub Action with `args: --machine all`, and the
pre-commit hook with `args: [--machine, all]`, each run for real (the Action's step under bash, the hook by the real
pre-commit) in the acceptance project, on this machine without its GPUs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from _torch import BIN, clean_env
from test_action import RUN, Runner
from test_machines import MACHINES, REQUIREMENTS

ROOT = Path(__file__).resolve().parents[2]
_TIMEOUT_S = 300  # a guard against a hung git or pre-commit, never a timing assertion


def _project(folder: Path) -> None:
    (folder / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    (folder / "envcheck.toml").write_text(MACHINES, encoding="utf-8")


@pytest.mark.posix
def test_action_gates_on_the_declared_machines(tmp_path: Path) -> None:
    """The Action's run step with `args: --machine all` annotates each failing machine's pin line and fails the
    step; the job summary holds every machine's report."""
    runner = Runner(tmp_path)
    _project(runner.workspace)
    venv = tmp_path / "checked"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=_TIMEOUT_S,
                   capture_output=True, env=clean_env())
    runner.context.update({"inputs.args": "--machine all"})
    proc = runner.run(RUN, **{"inputs.python": str(venv / BIN / "python"),
                              "steps.install.outputs.python": sys.executable})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    titles = [line.split("::", 2)[1] for line in proc.stdout.splitlines() if line.startswith("::error ")]
    assert titles == [
        "error file=requirements.txt,line=2,title=EC0401 gpu-architecture-not-in-torch-build on rtx5090",
        "error file=requirements.txt,line=2,title=EC1601 torch-requirement-has-no-wheel-for-this-platform on "
        "intel-mac",
    ]
    summary = runner.summary.read_text(encoding="utf-8")
    assert "- ✗ rtx5090" in summary and "- ✓ train" in summary and "- ✗ intel-mac" in summary
    assert runner.outputs["check"] == {"exit-code": "1"}


def _hook(args: list[str]) -> dict[str, Any]:
    """The manifest's hook as a local hook of a project's configuration, with `args`."""
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return {**hook, "args": args}


@pytest.mark.slow
def test_precommit_hook_with_machine_args_fails_the_commit(tmp_path: Path) -> None:
    """The hook as the manifest declares it, with `args: [--machine, all]`, run by the real pre-commit: it fails
    naming the failing machines, and passes once only the machine the pins suit is gated."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _project(tmp_path)
    env = clean_env({"PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "NO_COLOR": "1",
                     "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, env=env, timeout=_TIMEOUT_S)

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        config = {"repos": [{"repo": "local", "hooks": [_hook(args)]}]}
        (tmp_path / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        subprocess.run(["git", "add", "."], cwd=tmp_path, check=True, env=env, timeout=_TIMEOUT_S)
        return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never",
                               "--verbose"], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)

    failed = run(["--machine", "all"])
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "✗ rtx5090" in failed.stdout and "✗ intel-mac" in failed.stdout and "✓ train" in failed.stdout
    passed = run(["--machine", "train"])
    assert passed.returncode == 0, passed.stdout + passed.stderr

"""The issue-triage workflow's diagnosing step, run for real under bash with the environment the workflow gives it:
an issue body holding an environment report with a problem gets a comment, any other body gets none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from _fakes import FIXTURES
from _torch import clean_env
from test_inert_output import GPU, PAYLOAD, assert_inert_markdown

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "issue-triage.yml"

pytestmark = pytest.mark.posix  # the step is a bash script


def _check_step() -> dict[str, Any]:
    jobs = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]
    (step,) = [s for s in jobs["diagnose"]["steps"] if s.get("id") == "check"]
    return dict(step)


def _outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT's `key=value` lines and `key<<DELIMITER` blocks."""
    out: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            key, delimiter = line.split("<<", 1)
            block = []
            for inner in lines:
                if inner == delimiter:
                    break
                block.append(inner)
            out[key] = "\n".join(block)
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
    return out


def _diagnose(tmp_path: Path, body: str) -> dict[str, str]:
    """The step's script with the issue body in $BODY, as the workflow runs it after installing envcheck into
    $RUNNER_TEMP/envcheck (here: this environment's envcheck and python)."""
    step = _check_step()
    runner_temp = tmp_path / "runner"
    bin_dir = runner_temp / "envcheck" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "envcheck").symlink_to(Path(sys.executable).parent / "envcheck")
    (bin_dir / "python").symlink_to(sys.executable)
    output = tmp_path / "github-output"
    output.touch()
    work = tmp_path / "checkout"
    work.mkdir()
    env = clean_env({"RUNNER_TEMP": str(runner_temp), "GITHUB_OUTPUT": str(output), **step["env"], "BODY": body})
    proc = subprocess.run(["bash", "-c", step["run"]], env=env, cwd=work, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return _outputs(output.read_text(encoding="utf-8"))


def test_the_body_reaches_the_script_only_through_the_environment() -> None:
    """The issue body is the step's $BODY; the script never contains an expression GitHub would paste into it."""
    step = _check_step()
    assert step["env"]["BODY"] == "${{ github.event.issue.body }}"
    assert "${{" not in step["run"]


def test_a_report_with_a_problem_is_commented(tmp_path: Path) -> None:
    """A collect_env of an RTX 5090 with a cu126 torch, pasted in a fenced block, gives found=true and a markdown
    comment naming the architecture rule."""
    paste = (FIXTURES / "reports" / "torch-2.6-rtx5090d.txt").read_text(encoding="utf-8")
    body = f"It fails on my new GPU.\n\n```\n{paste}\n```\n\n```python\nimport os; os.system('touch pwned')\n```\n"
    outputs = _diagnose(tmp_path, body)
    assert outputs["found"] == "true"
    assert "EC0401" in outputs["comment"] and outputs["comment"].startswith("## ")
    assert not (tmp_path / "checkout" / "pwned").exists()


def test_a_hostile_gpu_name_is_commented_inert(tmp_path: Path) -> None:
    """A GPU name carrying a link, HTML, a mention and escape sequences reaches the comment as text, not markup."""
    paste = (FIXTURES / "reports" / "torch-2.6-rtx5090d.txt").read_text(encoding="utf-8")
    paste = paste.replace(f"configuration: GPU 0: {GPU}", f"configuration: GPU 0: {GPU} {PAYLOAD}")
    outputs = _diagnose(tmp_path, f"Broken.\n\n```\n{paste}\n```\n")
    assert outputs["found"] == "true" and "Download the fixed" in outputs["comment"]
    assert_inert_markdown(outputs["comment"])


def test_an_error_and_its_environment_together_are_commented(tmp_path: Path) -> None:
    """A body as people write it, a traceback with torch's own warning and no tool output, is read whole: the
    comment names the rule the warning shows, and the line it was read from."""
    body = ("## Describe the bug\nTraining crashes on the new node.\n\n```\n"
            "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:230: UserWarning:\n"
            "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch "
            "installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 "
            "sm_86 sm_90.\n"
            "RuntimeError: CUDA error: no kernel image is available for execution on the device\n```\n")
    outputs = _diagnose(tmp_path, body)
    assert outputs["found"] == "true", outputs
    assert "EC0401" in outputs["comment"] and "sm_120" in outputs["comment"]
    assert "line 6" in outputs["comment"]


@pytest.mark.parametrize("body", [
    pytest.param("Thanks for the tool!", id="no-report"),
    pytest.param("$(touch pwned) `touch pwned` ${HOME}", id="shell-syntax"),
    pytest.param("", id="empty"),
])
def test_a_body_without_a_problem_gets_no_comment(tmp_path: Path, body: str) -> None:
    """found=false and no comment; shell syntax in the body stays text."""
    outputs = _diagnose(tmp_path, body)
    assert outputs == {"found": "false"}
    assert not (tmp_path / "checkout" / "pwned").exists()

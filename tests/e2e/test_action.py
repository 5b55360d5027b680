"""The composite GitHub Action (action.yml): its steps' shell scripts run here for real under bash, as the runner runs
them, with each step's `env:` evaluated from action.yml itself (inputs, github.action_path, the install step's output)
and the runner's files (GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, RUNNER_TEMP) pointing at temporary paths."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from _torch import BIN, clean_env
from _venvs import VenvMaker

ROOT = Path(__file__).resolve().parents[2]
ACTION: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
WORKFLOW: dict[str, Any] = yaml.safe_load(
    (ROOT / ".github" / "workflows" / "action-self-test.yml").read_text(encoding="utf-8"))
_TIMEOUT_S = 600  # a guard against a hung pip, never a timing assertion
_EXPRESSION = re.compile(r"^\$\{\{ ([\w.-]+) \}\}$")

# The steps run under bash on every runner (action-self-test.yml covers Windows); this harness needs a POSIX
# shell and venv layout.
pytestmark = pytest.mark.posix


def _step(step_id: str) -> dict[str, Any]:
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == step_id]
    return step


INSTALL, RUN = _step("install"), _step("check")


def test_inputs_and_composite_shape() -> None:
    """Inputs python (default `python`), fail-on and args; a composite of two bash steps; the exit code as an output."""
    assert {name: spec.get("default") for name, spec in ACTION["inputs"].items()} == \
        {"python": "python", "fail-on": "", "args": ""}
    assert ACTION["runs"]["using"] == "composite"
    assert [step["id"] for step in ACTION["runs"]["steps"]] == ["install", "check"]
    assert all(step["shell"] == "bash" for step in ACTION["runs"]["steps"])
    assert ACTION["outputs"]["exit-code"]["value"] == "${{ steps.check.outputs.exit-code }}"


def test_inputs_reach_scripts_only_through_the_environment() -> None:
    """No `${{ ... }}` expression is pasted into a script, where an input could inject shell code."""
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step["run"], step["name"]
    assert RUN["env"] == {"ENVCHECK_PYTHON": "${{ inputs.python }}", "ENVCHECK_FAIL_ON": "${{ inputs.fail-on }}",
                          "ENVCHECK_ARGS": "${{ inputs.args }}",
                          "ENVCHECK_TOOL_PYTHON": "${{ steps.install.outputs.python }}", "NO_COLOR": "1"}


def test_self_test_workflow_uses_this_checkout() -> None:
    """Every job of the self-test workflow that runs the action runs it as `uses: ./`, after a checkout."""
    runs_action = [job for job in WORKFLOW["jobs"].values() if any(s.get("uses") == "./" for s in job["steps"])]
    assert len(runs_action) >= 3
    for job in runs_action:
        assert job["steps"][0]["uses"].startswith("actions/checkout@")


class Runner:
    """One job's worth of runner state: a workspace, RUNNER_TEMP, a step summary, and each step's outputs."""

    def __init__(self, root: Path, **inputs: str) -> None:
        self.root = root
        self.workspace, self.temp = root / "workspace", root / "runner-temp"
        self.workspace.mkdir(exist_ok=True)
        self.temp.mkdir(exist_ok=True)
        self.summary = root / "summary.md"
        self.context = {"inputs.python": "python", "inputs.fail-on": "", "inputs.args": "",
                        "github.action_path": str(ROOT)}
        self.context.update({f"inputs.{name.replace('_', '-')}": value for name, value in inputs.items()})
        self.outputs: dict[str, dict[str, str]] = {}

    def _value(self, raw: str) -> str:
        match = _EXPRESSION.match(raw)
        return self.context.get(match.group(1), "") if match else raw

    def run(self, step: dict[str, Any], **context: str) -> subprocess.CompletedProcess[str]:
        """The step's script under the runner's bash command line, its `env:` evaluated, cwd the workspace."""
        self.context.update(context)
        output = self.root / f"output-{step['id']}"
        output.write_text("", encoding="utf-8")
        script = self.root / f"{step['id']}.sh"
        script.write_text(step["run"], encoding="utf-8")
        env = clean_env({name: self._value(str(raw)) for name, raw in step["env"].items()})
        env.update({"GITHUB_STEP_SUMMARY": str(self.summary), "GITHUB_OUTPUT": str(output),
                    "RUNNER_TEMP": str(self.temp)})
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=self.workspace,
                              env=env, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)
        lines = output.read_text(encoding="utf-8").splitlines()
        self.outputs[step["id"]] = dict(line.split("=", 1) for line in lines)
        for name, value in self.outputs[step["id"]].items():
            self.context[f"steps.{step['id']}.outputs.{name}"] = value
        return proc


def _site_listing(venv: Path) -> list[str]:
    """Every file and folder under the venv's site-packages: what an install would change."""
    (site,) = venv.glob("lib/python*/site-packages")
    return sorted(str(p.relative_to(site)) for p in site.rglob("*") if "__pycache__" not in p.parts)


@pytest.fixture(scope="module")
def checked_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's interpreter: a real venv (no pip, so nothing could be installed into it by accident) without
    envcheck, shared by the module and never written to by the action."""
    venv = tmp_path_factory.mktemp("checked") / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=_TIMEOUT_S,
                   capture_output=True, env=clean_env())
    return venv


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    """A runner whose workspace is a project with a policy the environment does not meet."""
    job = Runner(tmp_path)
    (job.workspace / "pyproject.toml").write_text(
        '[tool.envcheck]\nrequire = ["no-such-dist-x>=1"]\nselect = ["EC01"]\n', encoding="utf-8")
    return job


def _check(runner: Runner, python: str, **inputs: str) -> subprocess.CompletedProcess[str]:
    """The run step, with envcheck's own interpreter being this test's (as if the install step had made it)."""
    runner.context.update({f"inputs.{name.replace('_', '-')}": value for name, value in inputs.items()})
    return runner.run(RUN, **{"inputs.python": python, "steps.install.outputs.python": sys.executable})


def test_run_step_checks_the_input_interpreter_from_outside(runner: Runner, checked_venv: Path) -> None:
    """The venv given as `python` is the one checked (the report names it), and it gains no file."""
    before = _site_listing(checked_venv)
    python = str(checked_venv / BIN / "python")
    proc = _check(runner, python, args="--static --no-config --select EC99 --require packaging")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the project requires packaging; found packaging (not installed)" in proc.stdout
    assert proc.stdout.rstrip().endswith(f"— {python}")
    assert _site_listing(checked_venv) == before
    assert runner.outputs["check"] == {"exit-code": "1"}


def test_command_name_is_resolved_on_the_path(runner: Runner, checked_venv: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`python: python` (the default) is resolved as the shell would: the first `python` on PATH is the one checked."""
    monkeypatch.setenv("PATH", f"{checked_venv / BIN}{os.pathsep}{os.environ['PATH']}")
    proc = _check(runner, "python", args="--static --no-config --select EC99 --require packaging")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith(f"— {checked_venv / BIN / 'python'}")


def test_run_step_annotates_summarises_and_fails(runner: Runner, checked_venv: Path) -> None:
    """Exit 1 with an ::error annotation per problem, the markdown report as the step summary, exit-code output 1."""
    proc = _check(runner, str(checked_venv / BIN / "python"), args="--static")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    notice, annotation = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    assert notice.startswith("::notice title=envcheck::checked ")  # which interpreter, and how it was chosen
    assert annotation.startswith("::error title=EC9901 project-require-no-such-dist-x::the project requires "
                                 "no-such-dist-x>=1; found no-such-dist-x (not installed)%0Afix: ")
    summary = runner.summary.read_text(encoding="utf-8")
    assert summary.startswith("## :x: envcheck") and "`EC9901` project-require-no-such-dist-x" in summary
    assert runner.outputs["check"] == {"exit-code": "1"}


def test_fail_on_never_passes_the_step(runner: Runner, checked_venv: Path) -> None:
    """The fail-on input reaches --fail-on: with never, the same findings leave the step green (exit-code 0)."""
    proc = _check(runner, str(checked_venv / BIN / "python"), args="--static", fail_on="never")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert any(line.startswith("::error title=EC9901") for line in proc.stdout.splitlines())
    assert runner.outputs["check"] == {"exit-code": "0"}


def test_args_are_split_like_a_shell_without_expansion(runner: Runner, checked_venv: Path) -> None:
    """Quoted arguments stay whole and `$HOME` or `;` are not interpreted: --require "a >= 1" is one argument."""
    python = str(checked_venv / BIN / "python")
    proc = _check(runner, python,
                  args="--static --no-config --select EC99 --require 'no-such-dist-y >= 2' --forbid '$HOME;x'")
    assert proc.returncode == 2, proc.stdout + proc.stderr  # `$HOME;x` reached envcheck verbatim: not PEP 508
    assert "--forbid: invalid requirement '$HOME;x'" in proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("::error title=envcheck::envcheck exited 2")
    ok = _check(runner, python, args="--static --no-config --select EC99 --require 'no-such-dist-y >= 2'")
    assert ok.returncode == 1
    assert "the project requires no-such-dist-y >= 2; found" in ok.stdout


@pytest.mark.parametrize(
    ("python", "args", "message"),
    [
        pytest.param("no-such-python-x", "", "::error title=envcheck::the python input no-such-python-x is not a "
                     "command or file on this runner", id="python-not-found"),
        pytest.param(None, "--require 'unclosed", "::error title=envcheck::the args input cannot be split as a shell "
                     "would (an unclosed quote?)", id="unclosed-quote"),
    ],
)
def test_bad_inputs_exit_2_with_an_annotation(runner: Runner, checked_venv: Path, python: str | None, args: str,
                                              message: str) -> None:
    """An interpreter that does not resolve, or args that cannot be split, is exit 2 and one annotation, not a run."""
    proc = _check(runner, python or str(checked_venv / BIN / "python"), args=args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [message]
    assert runner.outputs["check"] == {"exit-code": "2"}
    assert not runner.summary.exists()


# Modules a checked-out repository could hold in the workspace, the action's working directory: each one, if
# imported by the action's Python, leaves a file named after it.
_HOSTILE = ("click.py", "shlex.py", "venv.py", "ensurepip.py", "pip/__init__.py", "pip/__main__.py",
            "envcheck/__init__.py", "envcheck/__main__.py")


def _hostile(workspace: Path) -> list[Path]:
    """The repository's hostile modules, written into the workspace; the marker files they would leave."""
    markers = []
    for module in _HOSTILE:
        path = workspace / module
        path.parent.mkdir(exist_ok=True)
        marker = workspace / f"imported-{module.replace('/', '.')}"
        path.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
        markers.append(marker)
    return markers


def test_run_step_imports_nothing_from_the_repository(runner: Runner, checked_venv: Path) -> None:
    """The workspace is the checked-out repository: its click.py, shlex.py or envcheck/__main__.py are never
    imported by the action's Python, which still reads the workspace's pyproject.toml."""
    markers = _hostile(runner.workspace)
    proc = _check(runner, str(checked_venv / BIN / "python"), args="--static")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert any(line.startswith("::error title=EC9901 project-require-no-such-dist-x::")
               for line in proc.stdout.splitlines())
    assert [m.name for m in markers if m.exists()] == []


@pytest.mark.slow
def test_whole_action_leaves_the_checked_venv_alone(runner: Runner, venv_maker: VenvMaker) -> None:
    """Both steps in order against a fresh venv with pip, in a workspace with modules that must not be imported:
    envcheck goes into its own venv under RUNNER_TEMP, the checked venv is checked with --python and keeps exactly
    the packages it had."""
    venv = runner.root / "project-venv"
    venv_maker.make(venv, env=clean_env())
    markers = _hostile(runner.workspace)  # the install step's pip, venv and ensurepip are not the repository's
    python = str(venv / BIN / "python")
    before = _site_listing(venv)
    install = runner.run(INSTALL, **{"inputs.python": python})
    assert install.returncode == 0, install.stdout + install.stderr
    tool = runner.outputs["install"]["python"]
    assert Path(tool).parent.parent == runner.temp / "envcheck-action"
    proc = runner.run(RUN, **{"inputs.args": "--static"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"^::error title=EC9901 project-require-no-such-dist-x::", proc.stdout, re.MULTILINE)
    assert proc.stdout.rstrip().endswith(f"— {python}")
    assert runner.outputs["check"] == {"exit-code": "1"}
    assert _site_listing(venv) == before
    assert [m.name for m in markers if m.exists()] == []
    importable = subprocess.run([python, "-c", "import envcheck"], capture_output=True, check=False,
                                timeout=_TIMEOUT_S, env=clean_env(), cwd=runner.root)
    assert importable.returncode == 1

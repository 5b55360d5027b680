"""The commands and the library check the discovered interpreter, and every report names it.

Real virtual environments (`python -m venv --without-pip`: a real interpreter, no envcheck in it) with real
.dist-info folders planted in their site-packages: torchvision 0.20.0, which pins torch==2.5.0, beside torch 2.13.0,
the broken project environment of issue 17. The commands run through click's CliRunner in this process, with the
working directory and the variables each case needs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from _fakes import write_dist, write_torch
from _torch import BIN, clean_env
from click.testing import CliRunner, Result

import envcheck
from envcheck.cli.click_cli import cli

SCHEMA = json.loads((Path(__file__).parents[2] / "envcheck" / "schemas" / "report.schema.json")
                    .read_text(encoding="utf-8"))
_VARIABLES = ("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_SHLVL", "UV_PROJECT_ENVIRONMENT")


def make_broken_env(prefix: Path) -> Path:
    """A real venv holding torchvision 0.20.0 (requires torch==2.5.0) and torch 2.13.0; returns its python."""
    proc = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], capture_output=True,
                          text=True, timeout=120, check=False, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    (site,) = prefix.glob("lib/python3*/site-packages") if sys.platform != "win32" else [prefix / "Lib" /
                                                                                          "site-packages"]
    write_dist(site, "torchvision", "0.20.0", requires=["torch==2.5.0"])
    write_dist(site, "torch", "2.13.0")
    return prefix / BIN / ("python.exe" if sys.platform == "win32" else "python")


@pytest.fixture
def quiet_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No activated environment of the shell running the tests leaks into discovery."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def project(tmp_path: Path, quiet_env: pytest.MonkeyPatch) -> Path:
    """The working directory: a project whose .venv is broken."""
    root = tmp_path / "proj"
    root.mkdir()
    make_broken_env(root / ".venv")
    quiet_env.chdir(root)
    return root


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_check_in_a_project_checks_its_venv_and_says_so(project: Path) -> None:
    """`envcheck` in a project folder checks ./.venv, not envcheck's own interpreter, and its first line says so."""
    result = run("--static", "--select", "EC01,EC07", "--no-color")
    python = f"{project}/.venv/{BIN}/python"
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[0] == f"checked {python}: from ./.venv"
    assert "torchvision 0.20.0 requires torch==2.5.0, but torch 2.13.0 is installed" in result.output
    # The venv has no pip, so the command is uv's, pointed at the checked interpreter
    # (envcheck/remedy/commands/installers.py). torch stays: torchvision is replaced with the release made for it
    # (EC0702, envcheck/remedy/commands/planner.py).
    assert f"pip install --python {python} --no-deps torchvision==0.28.0" in result.output


def test_every_format_names_the_target(project: Path, tmp_path: Path) -> None:
    """json (valid against the schema), markdown, junit (a property) and github (a notice) all name the checked
    interpreter and how it was chosen."""
    out = {fmt: tmp_path / f"report.{fmt}" for fmt in ("markdown", "junit", "github")}
    result = run("--static", "--select", "EC01", "--format", "json",
                 *(arg for fmt, file in out.items() for arg in ("--also", f"{fmt}={file}")))
    python = f"{project}/.venv/{BIN}/python"
    data = json.loads(result.output)
    jsonschema.validate(data, SCHEMA)
    assert data["target"] == {"python": python, "source": "project-venv", "reason": "from ./.venv",
                              "in_process": False}
    assert f"Checked `{python}`: from ./.venv" in out["markdown"].read_text(encoding="utf-8")
    props = {p.get("name"): p.get("value")
             for p in ET.parse(out["junit"]).getroot().iter("property")}
    assert (props["target"], props["target_source"]) == (f"checked {python}: from ./.venv", "project-venv")
    first = out["github"].read_text(encoding="utf-8").splitlines()[0]
    assert first == f"::notice title=envcheck::checked {python}: from ./.venv"


def test_facts_records_the_target_and_a_replay_names_the_snapshot(project: Path, tmp_path: Path) -> None:
    """`envcheck facts` writes the target beside the facts; `check --facts FILE` says it checked that snapshot;
    --python beside --facts is still refused."""
    saved = tmp_path / "env.json"
    assert run("facts", "--static", "-o", str(saved)).exit_code == 0
    data = json.loads(saved.read_text(encoding="utf-8"))
    python = f"{project}/.venv/{BIN}/python"
    assert data["target"]["reason"] == "from ./.venv" and data["python"]["executable"] == python
    replay = json.loads(run("check", "--facts", str(saved), "--format", "json", "--select", "EC01").output)
    assert replay["target"] == {"python": python, "source": "snapshot", "reason": f"from the snapshot {saved}",
                                "in_process": False}
    both = run("check", "--facts", str(saved), "--python", sys.executable)
    assert both.exit_code == 2 and "--facts and --python exclude each other" in both.output


def test_fix_plans_for_the_discovered_interpreter(project: Path) -> None:
    """`envcheck fix --dry-run` names the target first and plans commands for the project's interpreter."""
    result = run("fix", "--dry-run", "--static", "--select", "EC0702")
    python = f"{project}/.venv/{BIN}/python"
    assert result.output.splitlines()[0] == f"checked {python}: from ./.venv"
    assert f"pip install --python {python} --no-deps torchvision==0.28.0" in result.output
    assert "keeps torch 2.13.0; replaces torchvision 0.20.0 with 0.28.0" in result.output and "dry run" in result.output


def test_probe_runs_in_the_target_and_names_it(project: Path) -> None:
    """`envcheck probe` runs in the discovered interpreter, whose planted torch raises on import, and its first
    line names that interpreter."""
    (site,) = (project / ".venv").glob("lib/python3*/site-packages")
    write_torch(site, '__version__ = "2.13.0"\n')
    result = run("probe", "torch-import", "--no-cache")
    lines = result.output.splitlines()
    assert lines[0] == f"checked {project}/.venv/{BIN}/python: from ./.venv"
    assert lines[1].startswith("torch-import: error") and "must not be imported" in lines[1], result.output


def test_python_option_overrides_the_project(project: Path) -> None:
    """--python checks the interpreter it names even inside a project with a .venv."""
    data = json.loads(run("--static", "--select", "EC01", "--format", "json", "--python", sys.executable).output)
    assert data["target"]["source"] == "python-option" and data["python"] == sys.executable


def test_activated_conda_like_prefix_is_checked(tmp_path: Path, quiet_env: pytest.MonkeyPatch) -> None:
    """$CONDA_PREFIX naming a prefix with conda-meta/ (an activated conda environment) is checked, from any
    folder, and the facts see a conda environment."""
    prefix = tmp_path / "miniconda" / "envs" / "ml"
    python = make_broken_env(prefix)
    (prefix / "conda-meta").mkdir()
    (prefix / "conda-meta" / "history").write_text("", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    quiet_env.chdir(elsewhere)
    quiet_env.setenv("CONDA_PREFIX", str(prefix))
    quiet_env.setenv("CONDA_DEFAULT_ENV", "ml")
    quiet_env.setenv("CONDA_SHLVL", "2")
    result = run("--static", "--select", "EC01,EC07", "--no-color")
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == f"checked {python}: from $CONDA_PREFIX (conda environment ml)"
    saved = tmp_path / "env.json"
    run("facts", "--static", "-o", str(saved))
    assert json.loads(saved.read_text(encoding="utf-8"))["python"]["conda"] is True


def test_tool_environment_without_a_target_exits_2(tmp_path: Path, quiet_env: pytest.MonkeyPatch) -> None:
    """When envcheck's own environment is a pipx one and nothing else is found, the command exits 2 with one
    line; nothing is checked."""
    tool = tmp_path / "pipx" / "venvs" / "envcheck-ml"
    tool.mkdir(parents=True)
    (tool / "pipx_metadata.json").write_text("{}", encoding="utf-8")
    quiet_env.setattr(sys, "prefix", str(tool))
    quiet_env.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["--static"])
    assert result.exit_code == 2
    (line,) = result.output.splitlines()
    assert line.startswith(f"envcheck: error: envcheck runs in pipx's isolated environment at {tool}")
    assert line.endswith("--python PATH")


def test_library_checks_the_running_interpreter_unless_asked_to_discover(project: Path) -> None:
    """envcheck.check() checks sys.executable by default, even in a project folder; discover=True chooses as
    the command does; python= names one."""
    plain = envcheck.check(static=True, select=["EC01"], no_config=True)
    assert plain.target is not None
    assert (plain.target.source, plain.target.reason, plain.python) == ("self", "the running interpreter",
                                                                        sys.executable)
    found = envcheck.check(static=True, select=["EC01", "EC07"], no_config=True, discover=True, project_dir=project)
    assert found.target is not None and found.target.line() == f"checked {project}/.venv/{BIN}/python: from ./.venv"
    assert [f.rule_id for f in found.at_or_above("error")] == ["EC0702"]
    named = envcheck.check(static=True, select=["EC01"], no_config=True, python=sys.executable)
    assert named.target is not None and named.target.reason == "from the python argument"

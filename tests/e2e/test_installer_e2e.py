"""End to end: real venvs (a `uv venv` without pip, a pip venv), real uv and pip, a local index of stand-in wheels.

Each environment has torch and torchvision but not what torchvision requires (numpy, pillow), the state
`--no-deps` installs leave. envcheck must print commands that run exactly as printed in that environment, and
`envcheck fix --yes` must leave a clean re-check. pip and uv find the local index through environment variables
only (tests/_index.py), so the commands run are the printed ones, unchanged.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from _index import TORCH, LocalIndex, local_index  # noqa: F401 - local_index is a fixture
from _index import envcheck as _envcheck
from _index import ok as _ok
from _index import run as _run
from _torch import BIN
from _venvs import VenvMaker

pytestmark = pytest.mark.slow

PACKAGES = (f"torch=={TORCH}", "torchvision==0.28.0+cpu")


@pytest.fixture
def env(local_index: LocalIndex, uv: str) -> dict[str, str]:  # noqa: F811 - the fixture, by name
    """The local index for pip and uv, and uv on PATH (printed commands then start with a bare `uv`)."""
    return local_index.env({"PATH": os.path.dirname(uv) + os.pathsep + os.environ.get("PATH", "")})


def _python(venv: Path) -> Path:
    return venv / BIN / ("python.exe" if os.name == "nt" else "python")


@pytest.fixture
def uv_venv(tmp_path: Path, env: dict[str, str], uv: str) -> Path:
    """`uv venv` (no pip inside) with torch and torchvision installed by uv without their requirements."""
    venv = tmp_path / "uv-venv"
    _ok(_run([uv, "venv", "--quiet", venv], env, tmp_path))
    _ok(_run([uv, "pip", "install", "--quiet", "--python", _python(venv), "--no-deps", *PACKAGES], env, tmp_path))
    return _python(venv)


@pytest.fixture
def pip_venv(tmp_path: Path, env: dict[str, str], venv_maker: VenvMaker) -> Path:
    """`python -m venv` (pip inside) with torch and torchvision installed by pip without their requirements."""
    python = venv_maker.make(tmp_path / "pip-venv", env=env)
    _ok(_run([python, "-m", "pip", "install", "--quiet", "--no-deps", *PACKAGES], env, tmp_path))
    return python


def _report(python: Path, env: Mapping[str, str], cwd: Path, *more: str | Path) -> dict[str, Any]:
    proc = _envcheck("check", "--static", "--format", "json", *more, env=env, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def _missing(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"] == "EC0102" and f["status"] == "fail"]


def _printed(report: Mapping[str, Any]) -> list[str]:
    return [c["shell"] for f in _missing(report) for c in f["commands"]]


def _assert_clean(python: Path, env: Mapping[str, str], cwd: Path) -> None:
    proc = _envcheck("check", "--static", "--python", python, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_uv_venv_gets_uv_commands_that_run_as_printed(uv_venv: Path, env: dict[str, str], tmp_path: Path) -> None:
    """In a uv venv without pip, each printed command is `uv pip install --python PYTHON ...` and fixes it."""
    report = _report(uv_venv, env, tmp_path, "--python", uv_venv)
    assert {f["item"]["dependency"] for f in _missing(report)} == {"numpy", "pillow"}
    printed = _printed(report)
    assert all(line.startswith(f"uv pip install --python {shlex.quote(str(uv_venv))} ") for line in printed), printed
    assert report["installer"].startswith("uv pip (the environment was made by uv ")
    for line in printed:
        _ok(_run(shlex.split(line), env, tmp_path))
    _assert_clean(uv_venv, env, tmp_path)


def test_uv_venv_text_report_names_the_installer(uv_venv: Path, env: dict[str, str], tmp_path: Path) -> None:
    """The text report shows which installer its commands use, and no command of pip, which is not there."""
    proc = _envcheck("check", "--static", "--python", uv_venv, env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "commands use uv pip (the environment was made by uv" in proc.stdout
    assert "-m pip" not in proc.stdout


def test_fix_yes_in_uv_venv_leaves_a_clean_recheck(uv_venv: Path, env: dict[str, str], tmp_path: Path) -> None:
    """`envcheck fix --yes` in a uv venv runs one merged `uv pip install` and the re-check is clean."""
    proc = _envcheck("fix", "--yes", "--static", "--python", uv_venv, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"$ uv pip install --python {shlex.quote(str(uv_venv))} " in proc.stdout
    assert "installer: uv pip" in proc.stdout
    assert "fixed (2):" in proc.stdout
    _assert_clean(uv_venv, env, tmp_path)


def test_pip_venv_gets_pip_commands_that_run_as_printed(pip_venv: Path, env: dict[str, str], tmp_path: Path) -> None:
    """In a venv with pip (and uv on PATH), the printed commands are the venv's `python -m pip` and they fix it."""
    report = _report(pip_venv, env, tmp_path, "--python", pip_venv)
    printed = _printed(report)
    assert len(printed) == 2
    assert all(line.startswith(f"{shlex.quote(str(pip_venv))} -m pip install ") for line in printed), printed
    for line in printed:
        _ok(_run(shlex.split(line), env, tmp_path))
    _assert_clean(pip_venv, env, tmp_path)


def test_fix_yes_in_pip_venv_leaves_a_clean_recheck(pip_venv: Path, env: dict[str, str], tmp_path: Path) -> None:
    """`envcheck fix --yes` in a pip venv installs the missing requirements with pip; the re-check is clean."""
    proc = _envcheck("fix", "--yes", "--static", "--python", pip_venv, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"$ {shlex.quote(str(pip_venv))} -m pip install " in proc.stdout
    _assert_clean(pip_venv, env, tmp_path)


def test_without_pip_or_uv_ensurepip_comes_first(uv_venv: Path, env: dict[str, str], tmp_path: Path) -> None:
    """A snapshot of a venv with neither pip nor uv gets `python -m ensurepip` first, and the commands then work."""
    proc = _ok(_envcheck("facts", "--static", "--python", uv_venv, env=env, cwd=tmp_path))
    snapshot = json.loads(proc.stdout)
    assert snapshot["installer"]["pip"] is False
    assert snapshot["installer"]["ensurepip"] is True
    snapshot["installer"]["uv"] = None  # the same environment on a machine without uv
    saved = tmp_path / "no-uv.json"
    saved.write_text(json.dumps(snapshot), encoding="utf-8")
    report = _report(uv_venv, env, tmp_path, "--facts", saved)
    commands = [c["shell"] for f in _missing(report) for c in f["commands"]]
    ensure = shlex.join([str(uv_venv), "-m", "ensurepip"])
    assert commands[0] == ensure
    assert all(c == ensure or c.startswith(f"{shlex.quote(str(uv_venv))} -m pip install ") for c in commands)
    for line in dict.fromkeys(commands):  # as `envcheck fix` would: each distinct command once
        _ok(_run(shlex.split(line), env, tmp_path))
    _assert_clean(uv_venv, env, tmp_path)

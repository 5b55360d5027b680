"""End to end: a torch companion that does not fit the installed torch, fixed without touching torch.

Real venvs (a `uv venv` without pip, a pip venv), real uv and pip, and the local index of tests/_index.py, which
also serves PyTorch's CPU index layout (/whl/cpu/); envcheck is pointed there by ENVCHECK_TORCH_INDEX_BASE, so the
commands it prints run here exactly as printed.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from _index import TORCH, LocalIndex, local_index, uv_binary  # noqa: F401 - local_index is a fixture
from _index import envcheck as _envcheck
from _index import failing as _failing
from _index import ok as _ok
from _index import run as _run
from _index import static_report as _report
from _torch import BIN
from _venvs import VenvMaker

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (sys.platform == "linux" and os.uname().machine == "x86_64"),
                                 reason="the tables know PyPI's torchvision builds for Linux x86_64")]

UV = uv_binary()


def _python(venv: Path) -> Path:
    return venv / BIN / ("python.exe" if os.name == "nt" else "python")


@pytest.fixture
def uv() -> str:
    if UV is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI must run the uv tests: install the test extra (it has uv)")
        pytest.skip("no uv (it is in the test extra)")
    return UV


@pytest.fixture
def env(local_index: LocalIndex, uv: str) -> dict[str, str]:  # noqa: F811 - the fixture, by name
    return local_index.env({"PATH": os.path.dirname(uv) + os.pathsep + os.environ.get("PATH", "")})


def _uv_venv(tmp_path: Path, env: Mapping[str, str], uv: str, *packages: str) -> Path:
    venv = tmp_path / "uv-venv"
    _ok(_run([uv, "venv", "--quiet", venv], env, tmp_path))
    _ok(_run([uv, "pip", "install", "--quiet", "--python", _python(venv), *packages], env, tmp_path))
    return _python(venv)


def _pip_venv(tmp_path: Path, env: Mapping[str, str], venv_maker: VenvMaker, *packages: str) -> Path:
    python = venv_maker.make(tmp_path / "pip-venv", env=env)
    _ok(_run([python, "-m", "pip", "install", "--quiet", *packages], env, tmp_path))
    return python


# torchvision 0.20.0 (made for torch 2.5.0, and pinning it) beside torch 2.13.0+cpu; numpy and pillow, which both
# torchvision releases require, installed.
OLD_COMPANION = ("--no-deps", f"torch=={TORCH}", "torchvision==0.20.0", "numpy", "pillow")
# The right torchvision release, but PyPI's untagged (CUDA) build of it, beside the CPU torch.
CUDA_COMPANION = ("--no-deps", f"torch=={TORCH}", "torchvision===0.28.0", "numpy", "pillow")  # === : not +cpu


def _versions(python: Path, env: Mapping[str, str], cwd: Path) -> dict[str, str]:
    code = ("import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    data: dict[str, str] = json.loads(_ok(_run([python, "-c", code], env, cwd)).stdout)
    return data


def _assert_clean(python: Path, env: Mapping[str, str], cwd: Path) -> None:
    proc = _envcheck("check", "--static", "--python", python, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_uv_venv_old_companion_commands_run_as_printed(env: dict[str, str], uv: str, tmp_path: Path,
                                                       local_index: LocalIndex) -> None:  # noqa: F811
    """uv venv, torchvision 0.20.0 beside torch 2.13 CPU: one error, one printed command that keeps torch and works."""
    python = _uv_venv(tmp_path, env, uv, *OLD_COMPANION)
    failing = _failing(_report(python, env, tmp_path))
    assert [f["id"] for f in failing] == ["EC0702"], [(f["id"], f["summary"]) for f in failing]
    printed = [c["shell"] for f in failing for c in f["commands"]]
    assert printed == [shlex.join(["uv", "pip", "install", "--python", str(python), "--no-deps",
                                   "torchvision==0.28.0+cpu", "--index-url", local_index.torch_base + "cpu"])]
    for line in printed:
        _ok(_run(shlex.split(line), env, tmp_path))
    assert _versions(python, env, tmp_path)["torch"] == TORCH
    assert _versions(python, env, tmp_path)["torchvision"] == "0.28.0+cpu"
    _assert_clean(python, env, tmp_path)


def test_uv_venv_old_companion_fix_yes_keeps_torch(env: dict[str, str], uv: str, tmp_path: Path) -> None:
    """`envcheck fix --yes` says it keeps torch and replaces torchvision, runs that, and the re-check is clean."""
    python = _uv_venv(tmp_path, env, uv, *OLD_COMPANION)
    proc = _envcheck("fix", "--yes", "--static", "--python", python, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "keeps torch 2.13.0+cpu; replaces torchvision 0.20.0 with 0.28.0+cpu" in proc.stdout
    assert "torch==2.5.0 " not in proc.stdout.replace("requires torch==2.5.0,", "")
    assert "fixed (1):" in proc.stdout
    assert _versions(python, env, tmp_path)["torch"] == TORCH
    _assert_clean(python, env, tmp_path)


def test_pip_venv_old_companion_fix_yes_keeps_torch(env: dict[str, str], tmp_path: Path,
                                                    venv_maker: VenvMaker) -> None:
    """The same in a pip venv: pip installs the CPU torchvision from the CPU index; torch is untouched."""
    python = _pip_venv(tmp_path, env, venv_maker, *OLD_COMPANION)
    proc = _envcheck("fix", "--yes", "--static", "--python", python, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"$ {shlex.quote(str(python))} -m pip install --no-deps torchvision==0.28.0+cpu --index-url " in proc.stdout
    versions = _versions(python, env, tmp_path)
    assert (versions["torch"], versions["torchvision"]) == (TORCH, "0.28.0+cpu")
    _assert_clean(python, env, tmp_path)


def test_cuda_companion_beside_cpu_torch_is_replaced_by_the_cpu_build(env: dict[str, str], tmp_path: Path,
                                                                      venv_maker: VenvMaker) -> None:
    """CPU torch, PyPI's CUDA torchvision of the right release (EC0703): fix installs torchvision's +cpu build."""
    python = _pip_venv(tmp_path, env, venv_maker, *CUDA_COMPANION)
    failing = _failing(_report(python, env, tmp_path))
    assert [f["id"] for f in failing] == ["EC0703"], [(f["id"], f["summary"]) for f in failing]
    assert [c["argv"][3:] for c in failing[0]["commands"]] == [
        ["install", "--no-deps", "torchvision==0.28.0+cpu", "--index-url", env["ENVCHECK_TORCH_INDEX_BASE"] + "cpu"]]
    proc = _envcheck("fix", "--yes", "--static", "--python", python, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "keeps torch 2.13.0+cpu; replaces torchvision 0.28.0 with 0.28.0+cpu" in proc.stdout
    versions = _versions(python, env, tmp_path)
    assert (versions["torch"], versions["torchvision"]) == (TORCH, "0.28.0+cpu")
    _assert_clean(python, env, tmp_path)

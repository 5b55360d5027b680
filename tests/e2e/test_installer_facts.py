"""The installer fact, collected in real environments: `uv venv` (with and without --seed), `python -m venv`, and a
prefix laid out as conda lays one out (conda-meta/ records and INSTALLER files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _fakes import write_dist
from _torch import BIN

from envcheck.facts.snapshot import Facts
from envcheck.sources.live.collect import collect

pytestmark = pytest.mark.slow
_TIMEOUT_S = 300  # a guard against a hung venv creation, never a timing assertion


def _python(venv: Path) -> str:
    return str(venv / BIN / ("python.exe" if os.name == "nt" else "python"))


def _make(argv: list[str], cwd: Path) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False,
                          env={k: v for k, v in os.environ.items() if not k.startswith(("UV_", "VIRTUAL_ENV"))})
    assert proc.returncode == 0, proc.stderr


def _uv_version(uv: str) -> str:
    out = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True, timeout=_TIMEOUT_S)
    return out.stdout.split()[1]  # "uv 0.13.9 (...)"


def test_uv_venv_has_no_pip_and_names_its_uv(uv: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`uv venv` writes `uv = VERSION` into pyvenv.cfg and installs no pip; a uv on PATH is found by name."""
    _make([uv, "venv", "--quiet", str(tmp_path / "v")], tmp_path)
    monkeypatch.setenv("PATH", os.path.dirname(uv) + os.pathsep + os.environ.get("PATH", ""))
    installer = collect({}, python=_python(tmp_path / "v")).installer
    assert installer is not None
    assert (installer.pip, installer.uv_venv, installer.uv) == (False, _uv_version(uv), "uv")


def test_seeded_uv_venv_has_pip(uv: str, tmp_path: Path) -> None:
    """`uv venv --seed` installs pip: pip is there, and the environment is still uv's."""
    _make([uv, "venv", "--quiet", "--seed", str(tmp_path / "v")], tmp_path)
    installer = collect({}, python=_python(tmp_path / "v")).installer
    assert installer is not None
    assert installer.pip is True
    assert installer.uv_venv == _uv_version(uv)


def test_pip_venv_is_not_uvs(tmp_path: Path) -> None:
    """`python -m venv` has pip and no uv key in pyvenv.cfg."""
    _make([sys.executable, "-m", "venv", str(tmp_path / "v")], tmp_path)
    installer = collect({}, python=_python(tmp_path / "v")).installer
    assert installer is not None
    assert (installer.pip, installer.uv_venv) == (True, None)


def _site(venv: Path) -> Path:
    (site,) = (venv / "lib").glob("python3*/site-packages") if os.name != "nt" else [venv / "Lib" / "site-packages"]
    return site


def test_conda_prefix_maps_distributions_to_conda_packages(uv: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """conda-meta records name the conda package of each .dist-info (torch is conda's `pytorch`); a distribution
    whose INSTALLER says conda but has no readable record keeps its own name; pip's own installs are not conda's."""
    venv = tmp_path / "env"
    _make([uv, "venv", "--quiet", str(venv)], tmp_path)
    site = _site(venv)
    write_dist(site, "torch", "2.5.1", installer="conda")
    write_dist(site, "pillow", "11.0.0", installer="conda")
    write_dist(site, "apex", "0.1", installer="pip")
    relative = site.relative_to(venv).as_posix()
    meta = venv / "conda-meta"
    meta.mkdir()
    (meta / "pytorch-2.5.1-py3.11_cuda12.4_cudnn9.1.0_0.json").write_text(json.dumps({
        "name": "pytorch", "version": "2.5.1", "build": "py3.11_cuda12.4_cudnn9.1.0_0",
        "files": [f"{relative}/torch/__init__.py", f"{relative}/torch-2.5.1.dist-info/METADATA",
                  f"{relative}/torch-2.5.1.dist-info/INSTALLER"],
    }), encoding="utf-8")
    (meta / "broken-1.0-0.json").write_text("{not json", encoding="utf-8")
    conda_exe = tmp_path / "miniforge" / "bin" / "conda"
    conda_exe.parent.mkdir(parents=True)
    conda_exe.write_text("#!/bin/sh\n", encoding="utf-8")
    monkeypatch.setenv("CONDA_EXE", str(conda_exe))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    facts = collect({}, python=_python(venv))
    assert facts.python.conda is True
    assert facts.installer is not None
    assert facts.installer.conda_owned == {"pillow": "pillow", "torch": "pytorch"}
    assert facts.installer.conda == str(conda_exe)


def test_installer_round_trips_through_json(tmp_path: Path) -> None:
    """The installer fact survives `envcheck facts -o` and `check --facts` unchanged."""
    facts = collect({})
    again = Facts.from_dict(json.loads(json.dumps(facts.to_dict())), file="<again>")
    assert again.installer == facts.installer
    assert again.installer is not None
    assert again.installer.pip is True  # this test runs under an interpreter with pip

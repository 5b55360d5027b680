"""A real torch (the CPU build) in a throwaway venv, built once for the whole run, and the environment the tests'
child installers run with. The fixtures that hand them out (`torch_python`, `cuda_torch_python`) are in
conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from _once import built_once, linked_copy

TORCH_REQUIREMENT = "torch==2.13.0+cpu"  # the CPU build: the probe outcomes the tests assert are its outcomes
CUDA_TORCH_REQUIREMENT = "torch==2.13.0"  # on Linux x86_64, the package index's default torch wheel is a CUDA build
BIN = "Scripts" if os.name == "nt" else "bin"  # a venv's folder of executables
INSTALL_TIMEOUT_S = 1800  # guards against a hung pip; never a timing assertion


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP") and not k.startswith("ENVCHECK_")}
    env.update({"PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    env.update(extra or {})
    return env


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the real probes: {reason}")
    pytest.skip(reason)


def _torch_venv(venv: Path, requirement: str, index: str | None) -> None:
    """A fresh venv at `venv` with `requirement`, numpy and safetensors; `index` is an extra wheel index for that
    install."""
    python = venv / BIN / ("python.exe" if os.name == "nt" else "python")
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", "--only-binary=:all:",
         *(["--extra-index-url", index] if index else []), requirement, "numpy", "safetensors"],
    ]
    for argv in steps:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False,
                                  env=clean_env(), stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _unavailable(f"cannot install {requirement}: {' '.join(argv[-4:])}: {exc}")
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip()[-1500:]
            _unavailable(f"cannot install {requirement} ({' '.join(argv[2:4])} exited {proc.returncode}): {tail}")


def shared_torch_python(tmp_path_factory: pytest.TempPathFactory, name: str, requirement: str,
                         index: str | None) -> str:
    """The interpreter of a torch venv built once for the whole run (installing torch takes most of a minute)."""
    venv = built_once(tmp_path_factory, name, lambda folder: _torch_venv(folder, requirement, index))
    return str(venv / BIN / ("python.exe" if os.name == "nt" else "python"))


def own_torch_python(torch_python: str, dest: Path) -> str:
    """`torch_python`'s venv copied to `dest` (hard links: no second gigabyte), for a test that installs into it;
    its interpreter. One named by ENVCHECK_TORCH_PYTHON is used as it is."""
    if os.environ.get("ENVCHECK_TORCH_PYTHON"):
        return torch_python
    prefix = Path(torch_python).parent.parent
    linked_copy(prefix, dest)
    return str(dest / Path(torch_python).relative_to(prefix))


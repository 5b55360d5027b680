"""The suite's fixtures, and only fixtures: a private probe cache for every test, an empty site-packages folder, a
real torch (CPU and CUDA builds), envcheck's wheelhouse, real venvs and uv. The helpers the tests import are modules
of their own (tests/_fakes.py, _torch.py, _venvs.py, _index.py, _once.py, ...), imported by name: tests/ is on pytest's
`pythonpath` (pyproject.toml).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _crashes import no_crash
from _fakes import ROOT
from _once import built_once
from _torch import CUDA_TORCH_REQUIREMENT, INSTALL_TIMEOUT_S, TORCH_REQUIREMENT, clean_env, shared_torch_python
from _venvs import VenvMaker


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """An empty site-packages folder."""
    path = tmp_path / "site-packages"
    path.mkdir()
    return path


@pytest.fixture(autouse=True)
def _private_probe_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Probe results never go to the user's cache directory during tests (child processes inherit this too)."""
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path_factory.mktemp("envcheck-cache")))


@pytest.fixture(autouse=True)
def _no_evaluation_crash(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A rule whose evaluation crashes (not bad rule data: a bug) fails the test, though evaluate() made it an
    `error` verdict (tests/_crashes.py)."""
    yield from no_crash(request, monkeypatch)


@pytest.fixture(scope="session")
def torch_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An interpreter with the real torch CPU build, numpy and safetensors, shared by the whole run (every
    pytest-xdist worker): a test must not install into it (`own_torch_python` gives one that may).

    ENVCHECK_TORCH_PYTHON names one that already has them; ENVCHECK_TEST_TORCH_INDEX_URL adds a wheel index for
    the install (CI: https://download.pytorch.org/whl/cpu). CI must really run these tests: there, failing to
    install torch fails them instead of skipping them.
    """
    override = os.environ.get("ENVCHECK_TORCH_PYTHON")
    if override:
        return override
    # The `+cpu` build is published only on PyTorch's own wheel index, which CI names here (for this one install,
    # not for envcheck's own dependencies); elsewhere pip's configured index or find-links must have it.
    return shared_torch_python(tmp_path_factory, "torch-venv", TORCH_REQUIREMENT,
                                os.environ.get("ENVCHECK_TEST_TORCH_INDEX_URL"))



@pytest.fixture(scope="session")
def cuda_torch_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An interpreter with a CUDA build of torch, for the tests marked `gpu`; separate from `torch_python`, whose
    CPU build the other probe tests' expected outcomes belong to.

    ENVCHECK_CUDA_TORCH_PYTHON names one that already has it; else CUDA_TORCH_REQUIREMENT is installed into a fresh
    venv, from pip's index or ENVCHECK_TEST_CUDA_TORCH_INDEX_URL (e.g. https://download.pytorch.org/whl/cu130).
    """
    override = os.environ.get("ENVCHECK_CUDA_TORCH_PYTHON")
    if override:
        return override
    return shared_torch_python(tmp_path_factory, "cuda-torch-venv", CUDA_TORCH_REQUIREMENT,
                                os.environ.get("ENVCHECK_TEST_CUDA_TORCH_INDEX_URL"))


@pytest.fixture(scope="session")
def envcheck_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """envcheck's wheel, built from this checkout by `pip wheel`, and the wheels of its dependencies; built once for
    the run (every pytest-xdist worker), so the tests only read it."""

    def build(folder: Path) -> None:
        folder.mkdir()
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(folder), str(ROOT)],
                              cwd=folder, env=clean_env(), capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"pip wheel exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"

    return built_once(tmp_path_factory, "envcheck-wheelhouse", build)


@pytest.fixture(scope="session")
def venv_maker(tmp_path_factory: pytest.TempPathFactory) -> VenvMaker:
    """`venv_maker.make(dest)`: a real venv with pip, as `python -m venv DEST` makes it, without its seconds of
    ensurepip (tests/_venvs.py)."""
    return VenvMaker(tmp_path_factory)


@pytest.fixture
def uv() -> str:
    """uv's executable; skipped where there is none, but under CI (which installs the test extra) a failure."""
    from _index import uv_binary  # the helper module of the PEP 503 index tests

    found = uv_binary()
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI must run the uv tests: install the test extra (it has uv)")
        pytest.skip("no uv (it is in the test extra)")
    return found

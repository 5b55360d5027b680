"""Rules against real wheels from the package index, installed by real pip into throwaway venvs.

A torchvision built for another torch, lightning next to pytorch-lightning, transformers next to a planted NVIDIA
apex layout and next to PyPI's unrelated namesake `apex`, library pairs that break each other (peft and trl next to
transformers 5), and a clean current environment (torch 2.13 CPU with the
usual companions) on which envcheck must raise no alarm.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _once import built_once
from _torch import BIN, clean_env, own_torch_python
from _venvs import VenvMaker
from test_real_env import make_wheel

pytestmark = pytest.mark.slow

_TIMEOUT_S = 900  # guards against a hung pip; never a timing assertion


def _pip(python: Path | str, *args: str) -> None:
    proc = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *args], capture_output=True, text=True,
                          timeout=_TIMEOUT_S, check=False, env=clean_env(), stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        message = f"pip install {' '.join(args)} failed: {(proc.stderr or proc.stdout)[-1500:]}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


def _venv(path: Path, venv_maker: VenvMaker) -> Path:
    return venv_maker.make(path)


def _site(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _check(python: Path | str, *extra: str) -> tuple[int, dict[str, Any]]:
    """envcheck (this checkout's) run against `python` from another interpreter, as a maintainer would."""
    proc = subprocess.run([sys.executable, "-m", "envcheck", "--python", str(python), "--format", "json", *extra],
                          capture_output=True, text=True, timeout=_TIMEOUT_S, check=False, cwd="/", env=clean_env())
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _verdicts(report: dict[str, Any], rule_id: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"] == rule_id]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, venv_maker: VenvMaker) -> Path:
    """A venv with a real torchvision 0.21.0 (pinned to torch 2.6.0) next to a torch 2.13.0, real lightning and
    pytorch-lightning, real transformers, and NVIDIA apex's layout planted in site-packages; built once for the run
    (the tests only check it)."""
    root = built_once(tmp_path_factory, "real-rules-mixed", lambda folder: _mixed(folder, venv_maker))
    return root / "venv" / BIN / "python"


def _mixed(root: Path, venv_maker: VenvMaker) -> None:
    python = _venv(root / "venv", venv_maker)
    house = root / "wheels"
    house.mkdir()
    torch_wheel = make_wheel(house, "torch", "2.13.0")  # only its metadata matters to the static check
    _pip(python, "--no-deps", str(torch_wheel), "torchvision==0.21.0", "lightning==2.5.0", "pytorch-lightning==2.5.0",
         "transformers==4.44.2")
    site = _site(python)
    # NVIDIA apex is built from source, never a wheel: plant the files a `--cuda_ext` build installs.
    (site / "apex" / "normalization").mkdir(parents=True)
    (site / "apex" / "__init__.py").write_text("raise RuntimeError('envcheck must not import this')\n")
    (site / "apex" / "normalization" / "__init__.py").write_text("")
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (site / f"fused_layer_norm_cuda{suffix}").write_bytes(b"")


def test_torchvision_built_for_another_torch(mixed: Path) -> None:
    """The real torchvision 0.21.0 wheel pins torch==2.6.0: with torch 2.13.0 installed, EC0702 fails with the
    torchvision release made for it (EC0101 leaves a companion's pin to it)."""
    code, report = _check(mixed, "--static")
    assert code == 1
    assert not [f for f in _verdicts(report, "EC0101") if f["item"] and f["item"]["package"] == "torchvision"]
    assert [f["summary"] for f in _verdicts(report, "EC0702")] == [
        "torchvision 0.21.0 requires torch==2.6.0, but torch 2.13.0 is installed: install torchvision 0.28.0, the "
        "release made for it"]


def test_lightning_next_to_pytorch_lightning(mixed: Path) -> None:
    """Real lightning and pytorch-lightning wheels side by side produce the EC0302 note."""
    _, report = _check(mixed, "--static")
    assert [f["status"] for f in _verdicts(report, "EC0302")] == ["info"]


def test_transformers_next_to_nvidia_apex(mixed: Path) -> None:
    """transformers 4.44.2 with NVIDIA apex's fused norm present fires EC0301, without importing apex."""
    _, report = _check(mixed, "--static")
    assert [f["status"] for f in _verdicts(report, "EC0301")] == ["warn"]
    assert [f["status"] for f in _verdicts(report, "EC0310")] == ["pass"]


def test_namesake_apex_is_not_nvidia_apex(tmp_path: Path, venv_maker: VenvMaker) -> None:
    """PyPI's `apex` (a Pyramid toolkit, built from its sdist) next to transformers is not flagged."""
    python = _venv(tmp_path / "venv", venv_maker)
    _pip(python, "--no-deps", "transformers==4.44.2", "apex==0.9.10dev")
    _, report = _check(python, "--static")
    assert [f["status"] for f in _verdicts(report, "EC0301")] == ["pass"]
    assert [f["status"] for f in _verdicts(report, "EC0310")] == ["n/a"]



def test_library_pairs_that_break_each_other(tmp_path: Path, venv_maker: VenvMaker) -> None:
    """Real peft 0.17.1 and trl 0.11.4 wheels next to transformers 5.0.0: peft's HybridCache import (EC1209), trl's
    `tokenizer=` (EC1207) and its DPOTrainer import (EC1218) are found; peft's transformers floor (EC1208) passes."""
    python = _venv(tmp_path / "venv", venv_maker)
    _pip(python, "--no-deps", "peft==0.17.1", "trl==0.11.4", "transformers==5.0.0")
    _, report = _check(python, "--static")
    assert {rule_id: [f["status"] for f in _verdicts(report, rule_id)] for rule_id in (
        "EC1207", "EC1208", "EC1209", "EC1218")} == {
        "EC1207": ["fail"], "EC1208": ["pass"], "EC1209": ["fail"], "EC1218": ["warn"]}

@pytest.mark.torch
def test_clean_current_environment_raises_no_alarm(torch_python: str, tmp_path: Path) -> None:
    """torch 2.13 CPU with numpy, safetensors, transformers and accelerate: every probe runs, nothing fires."""
    python = own_torch_python(torch_python, tmp_path / "venv")
    _pip(python, "numpy", "safetensors", "transformers", "accelerate")
    code, report = _check(Path(python), "--fail-on", "info", "--probe-timeout", "300")
    fired = [f"{f['id']} {f['summary']}" for f in report["findings"] if f["status"] in ("fail", "warn", "info")]
    assert fired == []
    assert code == 0
    # The probe-backed rules were decided by the probes, not skipped.
    assert {f["id"]: f["status"] for f in report["findings"] if f["id"] in ("EC0501", "EC0502")} == {
        "EC0501": "pass", "EC0502": "pass"}


# A current training and fine-tuning stack on the CPU torch, as `uv pip install` resolves it today. torchvision (and
# timm, which needs it) is left out: PyPI's Linux torchvision is a CUDA build, which EC0703 rightly reports next to
# a `+cpu` torch; its CPU build comes only from PyPI torch's own index.
_ML_STACK = ("numpy", "scipy", "scikit-learn", "pandas", "safetensors", "tokenizers", "huggingface_hub",
             "transformers", "accelerate", "peft", "diffusers", "datasets", "evaluate", "trl",
             "sentence-transformers", "lightning", "torchmetrics", "bitsandbytes", "einops")


@pytest.mark.torch
def test_clean_current_ml_stack_made_by_uv_raises_no_alarm(tmp_path: Path, uv: str) -> None:
    """A uv venv with torch 2.13 CPU and a current Hugging Face / Lightning stack: every rule and probe runs and
    nothing fails or warns (lightning's own pytorch-lightning dependency may leave EC0302's note)."""
    index = os.environ.get("ENVCHECK_TEST_TORCH_INDEX_URL")
    venv = tmp_path / "venv"
    steps = [[uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
             [uv, "pip", "install", "--quiet", "--python", str(venv / BIN / "python"),
              *(["--extra-index-url", index, "--index-strategy", "unsafe-best-match"] if index else []),
              *([f"--find-links={links}" for links in os.environ.get("PIP_FIND_LINKS", "").split()]),
              "torch==2.13.0+cpu", *_ML_STACK]]
    for argv in steps:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False, env=clean_env(),
                              stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            message = f"{' '.join(argv[:3])} failed: {(proc.stderr or proc.stdout)[-1500:]}"
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(message)
            pytest.skip(message)
    code, report = _check(venv / BIN / "python", "--probe-timeout", "300")
    alarms = [f"{f['id']} {f['summary']}" for f in report["findings"] if f["status"] in ("fail", "warn", "error")]
    assert alarms == []
    assert code == 0
    notes = {f["id"] for f in report["findings"] if f["status"] == "info"}
    assert notes <= {"EC0302"}
    # The probes really ran here, including the import of every native extension of the stack.
    statuses = {f["id"]: f["status"] for f in report["findings"]}
    assert statuses["EC0501"] == statuses["EC0502"] == "pass"
    assert statuses["EC1101"] == "pass"

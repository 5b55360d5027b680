"""torch, CUDA, driver and system-library failures pasted as they were printed: `check --report` and `envcheck
explain` name the rule, the cause in the text's own words (GPU, architectures, CUDA version, library), the fix, and
what the text states about its environment."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from _fakes import envcheck_on_text, folded
from _torch import clean_env

V100 = ("/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:230: UserWarning:\n"
        "Tesla V100-SXM2-16GB with CUDA capability sm_70 is not compatible with the current PyTorch installation.\n"
        "The current PyTorch install supports CUDA capabilities sm_75 sm_80 sm_86 sm_90 sm_100 sm_120.\n"
        "If you want to use the Tesla V100-SXM2-16GB GPU with PyTorch, please check the instructions at "
        "https://pytorch.org/get-started/locally/\n")
DRIVER = ("/home/user/.local/lib/python3.10/site-packages/torch/cuda/__init__.py:138: UserWarning: CUDA "
          "initialization: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU "
          "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
          "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your "
          "version of the CUDA driver. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n"
          "  return torch._C._cuda_getDeviceCount() > 0\n")
GLIBCXX = ('  File "/opt/conda/lib/python3.10/site-packages/torch/__init__.py", line 237, in <module>\n'
           "    from torch._C import *  # noqa: F403\n"
           "ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.29' not found (required by "
           "/opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_python.so)\n")
DYNAMO = ('  File "/home/u/.venv/lib/python3.13/site-packages/torch/__init__.py", line 2416, in compile\n'
          '    raise RuntimeError("Dynamo is not supported on Python 3.13+")\n'
          "RuntimeError: Dynamo is not supported on Python 3.13+\n")
CPU_TORCH = ('  File "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 522, in _lazy_init\n'
             '    raise AssertionError("Torch not compiled with CUDA enabled")\n'
             "AssertionError: Torch not compiled with CUDA enabled\n")


def _stated(tmp_path: Path, text: str) -> list[dict[str, str]]:
    """The facts each recognised line states, as `envcheck facts --report` records them."""
    return [o["facts"] for o in json.loads(envcheck_on_text(tmp_path, text, "facts").output)["observed"]]


@pytest.mark.parametrize(
    ("text", "rule", "cause", "fix", "stated"),
    [
        pytest.param(
            V100, "EC0401",
            "Tesla V100-SXM2-16GB (compute capability sm_70) has no kernels in this torch build: PyTorch's CUDA 12.8 "
            "and newer builds start at sm_70 or sm_75, its cu126 builds at sm_50",
            "Install torch from PyTorch's cu126 index, whose builds carry sm_50 to sm_90",
            {"gpu.name": "Tesla V100-SXM2-16GB", "gpu.capability": "7.0",
             "torch.arch_list": "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"},
            id="gpu-older-than-the-build"),
        pytest.param(
            DRIVER, "EC0403",
            "the NVIDIA driver supports CUDA 11.4 at most, older than the CUDA version this torch was built with",
            "Upgrade the NVIDIA driver to one that supports this torch's CUDA version",
            {"driver.cuda": "11.4", "python.version": "3.10"},
            id="driver-too-old"),
        pytest.param(
            GLIBCXX, "EC0815",
            "/opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_python.so needs GLIBCXX_3.4.29, but the "
            "libstdc++ the loader found first (/lib/x86_64-linux-gnu/libstdc++.so.6) is older and lacks it",
            "conda install -c conda-forge 'libstdcxx-ng>=12'",
            {"python.version": "3.10"},
            id="libstdcxx-too-old"),
        pytest.param(
            DYNAMO, "EC0203",
            "this torch's torch.compile (Dynamo) does not support Python 3.13 or newer",
            "3.13 from 2.6",
            {},
            id="dynamo-on-a-newer-python"),
        pytest.param(
            CPU_TORCH, "EC1701",
            "the code asks for CUDA (`.cuda()`, `device=\"cuda\"`), but the torch that runs it is a CPU-only build",
            "On a machine without an NVIDIA GPU (macOS included), run on the CPU",
            {},
            id="cuda-from-a-cpu-torch"),
    ],
)
def test_the_issue_s_examples_name_cause_and_fix(tmp_path: Path, text: str, rule: str, cause: str, fix: str,
                                                 stated: dict[str, str]) -> None:
    """Each example, alone in a report, fails its rule with the cause in the text's words and the fix, and states
    what the text says about its environment (the GPU and the build's architectures, the driver's CUDA, the
    Python of the traceback's paths)."""
    result = envcheck_on_text(tmp_path, text, "check", "--select", rule, "--fail-on", "info")
    flat = folded(result)
    assert result.exit_code == 1, result.output
    assert f"{rule}'s error message at line" in flat
    assert cause in flat and fix in flat
    facts = _stated(tmp_path, text)
    assert facts and facts[0] == stated


def test_one_traceback_is_one_observation(tmp_path: Path) -> None:
    """The `raise ...("message")` line above the error repeats its words; only the error line is recognised."""
    for text, rule in ((CPU_TORCH, "EC1701"), (DYNAMO, "EC0203")):
        result = envcheck_on_text(tmp_path, text, "explain", "--static", "--select", rule)
        assert f"recognised {rule} at line 3" in folded(result), result.output
        assert "line 2" not in folded(result)


def test_a_gpu_newer_than_a_cuda_10_build_is_told_to_take_a_cuda_11_build(tmp_path: Path) -> None:
    """An RTX 3090 warned by a build for sm_37 to sm_70 gets the CUDA 11 advice, not the cu126 one for old GPUs."""
    text = ("NVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible with the current PyTorch "
            "installation.\nThe current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.\n")
    flat = folded(envcheck_on_text(tmp_path, text, "check", "--select", "EC0401"))
    assert "is newer than this torch build, which was compiled with CUDA 10 or older for sm_37 sm_50 sm_60 sm_70" \
        in flat
    assert "cu126 index" not in flat


@pytest.mark.torch
def test_the_explanation_fits_the_environment_it_is_run_in(tmp_path: Path, torch_python: str) -> None:
    """The real CPU torch asked for CUDA: `explain` of its own output, for that environment, says the code asked for
    CUDA from a CPU-only build, and to run on the CPU or on a GPU machine with a CUDA build."""
    proc = subprocess.run([torch_python, "-c", "import torch; torch.zeros(1).cuda()"], capture_output=True,
                          text=True, timeout=300, env=clean_env(), check=False)
    assert proc.returncode != 0 and "Torch not compiled with CUDA enabled" in proc.stderr
    result = envcheck_on_text(tmp_path, proc.stderr, "explain", "--static", "--python", torch_python,
                              "--select", "EC1701")
    flat = folded(result)
    assert result.exit_code == 1, result.output
    assert f"checked {torch_python}" in flat and "EC1701 at line" in flat
    assert "the torch that runs it is a CPU-only build" in flat
    assert "run on the CPU" in flat and "replace this torch with a CUDA build" in flat

"""Failure families as they reach envcheck: each message of the ROCm, MPS, apex, NumPy ABI, Windows DLL, shared
library and multi-GPU families this pack recognises, in the surroundings real pastes give it (a log or rank prefix, a
markdown quote, a docker compose prefix, pip's indented build output, a title without its quotes), is its rule's
finding through `envcheck check --report`; the near relation of each message, in the same surroundings, is not.

The messages are the real ones the signatures cite (their `source` lines and threads); the surroundings are the
shapes those threads show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envcheck.cli.click_cli import cli

FOUND = {"fail", "warn", "info"}


def findings(tmp_path: Path, text: str) -> dict[str, dict[str, Any]]:
    """The findings (fail, warn, info) of `check --report` on `text`, by rule id."""
    report = tmp_path / "issue.md"
    report.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--report", str(report), "--format", "json", "--no-config"])
    assert result.exit_code in (0, 1, 2), result.output
    if result.exit_code == 2:  # nothing recognised
        return {}
    return {f["id"]: f for f in json.loads(result.stdout)["findings"] if f["status"] in FOUND}


CASES = [
    # ROCm: the HIP runtime's own line under AMD_LOG_LEVEL's prefix; rocBLAS in a markdown quote; the hipified
    # device check behind a rank prefix.
    pytest.param(":1:hip_code_object.cpp      :456 : 1885938529 us: hipErrorNoBinaryForGpu: Unable to find code "
                 "object for all current devices!\n", "EC1401", "hipErrorNoBinaryForGpu", id="rocm-no-binary"),
    pytest.param("> rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek for GPU "
                 "arch : gfx1201\n>  List of available TensileLibrary Files :\n", "EC1401", "gfx1201",
                 id="rocm-rocblas-arch"),
    pytest.param("[rank0]:     torch._C._cuda_init()\n[rank0]: RuntimeError: No HIP GPUs are available\n", "EC1729",
                 "No HIP GPUs", id="rocm-no-hip-gpus"),
    # MPS: the missing operator inside pytest's failure lines; the macOS floor of torch 2.5 to 2.8.
    pytest.param("E   NotImplementedError: The operator 'aten::upsample_bicubic2d.out' is not currently implemented "
                 "for the MPS device. If you want this op to be added in priority during the prototype phase of this "
                 "feature, please comment on https://github.com/pytorch/pytorch/issues/77764.\n", "EC0808",
                 "aten::upsample_bicubic2d.out", id="mps-operator"),
    pytest.param("```\nRuntimeError: The MPS backend is supported on MacOS 13.0+.Current OS version can be queried "
                 "using `sw_vers`\n```\n", "EC0806", "13.0", id="mps-macos-floor"),
    # apex: its warnings with their double spaces, its optimizers, its build check in pip's indented output, its
    # torch._six import under torch 2, an extension built for another torch.
    pytest.param("Warning:  multi_tensor_applier fused unscale kernel is unavailable, possibly because apex was "
                 "installed without --cuda_ext --cpp_ext. Using Python fallback.  Original ImportError was: "
                 "ModuleNotFoundError(\"No module named 'amp_C'\")\n", "EC0310", "--cuda_ext --cpp_ext",
                 id="apex-warning"),
    pytest.param("    raise RuntimeError('apex.optimizers.FusedLAMB requires cuda extensions')\nRuntimeError: "
                 "apex.optimizers.FusedLAMB requires cuda extensions\n", "EC0310", "FusedLAMB", id="apex-optimizer"),
    pytest.param("      RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match "
                 "the version used to compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 11.7.\n"
                 "      In some cases, a minor-version mismatch will not cause later errors\n", "EC1813", "11.7",
                 id="apex-build-cuda"),
    pytest.param('  File "/usr/local/lib/python3.11/dist-packages/apex/amp/_initialize.py", line 2, in <module>\n'
                 "    from torch._six import string_classes\nModuleNotFoundError: No module named 'torch._six'\n",
                 "EC1814", "torch._six", id="apex-torch-six"),
    pytest.param("ImportError: /opt/conda/lib/python3.10/site-packages/fused_layer_norm_cuda.cpython-310-x86_64-linux-"
                 "gnu.so: undefined symbol: _ZN2at4_ops19empty_memory_format4callE\n", "EC1815",
                 "fused_layer_norm_cuda", id="apex-undefined-symbol"),
    # NumPy ABI: a module built for a newer NumPy's ndarray; torch's own warning of a newer C API.
    pytest.param("> ValueError: numpy.ndarray size changed, may indicate binary incompatibility.\n> Expected 96 from C "
                 "header, got 88 from PyObject\n", "EC1120", "96 from C header", id="numpy-ndarray-wrapped"),
    pytest.param("UserWarning: Failed to initialize NumPy: module compiled against API version 0xf but this version of "
                 "numpy is 0xe (Triggered internally at  ..\\torch\\csrc\\utils\\tensor_numpy.cpp:68.)\n", "EC1120",
                 "0xf", id="numpy-torch-api"),
    # Windows: a dependency of another build (WinError 182); a cuDNN DLL of torch's refused (WinError 126).
    pytest.param('OSError: [WinError 182] 操作系统无法运行 %1。 Error loading "D:\\envs\\pt\\lib\\site-packages\\torch'
                 '\\lib\\fbgemm.dll" or one of its dependencies.\n', "EC1730", "fbgemm.dll", id="windows-182"),
    pytest.param('OSError: [WinError 126] The specified module could not be found. Error loading "C:\\Python310\\lib'
                 '\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.\n', "EC0814",
                 "cudnn_cnn_infer64_8", id="windows-126-cudnn"),
    # Shared libraries: libstdc++ named without "(required by ...)", its quotes lost to markdown; a CUDA library
    # with a hyphen in its name; cuDNN 8 without NVRTC behind a docker compose prefix.
    pytest.param("# ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version GLIBCXX_3.4.29 not found\n", "EC0815",
                 "GLIBCXX_3.4.29", id="glibcxx-title"),
    pytest.param("ImportError: libnvrtc-builtins.so.12.1: cannot open shared object file: No such file or directory\n",
                 "EC0501", "libnvrtc-builtins.so.12.1", id="nvrtc-builtins"),
    pytest.param("app-cuda-1  | Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared "
                 "object file: No such file or directory\napp-cuda-1 exited with code 139\n", "EC0818",
                 "libcudnn_cnn_infer.so.8", id="cudnn-nvrtc"),
    # Multi-GPU: peer access refused, as a custom all-reduce reports it.
    pytest.param("[19:01:01 TP1] Init nccl begin.\nFailed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 'peer "
                 "access is not supported between these two devices'\n", "EC1719", "peer", id="p2p-all-reduce"),
]


@pytest.mark.parametrize(("text", "rule_id", "named"), CASES)
def test_a_family_member_is_its_rule_s_finding(tmp_path: Path, text: str, rule_id: str, named: str) -> None:
    found = findings(tmp_path, text)
    assert rule_id in found, sorted(found)
    shown = " ".join([found[rule_id]["summary"], *found[rule_id].get("evidence", [])])
    assert named in shown, shown


NEAR = [
    # apex's contrib modules are optional extras, not its CUDA extensions.
    pytest.param("apex was installed without --focal_loss flag, apex.contrib.focal_loss is not available\n", "EC0310",
                 id="apex-contrib-flag"),
    # An older build on a newer NumPy: only a RuntimeWarning, and the module imports.
    pytest.param("<frozen importlib._bootstrap>:219: RuntimeWarning: numpy.ndarray size changed, may indicate binary "
                 "incompatibility. Expected 80 from C header, got 88 from PyObject\n", "EC1120",
                 id="numpy-ndarray-older-build"),
    # The CUDA build's message is EC1704's, not the ROCm one's.
    pytest.param("RuntimeError: No CUDA GPUs are available\n", "EC1729", id="cuda-not-hip"),
    # MPS's own fallback warning: the operator ran on the CPU, nothing failed.
    pytest.param("UserWarning: The operator 'aten::linalg_cholesky_ex.L' is not currently supported on the MPS backend "
                 "and will fall back to run on the CPU. This may have performance implications.\n", "EC0808",
                 id="mps-fallback-ran"),
    # rocBLAS without the arch: a damaged install gives it too.
    pytest.param("rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek\n",
                 "EC1401", id="rocblas-without-arch"),
    # A WinError 126 is EC0814's (a missing runtime), not a DLL of another build.
    pytest.param('OSError: [WinError 126] The specified module could not be found. Error loading "C:\\Python311\\Lib'
                 '\\site-packages\\torch\\lib\\shm.dll" or one of its dependencies.\n', "EC1730", id="windows-126"),
]


@pytest.mark.parametrize(("text", "rule_id"), NEAR)
def test_a_near_relation_is_not_that_rule_s_finding(tmp_path: Path, text: str, rule_id: str) -> None:
    assert rule_id not in findings(tmp_path, text)


def test_an_apple_gpu_out_of_memory_is_the_workload_not_the_environment(tmp_path: Path) -> None:
    """MPS's out-of-memory error is EC2005's: an info finding about the workload, and no failure of the environment."""
    found = findings(tmp_path, "`RuntimeError: MPS backend out of memory (MPS allocated: 18.02 GB, other allocations: "
                                "107.10 MB, max allowed: 18.13 GB). Tried to allocate 4.50 MB on private pool. Use "
                                "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations "
                                "(may cause system failure).`\n")
    assert found["EC2005"]["status"] == "info"
    assert "4.50 MB" in found["EC2005"]["summary"]
    assert not [f for f in found.values() if f["status"] in ("fail", "warn")]


def test_a_library_of_a_split_cuda_torch_names_the_extension_not_torch(tmp_path: Path) -> None:
    """`libtorch_cuda_cu.so` exists only in torch 1.8 to 1.13: an extension that needs it was built for another torch
    (EC1101), while `libtorch_cuda.so` missing stays EC0501's (torch's own library)."""
    found = findings(tmp_path, '  File ".../pytorch3d/renderer/blending.py", line 10, in <module>\n'
                               "    from pytorch3d import _C\n"
                               "ImportError: .../torch/lib/libtorch_cuda_cu.so: cannot open shared object file: No "
                               "such file or directory\n")
    assert "EC1101" in found and "EC0501" not in found
    found = findings(tmp_path, "OSError: libtorch_cuda.so: cannot open shared object file: No such file or directory\n")
    assert "EC0501" in found and "EC1101" not in found


@pytest.mark.parametrize(("text", "rule_id", "named"), [
    # Installers: a wheel named by URL for another Python, behind pip's own "Ignoring" line; PEP 668's refusal.
    pytest.param("Ignoring torch: markers 'platform_system != \"Windows\"' don't match your environment\n"
                 "ERROR: torch-2.1.2+cu121-cp311-cp311-win_amd64.whl is not a supported wheel on this platform.\n",
                 "EC1731", "cp311", id="wheel-tags"),
    pytest.param("$ pip install torch torchvision torchaudio --extra-index-url https://download.pytorch.org/whl/cu121\n"
                 "error: externally-managed-environment\n\n× This environment is externally managed\n", "EC0201",
                 "PEP 668", id="pep-668"),
])
def test_an_installer_refusal_is_its_rule_s_finding(tmp_path: Path, text: str, rule_id: str, named: str) -> None:
    found = findings(tmp_path, text)
    assert rule_id in found, sorted(found)
    assert named in found[rule_id]["summary"]


@pytest.mark.parametrize(("text", "rule_id"), [
    # Older HIP runtimes gave the error code's name as its text; torch quoted it as it came.
    pytest.param("RuntimeError: HIP error: hipErrorNoDevice\nHIP kernel errors might be asynchronously reported at "
                 "some other API call,so the stacktrace below might be incorrect.\n", "EC1729", id="hip-no-device"),
    pytest.param("RuntimeError: HIP error: hipErrorInvalidDeviceFunction\n", "EC1401", id="hip-invalid-function-name"),
    pytest.param("RuntimeError: HIP error: hipErrorNoBinaryForGpu\n", "EC1401", id="hip-no-binary-name"),
])
def test_a_hip_error_code_s_name_is_its_family(tmp_path: Path, text: str, rule_id: str) -> None:
    assert rule_id in findings(tmp_path, text)


def test_mmcv_without_its_ops_is_named_as_such(tmp_path: Path) -> None:
    """mmcv's missing compiled ops, at the end of an OpenMMLab import chain, are EC1816's: the lite package or a build
    without ops, not a release of mmdet that does not fit."""
    found = findings(tmp_path, '  File "/usr/lib/python3.8/importlib/__init__.py", line 127, in import_module\n'
                               "    return _bootstrap._gcd_import(name[level:], package, level)\n"
                               "ModuleNotFoundError: No module named 'mmcv._ext'\n")
    assert "EC1816" in found
    assert "EC1816" not in findings(tmp_path, "ModuleNotFoundError: No module named 'mmcv._ext_ops'\n")


def test_nccl_s_infiniband_registration_failing_names_the_locked_memory_limit(tmp_path: Path) -> None:
    """ibv_reg_mr's ENOMEM in NCCL's WARN line, under a host:pid:tid prefix, is EC1732's; another verbs call's ENOMEM
    (a completion queue) is not."""
    found = findings(tmp_path, "node1:2918546:2958981 [0] misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 "
                               "failed with error Cannot allocate memory\n")
    assert "EC1732" in found
    assert "EC1732" not in findings(tmp_path, "node1:1:2 [0] misc/ibvwrap.cc:160 NCCL WARN Call to ibv_create_cq "
                                              "failed with error Cannot allocate memory\n")

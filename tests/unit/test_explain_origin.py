"""`envcheck explain` decides first where the error output came from (envcheck/sources/logs/origin.py): a log tied to
the checked environment is joined with its facts (a message the facts confirm is that rule's finding, first, with
the line as evidence); a log from elsewhere, or one that cannot be tied, is judged on its own facts, said so once,
and gets no command for the checked environment. Messages that are usually the code are said to be (EC20xx)."""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _fakes import SITE, dist_dict, facts_dict, gpu_dict, nvml_dict, torch_dict
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.sources.logs.origin import site_dirs

# A CPU venv (Python 3.11, torch 2.13.0+cpu) with a torchvision built for another torch: EC0701 of its own.
CPU_VENV = facts_dict(dists=[dist_dict("torch", "2.13.0+cpu"), dist_dict("torchvision", "0.20.1+cpu")],
                      torch=torch_dict("2.13.0+cpu", None), nvml=nvml_dict(status="no-driver", driver=None, cuda=None))
RTX5090 = ("/home/u/miniconda3/envs/x/lib/python3.10/site-packages/torch/cuda/__init__.py:235: UserWarning: \n"
           "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch "
           "installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 "
           "sm_86 sm_90.\n")
DRIVER = ("/home/user/.local/lib/python3.10/site-packages/torch/cuda/__init__.py:138: UserWarning: CUDA "
          "initialization: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU "
          "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
          "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your "
          "version of the CUDA driver. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n")
NUMPY = ("A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.0 as it may crash. To support both "
         "1.x and 2.x\nversions of NumPy, modules must be compiled with NumPy 2.0.\n\nTraceback (most recent call "
         "last):\n  File \"/home/u/app/main.py\", line 1, in <module>\n    import torch\n"
         "UserWarning: Failed to initialize NumPy: _ARRAY_API not found (Triggered internally at "
         "../torch/csrc/utils/tensor_numpy.cpp:84.)\n")
FLASH = ('  File "/opt/conda/lib/python3.10/site-packages/flash_attn/flash_attn_interface.py", line 10, in <module>\n'
         "    import flash_attn_2_cuda as flash_attn_cuda\nImportError: /opt/conda/lib/python3.10/site-packages/"
         "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
         "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE\n")
APEX_HERE = (f'  File "{SITE}/transformers/models/t5/modeling_t5.py", line 1120, in forward\n'
             f'  File "{SITE}/torch/nn/modules/linear.py", line 125, in forward\n'
             "RuntimeError: expected scalar type Float but found Half\n")
BF16_HERE = (f'  File "{SITE}/torch/nn/modules/transformer.py", line 720, in forward\n'
             "RuntimeError: mat1 and mat2 must have the same dtype, but got BFloat16 and Float\n")
FASTPATH_FAILS = {"transformer-fastpath": {
    "status": "ok", "cases": {"cpu/autocast-bfloat16": {
        "status": "error", "error_class": "RuntimeError",
        "message": "mat1 and mat2 must have the same dtype, but got BFloat16 and Float"}}}}


def _explain(tmp_path: Path, text: str, facts: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the text report, the JSON report) of `envcheck explain` on `text` for the snapshot `facts`."""
    (tmp_path / "facts.json").write_text(json.dumps(facts), encoding="utf-8")
    (tmp_path / "log.txt").write_text(text, encoding="utf-8")
    args = ["explain", str(tmp_path / "log.txt"), "--facts", str(tmp_path / "facts.json")]
    text_out = CliRunner().invoke(cli, args)
    json_out = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert text_out.exit_code in (0, 1) and json_out.exit_code in (0, 1), text_out.output
    return text_out.output, json.loads(json_out.stdout)


def _found(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["status"] in ("fail", "warn", "info")]


@pytest.mark.parametrize(("text", "rule"), [pytest.param(RTX5090, "EC0401", id="rtx5090-sm120"),
                                            pytest.param(DRIVER, "EC0403", id="driver-too-old")])
def test_a_foreign_log_gets_no_command_of_this_environment(tmp_path: Path, text: str, rule: str) -> None:
    """A log from a conda Python 3.10, explained in a CPU venv of Python 3.11 whose torchvision is mismatched:
    the log's rule is found on the log's facts, with no command; the venv's own problem (EC0701) stays its own
    finding with its own command, never the fix of the log's failure; the header says so once."""
    out, report = _explain(tmp_path, text, CPU_VENV)
    logged = [f for f in _found(report) if f["id"] == rule]
    assert logged and all(not f["commands"] for f in logged), logged
    assert "not from the checked environment" in logged[0]["evidence"]
    assert "torchvision==0.28.0" not in json.dumps(logged)
    own = [f for f in _found(report) if f["id"] == "EC0701"]
    assert own and own[0]["commands"], "the venv's own finding keeps its command"
    assert out.count("not from the checked environment: its paths") == 1 + len(logged)


def test_the_numpy_message_from_elsewhere_is_not_told_of_this_torch(tmp_path: Path) -> None:
    """torch 2.13 (built for NumPy 2) without numpy: the NumPy 1.x message, which names no path of this
    environment, is judged on what it states, and no `numpy<2` command is written for this venv."""
    _out, report = _explain(tmp_path, NUMPY, CPU_VENV)
    found = [f for f in _found(report) if "error output shows it" in f["evidence"]]
    assert {"EC1103", "EC0303"} & {f["id"] for f in found}
    for finding in found:
        assert not any("numpy" in " ".join(c) for c in finding["commands"]), finding
        assert "torch 2.13" not in finding["summary"], finding


def test_a_flash_attn_log_from_another_python_is_not_judged_with_this_torch(tmp_path: Path) -> None:
    """An undefined symbol from /opt/conda/.../python3.10 is not explained with the venv's (3.11) torch."""
    _out, report = _explain(tmp_path, FLASH, CPU_VENV)
    logged = [f for f in _found(report) if "error output shows it" in f["evidence"]]
    assert logged, report["findings"]
    for finding in logged:
        assert "2.13.0" not in finding["summary"] + finding["why"], finding
        assert not finding["commands"]
        assert "Python 3.10" in finding["evidence"] or "python3.10" in finding["evidence"]


def test_the_python_a_log_s_paths_name_is_the_log_s(tmp_path: Path) -> None:
    """Where every site-packages path of a log names one Python, that is the log's Python (its own facts)."""
    from envcheck.sources.logs.log import read_log

    log = read_log(FLASH, "log.txt", [])
    assert log.facts.python.version == "3.10" and log.sites == ("/opt/conda/lib/python3.10/site-packages",)


def test_apex_message_is_ec0301_where_the_facts_confirm_it(tmp_path: Path) -> None:
    """The seed message in this venv's traceback, with NVIDIA apex's CUDA norms next to transformers: EC0301's
    finding, first, with the line as evidence; the "several causes" reading (EC2006) is not added."""
    facts = facts_dict(dists=[dist_dict("transformers", "4.44.2"), dist_dict("apex", "0.1"),
                              dist_dict("torch", "2.5.1+cu124")], torch=torch_dict(),
                       modules={"apex.normalization": {"found": True}, "fused_layer_norm_cuda": {"found": True}})
    _out, report = _explain(tmp_path, APEX_HERE, facts)
    found = _found(report)
    assert found[0]["id"] == "EC0301" and "line 3" in found[0]["evidence"], found[0]
    assert "EC2006" not in {f["id"] for f in found}


def test_bf16_message_is_ec0502_where_the_probe_confirms_it(tmp_path: Path) -> None:
    facts = facts_dict(dists=[dist_dict("torch", "2.5.1")], torch=torch_dict("2.5.1+cpu", None),
                       probes=FASTPATH_FAILS)
    _out, report = _explain(tmp_path, BF16_HERE, facts)
    found = _found(report)
    assert found[0]["id"] == "EC0502" and "error output shows it" in found[0]["evidence"], found[0]


@pytest.mark.parametrize("text", [APEX_HERE, BF16_HERE], ids=["apex-message", "bf16-message"])
def test_a_dtype_message_blames_nothing_no_fact_supports(tmp_path: Path, text: str) -> None:
    """The same messages in a venv without apex and with torch 2.13: neither EC0301 nor EC0502 fires; the
    message is read as of several causes (EC2006, information) that names what decides it."""
    _out, report = _explain(tmp_path, text, CPU_VENV)
    found = {f["id"]: f for f in _found(report)}
    assert "EC0301" not in found and "EC0502" not in found
    assert found["EC2006"]["severity"] == "info" and "EC0301" in found["EC2006"]["why"]


@pytest.mark.parametrize(("text", "rule"), [
    pytest.param("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
                 "cuda:0 and cpu!", "EC2001", id="device-mismatch"),
    pytest.param("RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the "
                 "same", "EC2001", id="input-left-on-the-cpu"),
    pytest.param("RuntimeError: Placeholder storage has not been allocated on MPS device!", "EC2002", id="mps"),
    pytest.param("IndexError: index out of range in self", "EC2003", id="embedding-index"),
    pytest.param("../aten/src/ATen/native/cuda/NLLLoss2d.cu:103: nll_loss2d_forward_kernel: block: [5,0,0], "
                 "thread: [996,0,0] Assertion `t >= 0 && t < n_classes` failed.", "EC2003", id="labels"),
    pytest.param("RuntimeError: mat1 and mat2 shapes cannot be multiplied (2708x7 and 256x256)", "EC2004",
                 id="shapes"),
    pytest.param("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.22 GiB. GPU 0 has a total "
                 "capacity of 15.69 GiB", "EC2005", id="oom"),
])
def test_code_caused_errors_are_said_to_be_the_code(tmp_path: Path, text: str, rule: str) -> None:
    """Each is its code-errors finding (information, "not the environment"), and no environment rule fires."""
    _out, report = _explain(tmp_path, text, CPU_VENV)
    logged = [f for f in _found(report) if "error output shows it" in f["evidence"]]
    assert [f["id"] for f in logged] == [rule]
    assert logged[0]["severity"] == "info" and "not the environment" in logged[0]["summary"]
    assert logged[0]["area"] == "code-errors"


def test_a_log_that_names_this_gpu_and_paths_is_tied(tmp_path: Path) -> None:
    """The same RTX 5090 warning printed by this venv's torch (its site-packages, its GPU): joined with the live
    facts, with this environment's command."""
    facts = facts_dict(dists=[dist_dict("torch", "2.5.1+cu124")], torch=torch_dict(),
                       nvml=nvml_dict(gpu_dict(name="NVIDIA GeForce RTX 5090", capability="12.0")))
    here = RTX5090.replace("/home/u/miniconda3/envs/x/lib/python3.10/site-packages", SITE)
    out, report = _explain(tmp_path, here, facts)
    assert "is from the checked environment" in out
    ec0401 = [f for f in _found(report) if f["id"] == "EC0401"]
    assert ec0401 and "not from the checked environment" not in ec0401[0]["evidence"]


_WARNING = ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch "
            "installation.")
WRAPPED_AT_80 = f"{_WARNING[:80]}\n{_WARNING[80:]}\n"  # as an 80-column terminal shows it, copied


@pytest.mark.parametrize(("text", "rule"), [
    pytest.param("operator torchvision::nms does not exist\n", "EC0701", id="nms-without-prefix"),
    pytest.param("> RuntimeError: operator torchvision::nms does not exist\n", "EC0701", id="nms-markdown-quote"),
    pytest.param("> > `RuntimeError: operator torchvision::roi_align does not exist`\n", "EC0701", id="nms-nested"),
    pytest.param("2025-03-01 10:22:01,553 ERROR [worker] operator torchvision::nms does not exist\n", "EC0701",
                 id="nms-log-prefix"),
    pytest.param("NVIDIA GeForce RTX 5090 D with CUDA capability sm_120 is not compatible with the current PyTorch "
                 "installation.\n", "EC0401", id="arch-warning-alone-newer-gpu"),
    pytest.param("ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\n", "EC0501",
                 id="libcudnn"),
    pytest.param("OSError: libnccl.so.2: cannot open shared object file: No such file or directory\n", "EC0501",
                 id="libnccl"),
    pytest.param("ERROR: No matching distribution found for torch==2.1.0+cu121\n", "EC1602", id="pip-no-match"),
    pytest.param("      nvcc fatal   : Unsupported gpu architecture 'compute_120a'\n", "EC1303", id="nvcc"),
    pytest.param('OSError: [WinError 126] The specified module could not be found. Error loading "C:\\Python311\\Lib'
                 '\\site-packages\\torch\\lib\\shm.dll" or one of its dependencies.\n', "EC0814", id="winerror-126"),
    pytest.param('    from torch._C import *\nImportError: DLL load failed while importing _C: The specified module '
                 'could not be found.\n', "EC0814", id="dll-load-failed"),
    pytest.param("error: Distribution `torch==2.5.1 @ registry+https://pypi.org/simple` can't be installed because it "
                 "doesn't have a source distribution or wheel for the current platform\n", "EC1601", id="uv-no-wheel"),
    pytest.param("OSError: Could not load this library: /home/u/.venv/lib/python3.11/site-packages/torchaudio/lib/"
                 "libtorchaudio.so\n", "EC0701", id="libtorchaudio"),
    pytest.param("RuntimeError: Could not load libtorchcodec. Likely causes:\n", "EC1812", id="torchcodec"),
    pytest.param("/root/anaconda3/lib/python3.9/site-packages/bitsandbytes/cextension.py:31: UserWarning: The "
                 "installed version of bitsandbytes was compiled without GPU support.\n", "EC1808",
                 id="bitsandbytes-cpu"),
    pytest.param('{"name": "OSError", "message": "[WinError 126] The specified module could not be found. Error '
                 'loading \\"c:\\\\Users\\\\Noor\\\\anaconda3\\\\Lib\\\\site-packages\\\\torch\\\\lib'
                 '\\\\fbgemm.dll\\" or '
                 'one of its dependencies."}\n', "EC0813", id="escaped-in-json"),
    pytest.param('"traceback": "Traceback (most recent call last):\\n  File \\"x.py\\", line 1\\nRuntimeError: '
                 'operator torchvision::nms does not exist\\n"\n', "EC0701", id="lines-escaped-in-json"),
    pytest.param(WRAPPED_AT_80, "EC0401", id="wrapped-by-a-terminal"),
    pytest.param("`flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined\n symbol: "
                 "_ZN3c104impl3cow11cow_deleterEPv`\n", "EC1101", id="wrapped-by-hand"),
])
def test_a_family_is_recognised_whatever_surrounds_it(tmp_path: Path, text: str, rule: str) -> None:
    """The stable core of each message is recognised without its usual prefix, inside markdown quoting, code
    spans or a log prefix, and with a GPU name newer than the signatures' examples."""
    (tmp_path / "pasted.md").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--report", str(tmp_path / "pasted.md"), "--format", "json",
                                      "--no-config"])
    assert result.exit_code in (0, 1), result.output
    assert rule in {f["id"] for f in _found(json.loads(result.stdout))}


def _timed(read: Callable[[str], object], text: str, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        read(text)
    return time.perf_counter() - start


def _growth(read: Callable[[str], object], small: str, large: str) -> float:
    """How many times longer `read` takes on `large` than on `small`: each timing repeats until it lasts 0.05 s,
    best of three (a shared machine's noise is small against that)."""
    gc.disable()
    try:
        repeat = 1
        while _timed(read, small, repeat) < 0.05:
            repeat *= 2
        return min(_timed(read, large, repeat) for _ in range(3)) / min(_timed(read, small, repeat) for _ in range(3))
    finally:
        gc.enable()


@pytest.mark.timing
@pytest.mark.parametrize("make", [
    pytest.param(lambda n: '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1\n' * n,
                 id="one-folder-on-every-frame"),
    pytest.param(lambda n: "".join(f"x{i}/site-packages " for i in range(n)), id="relative-paths"),
    pytest.param(lambda n: "a" * (50 * n) + "site-packages" * n, id="a-long-run-before-it"),
])
def test_finding_the_site_folders_grows_linearly(make: Callable[[int], str]) -> None:
    """Text four times as long takes well under sixteen times as long to read for site-packages folders."""
    assert _growth(site_dirs, make(2000), make(8000)) < 10.0


@pytest.mark.timing
@pytest.mark.parametrize("make", [
    pytest.param(lambda n: ("x" * 80 + "\n") * n, id="every-line-at-a-terminal-width"),
    pytest.param(lambda n: "word\n continued\n" * n, id="every-line-continued-by-hand"),
    pytest.param(lambda n: ('"a\\\\b \\"c\\" \\n d \\n e"\n') * n, id="every-line-escaped"),
    pytest.param(lambda n: "\\" * (40 * n) + "\n", id="one-long-escaped-line"),
])
def test_reading_broken_and_escaped_lines_again_grows_linearly(make: Callable[[int], str]) -> None:
    """The lines read a second time (broken in two, escaped in JSON) cost time linear in the text."""
    from envcheck.sources.logs.messages import escaped_lines, wrapped_pairs

    assert _growth(lambda t: (wrapped_pairs(t), escaped_lines(t)), make(2000), make(8000)) < 10.0


def test_a_message_on_both_lines_of_a_pair_is_found_once() -> None:
    """A line broken in two is read again as one line, but a message either line already shows is not counted a
    second time, and line numbers stay the text's."""
    from envcheck.rules.rule_pack import load
    from envcheck.sources.logs.messages import recognised, wrapped_pairs

    text = f"{'x' * 80}\nRuntimeError: operator torchvision::nms does not exist\n{WRAPPED_AT_80}"
    assert [n for n, _ in wrapped_pairs(text)] == [0, 2]
    seen = recognised(text, [s for rule in load(()) for s in rule.signatures])
    assert [(o.rule_id, o.line) for o in seen] == [("EC0701", 2), ("EC0401", 3)]


def test_a_tied_log_the_facts_contradict_is_told_as_the_log_s(tmp_path: Path) -> None:
    """This venv's paths and GPU, but a torch whose build probe lists sm_120: the facts say EC0401 does not fire
    here, so the finding tells what the output shows without the rule's own text about this torch, and writes no
    command."""
    facts = facts_dict(dists=[dist_dict("torch", "2.7.0+cu128")], torch=torch_dict("2.7.0+cu128", "12.8"),
                       nvml=nvml_dict(gpu_dict(name="NVIDIA GeForce RTX 5090", capability="12.0"), cuda="12.8"),
                       probes={"torch-build": {"status": "ok", "details": {
                           "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]}}})
    here = RTX5090.replace("/home/u/miniconda3/envs/x/lib/python3.10/site-packages", SITE)
    out, report = _explain(tmp_path, here, facts)
    assert "is from the checked environment" in out
    ec0401 = [f for f in _found(report) if f["id"] == "EC0401"]
    assert ec0401 and not ec0401[0]["commands"], ec0401
    assert "this environment's facts say otherwise" in ec0401[0]["evidence"]


# torchvision 0.21.0 pins torch==2.6.0 beside torch 2.13.0+cpu: the facts fire EC0702 (its pin), not EC0701 (a
# release built for another torch, with no pin saying so), and both fail with the same message.
PINNED_VENV = facts_dict(dists=[dist_dict("torch", "2.13.0+cpu"),
                                dist_dict("torchvision", "0.21.0", "torch==2.6.0", "numpy")],
                         torch=torch_dict("2.13.0+cpu", None), nvml=nvml_dict(status="no-driver", driver=None,
                                                                              cuda=None))
NMS_HERE = (f'  File "{SITE}/torchvision/_meta_registrations.py", line 164, in <module>\n'
            "RuntimeError: operator torchvision::nms does not exist\n")


def test_a_message_another_rule_explains_here_is_that_rules_evidence(tmp_path: Path) -> None:
    """EC0701 recognises the message, but the checked environment's facts fire EC0702 for the torchvision it names
    (EC0701's `explained_by`): EC0702's finding, command included, carries the line, and EC0701 passes naming it,
    instead of an EC0701 "judged on the error output alone" beside it."""
    text, report = _explain(tmp_path, NMS_HERE, PINNED_VENV)
    found = {f["id"]: f for f in _found(report)}
    assert "EC0701" not in found
    assert found["EC0702"]["evidence"].startswith(f"the error output shows it ({tmp_path / 'log.txt'}, line 2: "
                                                  "«operator torchvision::nms does not exist»)")
    assert found["EC0702"]["commands"]
    [ec0701] = [f for f in report["findings"] if f["id"] == "EC0701"]
    assert (ec0701["status"], ec0701["summary"]) == (
        "pass", f"not found: the failure the error output shows ({tmp_path / 'log.txt'}, line 2) is EC0702 here")
    assert "say otherwise" not in text


def test_a_message_the_explainer_does_not_name_stays_its_own(tmp_path: Path) -> None:
    """EC0702 fires for torchaudio, but the line is torchvision's: EC0701 stays the output's finding, contradicted."""
    facts = facts_dict(dists=[dist_dict("torch", "2.13.0+cpu"), dist_dict("torchaudio", "2.6.0", "torch==2.6.0")],
                       torch=torch_dict("2.13.0+cpu", None), nvml=nvml_dict(status="no-driver", driver=None, cuda=None))
    _text, report = _explain(tmp_path, NMS_HERE, facts)
    found = {f["id"]: f for f in _found(report)}
    assert "this environment's facts say otherwise" in found["EC0701"]["evidence"]
    assert "error output" not in found["EC0702"]["evidence"]

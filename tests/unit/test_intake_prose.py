"""Reports as people write them: the free text of real issue bodies (tests/fixtures/reports/prose/SOURCES.md cites
each), its near misses, and the bounds on reading it (envcheck/sources/reports/prose/)."""

from __future__ import annotations

import gc
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.facts.snapshot import Facts
from envcheck.sources.reports import read, read_report

PROSE = Path(__file__).parents[1] / "fixtures" / "reports" / "prose"
NOT_ASSERTED = object()

# fixture -> (torch version, torch CUDA, GPUs, driver, sys.platform, machine, glibc, Python)
EXPECTED = [
    pytest.param("berkeley-humanoid-lite-49-rtx5090-cu121.md", "2.5.1", "12.1", ["RTX 5090"], "590.48.01", "linux",
                 "", "2.39", "", id="env-list-pin-and-index"),
    pytest.param("bitsandbytes-1530-colab-t4.md", "2.5.1+cu124", "12.4", ["T4"], None, "linux", "x86_64", None,
                 "3.11", id="system-info-colab"),
    pytest.param("flash-attention-597-cu117.md", "2.0.1+cu117", "11.7", None, None, "linux", "", "2.31", "3.10.12",
                 id="key-colon-list-and-setup-log"),
    pytest.param("geoevobuilder-3-rtx4090-cu113.md", "1.12.0+cu113", "11.3", ["RTX 4090"], None, "", "", None, "",
                 id="placeholders-left-in-the-template"),
    pytest.param("kaggle-docker-python-1546-p100.md", None, None, ["P100"], None, "linux", "x86_64", None, "",
                 id="kaggle-sentence"),
    pytest.param("lightning-grasp-7-rtx5080.md", "2.9.0+cu128", "12.8", ["RTX 5080"], None, "linux", "", "2.35",
                 "3.10", id="bare-lines"),
    pytest.param("pytorch-101331-conda-a100.md", None, None, ["A100"], None, "linux", "", "2.31", "3.9.16",
                 id="conda-install-without-version"),
    pytest.param("pytorch-143816-jetson-orin.md", "2.1.0a0+41361538.nv23.06", None, ["Jetson Orin Nano"], None,
                 "linux", "aarch64", "2.31", "3.8.10", id="jetson-in-a-fence"),
    pytest.param("pytorch-150724-glibc-217.md", "2.5.1", None, None, None, "", "", "2.17", "3.11",
                 id="os-placeholder-and-glibc"),
    pytest.param("pytorch-167244-2x-rtx5090-cu124.md", "2.7.0.dev20250310+cu124", "12.4", ["RTX 5090"] * 2,
                 "570.124.06", "linux", "", "2.35", "3.11.9", id="two-gpus-and-a-nightly"),
    pytest.param("pytorch-167679-macos-two-versions.md", None, None, None, None, "darwin", "arm64", None, "3.11.14",
                 id="two-torch-versions-in-one-value"),
    pytest.param("pytorch-177819-macos-arm64.md", "2.10.0", None, None, None, "darwin", "arm64", None, "3.12.13",
                 id="macos-list-with-a-nightly-key"),
    pytest.param("pytorch-30071-old-template.md", "1.3", None, None, "410.48", "linux", "", "2.23", "3.6.7",
                 id="old-template-and-two-versions-in-a-sentence"),
    pytest.param("pytorch-50032-rtx2080ti.md", "1.9.0+cu111", "11.1", ["RTX 2080 Ti"], "460.91.03", "linux", "",
                 "2.31", "3.8", id="list-and-install-command"),
    pytest.param("pytorch-60011-libtorch-win10.md", None, None, ["RTX 3060"], "466.77", "win32", "", None, "",
                 id="libtorch-is-not-torch"),
    pytest.param("pytorch-6607-centos6-template.md", "3.0.1", None, None, None, "linux", "", None, "3.6",
                 id="centos-6-template"),
    pytest.param("pytorch-68611-conda-gtx1050.md", None, None, ["GeForce GTX 105..."], "461.72", "", "", None, "",
                 id="conda-install-and-nvidia-smi"),
    # The nvidia-smi banner alone lists no GPU rows: what its reader makes of that is not this test's business.
    pytest.param("pytorch-85332-cu102.md", "1.8.1+cu102", "10.2", NOT_ASSERTED, "450.51.05", "", "", None, "",
                 id="print-torch-version-output"),
    pytest.param("pytorch-aarch64-17-glibc-228.md", "1.6.0", None, None, None, "linux", "", "2.27", "3.7.10",
                 id="ubuntu-python-glued-and-a-wheel-file"),
    pytest.param("unsloth-1927-h100.md", "2.5.1", "12.4", ["H100"], None, "linux", "", None, "3.11.11",
                 id="with-cuda-support-sentence"),
    pytest.param("vertex-ai-samples-2655-two-builds.md", None, None, None, None, "", "", None, "",
                 id="two-builds-printed"),
    pytest.param("vllm-29472-gb10.md", "2.9.0", None, ["GB10"], None, "", "", None, "",
                 id="pip-successfully-installed"),
    pytest.param("vllm-763-a40-cu117.md", "2.0.1+cu117", "11.7", ["NVIDIA A40"], "525.125.06", "", "", None, "",
                 id="prompt-output-and-nvidia-smi"),
    pytest.param("wsl-11589-rtx3060.md", "1.13", None, ["NVIDIA GeForce RTX 3060 ..."], "546.80", "linux", "", "2.35",
                 "", id="wsl-template"),
]


def _read(text: str) -> Facts:
    return read_report(text.encode(), "issue.md")


def _gpus(facts: Facts) -> list[str | None] | None:
    return [d.name for d in facts.nvml.devices] if facts.nvml and facts.nvml.devices_known else None


@pytest.mark.parametrize(("fixture", "torch", "cuda", "gpus", "driver", "platform", "machine", "libc", "python"),
                         EXPECTED)
def test_real_issue_bodies_give_the_stated_facts(fixture: str, torch: str | None, cuda: str | None, gpus: Any,
                                                 driver: str | None, platform: str, machine: str, libc: str | None,
                                                 python: str) -> None:
    """Each real issue body yields the torch build, GPUs, driver, OS and Python its text states, and nothing else."""
    facts = read_report((PROSE / fixture).read_bytes(), fixture)
    assert (facts.torch.version if facts.torch else None) == torch
    assert (facts.torch.cuda if facts.torch else None) == cuda
    if gpus is not NOT_ASSERTED:
        assert _gpus(facts) == gpus
    assert (facts.nvml.driver_version if facts.nvml else None) == driver
    assert (facts.python.platform, facts.python.machine) == (platform, machine)
    assert (facts.python.libc["version"] if facts.python.libc else None) == libc
    assert facts.python.version == python


def test_every_fact_records_its_line() -> None:
    """Provenance names the line each fact of the text was read from, and the report names every line read."""
    facts = read_report((PROSE / "lightning-grasp-7-rtx5080.md").read_bytes(), "r")
    assert facts.provenance["torch.version"] == "prose, line 8"
    assert facts.provenance["nvml.devices"] == "prose, line 5"
    assert facts.provenance["python.platform"] == facts.provenance["python.libc"] == "prose, line 4"
    assert facts.provenance["python.version"] == "prose, line 7"
    (found,) = read((PROSE / "lightning-grasp-7-rtx5080.md").read_bytes(), "r")[1]
    assert found.where == ("prose (line 4: Ubuntu 22.04 (linux, glibc 2.35); line 5: GPU RTX 5080; line 6: CUDA 12.8 "
                           "(not said whose: torch's build, the toolkit or the driver's); line 7: Python 3.10; line 8: "
                           "torch 2.9.0+cu128; line 9: torchvision 0.24.0+cu128)")


# --- near misses: what looks like a fact and is not one -------------------------------------------------------

@pytest.mark.parametrize(("text", "version"), [
    pytest.param("I tried torch 2.0 before, now 2.5.1.\n", None, id="an-attempt"),
    pytest.param("It works with torch 2.0 but fails with torch 2.1.\n", None, id="two-versions-compared"),
    pytest.param("## Environment\n- torch: 2.5.1\n\nI tried torch 2.0 before.\n", "2.5.1", id="the-env-list-decides"),
    pytest.param("Should I upgrade to torch 2.5.1?\n", None, id="a-question"),
    pytest.param("- PyTorch Version (e.g., 1.0):\n", None, id="a-template-hint"),
    pytest.param("<!-- e.g. torch 2.1.0 -->\nIt crashes.\n", None, id="an-html-comment"),
    pytest.param("> torch 2.0.1 works for me\n", None, id="someone-quoted"),
    pytest.param("LibTorch 1.8.1 on Windows\n", None, id="libtorch"),
    pytest.param("torch: 2.0.1\ntorch: 2.5.1\n", None, id="two-statements-disagree"),
    pytest.param("pip install torch\n", None, id="an-unpinned-install"),
    pytest.param("Try `pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu121`.\n", None,
                 id="a-suggested-install"),
])
def test_torch_versions_that_are_not_the_installed_one(text: str, version: str | None) -> None:
    """A version the text names about something else (an attempt, a comparison, a hint, a quote) is not the
    installed one; where the text states it too, the statement wins."""
    facts = _read(text)
    assert (facts.torch.version if facts.torch else None) == version


def test_disagreeing_statements_leave_the_fact_unknown_and_say_so() -> None:
    """Two statements of one weight that disagree leave the fact unknown, with a problem naming both lines."""
    facts = _read("torch: 2.0.1\nCUDA used to build PyTorch: 11.8\ntorch: 2.5.1\n")
    assert facts.torch is not None and facts.torch.version is None
    assert any("line 1: 2.0.1; line 3: 2.5.1" in p for p in facts.problems)


@pytest.mark.parametrize("text", [
    pytest.param('  File "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501\n', id="traceback"),
    pytest.param("```\nImportError: /home/u/env/lib/python3.11/site-packages/flash_attn_2_cuda.so: undefined\n```\n",
                 id="path-in-a-fence"),
    pytest.param("see /opt/conda/envs/torch2.1/lib/python3.10 for the files\n", id="path-in-a-sentence"),
])
def test_numbers_in_paths_are_not_versions(text: str) -> None:
    """A Python or package version inside a path is no statement of what is installed."""
    facts = _read(text)
    assert facts.python.version == "" and facts.torch is not None and facts.torch.version is None
    assert not facts.distributions


@pytest.mark.parametrize(("text", "torch_cuda", "driver_cuda"), [
    pytest.param("torch 2.1.2\nCUDA 11.7\n", None, None, id="cuda-alone-is-nobodys"),
    pytest.param("torch 2.1.2\nCUDA Version: 12.2 (nvidia-smi)\n", None, "12.2", id="the-drivers-cuda"),
    pytest.param("torch 2.1.2\nnvcc: 12.4\n", None, None, id="the-toolkit-is-not-torchs"),
    pytest.param("torch 2.1.2\nCUDA used to build PyTorch: 12.1\n", "12.1", None, id="torchs-build-by-its-key"),
    pytest.param("I installed PyTorch 2.1.2 with CUDA 12.1 support.\n", "12.1", None, id="with-cuda-support"),
    pytest.param("torch 2.1.2+cu118\nCUDA used to build PyTorch: 12.1\n", "11.8", None, id="local-version-decides"),
    pytest.param("I pre-install pytorch=2.0.1+cu11.8 first.\n", None, None, id="a-local-part-torch-never-has"),
])
def test_whose_cuda_a_text_names(text: str, torch_cuda: str | None, driver_cuda: str | None) -> None:
    """"CUDA 11.7" alone is not said to be torch's, the toolkit's or the driver's: it stays unknown; a key or the
    words around it say whose."""
    facts = _read(text)
    assert facts.torch is not None and facts.torch.cuda == torch_cuda
    assert (facts.nvml.cuda_driver_version if facts.nvml else None) == driver_cuda


@pytest.mark.parametrize(("text", "driver"), [
    pytest.param("Driver 13.0\n", None, id="the-cuda-a-driver-supports"),
    pytest.param("driver: 535\n", "535", id="a-branch"),
    pytest.param("Driver Version: 550.120\n", "550.120", id="nvidia-smi-words"),
    pytest.param("My NVIDIA driver is 560.35.03.\n", "560.35.03", id="driver-is"),
    pytest.param("It needs driver 560.35.03 or newer.\n", None, id="a-need"),
    pytest.param("nvidia driver version 560.35.03 on this box\n", "560.35.03", id="in-a-sentence"),
])
def test_driver_versions(text: str, driver: str | None) -> None:
    """A driver's version has a three-digit branch; a smaller number after "driver" is a CUDA version."""
    facts = _read(text)
    assert (facts.nvml.driver_version if facts.nvml else None) == driver


@pytest.mark.parametrize(("text", "gpus"), [
    pytest.param("I train on a T4.\n", None, id="short-name-without-gpu-words"),
    pytest.param("Colab with a Tesla T4\n", ["T4"], id="short-name-with-a-vendor-word"),
    pytest.param("GPU: T4\n", ["T4"], id="short-name-under-a-gpu-key"),
    pytest.param("We run 2x RTX 4090 in one box.\n", ["RTX 4090", "RTX 4090"], id="a-count"),
    pytest.param("GPU: 4090\n", ["RTX 4090"], id="a-bare-model-number"),
    pytest.param("It took 4090 seconds.\n", None, id="a-number-is-not-a-gpu"),
    pytest.param("MacBook Pro with Apple M2 Max GPU\n", None, id="an-apple-chip-is-not-a-tesla-m"),
    pytest.param("RTX5090D\n", ["RTX 5090"], id="words-run-together"),
    pytest.param("It runs on an A100 but not on an H100.\n", None, id="two-gpus-compared"),
    pytest.param("- GPU: A100\n\nIt also failed on an H100 before.\n", ["A100"], id="the-gpu-key-decides"),
])
def test_gpu_names_in_text(text: str, gpus: list[str] | None) -> None:
    """GPUs are named through rules/data/gpus.toml; a short name or a bare number counts only where the text is
    about a GPU, and a sentence comparing GPUs names none."""
    assert _gpus(_read(text)) == gpus


@pytest.mark.parametrize(("text", "platform", "machine", "libc"), [
    pytest.param("OS: Windows 11\n", "win32", "", None, id="windows"),
    pytest.param("Windows 11 with WSL2 (Ubuntu 22.04)\n", "linux", "", "2.35", id="wsl2-is-linux"),
    pytest.param("OS: Windows 11\nI run it in WSL2.\n", "linux", "", None, id="wsl2-anywhere-makes-windows-the-host"),
    pytest.param("macOS 14 on an Intel MacBook\n", "darwin", "x86_64", None, id="macos-intel"),
    pytest.param("MacBook Pro M3, macOS 15\n", "darwin", "arm64", None, id="apple-silicon"),
    pytest.param("OS: CentOS 7\n", "linux", "", "2.17", id="centos-7-glibc"),
    pytest.param("Rocky Linux 9\n", "linux", "", "2.34", id="rocky-linux-9-glibc"),
    pytest.param("Ubuntu 22.10\n", "linux", "", None, id="an-ubuntu-release-whose-glibc-is-not-listed"),
    pytest.param("Google Colab\n", "linux", "x86_64", None, id="colab"),
    pytest.param("Jetson AGX Orin, JetPack 6\n", "linux", "aarch64", None, id="jetson"),
    pytest.param("OS: Ubuntu 22.04 / Windows 11\n", "", "", None, id="two-oses-disagree"),
    pytest.param("System: [e.g. Ubuntu 22.04]\n", "", "", None, id="a-placeholder"),
    pytest.param("It works on Linux but not on Windows.\n", "", "", None, id="a-comparison"),
])
def test_os_and_platform_words(text: str, platform: str, machine: str, libc: str | None) -> None:
    """OS words give sys.platform, the machine where they say it, and the glibc of a release that ships a known
    one; words that disagree, placeholders and comparisons give nothing."""
    facts = _read(text)
    assert (facts.python.platform, facts.python.machine) == (platform, machine)
    assert (facts.python.libc["version"] if facts.python.libc else None) == libc


@pytest.mark.parametrize(("text", "python"), [
    pytest.param("Python 3.11.9\n", "3.11.9", id="a-line"),
    pytest.param("python3.10\n", "3.10", id="glued"),
    pytest.param("驱动 535.113.01，cuda 11.8，python version is 3.8。\n", "3.8", id="full-width-punctuation"),
    pytest.param("- Python version: 3.10\n", "3.10", id="a-key"),
    pytest.param("conda create -n env python=3.9\n", "3.9", id="conda-create"),
    pytest.param("Python 3.9.16 (main, Mar  8 2023, 14:00:05)\n", "3.9.16", id="the-interpreters-banner"),
    pytest.param("Python version: 3.x\n", "", id="not-a-version"),
    pytest.param("site-packages under python3.8/ and python3.10/\n", "", id="paths"),
])
def test_python_versions(text: str, python: str) -> None:
    """A Python version is read from a line, a key, a conda command or the interpreter's banner, never a path."""
    assert _read(text).python.version == python


@pytest.mark.parametrize(("text", "torch", "cuda", "packages"), [
    pytest.param("pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu121\n", "2.5.1+cu121",
                 "12.1", {}, id="pip-with-a-pytorch-index"),
    pytest.param("conda install pytorch==2.1 pytorch-cuda=12.1 -c pytorch -c nvidia\n", "2.1", "12.1", {},
                 id="conda-pytorch-cuda"),
    pytest.param("conda install pytorch=2.1.0 cpuonly -c pytorch\n", "2.1.0", None, {}, id="conda-cpuonly"),
    pytest.param("pip install torch==2.1.0+cu118 -f https://download.pytorch.org/whl/torch_stable.html\n",
                 "2.1.0+cu118", "11.8", {}, id="pip-find-links-local-version"),
    pytest.param("pip install flash-attn==2.5.8 --no-build-isolation\n", None, None, {"flash-attn": "2.5.8"},
                 id="another-pin"),
    pytest.param("pip install torch>=2.1 --index-url https://download.pytorch.org/whl/cu121\n", None, None, {},
                 id="a-range-is-no-version"),
])
def test_install_commands(text: str, torch: str | None, cuda: str | None, packages: dict[str, str]) -> None:
    """The install command a user ran states the torch it installed when it pins one; its index names the build."""
    facts = _read(text)
    assert (facts.torch.version if facts.torch else None) == torch
    assert (facts.torch.cuda if facts.torch else None) == cuda
    assert {d.name: d.version for d in facts.distributions if d.name != "torch"} == packages


@pytest.mark.parametrize(("text", "packages"), [
    pytest.param("transformers==4.40.1\n", {"transformers": "4.40.1"}, id="a-pin"),
    pytest.param("- transformers 4.40.1\n- accelerate: 0.30.0\n", {"transformers": "4.40.1", "accelerate": "0.30.0"},
                 id="bullets"),
    pytest.param("| Package | Version |\n|---|---|\n| mylib | 1.2.3 |\n| vllm | 0.6.3 |\n",
                 {"mylib": "1.2.3", "vllm": "0.6.3"}, id="a-package-table"),
    pytest.param("vllm (0.6.3)\n", {"vllm": "0.6.3"}, id="name-and-parenthesis"),
    pytest.param("Requirement already satisfied: numpy in ./venv/lib/python3.10/site-packages (1.26.4)\n",
                 {"numpy": "1.26.4"}, id="pip-already-satisfied"),
    pytest.param("Successfully installed torch-2.5.1 numpy-2.0.0\n", {"numpy": "2.0.0"}, id="pip-installed"),
    pytest.param("mylib 1.2.3\n", {}, id="an-unknown-name-alone"),
    pytest.param("Step 1.2 runs the model\n", {}, id="not-a-package"),
])
def test_packages_in_text(text: str, packages: dict[str, str]) -> None:
    """Distributions are read from pins, lists, tables and pip's output; an unknown name with a number, alone in a
    sentence or a line, is not a package."""
    facts = _read(text)
    assert {d.name: d.version for d in facts.distributions if d.name != "torch"} == packages
    assert not facts.distributions_complete


def test_a_table_of_keys() -> None:
    """A markdown table whose header names facts gives each column's fact."""
    facts = _read("| GPU | Driver | CUDA | PyTorch |\n|---|---|---|---|\n"
                  "| RTX 3090 | 535.54.03 | 12.2 | 2.1.2+cu121 |\n")
    assert _gpus(facts) == ["RTX 3090"]
    assert facts.nvml is not None and facts.nvml.driver_version == "535.54.03"
    assert facts.torch is not None and (facts.torch.version, facts.torch.cuda) == ("2.1.2+cu121", "12.1")


def test_tool_output_is_read_once_and_ranks_first() -> None:
    """Lines a tool reader read are not read again as text, and a tool's facts win over the text's."""
    collect_env = (PROSE.parent / "torch-2.6-rtx5090d.txt").read_text(encoding="utf-8")
    text = f"I use torch 2.4.0 with an RTX 4090.\n\n```\n{collect_env}```\n"
    facts = _read(text)
    assert facts.torch is not None and facts.torch.version == "2.6.0+cu126"
    assert facts.provenance["torch.version"].startswith("block 2 (collect_env")
    wheres = [f.where for f in read(text.encode(), "r")[1]]
    assert wheres[0].startswith("block 2 (collect_env") and wheres[1].startswith("prose (line 1: ")
    assert "2.6.0" not in wheres[1]  # collect_env's own lines were not read again


def test_what_the_text_does_not_state_stays_unknown() -> None:
    """A text naming only a GPU states no torch, no Python, no OS: each stays unknown, never a default."""
    facts = _read("My GPU is an RTX 4090.\n")
    assert _gpus(facts) == ["RTX 4090"]
    assert facts.torch is not None and facts.torch.problem and facts.torch.version is None
    assert facts.python.version == "" and facts.python.platform == "" and facts.python.libc is None
    assert facts.python.marker_environment == {}


def test_a_hostile_text_is_read_as_words() -> None:
    """Markup and controls around a GPU's name reach the report only as the table's own name for it."""
    text = "GPU: RTX 4090 [link](https://evil.example) @octocat \x1b]8;;x\x07 <b>x</b>\n"
    (found,) = read(text.encode(), "r")[1]
    assert found.where == "prose (line 1: GPU RTX 4090)"


def test_check_report_shows_what_was_read(tmp_path: Path) -> None:
    """`check --report` on a body in words names what it read, line by line, with its verdict."""
    body = tmp_path / "issue.md"
    body.write_bytes((PROSE / "berkeley-humanoid-lite-49-rtx5090-cu121.md").read_bytes())
    result = CliRunner().invoke(cli, ["check", "--report", str(body), "--select", "EC0401"])
    assert result.exit_code == 1, result.output
    first = result.output.splitlines()[0]
    assert "prose (line 5: GPU RTX 5090; line 6: driver 590.48.01; " in first, first
    assert "line 11: torch 2.5.1; line 12: torch CUDA build 12.1" in first, first
    assert "EC0401" in result.output


def test_a_question_without_facts_still_has_no_verdict(tmp_path: Path) -> None:
    """A body that states nothing envcheck reads is no verdict (exit 2), even in words."""
    body = tmp_path / "issue.md"
    body.write_text("How do I install the right torch for my GPU? Thanks!\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--report", str(body)])
    assert result.exit_code == 2, result.output


# --- bounds ------------------------------------------------------------------------------------------------------

GROWTH = 4
RATIO = 10.0  # linear work takes about GROWTH times as long; quadratic GROWTH**2
MIN_S = 0.05


def _timed(data: bytes, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        read_report(data, "r")
    return time.perf_counter() - start


def _growth(make: Callable[[int], bytes], size: int) -> float:
    """How many times longer reading the text `make` builds takes at GROWTH * `size` than at `size`: each timing
    repeats its input until it lasts MIN_S (so that a shared machine's noise is small against it), best of three."""
    small, large = make(size), make(GROWTH * size)
    gc.disable()  # as timeit does: a collection falling in one timing and not the other is noise
    try:
        repeat = 1
        while _timed(small, repeat) < MIN_S:
            repeat *= 2
        return min(_timed(large, repeat) for _ in range(3)) / min(_timed(small, repeat) for _ in range(3))
    finally:
        gc.enable()


@pytest.mark.parametrize(("make", "size"), [
    pytest.param(lambda n: "".join(f"I run torch 2.5.{i} on Ubuntu 22.04 with an RTX 4090, driver 550.{i}.\n"
                                   for i in range(n)).encode(), 250, id="distinct-sentences"),
    pytest.param(lambda n: ("torch" + " " * n + "2.1\n" + "rtx " * n + "\n" + "=" * n + "\n").encode(), 20000,
                 id="long-runs"),
    pytest.param(lambda n: ("| Package | Version |\n|---|---|\n" + "".join(f"| p{i} | 1.{i} |\n"
                                                                          for i in range(n))).encode(), 1000,
                 id="a-long-table"),
    pytest.param(lambda n: "".join(f'  File "/x/python3.10/m{i}.py", line {i}, in f\nINFO step {i} loss 0.{i}\n'
                                   for i in range(n)).encode(), 2000, id="an-unfenced-log"),
])
@pytest.mark.timing
def test_reading_text_grows_linearly(make: Callable[[int], bytes], size: int) -> None:
    """Text four times as long takes well under sixteen times as long to read."""
    assert _growth(make, size) < RATIO


@pytest.mark.parametrize(("text", "targets"), [
    pytest.param("GPU: AMD Radeon RX 5700 XT\ntorch 2.3.1+rocm5.7\n", ["gfx1010"], id="radeon-rx-5700-xt"),
    pytest.param("GPU: RX 7900 XTX\nPyTorch version: 2.3.1+rocm5.7\n", ["gfx1100"], id="rx-7900-xtx"),
    pytest.param("GPU: 8x AMD Instinct MI300X\ntorch 2.4.0+rocm6.1\n", ["gfx942"] * 8, id="eight-mi300x"),
    pytest.param("GPU: AMD Radeon RX 5700 XT\ntorch 2.3.1+cu121\n", None, id="beside-a-cuda-torch"),
    pytest.param("GPU: AMD Radeon RX 5700 XT\ntorch 2.3.1\n", None, id="beside-a-torch-of-unstated-build"),
    pytest.param("GPU: AMD Radeon RX 7900\ntorch 2.3.1+rocm5.7\n", None, id="a-name-the-table-does-not-list"),
])
def test_amd_gpus_named_beside_a_rocm_torch_state_their_gfx_targets(text: str, targets: list[str] | None) -> None:
    """An AMD GPU named in the text, beside a ROCm torch, is a ROCm device of its gfx target (rules/data/amd-gpus.toml);
    beside another torch, or by a name not listed, no ROCm device is stated."""
    facts = read_report(text.encode(), "r")
    got = None if facts.rocm is None else [d.gfx_target for d in facts.rocm.devices]
    assert got == targets


def test_an_amd_gpu_names_the_rocm_rules_gpu() -> None:
    """`envcheck check` on a ROCm torch 2.3 and an RX 5700 XT (gfx1010, in no torch 2.3 ROCm wheel) reports EC1401."""
    text = "GPU: AMD Radeon RX 5700 XT\ntorch 2.3.1+rocm5.7\n"
    result = CliRunner().invoke(cli, ["check", "--static", "--report", "-"], input=text)
    assert "EC1401" in result.output, result.output


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_python_torch_and_os_are_read_in_any_order(order: tuple[int, ...]) -> None:
    """"Python 3.11, torch 2.5.1+cpu, Windows 11" states all three whichever comes first: a line that opens with
    "Python X.Y" and goes on is a sentence, not the interpreter's banner."""
    parts = ("Python 3.11", "torch 2.5.1+cpu", "Windows 11")
    facts = read_report((", ".join(parts[i] for i in order) + "\n").encode(), "pasted.md")
    assert facts.python.version == "3.11" and facts.python.platform == "win32"
    assert facts.torch is not None and facts.torch.version == "2.5.1+cpu"


@pytest.mark.parametrize("line", ["GPU: Tesla T4, NVIDIA driver 470.82.01", "NVIDIA driver 470.82.01, GPU: Tesla T4",
                                  "Driver: 470.82.01, GPU: Tesla T4"])
def test_a_gpu_line_reads_the_driver_beside_it(line: str) -> None:
    facts = read_report(f"{line}\n".encode(), "pasted.md")
    assert facts.nvml is not None and facts.nvml.driver_version == "470.82.01"
    assert [d.name for d in facts.nvml.devices] == ["T4"] or "T4" in (facts.nvml.devices[0].name or "")

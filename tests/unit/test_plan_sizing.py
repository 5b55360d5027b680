"""Plans sized to the machine (envcheck/remedy/commands/planner.py): a torch that is not installed is installed as
`envcheck recommend` says (the CPU build where no GPU is usable), and a repair of torch does not download again what
another step installs."""

from __future__ import annotations

from typing import Any

import pytest
from _fakes import build_facts, dist_dict, gpu_dict, nvml_dict, torch_dict
from packaging.version import Version

from envcheck.derived import build_matrix as tb
from envcheck.derived import companions
from envcheck.derived import tables as tables_mod
from envcheck.facts.snapshot import Facts
from envcheck.remedy import fix
from envcheck.remedy.commands import planner
from envcheck.rules.engine import evaluate
from envcheck.rules.rule_pack import builtin_rules_dir
from envcheck.rules.rule_pack import load as load_pack

TABLES = tables_mod.load([builtin_rules_dir()])
MATRIX = TABLES[tables_mod.TORCH_BUILDS]
COMPANIONS = companions.merged((TABLES[tables_mod.TORCH_COMPANIONS], TABLES[tables_mod.XFORMERS]))
CPU = "https://download.pytorch.org/whl/cpu"
NO_GPU = nvml_dict(status="no-driver", driver=None, cuda=None)
# torch 2.5.1 from PyPI (the CUDA 12.4 build) requires these on Linux x86_64; a `--no-deps` install leaves them out.
NVIDIA = ("nvidia-cudnn-cu12==9.1.0.70", "nvidia-cublas-cu12==12.4.5.8", "nvidia-nccl-cu12==2.21.5")
ON_LINUX = '; platform_system == "Linux" and platform_machine == "x86_64"'


@pytest.fixture(autouse=True)
def _real_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(companions.INDEX_BASE_VARIABLE, raising=False)


def _lightning(nvml: dict[str, Any] | None) -> Facts:
    """lightning and pytorch-lightning without torch: each requires its own range of it."""
    return build_facts(dists=[dist_dict("lightning", "2.5.0", "torch<4.0,>=2.1.0", "pytorch-lightning"),
                              dist_dict("pytorch-lightning", "2.5.0", "torch>=2.1.0")], nvml=nvml)


def _plan(facts: Facts, *args: str) -> list[tuple[str, ...]]:
    py = facts.python.executable
    return [a[3:] for a in planner.plan_command((py, "-m", "pip", *args), facts, COMPANIONS, None, MATRIX)]


def _pin(requirement: str) -> Version:
    return Version(requirement.partition("==")[2])


def test_a_missing_torch_on_a_machine_without_gpu_is_the_cpu_build() -> None:
    """Both lightning packages' torch requirements plan one command: torch pinned to the newest CPU build within
    the range, from the CPU index; never PyPI's CUDA torch."""
    report = evaluate(load_pack(), _lightning(NO_GPU))
    printed = {argv[3:] for f in report.findings if f.rule_id == "EC0102" for argv in f.commands}
    [(command, torch, option, index)] = printed
    assert (command, option, index) == ("install", "--index-url", CPU)
    assert torch.startswith("torch==") and _pin(torch).local == "cpu"
    assert tb.release(MATRIX, _pin(torch).public) is not None and _pin(torch) >= Version("2.1.0")
    plan = fix.plan([f for f in report.findings if f.status.is_finding and f.commands], report.python)
    assert [s.argv[3:] for s in plan.steps] == [("install", torch, "--index-url", CPU)]


def test_the_range_of_the_requirement_bounds_the_release() -> None:
    """`torch<2.6` on the same machine is the newest CPU build before 2.6, with a companion the command names
    pinned to the release made for it; requirements that are not torch's stay in a command of their own."""
    facts = _lightning(NO_GPU)
    [rest, fresh] = _plan(facts, "install", "torch<2.6", "torchvision", "safetensors")
    assert rest == ("install", "safetensors")
    torch = _pin(fresh[1])
    assert torch < Version("2.6") and torch.local == "cpu"
    made_for = tb.companions(MATRIX, torch.public)
    assert fresh[2:] == (f"torchvision=={made_for['torchvision']}+cpu", "--index-url", CPU)


def test_a_missing_torch_on_a_gpu_machine_is_a_cuda_build_the_driver_runs() -> None:
    """With an H100 and driver 550 (CUDA 12.4), the build is a CUDA one from its own index."""
    facts = _lightning(nvml_dict(gpu_dict(0, "9.0")))
    [(_, torch, option, index)] = _plan(facts, "install", "torch>=2.1.0")
    assert _pin(torch).local is not None and _pin(torch).local.startswith("cu")
    assert (option, index) == ("--index-url", f"https://download.pytorch.org/whl/{_pin(torch).local}")


@pytest.mark.parametrize(
    ("nvml", "requirement"),
    [
        pytest.param(None, "torch>=2.1.0", id="machine-unknown"),
        pytest.param(NO_GPU, "torch>=99", id="no-release-in-range"),
    ],
)
def test_what_cannot_be_told_is_left_as_it_is(nvml: dict[str, Any] | None, requirement: str) -> None:
    """Without NVML's answer, or with no release in range, the command stays as the rule wrote it."""
    assert _plan(_lightning(nvml), "install", requirement) == [("install", requirement)]


def _without_wheels(*installed: str) -> Facts:
    """torch 2.5.1 from PyPI (CUDA 12.4) whose nvidia-* wheels are missing but for `installed`."""
    torch = dist_dict("torch", "2.5.1", "filelock", *(r + ON_LINUX for r in NVIDIA))
    present = [dist_dict(r.split("==")[0], r.split("==")[1]) for r in installed]
    probes = {"torch-import": {"status": "error", "error_class": "ImportError",
                               "message": "libcudnn.so.9: cannot open shared object file: No such file or directory"}}
    return build_facts(dists=[dist_dict("filelock", "3.16.1"), *present, torch], torch=torch_dict("2.5.1", "12.4"),
                       nvml=nvml_dict(gpu_dict()), probes=probes)


def test_a_torch_repair_does_not_download_again_what_another_step_installs() -> None:
    """torch 2.5.1 without its nvidia-* wheels: the plan installs them once, then reinstalls torch alone."""
    report = evaluate(load_pack(), _without_wheels())
    todo = report.at_or_above("error")
    assert {f.rule_id for f in todo} == {"EC0102", "EC0501"}
    plan = fix.plan(todo, report.python)
    assert [s.argv[3:] for s in plan.steps] == [
        ("install", *sorted(NVIDIA)), ("install", "--force-reinstall", "--no-deps", "torch==2.5.1")]


def test_a_torch_repair_with_nothing_missing_reinstalls_its_dependencies() -> None:
    """With every requirement met, torch-import-fails' repair is the reinstall with dependencies, as written."""
    facts = _without_wheels(*NVIDIA)
    assert _plan(facts, "install", "--force-reinstall", "torch==2.5.1") == [
        ("install", "--force-reinstall", "torch==2.5.1")]

"""Static GPU decisions from the torch build matrix, their commands, and `envcheck recommend` (what-if planning)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from packaging.version import Version

from envcheck.cli.click_cli import cli
from envcheck.derived import build_matrix as tb
from envcheck.derived import companions, nvidia_gpus
from envcheck.derived.tables import GPUS, TORCH_BUILDS
from envcheck.errors import RuleError
from envcheck.facts.snapshot import Facts
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Finding, Status
from envcheck.rules.templates import render_argvs
from envcheck.sources.live import collect as collect_mod

MACHINES = Path(__file__).parents[1] / "fixtures" / "torch-builds" / "machines"
PACK = rule_pack.load()
MATRIX = PACK.tables[TORCH_BUILDS]
GPU_RULES = PACK.only([r for r in PACK if r.id.startswith("EC040")])


def _load(name: str, **changes: Any) -> Facts:
    data = json.loads((MACHINES / f"{name}.json").read_text(encoding="utf-8"))
    data.update(changes)
    return Facts.from_dict(data, file=name)


def _findings(facts: Facts, rule_id: str) -> list[Finding]:
    return [f for f in evaluate(GPU_RULES, facts).findings if f.rule_id == rule_id]


def _chosen(command: tuple[str, ...]) -> tuple[tb.Variant, str]:
    """The torch variant a command installs, and its index URL."""
    torch = next(a for a in command if a.startswith("torch=="))
    index = command[command.index("--index-url") + 1]
    version = torch.removeprefix("torch==")
    variant = tb.installed_variant(MATRIX, version, "linux-x86_64")
    assert variant is not None, torch
    return variant, index


def _check_facts(path: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["check", "--facts", str(path), "--format", "json", "--no-config",
                                      "--select", "EC04"])
    assert result.exit_code in (0, 1), result.output
    return list(json.loads(result.output)["findings"])


@pytest.mark.parametrize(("machine", "rule_id"), [
    pytest.param("rtx5090-torch251-cu124", "EC0401", id="rtx5090-cu124"),
    pytest.param("v100-torch-cu130", "EC0401", id="v100-cu130"),
    pytest.param("driver470-torch-cu124", "EC0403", id="driver470-cu124"),
    pytest.param("cpu-torch-on-h100-uv", "EC0405", id="cpu-torch-h100"),
])
def test_static_and_snapshot_checks_agree(machine: str, rule_id: str) -> None:
    """The static evaluation of a snapshot and `check --facts` of it report the same finding and command."""
    static = _findings(_load(machine), rule_id)
    cli_found = [f for f in _check_facts(MACHINES / f"{machine}.json") if f["id"] == rule_id]
    assert static and all(f.status.is_finding for f in static)
    assert [[list(c) for c in f.commands] for f in static] == [[c["argv"] for c in f["commands"]] for f in cli_found]
    assert [f.evidence for f in static] == [f["evidence"] for f in cli_found]


def test_rtx5090_with_cu124_torch_gets_a_cu128_build_with_sm_120() -> None:
    """An RTX 5090 beside torch 2.5.1+cu124 fails EC0401 from the matrix and is told to install an sm_120 build
    from the cu128 index, with torchvision and torchaudio in the same command."""
    [finding] = _findings(_load("rtx5090-torch251-cu124"), "EC0401")
    assert finding.status is Status.FAIL
    assert "build matrix" in finding.evidence and "probe did not run" in finding.evidence
    [command] = finding.commands
    variant, index = _chosen(command)
    assert index == "https://download.pytorch.org/whl/cu128"
    assert variant.archs is not None and "sm_120" in variant.archs
    # The planner (envcheck/remedy/commands/planner.py) orders torch first, its companions after it.
    assert sorted(a.split("==")[0] for a in command if "==" in a) == ["torch", "torchaudio", "torchvision"]
    assert all(a.endswith("+cu128") for a in command if "==" in a)


def test_a_mirror_base_applies_to_the_gpu_rules_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """ENVCHECK_TORCH_INDEX_BASE moves the index of a GPU rule's command as it does every other torch-family one."""
    monkeypatch.setenv(companions.INDEX_BASE_VARIABLE, "http://mirror.example/torch/")
    [finding] = _findings(_load("rtx5090-torch251-cu124"), "EC0401")
    [command] = finding.commands
    assert command[command.index("--index-url") + 1] == "http://mirror.example/torch/cu128"


def test_v100_with_cu130_torch_gets_an_index_that_still_ships_sm_70() -> None:
    """Two V100s beside a cu130 torch fail EC0401 once each, and the command's build still has sm_70."""
    found = _findings(_load("v100-torch-cu130"), "EC0401")
    assert [f.item["index"] for f in found if f.item] == ["0", "1"]
    variant, index = _chosen(found[0].commands[0])
    assert variant.archs is not None and "sm_70" in variant.archs
    assert index.endswith(f"/{variant.name}") and variant.name != "cu130"


def test_driver_470_with_cu124_torch_gets_a_cuda_11_build_it_runs() -> None:
    """Driver 470 cannot run a cu124 torch; the command keeps torch 2.5.1 and moves it to a cu11x build."""
    [finding] = _findings(_load("driver470-torch-cu124"), "EC0403")
    [command] = finding.commands
    variant, index = _chosen(command)
    assert index == f"https://download.pytorch.org/whl/{variant.name}"
    assert re.fullmatch(r"cu11\d", variant.name), variant.name
    assert "torch==2.5.1+" + variant.name in command
    assert tb.driver_status(MATRIX, variant, Version("470.256.02"), "linux-x86_64") in ("ok", "minor-compat")


def test_cpu_torch_on_a_gpu_machine_gets_the_cuda_build_the_driver_runs_through_uv() -> None:
    """A CPU torch on an H100 with driver 570 (CUDA 12.8) gets a CUDA build of CUDA 12.8 or older, written for
    the environment's uv since uv made it and it has no pip."""
    [finding] = _findings(_load("cpu-torch-on-h100-uv"), "EC0405")
    [command] = finding.commands
    assert command[:5] == ("/usr/local/bin/uv", "pip", "install", "--python", "/opt/venv/bin/python")
    variant, _ = _chosen(command)
    assert variant.cuda is not None and variant.cuda <= (12, 8)
    assert "torchvision==0.28.0+" + variant.name in command


@pytest.mark.parametrize(("arch_list", "expected"), [
    pytest.param(["sm_80", "sm_90", "sm_120"], Status.PASS, id="probe-covers"),
    pytest.param(["sm_80", "sm_90"], Status.FAIL, id="probe-misses"),
])
def test_the_probe_outranks_the_matrix(arch_list: list[str], expected: Status) -> None:
    """When the torch-build probe ran, its arch list decides, whatever the matrix says of the installed build."""
    probe = {"torch-build": {"status": "ok", "details": {"arch_list": arch_list}}}
    [finding] = _findings(_load("rtx5090-torch251-cu124", probes=probe), "EC0401")
    assert finding.status is expected
    if expected is Status.FAIL:
        assert finding.evidence == "the torch-build probe's arch list"


def test_an_unknown_build_without_the_probe_is_skipped() -> None:
    """A torch the matrix does not know (a source build's version) leaves EC0401 skipped, not guessed."""
    facts = _load("rtx5090-torch251-cu124")
    data = facts.to_dict()
    data["torch"]["version"] = "2.5.0a0+git1234"
    [finding] = _findings(Facts.from_dict(data, file="x"), "EC0401")
    assert finding.status is Status.SKIPPED


def test_no_command_when_no_build_fits() -> None:
    """An RTX 5090 on driver 470: no torch build runs it, so the finding says so and prints no command."""
    data = _load("rtx5090-torch251-cu124").to_dict()
    data["nvml"]["driver_version"], data["nvml"]["cuda_driver_version"] = "470.256.02", "11.4"
    [finding] = _findings(Facts.from_dict(data, file="x"), "EC0401")
    assert finding.status is Status.FAIL
    assert finding.commands == ()
    assert "no published torch build fits" in finding.fix and "upgrade the NVIDIA driver" in finding.fix


def test_no_build_for_this_python_says_which_pythons_have_wheels() -> None:
    """On a Python no torch release has wheels for, the recommendation names the Pythons that have them, not the
    GPUs or the driver."""
    data = _load("rtx5090-torch251-cu124").to_dict()
    data["python"]["version"] = "3.99.0"
    [finding] = _findings(Facts.from_dict(data, file="x"), "EC0401")
    assert finding.commands == ()
    assert re.search(r"no torch wheel for Python 3\.99 on linux-x86_64: its wheels there are for Python 3\.\d+ to "
                     r"3\.\d+", finding.fix), finding.fix
    assert "upgrade the NVIDIA driver" not in finding.fix


def test_split_placeholder_becomes_arguments_or_drops_the_command() -> None:
    """`{*item.KEY}` is one argument per word, and a command whose list is empty is left out."""
    facts = _load("driver470-torch-cu124")
    argv = [["{python}", "-m", "pip", "install", "{*item.install}", "--index-url", "{item.index_url}"]]
    full = render_argvs(argv, facts, {"install": "torch==1 torchvision==2", "index_url": "https://x/cu118"})
    assert full == (("/opt/venv/bin/python", "-m", "pip", "install", "torch==1", "torchvision==2",
                              "--index-url", "https://x/cu118"),)
    assert render_argvs(argv, facts, {"install": "", "index_url": ""}) == ()


def _recommend(*args: str) -> Any:
    return CliRunner().invoke(cli, ["recommend", *args])


def test_recommend_for_a_described_machine() -> None:
    """`envcheck recommend --gpu "RTX 5090" --driver ... --python ... --platform ...` names an sm_120 build from
    the cu128 index, why, and a pip command."""
    result = _recommend("--gpu", "RTX 5090", "--driver", "570.86.10", "--python", "3.12", "--platform",
                        "linux-x86_64")
    assert result.exit_code == 0, result.output
    assert "from https://download.pytorch.org/whl/cu128" in result.output
    assert "RTX 5090 (compute capability 12.0) runs it with native code." in result.output
    assert re.search(r"python -m pip install torch==\S+\+cu128 --index-url https://download\.pytorch\.org/whl/cu128",
                     result.output)


def test_recommend_json_by_capability() -> None:
    """`--capability 7.0 --format json` chooses a build with sm_70 and reports it as data."""
    result = _recommend("--capability", "7.0", "--driver", "580.65.06", "--python", "3.12", "--platform",
                        "linux-x86_64", "--format", "json")
    data = json.loads(result.output)
    variant = tb.installed_variant(MATRIX, f"{data['recommended']['torch']}+{data['recommended']['variant']}",
                                   "linux-x86_64")
    assert variant is not None and variant.archs is not None and "sm_70" in variant.archs
    assert data["command"][:4] == ["python", "-m", "pip", "install"]


def test_recommend_for_a_snapshot_uses_its_installer() -> None:
    """`recommend --facts` of a uv environment prints a uv command with the companions, keeping torch 2.13.0."""
    result = _recommend("--facts", str(MACHINES / "cpu-torch-on-h100-uv.json"))
    assert result.exit_code == 0, result.output
    assert "It keeps torch 2.13.0 and changes only its build." in result.output
    assert "/usr/local/bin/uv pip install --python /opt/venv/bin/python torch==2.13.0+cu126 " \
           "torchvision==0.28.0+cu126 --index-url https://download.pytorch.org/whl/cu126" in result.output


def test_recommend_what_if_on_a_snapshot() -> None:
    """A described GPU replaces the snapshot's: the 470-driver machine given an RTX 5090 has no build that fits."""
    result = _recommend("--facts", str(MACHINES / "driver470-torch-cu124.json"), "--gpu", "sm_120")
    assert result.exit_code == 1
    assert "recommended: no torch build" in result.output and "upgrade the NVIDIA driver" in result.output


def test_unknown_gpu_name_is_one_line_saying_how_to_give_the_capability() -> None:
    """An unknown GPU name is a one-line error (exit 2) that says to give the compute capability."""
    result = _recommend("--gpu", "RTX 9999", "--driver", "570", "--python", "3.12", "--platform", "linux-x86_64")
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1
    assert "--capability" in result.output and "'RTX 9999'" in result.output


@pytest.mark.parametrize(("name", "expected"), [
    pytest.param("NVIDIA GeForce RTX 5090", (12, 0), id="rtx5090"),
    pytest.param("NVIDIA A100-SXM4-80GB", (8, 0), id="a100-nvml"),
    pytest.param("Tesla V100-SXM2-32GB", (7, 0), id="v100-nvml"),
    pytest.param("NVIDIA RTX 6000 Ada Generation", (8, 9), id="longest-wins"),
    pytest.param("Quadro RTX 6000", (7, 5), id="turing-rtx6000"),
    pytest.param("NVIDIA L4", (8, 9), id="l4-not-l40"),
    pytest.param("h100", (9, 0), id="lowercase"),
])
def test_gpu_names(name: str, expected: tuple[int, int]) -> None:
    """GPU names as NVML or a person writes them map to NVIDIA's compute capability."""
    found = nvidia_gpus.lookup(PACK.tables[GPUS], name)
    assert found is not None and found[1] == expected


def test_gpu_table_rejects_a_bad_capability() -> None:
    """A malformed gpus.toml is a RuleError naming the key."""
    with pytest.raises(RuleError, match=r"key 'capability.twelve'"):
        nvidia_gpus.parse({"schema": 1, "capability": {"twelve": ["RTX 5090"]}}, "gpus.toml")


def test_snapshots_load_like_saved_ones() -> None:
    """The recorded machines are valid snapshots, read by the same loader as `check --facts`."""
    for path in sorted(MACHINES.glob("*.json")):
        assert collect_mod.load(str(path)).nvml is not None


@pytest.mark.parametrize(("changes", "reason"), [
    pytest.param({"version": "3.14.0"}, "torch 2.5.1 has wheels for Python 3.9, 3.10, 3.11, 3.12, 3.13 on "
                 "linux-x86_64, not 3.14", id="python"),
    pytest.param({"platform": "darwin", "machine": "x86_64"}, "PyTorch published no torch 2.5.1 wheel for "
                 "macos-x86_64", id="platform"),
])
def test_unpublished_build(changes: dict[str, str], reason: str) -> None:
    """EC0410 names a torch release+variant that no index published for this Python or platform."""
    data = _load("rtx5090-torch251-cu124").to_dict()
    data["python"].update(changes)
    rule = PACK.only([r for r in PACK if r.id == "EC0410"])
    [finding] = evaluate(rule, Facts.from_dict(data, file="x")).findings
    assert finding.status is Status.INFO
    assert finding.summary.endswith(reason)
    assert finding.evidence == "the build matrix's builds of torch 2.5.1"


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--gpu", "H100", "--python", "3.12", "--platform", "linux-x86_64"], "give it with --driver",
                 id="no-driver"),
    pytest.param(["--gpu", "H100", "--driver", "570", "--python", "312", "--platform", "linux-x86_64"],
                 "--python '312'", id="bad-python"),
    pytest.param(["--capability", "twelve", "--driver", "570", "--python", "3.12", "--platform", "linux-x86_64"],
                 "--capability 'twelve'", id="bad-capability"),
])
def test_bad_description_is_one_line(args: list[str], message: str) -> None:
    """A described machine that cannot be planned for is one line naming the option (exit 2)."""
    result = _recommend(*args)
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and message in result.output

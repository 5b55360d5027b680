"""Verdicts from partial facts: a rule decides whenever the facts that decide it are known, and its fix is planned
only where the plan's own facts are; where they are not, the fix is words and there is no command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _fakes import FIXTURES, build_facts, dist_dict, gpu_dict, nvml_dict, torch_dict
from click.testing import CliRunner
from test_rules_loader import rule_text, write_rules

from envcheck.cli.click_cli import cli
from envcheck.derived import gpu_compat
from envcheck.derived.tables import CUDA_DRIVER
from envcheck.errors import RuleError
from envcheck.facts.snapshot import Facts
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Finding, Status
from envcheck.rules.templates import render_argvs
from envcheck.sources.reports import read_report

PACK = rule_pack.load()
BY_ID = {r.id: r for r in PACK}
REPORTS = FIXTURES / "reports"
# A collect_env report of torch 2.6 on an RTX 5090 D (tests/fixtures/reports/SOURCES.md), without torch's warning
# about the GPU: the reports below change the lines a case is about.
RTX5090_REPORT = (REPORTS / "torch-2.6-rtx5090d.txt").read_text(encoding="utf-8").split("  warnings.warn(\n")[1]


def _findings(facts: Facts, rule_id: str) -> list[Finding]:
    return list(evaluate(PACK.only([BY_ID[rule_id]]), facts).findings)


def _one(facts: Facts, rule_id: str) -> Finding:
    [finding] = _findings(facts, rule_id)
    return finding


def _cuda_torch(*gpus: dict[str, Any], **nvml: Any) -> Facts:
    """torch 2.3.1+cu121 beside these GPUs and driver."""
    return build_facts(dists=[dist_dict("torch", "2.3.1+cu121")], torch=torch_dict("2.3.1+cu121", "12.1"),
                       nvml=nvml_dict(*gpus, **nvml))


# --- EC0403: detection from the driver and torch's CUDA; the plan only writes the fix ---------------------------


def test_a_driver_too_old_for_torch_fails_without_a_gpu_list_and_says_what_to_do() -> None:
    """Driver 470 cannot run a cu121 torch whatever the GPUs are: without a GPU list (nothing to plan from) the
    finding stands, its fix names the CUDA version the driver must support, and no command is guessed."""
    facts = _cuda_torch(status="unavailable", reason="the report states the driver but lists no GPUs",
                        driver="470.256.02", cuda=None)
    finding = _one(facts, "EC0403")
    assert finding.status is Status.FAIL
    assert finding.commands == ()
    assert "supports CUDA 12.1" in finding.fix and "envcheck recommend" in finding.fix
    assert "{" not in finding.fix


def test_a_driver_too_old_for_torch_with_a_plannable_machine_gets_the_planned_command() -> None:
    """With the GPUs listed, the same finding carries the planned install: a CUDA 11 build the driver runs."""
    facts = _cuda_torch(gpu_dict(capability="7.5", name="Tesla T4", memory_mib=15360), driver="470.256.02",
                        cuda="11.4")
    finding = _one(facts, "EC0403")
    assert finding.status is Status.FAIL
    [command] = finding.commands
    assert any(arg.startswith("torch==") and "+cu11" in arg for arg in command), command
    assert "For this machine: torch " in finding.fix


@pytest.mark.parametrize("drop", [
    pytest.param({"python": {"platform": "", "machine": "", "marker_environment": {}}}, id="platform-not-stated"),
    pytest.param({"python": {"version": ""}}, id="python-not-stated"),
])
def test_an_unplannable_machine_keeps_the_verdict(drop: dict[str, Any]) -> None:
    """Without the platform or the Python version the build matrix cannot plan a torch, and EC0403 still fails."""
    facts = build_facts(dists=[dist_dict("torch", "2.3.1+cu121")], torch=torch_dict("2.3.1+cu121", "12.1"),
                        nvml=nvml_dict(gpu_dict(capability="7.5", name="Tesla T4"), driver="470.256.02", cuda="11.4"),
                        **drop)
    finding = _one(facts, "EC0403")
    assert (finding.status, finding.commands) == (Status.FAIL, ())


def test_a_report_of_an_old_driver_without_gpus_fails_ec0403() -> None:
    """A collect_env report whose GPU line says "Could not collect": EC0403 fails from the driver and torch's CUDA
    (it was skipped, waiting for a plan)."""
    text = (RTX5090_REPORT.replace("570.124.04", "470.256.02")
            .replace("GPU models and configuration: GPU 0: NVIDIA GeForce RTX 5090 D",
                     "GPU models and configuration: Could not collect"))
    finding = _one(read_report(text.encode(), "report.txt"), "EC0403")
    assert (finding.status, finding.commands) == (Status.FAIL, ())
    assert "supports CUDA 12.6" in finding.fix


def test_a_driver_that_runs_the_oldest_tabled_cuda_runs_older_ones() -> None:
    """torch 1.4's CUDA 10.1 is older than the driver table; driver 460 runs CUDA 11.0, so it runs 10.1 too: EC0403
    passes on the real report instead of being skipped."""
    facts = read_report((REPORTS / "torch-1.4-gtx980.txt").read_bytes(), "r")
    assert _one(facts, "EC0403").status is Status.PASS


@pytest.mark.parametrize(("driver", "expected"), [
    pytest.param("470.256.02", "too-old", id="both-platforms-agree"),
    pytest.param("526.47", None, id="linux-and-windows-floors-differ"),
])
def test_an_unstated_platform_decides_only_where_both_tables_agree(driver: str, expected: str | None) -> None:
    """Without the platform (a report), the driver is judged against Linux's and Windows' tables, and decides only
    where both give the same answer: 526.47 is above Linux's CUDA 12 floor (525.60.13) and below Windows' (527.41)."""
    facts = build_facts(torch=torch_dict("2.3.1+cu121", "12.1"), python={"platform": "", "marker_environment": {}},
                        nvml=nvml_dict(driver=driver, cuda=None))
    assert gpu_compat.driver_vs_torch_cuda(facts, PACK.tables[CUDA_DRIVER]) == expected


# --- EC0405: a loaded driver means an NVIDIA GPU, where the GPU list is not known -----------------------------


@pytest.mark.parametrize(("nvml", "env", "platform", "expected"), [
    pytest.param(nvml_dict(gpu_dict()), {}, "linux", Status.WARN, id="gpus-listed"),
    pytest.param(nvml_dict(status="unavailable", reason="the report states the driver but lists no GPUs"), {},
                 "linux", Status.WARN, id="driver-stated-gpus-not"),
    pytest.param(nvml_dict(gpu_dict()), {"CUDA_VISIBLE_DEVICES": ""}, "linux", Status.WARN,
                 id="gpus-hidden-from-cuda-are-still-the-machines"),
    pytest.param(nvml_dict(status="driver-not-loaded", driver=None, cuda=None), {}, "linux", Status.NA,
                 id="driver-installed-without-a-gpu"),
    pytest.param(nvml_dict(gpu_dict(error="no-permission: NVML_ERROR_NO_PERMISSION")), {}, "linux", Status.NA,
                 id="only-gpus-this-user-may-not-open"),
    pytest.param(nvml_dict(status="no-gpu-access", driver=None, cuda=None), {}, "linux", Status.SKIPPED,
                 id="container-without-gpu-access"),
    pytest.param(nvml_dict(status="unavailable", driver="1.1.0", cuda=None), {}, "darwin", Status.SKIPPED,
                 id="macos-cuda-driver-without-gpu-list"),
])
def test_cpu_torch_on_a_gpu_machine(nvml: dict[str, Any], env: dict[str, str], platform: str,
                                    expected: Status) -> None:
    """EC0405 decides from the GPU list where it is known (GPUs this user may not open do not count; NVML lists
    every GPU whatever CUDA_VISIBLE_DEVICES hides), else from a driver that answered, which it does only on a
    machine with an NVIDIA GPU; a driver installed without a GPU is not loaded, a container without access knows
    neither, and macOS's CUDA driver loads without a GPU."""
    facts = build_facts(dists=[dist_dict("torch", "2.6.0+cpu")], torch=torch_dict("2.6.0+cpu", None), nvml=nvml,
                        env=env, python={"platform": platform})
    assert _one(facts, "EC0405").status is expected


def test_cpu_torch_on_a_machine_whose_report_lists_no_gpu_gets_words_not_a_command() -> None:
    """A report that states the driver but no GPU: EC0405 warns, names the driver as what decided, and writes no
    install it cannot plan."""
    text = (RTX5090_REPORT.replace("2.6.0+cu126", "2.6.0+cpu")
            .replace("CUDA used to build PyTorch: 12.6", "CUDA used to build PyTorch: None")
            .replace("GPU models and configuration: GPU 0: NVIDIA GeForce RTX 5090 D",
                     "GPU models and configuration: Could not collect"))
    finding = _one(read_report(text.encode(), "report.txt"), "EC0405")
    assert (finding.status, finding.commands) == (Status.WARN, ())
    assert finding.evidence.startswith("NVIDIA driver: loaded")
    assert "Reinstall torch from the PyTorch index" in finding.fix


def test_check_report_end_to_end(tmp_path: Path) -> None:
    """`envcheck check --report` of that report: EC0403 and EC0405 are verdicts, not skips."""
    report = tmp_path / "issue.md"
    report.write_text(RTX5090_REPORT.replace("570.124.04", "470.256.02").replace(
        "GPU models and configuration: GPU 0: NVIDIA GeForce RTX 5090 D",
        "GPU models and configuration: Could not collect"), encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--report", str(report), "--no-config", "--format", "json",
                                      "--select", "EC0403,EC0405"])
    assert result.exit_code == 1, result.output
    found = {f["id"]: (f["status"], f["commands"]) for f in json.loads(result.output)["findings"]}
    assert found == {"EC0403": ("fail", []), "EC0405": ("pass", [])}


# --- rules about a GPU model --------------------------------------------------------------------------------


def test_a_gpu_without_bf16_is_reported_from_nvidia_smi_alone() -> None:
    """An nvidia-smi report says nothing of torch: EC0407 (a GPU's capability) still reports the GTX 780."""
    facts = read_report((REPORTS / "nvidia-smi-q-450-gtx780.txt").read_bytes(), "smi")
    finding = _one(facts, "EC0407")
    assert finding.status is Status.INFO and finding.item is not None
    assert finding.item["compute_capability"] == "3.5"


def test_a_cpu_torch_still_makes_the_bf16_rule_not_apply() -> None:
    """Where torch is known not to use the GPUs (a CPU build), EC0407 does not apply."""
    facts = build_facts(torch=torch_dict("2.6.0+cpu", None), nvml=nvml_dict(gpu_dict(capability="7.5")))
    assert _one(facts, "EC0407").status is Status.NA


def test_a_gpu_architecture_rule_still_needs_torch() -> None:
    """EC0401 depends on torch's build: without it, it stays skipped."""
    facts = build_facts(torch=torch_dict(None, None, problem="not stated"), nvml=nvml_dict(gpu_dict()))
    assert _one(facts, "EC0401").status is Status.SKIPPED


def test_an_unpublished_build_is_not_claimed_for_an_unstated_python() -> None:
    """EC0410 asks which Pythons a release has wheels for: a report without the Python version is skipped, not told
    its torch was never published."""
    facts = build_facts(dists=[dist_dict("torch", "2.6.0+cu126")], torch=torch_dict("2.6.0+cu126", "12.6"),
                        python={"version": "", "marker_environment": {}})
    assert _one(facts, "EC0410").status is Status.SKIPPED


# --- the rule language: `plan` and `fix_without_plan` -------------------------------------------------------

PLAN = {"plan": '"torch.recommended-build"', "fix": '"Install {plan.recommended}."',
        "fix_without_plan": '"Install a CUDA build."'}


@pytest.mark.parametrize(("changes", "key", "message"), [
    pytest.param({"foreach": '"torch.recommended-build"'}, "foreach", "is a plan, not a finding", id="foreach-plan"),
    pytest.param({**PLAN, "plan": '"requirements.missing"'}, "plan", "expected a plan fact", id="not-a-plan"),
    pytest.param({**PLAN, "fix_without_plan": None}, "fix_without_plan", "required with 'plan'", id="no-words"),
    pytest.param({"fix_without_plan": '"x"'}, "fix_without_plan", "only for a rule with 'plan'", id="words-alone"),
    pytest.param({**PLAN, "summary": '"{plan.install}"'}, "summary", "only available in the 'fix' and 'commands'",
                 id="plan-in-summary"),
    pytest.param({**PLAN, "fix_without_plan": '"{plan.install}"'}, "fix_without_plan",
                 "only available in the 'fix' and 'commands'", id="plan-in-its-own-absence"),
    pytest.param({**PLAN, "fix": '"{plan.nope}"'}, "fix", "plans have no key 'nope'", id="plan-key-unknown"),
    pytest.param({**PLAN, "fix": '"Install it."'}, "plan", "neither 'fix' nor 'commands' uses it", id="plan-unused"),
    pytest.param({"when": '{ driver = { loaded = "yes" } }'}, "when.driver.loaded", "expected true or false",
                 id="loaded-not-a-bool"),
])
def test_invalid_plans_are_load_errors(tmp_path: Path, changes: dict[str, str | None], key: str,
                                       message: str) -> None:
    """A plan used as a finding, a plan without words for its absence, or `{plan.*}` outside the fix is one
    RuleError naming the rule and the key."""
    path = write_rules(tmp_path, "pack.toml", rule_text(**changes))
    with pytest.raises(RuleError) as info:
        rule_pack.load_file(path)
    assert (info.value.rule_id, info.value.key) == ("EC9001", key)
    assert message in str(info.value)


def test_a_plan_rule_loads_and_its_commands_wait_for_the_plan(tmp_path: Path) -> None:
    """A rule with a plan loads; a command that names the plan is written only where there is one."""
    path = write_rules(tmp_path, "pack.toml", rule_text(
        **PLAN, commands='[["{python}", "-m", "pip", "install", "{*plan.install}"], ["{python}", "-V"]]'))
    [rule] = rule_pack.load_file(path).rules
    assert (rule.plan, rule.fix_without_plan) == ("torch.recommended-build", "Install a CUDA build.")
    facts = build_facts()
    assert render_argvs(rule.commands, facts) == (("/opt/venv/bin/python", "-V"),)
    assert render_argvs(rule.commands, facts, plan={"install": "torch==2.7.1+cu128"})[0][-1] == "torch==2.7.1+cu128"

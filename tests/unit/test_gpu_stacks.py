"""Healthy stacks recorded on real GPUs (fixtures/gpu-h200/facts.json on an NVIDIA H200, fixtures/gpu-h100/facts.json
on an H100: torch 2.11.0+cu130 from PyPI, torchvision 0.26.0, torchaudio 2.11.0, lightning, cuda-core, jax, cupy, ...
with the probes' results) get the verdicts they deserve: no failure, and only findings that are true of them;
`recommend` says nothing needs to change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.derived import builds, companions
from envcheck.derived.tables import TORCH_BUILDS
from envcheck.rules import rule_pack
from envcheck.sources.live import collect as collect_mod

FIXTURES = Path(__file__).parents[1] / "fixtures"
FACTS = FIXTURES / "gpu-h200" / "facts.json"
# The H200's snapshot was taken by an earlier envcheck (see its README); the H100's by this one.
STACKS = [pytest.param(FACTS, id="h200"), pytest.param(FIXTURES / "gpu-h100" / "facts.json", id="h100")]
# The findings that are true of this stack, each with the evidence that makes it true.
EXPECTED = {
    # torchaudio 2.11.0's load() and save() call load_with_torchcodec / save_with_torchcodec, which raise
    # `TorchCodec is required ...` without torchcodec, and the snapshot has no torchcodec distribution. The release
    # it names is the build matrix's torchcodec for torch 2.11.0 (0.11.1).
    ("EC0706", "warn"),
    # lightning 2.6.6 declares `pytorch-lightning` unconditionally, so both namespaces are installed: true, and
    # only advice (severity info), which is what the rule says.
    ("EC0302", "info"),
}


@pytest.fixture(autouse=True)
def _real_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(companions.INDEX_BASE_VARIABLE, raising=False)


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _report(facts: Path = FACTS) -> dict[str, Any]:
    result = _invoke("check", "--facts", str(facts), "--format", "json", "--no-config")
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.output))


@pytest.mark.parametrize("facts", STACKS)
def test_no_failure_and_only_true_findings(facts: Path) -> None:
    """`check --facts` of each stack fails nothing, and every warning and note it gives is a true one."""
    report = _report(facts)
    assert report["summary"]["fail"] == 0 and report["summary"]["error"] == 0
    found = {(f["id"], f["status"]) for f in report["findings"] if f["status"] in ("fail", "warn", "info")}
    assert found == EXPECTED


def test_the_extension_imports_that_worked_give_no_note() -> None:
    """The probe's recorded failures on torchaudio's lib/_torchaudio (a torch.ops library, not a module) and
    cuda-core's cu12 folder (a CUDA 13 stack uses cu13) are not import failures: EC1106 passes."""
    cases = collect_mod.load(str(FACTS)).probes["extension-imports"].cases
    assert cases["torchaudio"]["module"] == "torchaudio.lib._torchaudio"  # what the recording says
    assert cases["cuda-core"]["message"] == "No module named 'cuda.core.cu12'"
    statuses = {f["id"]: f["status"] for f in _report()["findings"]}
    assert {rule: statuses[rule] for rule in ("EC1101", "EC1104", "EC1105", "EC1106")} == dict.fromkeys(
        ("EC1101", "EC1104", "EC1105", "EC1106"), "pass")


def test_torchcodec_release_named_is_the_matrix_entry() -> None:
    """EC0706 names the torchcodec release the build matrix lists for torch 2.11.0, in its text and its command."""
    matrix = rule_pack.load().tables[TORCH_BUILDS]
    entry = next(r for r in matrix.releases if str(r.version) == "2.11.0").companions["torchcodec"]
    assert entry == "0.11.1"
    finding = next(f for f in _report()["findings"] if f["id"] == "EC0706")
    assert f"install torchcodec {entry}" in finding["summary"] and f"Install torchcodec {entry}," in finding["fix"]
    assert [c["argv"][-3:] for c in finding["commands"]] == [
        [f"torchcodec=={entry}", "--index-url", "https://download.pytorch.org/whl/cu130"]]
    assert "0.16" not in json.dumps(finding)


@pytest.mark.parametrize("facts", STACKS)
def test_recommend_says_the_installed_build_is_already_right(facts: Path) -> None:
    """`recommend --facts` on the stack it would recommend says so and prints no command (exit 0)."""
    result = _invoke("recommend", "--facts", str(facts))
    assert result.exit_code == 0, result.output
    assert "torch 2.11.0+cu130 is already the right build for this machine: nothing to change." in result.output
    assert "changes only its build" not in result.output
    assert "install:" not in result.output and "command" not in result.output
    data = json.loads(_invoke("recommend", "--facts", str(facts), "--format", "json").output)
    assert (data["nothing_to_change"], data["requirements"], data["command"]) == (True, [], None)
    assert (data["recommended"]["torch"], data["recommended"]["variant"]) == ("2.11.0", "cu130")


def _machine(**versions: str) -> builds.Machine:
    facts = collect_mod.load(str(FACTS))
    machine = builds.machine_of(facts)
    assert machine is not None
    installed = tuple((name, versions.get(name, version)) for name, version in machine.installed)
    return builds.Machine(machine.platform, machine.python, machine.gpus, machine.driver, machine.driver_text,
                          versions.get("torch_build", machine.torch), machine.companions, installed)


def test_a_stale_companion_beside_the_right_torch_moves_alone() -> None:
    """With the right torch but torchvision 0.25.0, only torchvision is installed, and the reason says so."""
    rec = builds.recommend(rule_pack.load().tables[TORCH_BUILDS], _machine(torchvision="0.25.0"))
    assert rec.requirements == ("torchvision==0.26.0+cu130",)
    assert rec.because[0] == ("torch 2.11.0+cu130 is already the right build for this machine; torchvision moves "
                              "to the release made for it.")


@pytest.mark.parametrize(("versions", "expected"), [
    pytest.param({"torch_build": "2.11.0+cu128"}, "It keeps torch 2.11.0 and changes only its build.",
                 id="other-variant"),
    pytest.param({"torch_build": "2.11.0+cu130", "torchaudio": "2.11.0+cpu"},
                 "torch 2.11.0+cu130 is already the right build for this machine; torchaudio moves to the release "
                 "made for it.", id="companion-of-another-build"),
])
def test_a_change_is_still_planned_where_one_is_needed(versions: dict[str, str], expected: str) -> None:
    """Another variant of torch, or a companion of another build, still gets its install."""
    rec = builds.recommend(rule_pack.load().tables[TORCH_BUILDS], _machine(**versions))
    assert rec.requirements and rec.because[0] == expected


def test_the_h100_extensions_imported_side_by_side() -> None:
    """The H100's snapshot, taken by this envcheck: every extension on the stack imported, each in an importer of its
    own forked from the clean copy of the probe child (lanes side by side), and no extension rule fires."""
    probe = collect_mod.load(str(FIXTURES / "gpu-h100" / "facts.json")).probes["extension-imports"]
    assert (probe.details["importer"], probe.details["background"]) == ("fork", True)
    assert probe.details["lanes"] >= 2
    assert {name: case["status"] for name, case in probe.cases.items()} == dict.fromkeys(
        ("contourpy", "cuda-core", "jaxlib", "matplotlib", "onnx", "torchaudio", "torchvision"), "ok")
    assert all(case["import_s"] >= 0 for case in probe.cases.values())
    statuses = {f["id"]: f["status"] for f in _report(FIXTURES / "gpu-h100" / "facts.json")["findings"]}
    assert {rule: statuses[rule] for rule in ("EC1101", "EC1102", "EC1104", "EC1105", "EC1106")} == dict.fromkeys(
        ("EC1101", "EC1102", "EC1104", "EC1105", "EC1106"), "pass")

"""Project policy as generated rules: ids in EC99xx, the pack's condition language, the same engine and reporters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _fakes import FIXTURES, build_facts, dist_dict, gpu_dict, nvml_dict
from click.testing import CliRunner

import envcheck
from envcheck.cli.click_cli import cli
from envcheck.derived.tables import NO_TABLES
from envcheck.errors import ConfigError, EnvcheckError
from envcheck.pipeline.stages import rule_set
from envcheck.report import json as json_report
from envcheck.rules import policy, rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Finding, Rule, Severity, Status
from envcheck.rules.rule_pack import RulePack
from envcheck.sources.project.config import Config, from_table

SCHEMA = json.loads((Path(envcheck.__file__).parent / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
CLEAN = str(FIXTURES / "clean-cuda-venv.json")
EXE = "/opt/venv/bin/python"


def cfg(**table: Any) -> Config:
    """A Config from TOML-style keys (gpu-min-capability = ...), validated as a file's would be."""
    return from_table({k.replace("_", "-"): v for k, v in table.items()}, file="/proj/pyproject.toml",
                      prefix="tool.envcheck.")


def verdicts(config: Config, require: tuple[str, ...] = (), forbid: tuple[str, ...] = (),
             **facts: Any) -> dict[str, Finding]:
    report = evaluate(RulePack(tuple(policy.rules(config, require=require, forbid=forbid)), NO_TABLES),
                      build_facts(**facts))
    return {f.rule_id: f for f in report.findings}


def test_ids_names_and_area() -> None:
    """Each declaration is a Rule with an id in its sub-range, a kebab-case name, area 'project', severity error."""
    rules = policy.rules(cfg(require=["torch>=2.6", "Torch_Vision"], forbid=["apex"], gpu_min_capability="8.0",
                             gpu_min_memory_gib=24, gpu_count=1, probes_must_pass=["sdpa"]),
                         require=["numpy<2"], forbid=["bitsandbytes"])
    assert [(r.id, r.name) for r in rules] == [
        ("EC9901", "project-require-torch"), ("EC9902", "project-require-torch-vision"),
        ("EC9903", "project-require-numpy"), ("EC9950", "project-forbid-apex"),
        ("EC9951", "project-forbid-bitsandbytes"), ("EC9980", "project-gpu-capability"),
        ("EC9981", "project-gpu-memory"), ("EC9982", "project-gpu-count"), ("EC9985", "project-probe-sdpa"),
    ]
    assert all(r.area == "project" and r.severity is Severity.ERROR and r.references == (policy.DOCS,)
               for r in rules)
    assert all(rule_pack.RULE_ID.fullmatch(r.id) and rule_pack.RULE_NAME.fullmatch(r.name) for r in rules)
    assert {r.file for r in rules} == {"/proj/pyproject.toml", "<command line>"}


@pytest.mark.parametrize(
    ("dists", "status", "summary"),
    [
        pytest.param([], Status.FAIL, "the project requires torch>=2.6; found torch (not installed)", id="absent"),
        pytest.param([dist_dict("torch", "2.5.1+cu124")], Status.FAIL,
                     "the project requires torch>=2.6; found torch 2.5.1+cu124", id="too-old"),
        pytest.param([dist_dict("torch", "2.6.0+cu124")], Status.PASS,
                     "not found: fires when `torch>=2.6` is not installed", id="satisfied"),
        pytest.param([dist_dict("torch", "2.7.0rc1")], Status.PASS,
                     "not found: fires when `torch>=2.6` is not installed", id="pre-release"),
    ],
)
def test_require(dists: list[dict[str, Any]], status: Status, summary: str) -> None:
    """require fires when the distribution is absent or outside the range, with the install command."""
    (found,) = verdicts(cfg(require=["torch>=2.6"]), dists=dists).values()
    assert (found.status, found.summary) == (status, summary)
    if status is Status.FAIL:
        # an installed torch keeps its build: the install goes to its variant's index
        # (envcheck/remedy/commands/planner.py)
        index = ("--index-url", "https://download.pytorch.org/whl/cu124") if dists else ()
        assert found.commands == ((EXE, "-m", "pip", "install", "torch>=2.6", *index),)
        assert "tool.envcheck.require[0] in /proj/pyproject.toml" in found.why


def test_require_marker_that_does_not_hold_passes_and_the_command_drops_it() -> None:
    """A requirement whose marker is false here is not required here; where it is, pip gets it without the marker."""
    config = cfg(require=["pywin32; sys_platform == 'win32'", "numpy<2; sys_platform == 'linux'"])
    found = verdicts(config)
    assert found["EC9901"].status is Status.PASS
    assert found["EC9902"].status is Status.FAIL
    assert found["EC9902"].commands == ((EXE, "-m", "pip", "install", "numpy<2"),)


@pytest.mark.parametrize(
    ("forbid", "installed", "status", "command"),
    [
        pytest.param("apex", "0.1", Status.FAIL, ("uninstall", "-y", "apex"), id="present"),
        pytest.param("apex", None, Status.PASS, None, id="absent"),
        pytest.param("numpy>=2", "2.1.0", Status.FAIL, ("install", "numpy<2"), id="in-range-complement"),
        pytest.param("numpy>=2", "1.26.4", Status.PASS, None, id="outside-range"),
        pytest.param("numpy==2.0.*", "2.0.1", Status.FAIL, ("install", "numpy!=2.0.*"), id="wildcard"),
        pytest.param("numpy>=2,<2.2", "2.1.0", Status.FAIL, None, id="two-clauses-no-command"),
    ],
)
def test_forbid(forbid: str, installed: str | None, status: Status, command: tuple[str, ...] | None) -> None:
    """forbid fires when the distribution is installed in the range; the command uninstalls it or installs the
    complement of a one-clause range; a range with several clauses has no single fixing command."""
    name = forbid.split(">")[0].split("=")[0]
    dists = [dist_dict(name, installed)] if installed else []
    (found,) = verdicts(cfg(forbid=[forbid]), dists=dists).values()
    assert found.status is status
    if status is Status.FAIL:
        assert found.summary == f"the project forbids {forbid}, and {name} {installed} is installed"
        assert found.commands == (((EXE, "-m", "pip", *command),) if command else ())


def test_braces_in_a_url_requirement_are_literal() -> None:
    """A requirement whose URL holds braces is not mistaken for a placeholder in summary or command."""
    url = "pkg @ https://example.org/pkg-{v}.whl"
    (found,) = verdicts(cfg(require=[url])).values()
    assert found.summary == f"the project requires {url}; found pkg (not installed)"
    assert found.commands == ((EXE, "-m", "pip", "install", url),)


H100, T4 = gpu_dict(0, "9.0", memory_mib=81559), gpu_dict(1, "7.5", "Tesla T4", memory_mib=15360)


@pytest.mark.parametrize(
    ("table", "nvml", "expected"),
    [
        pytest.param({"gpu_min_capability": "8.0"}, nvml_dict(H100), Status.PASS, id="capability-met"),
        pytest.param({"gpu_min_capability": "8.0"}, nvml_dict(H100, T4), Status.FAIL, id="capability-all-not-met"),
        pytest.param({"gpu_min_capability": "8.0", "gpu_match": "any"}, nvml_dict(H100, T4), Status.PASS,
                     id="capability-any-met"),
        pytest.param({"gpu_min_capability": "8.0"}, nvml_dict(status="no-driver", driver=None, cuda=None),
                     Status.FAIL, id="capability-no-gpu"),
        pytest.param({"gpu_min_capability": "8.0"}, None, Status.SKIPPED, id="capability-no-nvml-facts"),
        pytest.param({"gpu_min_capability": "8.0"}, nvml_dict(status="error"), Status.SKIPPED,
                     id="capability-nvml-failed"),
        pytest.param({"gpu_min_memory_gib": 24}, nvml_dict(H100), Status.PASS, id="memory-met"),
        pytest.param({"gpu_min_memory_gib": 24}, nvml_dict(T4), Status.FAIL, id="memory-not-met"),
        pytest.param({"gpu_min_memory_gib": 15}, nvml_dict(T4), Status.PASS, id="memory-t4-15"),
        pytest.param({"gpu_count": 2}, nvml_dict(H100, T4), Status.PASS, id="count-met"),
        pytest.param({"gpu_count": ">=4"}, nvml_dict(H100, T4), Status.FAIL, id="count-not-met"),
        pytest.param({"gpu_count": "==0"}, nvml_dict(status="no-driver", driver=None, cuda=None), Status.PASS,
                     id="count-none-wanted"),
    ],
)
def test_gpu_minimums(table: dict[str, Any], nvml: dict[str, Any] | None, expected: Status) -> None:
    """GPU minimums are gpu predicates: every GPU (or any, with gpu-match) must meet them; no GPU fails them;
    GPUs that NVML could not list, or a snapshot without NVML facts, leave them skipped, never passed."""
    (found,) = verdicts(cfg(**table), nvml=nvml).values()
    assert found.status is expected, found


@pytest.mark.parametrize(
    ("probe", "expected"),
    [
        pytest.param({"status": "ok"}, Status.PASS, id="ok"),
        pytest.param({"status": "error", "error_class": "RuntimeError", "message": "boom"}, Status.FAIL, id="error"),
        pytest.param({"status": "crashed", "error_class": "SIGSEGV", "message": "signal 11"}, Status.FAIL,
                     id="crashed"),
        pytest.param({"status": "timeout", "message": "killed after 120 s"}, Status.FAIL, id="timeout"),
        pytest.param({"status": "skipped", "message": "torch is not installed"}, Status.FAIL, id="skipped"),
        pytest.param(None, Status.SKIPPED, id="not-run-static"),
    ],
)
def test_probes_must_pass(probe: dict[str, Any] | None, expected: Status) -> None:
    """A must-pass probe passes only with status ok; under --static (not run) the rule is skipped, naming it."""
    (found,) = verdicts(cfg(probes_must_pass=["sdpa"]), probes={"sdpa": probe} if probe else None).values()
    assert found.status is expected
    if expected is Status.FAIL:
        assert found.summary.startswith(f"the project needs the sdpa probe to pass; it ended {probe['status']}: ")
    if expected is Status.SKIPPED:
        assert found.missing == ("probe sdpa (not run: probes are skipped with --static)",)


def test_too_many_entries_is_a_config_error() -> None:
    """A key's sub-range bounds its list: the 50th require is refused, naming the key."""
    with pytest.raises(ConfigError, match=r"key 'tool.envcheck.require': at most 49 entries"):
        policy.rules(cfg(require=[f"dist{i}" for i in range(50)]))


def test_invalid_command_line_requirement() -> None:
    """A --require that is not PEP 508 is an EnvcheckError naming the option and the text."""
    with pytest.raises(EnvcheckError, match=r"^--forbid: invalid requirement 'apex apex'"):
        policy.rules(Config(), forbid=["apex apex"])


def test_pack_rule_in_the_reserved_range_collides(tmp_path: Path) -> None:
    """A rule directory that uses an id a policy rule needs is a configuration error naming that file."""
    (tmp_path / "x.toml").write_text(
        '[[rule]]\nid = "EC9901"\nname = "mine"\nseverity = "info"\nsummary = "s"\nwhy = "w"\nfix = "f"\n'
        'references = ["https://e.org"]\nwhen = { python = ">=3" }\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"x.toml: key 'id': rule EC9901 uses an id reserved for project policy"):
        rule_set(cfg(require=["torch"]), rule_dirs=[tmp_path])


def test_select_narrows_the_pack_but_policy_always_runs() -> None:
    """select (configuration or command line) picks among the pack; the project's policy rules run regardless,
    and ignore drops even those."""
    rules = rule_set(cfg(require=["torch"], select=["EC0101"]))
    assert [r.id for r in rules.chosen] == ["EC0101", "EC9901"]
    assert [r.id for r in rule_set(cfg(require=["torch"]), select=["EC02"]).chosen if r.id.startswith("EC99")] \
        == ["EC9901"]
    ignored = rule_set(cfg(require=["torch"], ignore={"EC9901": "torch comes from the base image"}))
    assert "EC9901" not in [r.id for r in ignored.chosen]
    assert "EC9901" in [r.id for r in ignored.every]


def test_policy_findings_are_schema_valid_json() -> None:
    """Generated rules' verdicts go through the JSON reporter like any other and match the report schema."""
    config = cfg(require=["torch>=2.6"], forbid=["apex"], gpu_min_capability="8.0", probes_must_pass=["bf16"])
    report = evaluate(RulePack(tuple(policy.rules(config)), NO_TABLES),
                      build_facts(dists=[dist_dict("apex", "0.1")], nvml=nvml_dict(T4)))
    jsonschema.validate(json_report.as_dict(report), SCHEMA)
    assert [f.status for f in report.findings] == [Status.FAIL, Status.FAIL, Status.FAIL, Status.SKIPPED]


def test_cli_require_and_forbid_merge_with_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--require / --forbid add rules numbered after the configuration's, on a saved snapshot too."""
    (tmp_path / "envcheck.toml").write_text('require = ["cuda-python"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["check", "--facts", CLEAN, "--format", "json", "--require", "torch>=99",
                                      "--require", "numpy", "--forbid", "torch"], catch_exceptions=False)
    assert result.exit_code == 1
    found = {f["id"]: f for f in json.loads(result.output)["findings"] if f["id"].startswith("EC99")}
    assert {i: (f["name"], f["status"]) for i, f in found.items()} == {
        "EC9901": ("project-require-cuda-python", "fail"),
        "EC9902": ("project-require-torch", "fail"),
        "EC9903": ("project-require-numpy", "pass"),
        "EC9950": ("project-forbid-torch", "fail"),
    }
    assert found["EC9902"]["why"] == "Declared in --require on the command line: the project needs torch installed " \
                                     "in the range >=99."
    assert found["EC9950"]["why"] == "Declared in --forbid on the command line: the project does not work with torch " \
                                     "installed."


def test_rules_are_real_rule_objects() -> None:
    """Generated rules are the model's Rule, their conditions the language's parsed trees (not special cases)."""
    (rule,) = policy.rules(cfg(require=["torch>=2.6"]))
    assert isinstance(rule, Rule)
    assert rule.when.describe() == "`torch>=2.6` is not installed"

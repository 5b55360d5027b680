"""Reporters: a quiet line when clean, problems with why/fix/quoted commands, markdown rows, schema-valid JSON."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import FIXTURES

import envcheck
from envcheck import rules as rules_mod
from envcheck.engine import evaluate
from envcheck.facts import collect as collect_mod
from envcheck.model import Finding, Report, Severity, Status
from envcheck.report import json as json_report
from envcheck.report import markdown, render, text

SCHEMA = json.loads((Path(envcheck.__file__).parent / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
EXE = "/opt/my envs/bin/python"


def _finding(rule_id: str, status: Status, severity: Severity = Severity.ERROR, **kwargs: Any) -> Finding:
    return Finding(rule_id=rule_id, name=f"rule-{rule_id.lower()}", severity=severity, status=status,
                   summary=kwargs.pop("summary", f"rule-{rule_id.lower()}"), area="libraries", **kwargs)


APEX = _finding(
    "EC0301", Status.FAIL, summary="NVIDIA apex breaks fp16 T5 | in transformers 4.46.0",
    why="transformers swaps in FusedRMSNorm, which returns fp32 for fp16 input.",
    fix="Uninstall apex.", commands=((EXE, "-m", "pip", "uninstall", "-y", "apex"),),
    references=("https://github.com/xdit-project/xDiT/issues/101",),
)
DUPLICATE = _finding("EC0103", Status.WARN, Severity.WARNING, summary="numpy is installed twice",
                     why="w", fix="f", item={"name": "numpy", "active_version": "2.1.0"})
NOTE = _finding("EC0201", Status.INFO, Severity.INFO, summary="externally managed", why="w", fix="f")
BROKEN = _finding("EC0900", Status.ERROR, detail="ValueError: unexpected data")
QUIET = (_finding("EC0101", Status.PASS), _finding("EC0302", Status.NA, Severity.WARNING),
         _finding("EC0308", Status.SKIPPED, missing=("source dia/layers.py (not read in this snapshot)",)))


def _report(*findings: Finding, problems: tuple[str, ...] = ()) -> Report:
    return Report(findings=tuple(sorted(findings, key=lambda f: f.rule_id)), python=EXE, origin="local",
                  envcheck_version="0.1.0", collection_problems=problems)


def test_clean_text_report_is_one_line() -> None:
    """With nothing to report, the text report is one line naming the checked interpreter."""
    out = text.render(_report(QUIET[0], QUIET[1]))
    assert out.count("\n") == 1
    assert out.startswith("envcheck 0.1.0: no problems") and out.rstrip().endswith(EXE)


def test_text_problem_shows_why_fix_and_quoted_commands() -> None:
    """A problem shows its summary, why, fix, references and each command shell-quoted for the interpreter."""
    out = text.render(_report(APEX, *QUIET))
    assert "EC0301 rule-ec0301" in out
    assert "NVIDIA apex breaks fp16 T5 | in transformers 4.46.0" in out
    assert "why: transformers swaps in FusedRMSNorm" in out and "fix: Uninstall apex." in out
    assert "$ '/opt/my envs/bin/python' -m pip uninstall -y apex" in out
    assert "https://github.com/xdit-project/xDiT/issues/101" in out
    assert "EC0101" not in out  # passes are listed only with -v
    assert "\x1b[" not in out


def test_text_order_and_rule_errors() -> None:
    """Problems come worst first (rule errors, then fail, warn, info); a rule error shows its detail."""
    out = text.render(_report(NOTE, DUPLICATE, APEX, BROKEN))
    positions = [out.index(rule_id) for rule_id in ("EC0900", "EC0301", "EC0103", "EC0201")]
    assert positions == sorted(positions)
    assert "could not be evaluated: ValueError: unexpected data" in out


def test_text_verbose_lists_the_rest_with_what_skips_need() -> None:
    """-v also lists passed, n/a and skipped rules, the skipped ones with the facts they need."""
    out = text.render(_report(APEX, *QUIET), verbose=True)
    assert "EC0101 rule-ec0101  [pass]" in out and "EC0302 rule-ec0302  [n/a]" in out
    assert "EC0308 rule-ec0308  [skipped]  (needs: source dia/layers.py (not read in this snapshot))" in out


def test_text_collection_problems_come_first() -> None:
    """Collection problems are shown before the verdicts."""
    out = text.render(_report(APEX, problems=("listing distributions failed: OSError: x",)))
    assert out.splitlines()[0] == "! could not collect everything: listing distributions failed: OSError: x"


def test_text_color_only_when_asked() -> None:
    """ANSI colour codes appear only with color=True."""
    assert "\x1b[31m" in render(_report(APEX), "text", color=True)
    assert "\x1b[" not in render(_report(APEX), "text", color=False)


def test_markdown_has_a_table_row_per_problem() -> None:
    """Markdown has one table row per problem (pipes escaped), a section each, and the skipped rules folded."""
    out = markdown.render(_report(APEX, DUPLICATE, NOTE, BROKEN, *QUIET))
    rows = [line for line in out.splitlines() if line.startswith("| ") and "`EC" in line]
    assert [row.split("|")[1].strip() for row in rows] == ["error", "fail", "warn", "info"]
    assert "NVIDIA apex breaks fp16 T5 \\| in transformers 4.46.0" in rows[1]
    assert "```sh\n'/opt/my envs/bin/python' -m pip uninstall -y apex\n```" in out
    assert "### `EC0900` rule-ec0900" in out and "could not be evaluated: ValueError: unexpected data" in out
    assert "- `EC0308` rule-ec0308: needs source dia/layers.py" in out
    assert "EC0101" not in out


def test_markdown_clean() -> None:
    """A clean markdown report has a check mark and no table."""
    out = markdown.render(_report(*QUIET[:2]))
    assert out.startswith("## :white_check_mark:") and "|---|" not in out


def _validate(document: Any) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(document)


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    """The report schema is itself valid, and its $id is the one the report points to."""
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$id"] == json_report.SCHEMA_ID


def test_json_report_validates_against_schema() -> None:
    """A report with every status, an item, commands, missing facts and a rule error fits the schema exactly."""
    report = _report(APEX, DUPLICATE, NOTE, BROKEN, *QUIET, problems=("x",))
    document = json.loads(json_report.render(report))
    _validate(document)
    assert document["summary"] == {s.value: 1 for s in Status}
    assert document["findings"][0]["id"] == "EC0101"
    apex = next(f for f in document["findings"] if f["id"] == "EC0301")
    assert apex["commands"] == [{"argv": [EXE, "-m", "pip", "uninstall", "-y", "apex"],
                                 "shell": "'/opt/my envs/bin/python' -m pip uninstall -y apex"}]


@pytest.mark.parametrize("fixture", [pytest.param("clean-cuda-venv.json", id="clean"),
                                     pytest.param("torchvision-pin-conflict.json", id="conflict")])
def test_shipped_pack_report_validates(fixture: str) -> None:
    """The JSON report of the shipped pack over a recorded snapshot fits the schema."""
    report = evaluate(rules_mod.load(), collect_mod.load(str(FIXTURES / fixture)))
    _validate(json.loads(json_report.render(report)))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        pytest.param(("findings", 0, "status"), "passed", id="unknown-status"),
        pytest.param(("findings", 0, "severity"), "fatal", id="unknown-severity"),
        pytest.param(("findings", 0, "unexpected"), 1, id="extra-finding-field"),
        pytest.param(("unexpected",), 1, id="extra-top-level-field"),
        pytest.param(("findings", 1, "severity"), "warning", id="fail-needs-error-severity"),
        pytest.param(("findings", 3, "missing"), [], id="skipped-needs-missing"),
        pytest.param(("findings", 0, "item"), {"name": 1}, id="item-values-are-strings"),
        pytest.param(("summary", "fail"), -1, id="negative-count"),
    ],
)
def test_schema_rejects_malformed_reports(path: tuple[str | int, ...], value: Any) -> None:
    """The schema is strict: unknown statuses, severities and fields, and inconsistent findings are refused."""
    document = json.loads(json_report.render(_report(APEX, *QUIET)))
    _validate(document)
    broken = copy.deepcopy(document)
    node: Any = broken
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        _validate(broken)

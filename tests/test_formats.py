"""The junit and github formats: valid JUnit XML with a testcase per rule, and escaped workflow annotations."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import FIXTURES

from envcheck._cli import cli
from envcheck.model import Finding, Report, Severity, Status
from envcheck.report import FORMATS, github, junit

CONFLICT = str(FIXTURES / "torchvision-pin-conflict.json")
CLEAN = str(FIXTURES / "clean-cuda-venv.json")
EXE = "/opt/my envs/bin/python"


def _finding(rule_id: str, status: Status, severity: Severity = Severity.ERROR, **kwargs: Any) -> Finding:
    return Finding(rule_id=rule_id, name=kwargs.pop("name", f"rule-{rule_id.lower()}"), severity=severity,
                   status=status, summary=kwargs.pop("summary", f"rule-{rule_id.lower()}"), area="libraries", **kwargs)


APEX = _finding("EC0301", Status.FAIL, summary="NVIDIA apex breaks fp16 T5", why="FusedRMSNorm returns fp32.",
                fix="Uninstall apex.", commands=((EXE, "-m", "pip", "uninstall", "-y", "apex"),),
                references=("https://github.com/xdit-project/xDiT/issues/101",))
DUP_A = _finding("EC0103", Status.WARN, Severity.WARNING, summary="numpy is installed twice", item={"name": "numpy"})
DUP_B = _finding("EC0103", Status.WARN, Severity.WARNING, summary="scipy is installed twice", item={"name": "scipy"})
NOTE = _finding("EC0201", Status.INFO, Severity.INFO, summary="externally managed", fix="use a venv")
BROKEN = _finding("EC0900", Status.ERROR, detail="ValueError: unexpected data")
PASSED = _finding("EC0101", Status.PASS)
NA = _finding("EC0302", Status.NA, Severity.WARNING)
SKIPPED = _finding("EC0308", Status.SKIPPED, missing=("probe sdpa (not run: probes are skipped with --static)",))


def _report(*findings: Finding, problems: tuple[str, ...] = ()) -> Report:
    return Report(findings=tuple(sorted(findings, key=lambda f: f.rule_id)), python=EXE, origin="local",
                  envcheck_version="0.1.0", collection_problems=problems)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_both_formats_are_registered_for_the_cli() -> None:
    """--format offers junit and github, because its choices come from the FORMATS registry."""
    assert {"junit", "github"} <= set(FORMATS)
    assert "junit" in run("check", "--help").output and "github" in run("check", "--help").output


# --- junit -----------------------------------------------------------------------------------------------------


def _cases(xml: str) -> tuple[ET.Element, dict[str, ET.Element]]:
    root = ET.fromstring(xml)
    (suite,) = root.findall("testsuite")
    return root, {case.get("name", "").split()[0]: case for case in suite.findall("testcase")}


def test_junit_maps_each_verdict() -> None:
    """fail and warn are <failure>, a rule error <error>, skipped and n/a <skipped>, pass and info bare testcases."""
    root, cases = _cases(junit.render(_report(APEX, DUP_A, DUP_B, NOTE, BROKEN, PASSED, NA, SKIPPED)))
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == \
        {"tests": "7", "failures": "2", "errors": "1", "skipped": "2"}
    assert [child.tag for child in cases["EC0301"]] == ["failure"]
    failure = cases["EC0301"].find("failure")
    assert failure is not None and failure.get("type") == "error"
    assert failure.get("message") == "NVIDIA apex breaks fp16 T5"
    assert f"$ '{EXE}' -m pip uninstall -y apex" in (failure.text or "")
    assert "fix: Uninstall apex." in (failure.text or "")
    error = cases["EC0900"].find("error")
    assert error is not None and "ValueError: unexpected data" in (error.get("message") or "")
    skipped = cases["EC0308"].find("skipped")
    assert skipped is not None and "probe sdpa (not run" in (skipped.get("message") or "")
    na = cases["EC0302"].find("skipped")
    assert na is not None and (na.get("message") or "").startswith("n/a")
    assert list(cases["EC0101"]) == []
    out = cases["EC0201"].find("system-out")
    assert out is not None and "externally managed" in (out.text or "")
    assert cases["EC0301"].get("classname") == "envcheck.libraries"


def test_junit_one_testcase_per_rule_with_every_item() -> None:
    """A foreach rule with two items is one testcase whose failure names both items."""
    _, cases = _cases(junit.render(_report(DUP_A, DUP_B)))
    assert list(cases) == ["EC0103"]
    failure = cases["EC0103"].find("failure")
    assert failure is not None and failure.get("type") == "warning"
    assert failure.get("message") == "2 problems: numpy is installed twice; scipy is installed twice"
    assert "item: name=numpy" in (failure.text or "") and "item: name=scipy" in (failure.text or "")


def test_junit_survives_characters_xml_cannot_hold() -> None:
    """Control characters (an ANSI escape in a probe's message) are replaced, so the document still parses."""
    odd = _finding("EC0501", Status.FAIL, summary="torch import failed: \x1b[31mboom\x00 <&> \"quoted\"")
    _, cases = _cases(junit.render(_report(odd)))
    failure = cases["EC0501"].find("failure")
    assert failure is not None and failure.get("message") == "torch import failed: \ufffd[31mboom\ufffd <&> \"quoted\""


def test_junit_properties_and_collection_problems() -> None:
    """The suite names the checked interpreter; collection problems go to its system-out."""
    root, _ = _cases(junit.render(_report(PASSED, problems=("NVML: driver not loaded",))))
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props == {"python": EXE, "origin": "local", "envcheck_version": "0.1.0"}
    out = root.find("testsuite/system-out")
    assert out is not None and "could not collect everything: NVML: driver not loaded" in (out.text or "")


def test_junit_from_the_cli_is_valid_and_also_writes_a_second_format(tmp_path: Path) -> None:
    """`--format junit` on a recorded conflict parses; `--also FORMAT=FILE` writes another format in the same run."""
    xml_file, md_file = tmp_path / "envcheck.xml", tmp_path / "summary.md"
    result = run("check", "--facts", CONFLICT, "--format", "json", "--also", f"junit={xml_file}",
                 "--also", f"markdown={md_file}")
    assert result.exit_code == 1
    report = json.loads(result.output)
    root, cases = _cases(xml_file.read_text(encoding="utf-8"))
    assert int(root.get("tests", "0")) == len({f["id"] for f in report["findings"]})
    failure = cases["EC0101"].find("failure")
    assert failure is not None and "torchvision 0.21.0 requires torch==2.6.0" in (failure.get("message") or "")
    assert md_file.read_text(encoding="utf-8").startswith("## :x: envcheck")


@pytest.mark.parametrize("value", [pytest.param("junit", id="no-file"), pytest.param("xml=r.xml", id="unknown"),
                                   pytest.param("junit=", id="empty-file")])
def test_also_needs_format_and_file(value: str) -> None:
    """--also takes FORMAT=FILE with a known format; anything else is a usage error (exit 2)."""
    result = run("check", "--facts", CLEAN, "--also", value)
    assert result.exit_code == 2 and "expected FORMAT=FILE" in result.output


# --- github ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "data", "prop"),
    [
        pytest.param("plain", "plain", "plain", id="plain"),
        pytest.param("100% sure", "100%25 sure", "100%25 sure", id="percent"),
        pytest.param("a\nb\r\nc", "a%0Ab%0D%0Ac", "a%0Ab%0D%0Ac", id="newlines"),
        pytest.param("EC0101: a, b", "EC0101: a, b", "EC0101%3A a%2C b", id="colon-comma"),
        pytest.param("%0A", "%250A", "%250A", id="already-escaped-looking"),
        pytest.param("::error::x", "::error::x", "%3A%3Aerror%3A%3Ax", id="command-lookalike"),
    ],
)
def test_github_escaping(text: str, data: str, prop: str) -> None:
    """Messages escape %, CR and LF; properties also : and , (actions/toolkit's escapeData / escapeProperty)."""
    assert github.escape_data(text) == data
    assert github.escape_property(text) == prop


def test_github_annotation_line() -> None:
    """An annotation is one line: ::LEVEL props::message, with properties only when given."""
    assert github.annotation("error", "m") == "::error::m"
    assert github.annotation("warning", "two\nlines", title="EC0103 x, y", file="pyproject.toml", line=3) == \
        "::warning file=pyproject.toml,line=3,title=EC0103 x%2C y::two%0Alines"


def test_github_report_annotates_each_problem() -> None:
    """Fail, warn, info and rule errors become error / warning / notice / warning; the rest are not annotated."""
    out = github.render(_report(APEX, DUP_A, NOTE, BROKEN, PASSED, NA, SKIPPED))
    lines = out.splitlines()
    # Worst first, as in every report: the rule error, the failure, the warning, the note.
    assert [line.split(" ", 1)[0] for line in lines[:-1]] == ["::warning", "::error", "::warning", "::notice"]
    assert all(line.startswith("::") for line in lines[:-1])
    assert lines[1] == ("::error title=EC0301 rule-ec0301::NVIDIA apex breaks fp16 T5%0Afix: Uninstall apex.%0A"
                        f"$ '{EXE}' -m pip uninstall -y apex%0Asee: https://github.com/xdit-project/xDiT/issues/101")
    assert lines[0] == ("::warning title=EC0900 rule-ec0900::this rule could not be evaluated: "
                        "ValueError: unexpected data")
    assert lines[-1].startswith("envcheck 0.1.0: 1 error, 1 warning, 1 note;")


def test_github_clean_report_is_one_plain_line() -> None:
    """With nothing to report there is no annotation, only the tally."""
    assert github.render(_report(PASSED, NA)) == f"envcheck 0.1.0: no problems; 1 passed, 1 n/a — {EXE}\n"


def test_github_from_the_cli() -> None:
    """`--format github` on a recorded conflict annotates EC0101 with the fixing command; the exit code is 1."""
    result = run("check", "--facts", CONFLICT, "--format", "github")
    assert result.exit_code == 1
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("::error title=EC0101 ")]
    assert line.startswith("::error title=EC0101 requirement-version-conflict::torchvision 0.21.0 requires "
                           "torch==2.6.0, but torch 2.13.0+cpu is installed")
    assert "%0A$ /opt/venv/bin/python -m pip install torch==2.6.0" in line


def test_readme_lists_every_format() -> None:
    """The README's --format row names every registered format."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    (row,) = [line for line in readme.splitlines() if line.startswith("| `--format ")]
    assert row.split("`")[1] == "--format " + "\\|".join(["text", "json", "markdown", "junit", "github"])
    assert set(FORMATS) == {"text", "json", "markdown", "junit", "github"}

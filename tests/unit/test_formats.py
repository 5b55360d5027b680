"""The formats: every enum member renders, static checks import one reporter, JUnit XML with a testcase per rule,
and escaped GitHub workflow annotations, one per rule."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest
from _fakes import FIXTURES
from click.testing import CliRunner, Result
from report_samples import (
    APEX,
    BROKEN,
    DUPLICATES,
    EVERY_STATUS,
    EXE,
    MISSING,
    NA,
    NOTE,
    PASSED,
    SKIPPED,
    finding,
    report,
)

from envcheck.cli.click_cli import cli
from envcheck.facts.probe_results import ProbeResult
from envcheck.report import github, junit, render, reporter
from envcheck.report.interface import DocFormat, FleetFormat, ProbeFormat, ReportFormat
from envcheck.report.probes import render as render_probes
from envcheck.rules.model import Status

CONFLICT = str(FIXTURES / "torchvision-pin-conflict.json")
CLEAN = str(FIXTURES / "clean-cuda-venv.json")
DUP_A, DUP_B = DUPLICATES


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# --- the formats ------------------------------------------------------------------------------------------------


def _parses_as(fmt: ReportFormat, out: str) -> None:
    """Each format's own sanity check: the text is what a consumer of that format can read."""
    if fmt is ReportFormat.JSON:
        assert json.loads(out)["schema"] == 1
    elif fmt is ReportFormat.JUNIT:
        assert ET.fromstring(out).tag == "testsuites"
    elif fmt is ReportFormat.GITHUB:
        assert out.startswith("::") and out.splitlines()[-1].startswith("envcheck 0.1.0:")
    elif fmt is ReportFormat.MARKDOWN:
        assert out.startswith("## :x: envcheck 0.1.0")
    else:
        assert out.splitlines()[-1].startswith("envcheck 0.1.0:")


@pytest.mark.parametrize("fmt", list(ReportFormat), ids=lambda f: f.value)
def test_every_format_renders(fmt: ReportFormat) -> None:
    """Every member of ReportFormat names a reporter that renders a report of every verdict, by value or member."""
    sample = report(*EVERY_STATUS, problems=("NVML: driver not loaded",))
    out = reporter(fmt).render(sample, color=False, verbose=True)
    _parses_as(fmt, out)
    assert "EC0301" in out and "EC0900" in out
    assert render(sample, fmt.value, verbose=True) == out


def test_the_cli_offers_exactly_the_enumerated_formats() -> None:
    """--format and --also of check, and every other command's --format, list the members of their enums."""
    def choices(*command: str) -> list[str]:
        ctx = cli.make_context("envcheck", [*command, "--help"], resilient_parsing=True)
        leaf = ctx.command
        for name in command:
            assert isinstance(leaf, click.Group)
            leaf = leaf.commands[name]
        (option,) = [p for p in leaf.params if p.name == "fmt"]
        assert isinstance(option.type, click.Choice)
        return list(option.type.choices)

    assert choices("check") == ReportFormat.names() == ["text", "json", "markdown", "junit", "github"]
    assert choices("fleet") == choices("fleet", "merge") == FleetFormat.names()
    assert choices("probe") == ProbeFormat.names()
    assert choices("rule") == DocFormat.names()
    bad = run("check", "--facts", CLEAN, "--also", "xml=r.xml")
    assert "FORMAT one of text, json, markdown, junit, github," in bad.output


def test_a_static_check_imports_no_other_reporter() -> None:
    """`envcheck check --format text` imports the text reporter only: no XML, markdown, github or JSON reporter."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from envcheck.cli.click_cli import cli\n"
        f"CliRunner().invoke(cli, ['check', '--facts', {CONFLICT!r}])\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('xml', 'envcheck.report')))))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "envcheck.report.text" in loaded
    assert not [m for m in loaded if m.startswith("xml") or m.rsplit(".", 1)[-1] in ("junit", "markdown", "github",
                                                                                      "json")]


@pytest.mark.parametrize("fmt", list(FleetFormat), ids=lambda f: f.value)
def test_every_fleet_format_renders(fmt: FleetFormat) -> None:
    """Every FleetFormat member renders the fleet report of the recorded nodes."""
    result = run("fleet", "merge", *(str(p) for p in sorted((FIXTURES / "fleet").glob("node-*.json"))),
                 "--format", fmt.value)
    assert result.exit_code in (0, 1), result.output
    if fmt is FleetFormat.JSON:
        assert json.loads(result.output)["summary"]["nodes"] == 3
    else:
        assert result.output.startswith("envcheck fleet: 3 nodes")


@pytest.mark.parametrize("fmt", list(ProbeFormat), ids=lambda f: f.value)
def test_every_probe_format_renders(fmt: ProbeFormat) -> None:
    """Every ProbeFormat member renders probe results, a case table included."""
    results = {"sdpa": ProbeResult(status="failed", error_class="RuntimeError", message="no kernel",
                                   cases={"cuda:0/backend=flash,dtype=float16": {"status": "ok"}}, wall_s=0.5)}
    out = render_probes(results, fmt.value, from_cache=True)
    if fmt is ProbeFormat.JSON:
        assert json.loads(out)["sdpa"]["status"] == "failed"
    else:
        assert out.startswith("sdpa: failed in 0.50 s — RuntimeError: no kernel\n") and "cached results" in out


@pytest.mark.parametrize("fmt", list(DocFormat), ids=lambda f: f.value)
def test_every_rule_doc_format_renders(fmt: DocFormat) -> None:
    """Every DocFormat member documents a rule through `envcheck rule`, its command quoted alike."""
    result = run("rule", "EC0303", "--format", fmt.value)
    assert result.exit_code == 0
    if fmt is DocFormat.JSON:
        assert json.loads(result.output)[0]["commands"] == [["{python}", "-m", "pip", "install", "numpy<2"]]
    else:
        assert "python -m pip install 'numpy<2'" in result.output


# --- junit -----------------------------------------------------------------------------------------------------


def _cases(xml: str) -> tuple[ET.Element, dict[str, ET.Element]]:
    root = ET.fromstring(xml)
    (suite,) = root.findall("testsuite")
    return root, {case.get("name", "").split()[0]: case for case in suite.findall("testcase")}


def test_junit_maps_each_verdict() -> None:
    """fail and warn are <failure>, a rule error <error>, skipped and n/a <skipped>, pass and info bare testcases."""
    root, cases = _cases(junit.render(report(APEX, DUP_A, DUP_B, NOTE, BROKEN, PASSED, NA, SKIPPED)))
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == \
        {"tests": "7", "failures": "2", "errors": "1", "skipped": "2"}
    assert [child.tag for child in cases["EC0301"]] == ["failure"]
    failure = cases["EC0301"].find("failure")
    assert failure is not None and failure.get("type") == "error"
    assert failure.get("message") == "NVIDIA apex breaks fp16 T5 | in transformers 4.46.0"
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
    """A foreach rule with two items is one testcase whose failure lists both, the why once, the fix of each."""
    _, cases = _cases(junit.render(report(DUP_A, DUP_B)))
    assert list(cases) == ["EC0103"]
    failure = cases["EC0103"].find("failure")
    assert failure is not None and failure.get("type") == "warning"
    assert failure.get("message") == "2 problems: numpy is installed twice; scipy is installed twice"
    assert (failure.text or "").splitlines() == [
        "- numpy is installed twice", "- scipy is installed twice", "why: Two metadata folders for one name.",
        "fix: Uninstall numpy until pip says it is not installed.",
        "fix: Uninstall scipy until pip says it is not installed.",
        *(f"$ '{EXE}' -m pip uninstall -y {name}" for name in ("numpy", "numpy", "scipy", "scipy"))]


def test_junit_merges_a_rules_install_commands() -> None:
    """Two missing requirements are one failure with one pip install of both."""
    _, cases = _cases(junit.render(report(*MISSING)))
    failure = cases["EC0102"].find("failure")
    assert failure is not None
    assert [ln for ln in (failure.text or "").splitlines() if ln.startswith("$ ")] == \
        [f"$ '{EXE}' -m pip install 'numpy<2' 'pillow!=8.3.*,>=5.3.0'"]


def test_junit_survives_characters_xml_cannot_hold() -> None:
    """Control characters (an ANSI escape in a probe's message) are replaced, so the document still parses."""
    odd = finding("EC0501", Status.FAIL, summary="torch import failed: \x1b[31mboom\x00 <&> \"quoted\"")
    _, cases = _cases(junit.render(report(odd)))
    failure = cases["EC0501"].find("failure")
    assert failure is not None and failure.get("message") == "torch import failed: \ufffd[31mboom\ufffd <&> \"quoted\""


def test_junit_properties_and_collection_problems() -> None:
    """The suite names the checked interpreter; collection problems go to its system-out."""
    root, _ = _cases(junit.render(report(PASSED, problems=("NVML: driver not loaded",))))
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
    document = json.loads(result.output)
    root, cases = _cases(xml_file.read_text(encoding="utf-8"))
    assert int(root.get("tests", "0")) == len({f["id"] for f in document["findings"]})
    failure = cases["EC0702"].find("failure")
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
    out = github.render(report(APEX, DUP_A, NOTE, BROKEN, PASSED, NA, SKIPPED))
    lines = out.splitlines()
    # Worst first, as in every report: the rule error, the failure, the warning, the note.
    assert [line.split(" ", 1)[0] for line in lines[:-1]] == ["::warning", "::error", "::warning", "::notice"]
    assert all(line.startswith("::") for line in lines[:-1])
    assert lines[1] == ("::error title=EC0301 rule-ec0301::NVIDIA apex breaks fp16 T5 | in transformers 4.46.0"
                        f"%0Afix: Uninstall apex.%0A$ '{EXE}' -m pip uninstall -y apex%0A"
                        "see: https://github.com/xdit-project/xDiT/issues/101")
    assert lines[0] == ("::warning title=EC0900 rule-ec0900::this rule could not be evaluated: "
                        "ValueError: unexpected data")
    assert lines[-1].startswith("envcheck 0.1.0: 1 error, 1 warning, 1 note;")


def test_github_annotates_a_rule_once_for_all_its_items() -> None:
    """A rule that fired for two items is one annotation listing both, with one merged command."""
    (line, _) = github.render(report(*MISSING)).splitlines()
    assert line == ("::error title=EC0102 requirement-not-installed ×2::"
                    "- torchvision 0.21.0 requires numpy<2, which is not installed%0A"
                    "- torchvision 0.21.0 requires pillow!=8.3.*,>=5.3.0, which is not installed%0A"
                    "fix: Install the missing requirement.%0A"
                    f"$ '{EXE}' -m pip install 'numpy<2' 'pillow!=8.3.*,>=5.3.0'%0A"
                    "see: https://pip.pypa.io/en/stable/cli/pip_check/")


def test_github_clean_report_is_one_plain_line() -> None:
    """With nothing to report there is no annotation, only the tally."""
    assert github.render(report(PASSED, NA)) == f"envcheck 0.1.0: no problems; 1 passed, 1 n/a — {EXE}\n"


def test_github_from_the_cli() -> None:
    """`--format github` on a recorded pin conflict annotates EC0702 with the command that keeps torch; exit 1."""
    result = run("check", "--facts", CONFLICT, "--format", "github")
    assert result.exit_code == 1
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("::error title=EC0702 ")]
    assert line.startswith("::error title=EC0702 companion-release-for-installed-torch::torchvision 0.21.0 "
                           "requires torch==2.6.0, but torch 2.13.0+cpu is installed")
    assert ("%0A$ /opt/venv/bin/python -m pip install --no-deps torchvision==0.28.0+cpu --index-url "
            "https://download.pytorch.org/whl/cpu") in line


def test_manual_lists_every_format() -> None:
    """The manual's --format row names every member of ReportFormat."""
    manual = (Path(__file__).resolve().parents[2] / "docs" / "usage.md").read_text(encoding="utf-8")
    (row,) = [line for line in manual.splitlines() if line.startswith("| `--format ")]
    assert row.split("`")[1] == "--format " + "\\|".join(ReportFormat.names())

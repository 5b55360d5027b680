"""A verdict says what it did not see: an environment without torch, or a report that states no torch, is not a
pass of the torch rules, and a report from which nothing was read gets no verdict at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _fakes import build_facts, dist_dict, torch_dict
from _torch import clean_env
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.report import render
from envcheck.report.common import tally
from envcheck.rules.engine import evaluate
from envcheck.rules.rule_pack import RulePack, load

NOT_INSTALLED = "torch is not installed here, so "
NOT_SAID = "the report does not say whether torch is installed, so "
FREEZE = "numpy==1.26.4\nsix==1.16.0\nrequests==2.32.3\n"  # pip freeze, unfenced: a partial package list


@pytest.fixture(scope="module")
def pack() -> RulePack:
    return load()


def test_no_torch_is_said_in_the_tally(pack: RulePack) -> None:
    """Without torch, "no problems" is followed by how many rules about torch were not checked."""
    report = evaluate(pack, build_facts(dists=[dist_dict("numpy", "1.26.4")]))
    assert len(report.unseen) == 1 and report.unseen[0].startswith(NOT_INSTALLED)
    assert report.unseen[0].endswith(" rules about torch were not checked")
    assert tally(report).startswith(f"no problems; {NOT_INSTALLED}")


def test_torch_installed_says_nothing_more(pack: RulePack) -> None:
    """With torch installed the tally is the counts alone."""
    report = evaluate(pack, build_facts(dists=[dist_dict("torch", "2.5.1+cu124")], torch=torch_dict()))
    assert report.unseen == ()
    assert "torch" not in tally(report)


def test_rules_about_other_things_only_say_nothing(pack: RulePack) -> None:
    """When no chosen rule asks about torch, its absence goes unmentioned: nothing was left unchecked."""
    chosen = RulePack(tuple(r for r in pack.rules if r.area == "dependencies"), pack.tables)
    assert evaluate(chosen, build_facts()).unseen == ()


@pytest.mark.parametrize("fmt", ["text", "markdown", "junit", "github"])
def test_every_format_says_it(pack: RulePack, fmt: str) -> None:
    """The text, markdown, junit and github reports carry the same sentence in their tally."""
    assert NOT_INSTALLED in render(evaluate(pack, build_facts()), fmt)


def test_json_lists_it(pack: RulePack) -> None:
    """The JSON report has the sentences under `unseen` (empty when nothing was unseen)."""
    data = json.loads(render(evaluate(pack, build_facts()), "json"))
    assert data["unseen"][0].startswith(NOT_INSTALLED)
    with_torch = build_facts(dists=[dist_dict("torch", "2.5.1+cu124")], torch=torch_dict())
    assert json.loads(render(evaluate(pack, with_torch), "json"))["unseen"] == []


def test_a_real_venv_without_torch(tmp_path: Path) -> None:
    """`envcheck check --python VENV` of a fresh venv without torch, outside any project, exits 0 and says that
    torch is not installed there, in the text and the JSON report."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    run = [sys.executable, "-m", "envcheck", "check", "--static", "--no-cache", "--python", str(python)]
    proc = subprocess.run(run, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.splitlines()[-1]
    assert f"no problems; {NOT_INSTALLED}" in last and " rules about torch were not checked; " in last, last
    proc = subprocess.run([*run, "--format", "json"], cwd=cwd, env=clean_env(), capture_output=True, text=True,
                          timeout=300, check=False)
    assert json.loads(proc.stdout)["unseen"][0].startswith(NOT_INSTALLED)


def test_a_report_that_states_no_torch() -> None:
    """A partial package list without torch says what was read and that it does not say whether torch is
    installed; the verdict stands (exit 0)."""
    result = CliRunner().invoke(cli, ["check", "--report", "-"], input=FREEZE)
    assert result.exit_code == 0, result.output
    assert "from the report <stdin>: block 1 (pip freeze, lines 1-3)" in result.output
    assert f"no problems; {NOT_SAID}" in result.output


@pytest.mark.parametrize("command", ["check", "facts"])
@pytest.mark.parametrize("content", [
    pytest.param("", id="empty"),
    pytest.param("\n\n   \n", id="blank"),
    pytest.param("Thanks for the tool! It crashes on my machine.\n", id="prose"),
    pytest.param("```\nhello\n```\n", id="fence-of-nothing"),
])
def test_a_report_with_nothing_read_has_no_verdict(tmp_path: Path, command: str, content: str) -> None:
    """A report in which nothing envcheck reads is recognised is exit 2 with one line, not "no problems"."""
    report = tmp_path / "issue.md"
    report.write_text(content, encoding="utf-8")
    for args, name in (([str(report)], str(report)), (["-"], "<stdin>")):
        result = CliRunner().invoke(cli, [command, "--report", *args], input=content)
        assert result.exit_code == 2, result.output
        (line,) = result.output.splitlines()
        assert line.startswith(f"envcheck: error: {name}: nothing envcheck reads was recognised in it (collect_env, "
                               "pip list or freeze, conda list, nvidia-smi, ")
        assert line.endswith("; docs/reports.md lists them): no verdict"), line

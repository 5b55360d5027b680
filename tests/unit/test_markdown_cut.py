"""`--max-bytes`: the markdown report cut by envcheck after a whole problem, with a line saying what was left out,
so that a cut can never end inside a code span and free the mention or link the quoting made inert (the
issue-triage workflow posts the report as a comment, which GitHub bounds)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from _fakes import FIXTURES
from click.testing import CliRunner
from report_samples import finding, report
from test_inert_output import GPU, PAYLOAD, assert_inert_markdown

from envcheck.cli.click_cli import cli
from envcheck.report import markdown, render
from envcheck.rules.model import Report, Status

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "issue-triage.yml"


def _hostile(count: int) -> Report:
    """`count` problems of distinct rules, each quoting the payload in its summary, fix and command, and some with
    several items (one section listing them), and a collection problem quoting it too."""
    findings = []
    for i in range(count):
        for item in range(1 + i % 3):
            findings.append(finding(f"EC{1000 + i:04d}", Status.FAIL if i % 2 else Status.WARN,
                                    summary=f"{PAYLOAD} #{i}.{item} `{'`' * (i % 4)}", fix=f"fix {PAYLOAD}",
                                    commands=(("pip", "install", f"pkg-{i}-{item}"),)))
    return report(*findings, problems=(PAYLOAD,))


def _sections(md: str) -> dict[str, str]:
    """Each problem's section, from its `### ` heading to what follows it (a heading, the parts after the problems,
    the cut line)."""
    parts = re.split(r"(?m)^(?=### |\*\*Cut to |Collection problems:|<details>|Commands use )", md)
    return {part.split("`")[1]: part for part in parts if part.startswith("### ")}


@pytest.mark.parametrize("max_bytes", [1000, 4000, 20_000, 60_000])
def test_a_cut_report_fits_stays_inert_and_ends_on_a_whole_problem(max_bytes: int) -> None:
    hostile = _hostile(300)
    whole = render(hostile, "markdown")
    assert len(whole.encode()) > 60_000
    cut = markdown.render(hostile, max_bytes=max_bytes)
    assert len(cut.encode("utf-8")) <= max_bytes
    assert_inert_markdown(cut)
    kept, full = _sections(cut), _sections(whole)
    assert list(kept) == list(full)[:len(kept)]  # the first problems, in the report's order
    for rule_id, section in kept.items():  # each whole: its heading, items, fix and command
        assert section == full[rule_id], rule_id
    rows = [line for line in cut.splitlines() if line.startswith("| ") and "`EC" in line]
    assert len(rows) == len(kept)
    note = cut.rstrip().splitlines()[-1]
    left = len(full) - len(kept)
    assert note.startswith(f"**Cut to {max_bytes:,} bytes:** {left} problems (`{list(full)[len(kept)]}`")
    assert ("Collection problems:" in cut) != ("collection problems left out" in note)


def test_a_report_within_the_bound_is_unchanged() -> None:
    small = _hostile(3)
    assert markdown.render(small, max_bytes=60_000) == render(small, "markdown")


def test_what_is_kept_does_not_depend_on_what_follows() -> None:
    """3,000 problems cut to 60,000 bytes keep the same first problems as 300 do: the cut counts each kept
    problem's size, whatever the rest weighs."""
    few, many = markdown.render(_hostile(300), max_bytes=60_000), markdown.render(_hostile(3000), max_bytes=60_000)
    assert list(_sections(few)) == list(_sections(many))


def _check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["check", *args])
    return result.exit_code, result.output


def test_the_command_line_cuts_a_pasted_report(tmp_path: Path) -> None:
    """`check --report FILE --format markdown --max-bytes N`: a pasted report with a hostile GPU name, cut."""
    paste = (FIXTURES / "reports" / "torch-2.6-rtx5090d.txt").read_text(encoding="utf-8")
    paste = paste.replace(f"configuration: GPU 0: {GPU}", f"configuration: GPU 0: {GPU} {PAYLOAD}")
    body = tmp_path / "issue.md"
    body.write_text(f"Broken.\n\n```\n{paste}\n```\n", encoding="utf-8")
    code, whole = _check("--report", str(body), "--format", "markdown")
    assert code == 1 and len(whole.encode()) > 3000
    code, cut = _check("--report", str(body), "--format", "markdown", "--max-bytes", "3000")
    assert code == 1 and len(cut.encode()) <= 3000 + 1  # click adds no newline; echo's own, at most
    assert "**Cut to 3,000 bytes:**" in cut
    assert_inert_markdown(cut)


@pytest.mark.parametrize("args", [
    pytest.param(("--format", "markdown", "--max-bytes", "999"), id="too-small"),
    pytest.param(("--format", "text", "--max-bytes", "5000"), id="not-markdown"),
])
def test_max_bytes_without_a_markdown_report_is_a_usage_error(args: tuple[str, ...]) -> None:
    code, output = _check("--facts", str(FIXTURES / "clean-cuda-venv.json"), "--no-config", *args)
    assert code == 2 and "--max-bytes" in output


def test_the_triage_workflow_lets_envcheck_cut_the_comment() -> None:
    """The step asks envcheck for at most 60,000 bytes and cuts nothing itself (no `head -c` of the report)."""
    jobs = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]
    (step,) = [s for s in jobs["diagnose"]["steps"] if s.get("id") == "check"]
    assert "--max-bytes 60000" in step["run"]
    assert not re.search(r"head -c \S+ \"\$RUNNER_TEMP/report\.md\"", step["run"])

"""Reporters: a quiet line when clean, problems with why/fix/quoted commands, a rule's items grouped, markdown rows,
schema-valid JSON."""

from __future__ import annotations

import copy
import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
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
    QUIET,
    finding,
    recorded,
    report,
)

import envcheck
from envcheck.remedy import fix
from envcheck.report import json as json_report
from envcheck.report import markdown, render, text
from envcheck.report.common import command_lines
from envcheck.rules.model import Status

SCHEMA = json.loads((Path(envcheck.__file__).parent / "schemas" / "report.schema.json").read_text(encoding="utf-8"))


def test_clean_text_report_is_one_line() -> None:
    """With nothing to report, the text report is one line naming the checked interpreter."""
    out = text.render(report(PASSED, NA))
    assert out.count("\n") == 1
    assert out.startswith("envcheck 0.1.0: no problems") and out.rstrip().endswith(EXE)


def test_text_problem_shows_why_fix_and_quoted_commands() -> None:
    """A problem shows its summary, why, fix, references and each command shell-quoted for the interpreter."""
    out = text.render(report(APEX, *QUIET))
    assert "EC0301 rule-ec0301  [error]\n" in out
    assert "NVIDIA apex breaks fp16 T5 | in transformers 4.46.0" in out
    assert "why: transformers swaps in FusedRMSNorm" in out and "fix: Uninstall apex." in out
    assert "$ '/opt/my envs/bin/python' -m pip uninstall -y apex" in out
    assert "https://github.com/xdit-project/xDiT/issues/101" in out
    assert "EC0101" not in out  # passes are listed only with -v
    assert "\x1b[" not in out


def test_text_order_and_rule_errors() -> None:
    """Problems come worst first (rule errors, then fail, warn, info); a rule error shows its detail."""
    out = text.render(report(NOTE, *DUPLICATES, APEX, BROKEN))
    positions = [out.index(rule_id) for rule_id in ("EC0900", "EC0301", "EC0103", "EC0201")]
    assert positions == sorted(positions)
    assert "could not be evaluated: ValueError: unexpected data" in out


def test_text_verbose_lists_the_rest_with_what_skips_need() -> None:
    """-v also lists passed, n/a and skipped rules, the skipped ones with the facts they need."""
    out = text.render(report(APEX, *QUIET), verbose=True)
    assert "EC0101 rule-ec0101  [pass]" in out and "EC0302 rule-ec0302  [n/a]" in out
    assert "EC0308 rule-ec0308  [skipped]  (needs: probe sdpa (not run: probes are skipped with --static))" in out


def test_text_collection_problems_come_first() -> None:
    """Collection problems are shown before the verdicts."""
    out = text.render(report(APEX, problems=("listing distributions failed: OSError: x",)))
    assert out.splitlines()[0] == "! could not collect everything: listing distributions failed: OSError: x"


def test_text_color_only_when_asked() -> None:
    """ANSI colour codes appear only with color=True."""
    assert "\x1b[31m" in render(report(APEX), "text", color=True)
    assert "\x1b[" not in render(report(APEX), "text", color=False)


# --- a rule that fired for several items ------------------------------------------------------------------------


def test_text_groups_a_rules_items_with_one_merged_command() -> None:
    """Two missing requirements are one block: both summaries listed, why and fix once, one pip install of both."""
    out = text.render(report(*MISSING))
    assert out.count("EC0102") == 1 and "EC0102 requirement-not-installed  [error ×2]" in out
    assert "    - torchvision 0.21.0 requires numpy<2, which is not installed\n" in out
    assert "    - torchvision 0.21.0 requires pillow!=8.3.*,>=5.3.0, which is not installed\n" in out
    assert out.count("why: ") == 1 and out.count("fix: ") == 1 and out.count("see: ") == 1
    (line,) = [ln for ln in out.splitlines() if "$ " in ln]
    assert line == "      $ '/opt/my envs/bin/python' -m pip install 'numpy<2' 'pillow!=8.3.*,>=5.3.0'"


def test_grouped_commands_are_the_ones_fix_runs() -> None:
    """The command a report shows for a rule's items is the one `envcheck fix` plans for them, removals kept."""
    out = text.render(report(*DUPLICATES))
    shown = [ln.split("$ ", 1)[1] for ln in out.splitlines() if "$ " in ln]
    assert shown == [shlex.join(argv) for argv in fix.commands(DUPLICATES, EXE)]
    assert shown == [f"'{EXE}' -m pip uninstall -y {name}" for name in ("numpy", "numpy", "scipy", "scipy")]
    # The fix text names the item, so each item's is shown; the why is the same for both, so it is shown once.
    assert "fix: Uninstall numpy until" in out and "fix: Uninstall scipy until" in out
    assert out.count("why: ") == 1


def test_text_lists_ten_items_and_every_one_with_verbose() -> None:
    """Beyond ten items the text report says how many more there are; -v lists each one; the command has all."""
    many = [finding("EC0102", Status.FAIL, summary=f"needs pkg{i}",
                    commands=((EXE, "-m", "pip", "install", f"pkg{i}"),)) for i in range(12)]
    out = text.render(report(*many))
    assert "    - needs pkg9\n" in out and "pkg10," not in out and "    - … and 2 more (-v lists every one)\n" in out
    command = out[out.index("$ "):out.index("\n\n")]
    argv = shlex.split(command.replace("\\\n", " "))[1:]
    assert argv == [EXE, "-m", "pip", "install", *(f"pkg{i}" for i in range(12))]
    verbose = text.render(report(*many), verbose=True)
    assert "    - needs pkg11\n" in verbose and "more (-v" not in verbose


@pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX sh on PATH")
def test_long_commands_wrap_into_lines_a_shell_joins(tmp_path: Path) -> None:
    """A command wider than the line is split at argument boundaries with ` \\`; /bin/sh runs it as one command."""
    argv = ["printf", "%s|", *(f"requirement-{i}<{i + 1}" for i in range(15)), "a b", "it's"]
    lines = command_lines(argv, 60)
    assert len(lines) > 1 and all(len(line) <= 60 for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1]) and not lines[-1].endswith("\\")
    result = subprocess.run(["sh", "-c", "\n".join(lines)], capture_output=True, text=True, check=True,
                            cwd=tmp_path)
    assert result.stdout.split("|")[:-1] == argv[2:]
    assert command_lines(argv[:4], 60) == [shlex.join(argv[:4])]


def test_a_single_findings_command_stays_on_one_line() -> None:
    """Only a merged command is continued over lines: one finding's command is one line, however long its path."""
    python = "/home/someone/projects/a-project-with-a-long-name/.venvs/python3.11-cuda12.8/bin/python"
    long_one = finding("EC0101", Status.FAIL, commands=((python, "-m", "pip", "install", "torch==2.6.0"),))
    out = text.render(report(long_one, python=python))
    assert f"      $ {python} -m pip install torch==2.6.0\n" in out and " \\\n" not in out


def test_markdown_groups_a_rules_items() -> None:
    """Markdown shows a rule's items as one table row and one section: a list, the why once, one merged command."""
    out = markdown.render(report(*MISSING))
    rows = [line for line in out.splitlines() if line.startswith("| fail")]
    assert rows == ["| fail | `EC0102` requirement-not-installed | error | torchvision 0.21.0 requires numpy<2, "
                    "which is not installed (and 1 more) |"]
    assert out.count("### `EC0102`") == 1 and out.count("**Why.**") == 1
    assert "- torchvision 0.21.0 requires numpy<2, which is not installed\n" in out
    assert "```sh\n'/opt/my envs/bin/python' -m pip install 'numpy<2' 'pillow!=8.3.*,>=5.3.0'\n```" in out


def test_markdown_has_a_table_row_per_problem() -> None:
    """Markdown has one table row per rule with problems (pipes escaped), a section each, skipped rules folded."""
    out = markdown.render(report(APEX, *DUPLICATES, NOTE, BROKEN, *QUIET))
    rows = [line for line in out.splitlines() if line.startswith("| ") and "`EC" in line]
    assert [row.split("|")[1].strip() for row in rows] == ["error", "fail", "warn", "info"]
    assert "NVIDIA apex breaks fp16 T5 \\| in transformers 4.46.0" in rows[1]
    assert "```sh\n'/opt/my envs/bin/python' -m pip uninstall -y apex\n```" in out
    assert "### `EC0900` rule-ec0900" in out and "could not be evaluated: ValueError: unexpected data" in out
    assert "- `EC0308` rule-ec0308: needs probe sdpa" in out
    assert "EC0101" not in out


def test_markdown_clean() -> None:
    """A clean markdown report has a check mark and no table."""
    out = markdown.render(report(PASSED, NA))
    assert out.startswith("## :white_check_mark:") and "|---|" not in out


def _validate(document: Any) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(document)


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    """The report schema is itself valid, and its $id is the one the report points to."""
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$id"] == json_report.SCHEMA_ID


def test_json_report_validates_against_schema() -> None:
    """A report with every status, items, commands, missing facts and a rule error fits the schema exactly."""
    document = json.loads(json_report.render(report(*EVERY_STATUS, problems=("x",))))
    _validate(document)
    assert document["summary"] == {"fail": 3, "warn": 2, "info": 1, "pass": 1, "n/a": 1, "skipped": 1, "error": 1}
    assert document["findings"][0]["id"] == "EC0101"
    apex = next(f for f in document["findings"] if f["id"] == "EC0301")
    assert apex["commands"] == [{"argv": [EXE, "-m", "pip", "uninstall", "-y", "apex"],
                                 "shell": "'/opt/my envs/bin/python' -m pip uninstall -y apex"}]
    # The machine format keeps one finding per item, each with its own command: only the reports merge them.
    missing = [f for f in document["findings"] if f["id"] == "EC0102"]
    assert [f["item"]["requirement"] for f in missing] == ["numpy<2", "pillow!=8.3.*,>=5.3.0"]
    assert [f["commands"][0]["argv"][-1] for f in missing] == ["numpy<2", "pillow!=8.3.*,>=5.3.0"]


@pytest.mark.parametrize("fixture", [pytest.param("clean-cuda-venv.json", id="clean"),
                                     pytest.param("torchvision-pin-conflict.json", id="conflict"),
                                     pytest.param("no-deps-install.json", id="no-deps")])
def test_shipped_pack_report_validates(fixture: str) -> None:
    """The JSON report of the shipped pack over a recorded snapshot fits the schema."""
    _validate(json.loads(json_report.render(recorded(fixture))))


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
    document = json.loads(json_report.render(report(APEX, *QUIET)))
    _validate(document)
    broken = copy.deepcopy(document)
    node: Any = broken
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        _validate(broken)

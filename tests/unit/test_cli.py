"""The command line through click's CliRunner: exit codes, one-line errors, formats, output files and colour."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from _fakes import FIXTURES
from click.testing import CliRunner, Result

import envcheck
from envcheck.cli.click_cli import cli
from envcheck.cli.output import use_color
from envcheck.rules import engine

CLEAN = str(FIXTURES / "clean-cuda-venv.json")
CONFLICT = str(FIXTURES / "torchvision-pin-conflict.json")

# One rule of each severity that always fires, and one that never does, for exit-code tests.
ALWAYS_RULES = "".join(
    f'[[rule]]\nid = "EC99{i}0"\nname = "always-{sev}"\nseverity = "{sev}"\nsummary = "s"\nwhy = "w"\n'
    f'fix = "f"\nreferences = ["https://example.org/{i}"]\nwhen = {{ python = ">=3" }}\n'
    for i, sev in enumerate(["error", "warning", "info"], start=1)
) + ('[[rule]]\nid = "EC9940"\nname = "never-fires"\nseverity = "error"\nsummary = "s"\nwhy = "w"\n'
     'fix = "f"\nreferences = ["https://example.org/4"]\nwhen = { python = "<3" }\n')


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "rules"
    directory.mkdir()
    (directory / "test.toml").write_text(ALWAYS_RULES, encoding="utf-8")
    return directory


@pytest.mark.parametrize(
    ("select", "fail_on", "code"),
    [
        pytest.param("EC9940", "error", 0, id="nothing-fires"),
        pytest.param("EC9910", "error", 1, id="error-fails-on-error"),
        pytest.param("EC9910", "never", 0, id="error-with-fail-on-never"),
        pytest.param("EC9920", "error", 0, id="warning-below-error"),
        pytest.param("EC9920", "warning", 1, id="warning-fails-on-warning"),
        pytest.param("EC9930", "warning", 0, id="info-below-warning"),
        pytest.param("EC9930", "info", 1, id="info-fails-on-info"),
    ],
)
def test_exit_code_follows_fail_on(rules_dir: Path, select: str, fail_on: str, code: int) -> None:
    """Exit 1 only for findings at or above --fail-on, else 0."""
    result = run("check", "--facts", CLEAN, "--rules", str(rules_dir), "--select", select, "--fail-on", fail_on)
    assert result.exit_code == code, result.output


def test_recorded_clean_snapshot_exits_zero() -> None:
    """The shipped pack finds no error in a recorded healthy CUDA venv: exit 0, the checked interpreter and one
    summary line."""
    result = run("check", "--facts", CLEAN)
    assert result.exit_code == 0, result.output
    first, summary = result.output.splitlines()
    assert first == f"checked /opt/venv/bin/python: from the snapshot {CLEAN}" and "no problems" in summary


def test_recorded_pin_conflict_exits_one() -> None:
    """A recorded snapshot in which torchvision pins another torch fails with EC0702 and the command keeping torch."""
    result = run("check", "--facts", CONFLICT)
    assert result.exit_code == 1
    assert "EC0702" in result.output
    assert "torchvision 0.21.0 requires torch==2.6.0, but torch 2.13.0+cpu is installed" in result.output
    assert ("$ /opt/venv/bin/python -m pip install --no-deps torchvision==0.28.0+cpu --index-url "
            "https://download.pytorch.org/whl/cpu") in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("{oops", "is not JSON", id="not-json"),
        pytest.param('{"schema": 99}', "key 'schema': schema 99 is not supported", id="other-schema"),
        pytest.param(None, "no such file", id="absent"),
    ],
)
def test_bad_facts_file_exits_two(tmp_path: Path, content: str | None, message: str) -> None:
    """A snapshot that cannot be read is exit 2 with one line naming the file, and no traceback."""
    path = tmp_path / "env.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = run("check", "--facts", str(path))
    assert result.exit_code == 2
    assert result.output.startswith(f"envcheck: error: {path}: {message}")
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_broken_rule_file_exits_two(rules_dir: Path) -> None:
    """A broken rule in a --rules directory is exit 2, naming the file, the rule and the key."""
    broken = rules_dir / "broken.toml"
    broken.write_text(ALWAYS_RULES.replace("EC99", "EC98").replace("always-", "b-").replace(
        'severity = "info"', 'severity = "fatal"'), encoding="utf-8")
    result = run("check", "--facts", CLEAN, "--rules", str(rules_dir))
    assert result.exit_code == 2
    assert result.output == (f"envcheck: error: {broken}: rule EC9830: key 'severity': "
                             "expected error, warning or info, got 'fatal'\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(("--rules", "/nonexistent/rules"), "envcheck: error: /nonexistent/rules: rule directory does "
                     "not exist", id="absent-rules-dir"),
        pytest.param(("--python", sys.executable), "--facts and --python exclude each other", id="facts-and-python"),
        pytest.param(("--fail-on", "sometimes"), "Invalid value for '--fail-on'", id="bad-fail-on"),
    ],
)
def test_configuration_errors_exit_two(args: tuple[str, ...], message: str) -> None:
    """Bad options and rule directories are exit 2 with a message saying what is wrong."""
    result = run("check", "--facts", CLEAN, *args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("option", [pytest.param("--select", id="select"), pytest.param("--ignore", id="ignore")])
def test_unknown_selector_exits_two(option: str) -> None:
    """A --select or --ignore entry that matches no rule is a usage error (exit 2) naming it."""
    result = run("check", "--facts", CLEAN, option, "EC01,no-such-rule")
    assert result.exit_code == 2
    assert "no rule matches 'no-such-rule'" in result.output


def test_internal_error_exits_three(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug (any exception that is not an EnvcheckError) is exit 3 with a one-line message, not a traceback."""

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(engine, "evaluate", boom)  # the check command imports it when it runs
    monkeypatch.delenv("ENVCHECK_DEBUG", raising=False)
    result = run("check", "--facts", CLEAN)
    assert result.exit_code == 3
    first, *rest = result.output.splitlines()
    assert first == "envcheck: internal error: RuntimeError: boom"
    assert "Traceback" not in result.output and all("please report it" in line for line in rest)


def test_no_subcommand_runs_check(rules_dir: Path) -> None:
    """`envcheck --facts FILE ...` (no subcommand) is `envcheck check --facts FILE ...`."""
    args = ["--facts", CONFLICT, "--format", "json"]
    plain, explicit = run(*args), run("check", *args)
    assert (plain.exit_code, plain.output) == (explicit.exit_code, explicit.output)
    assert plain.exit_code == 1 and json.loads(plain.output)["findings"]


def test_bare_envcheck_checks_this_environment() -> None:
    """`envcheck` with no arguments at all checks the running interpreter."""
    result = run("--fail-on", "never", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["python"] == sys.executable
    assert any(line.startswith(f"envcheck {envcheck.__version__}: ") for line in run().output.splitlines())


def test_rule_explains_one_rule() -> None:
    """`envcheck rule EC0101` documents that rule (by id or name) and only that one."""
    by_id, by_name = run("rule", "EC0101"), run("rule", "requirement-version-conflict")
    assert by_id.exit_code == 0 and by_id.output == by_name.output
    assert by_id.output.startswith("EC0101 requirement-version-conflict  [error, dependencies]")
    assert "References:" in by_id.output and "EC0102" not in by_id.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(("rule",), "rule: name a rule (e.g. `envcheck rule EC0201`) or pass --all", id="nothing"),
        pytest.param(("rule", "NOPE"), "no rule 'NOPE' (see `envcheck rule --all`)", id="unknown"),
        pytest.param(("probe", "sdpaa"), "no probe 'sdpaa' (probes: torch-import, ", id="unknown-probe"),
    ],
)
def test_unknown_names_are_one_line_usage_errors(args: tuple[str, ...], message: str) -> None:
    """`envcheck rule` without a known rule (and `envcheck probe` with an unknown one) is exit 2 with the one
    `envcheck: error: ...` line every other error has, not click's usage block."""
    result = run(*args)
    assert result.exit_code == 2
    assert result.output.startswith(f"envcheck: error: {message}") and result.output.count("\n") == 1, result.output


def test_rule_all_json(rules_dir: Path) -> None:
    """`rule --all --format json` lists every rule of the pack and of --rules directories, once each."""
    data = json.loads(run("rule", "--all", "--format", "json", "--rules", str(rules_dir)).output)
    ids = [r["id"] for r in data]
    assert len(ids) == len(set(ids)) and {"EC0101", "EC9910", "EC9940"} <= set(ids)
    assert set(data[0]) == {"id", "name", "severity", "area", "summary", "why", "fix", "commands", "references",
                            "trigger", "foreach", "plan", "fix_without_plan", "signatures"}


def test_facts_then_check_round_trip(tmp_path: Path) -> None:
    """`facts -o FILE` then `check --facts FILE` gives the same verdicts as checking this environment directly."""
    saved = tmp_path / "env.json"
    result = run("facts", "-o", str(saved))
    assert result.exit_code == 0 and result.output == ""
    assert "derived" in json.loads(saved.read_text(encoding="utf-8"))
    live = json.loads(run("check", "--format", "json", "--fail-on", "never").output)
    replayed = json.loads(run("check", "--facts", str(saved), "--format", "json", "--fail-on", "never").output)
    assert replayed["origin"] == f"file:{saved}" and live["origin"] == "local"
    assert replayed["findings"] == live["findings"]


def test_output_option_writes_the_report(tmp_path: Path) -> None:
    """--output FILE writes the report there and nothing to standard output; the exit code is unchanged."""
    out = tmp_path / "report.md"
    result = run("check", "--facts", CONFLICT, "--format", "markdown", "--output", str(out))
    assert (result.exit_code, result.output) == (1, "")
    assert out.read_text(encoding="utf-8").startswith("## ")
    unwritable = run("check", "--facts", CLEAN, "--output", str(tmp_path / "absent" / "r.txt"))
    assert unwritable.exit_code == 2 and "cannot write" in unwritable.output


@pytest.mark.parametrize(
    ("args", "ansi"),
    [
        pytest.param((), False, id="default-not-a-terminal"),
        pytest.param(("--color",), True, id="color"),
        pytest.param(("--no-color",), False, id="no-color"),
    ],
)
def test_color_option(args: tuple[str, ...], ansi: bool) -> None:
    """ANSI codes appear only with --color when the output is not a terminal."""
    result = run("check", "--facts", CONFLICT, *args)
    assert ("\x1b[" in result.output) is ansi


@pytest.mark.parametrize(
    ("choice", "output", "no_color", "expected"),
    [
        pytest.param(None, None, None, True, id="terminal"),
        pytest.param(None, None, "1", False, id="NO_COLOR"),
        pytest.param(None, None, "", True, id="empty-NO_COLOR-ignored"),
        pytest.param(None, "report.txt", None, False, id="to-a-file"),
        pytest.param(True, None, "1", True, id="--color-beats-NO_COLOR"),
        pytest.param(False, None, None, False, id="--no-color"),
    ],
)
def test_colour_decision_on_a_terminal(monkeypatch: pytest.MonkeyPatch, choice: bool | None, output: str | None,
                                       no_color: str | None, expected: bool) -> None:
    """On a terminal colour is on unless NO_COLOR is set (https://no-color.org) or the report goes to a file."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    assert use_color(choice, output) is expected


def test_verbose_lists_passes_and_skips(rules_dir: Path) -> None:
    """-v lists passed, n/a and skipped rules too; without it only problems are shown."""
    quiet = run("check", "--facts", CONFLICT, "--rules", str(rules_dir), "--select", "EC9940,EC0702")
    verbose = run("check", "--facts", CONFLICT, "--rules", str(rules_dir), "--select", "EC9940,EC0702", "-v")
    assert "EC9940" not in quiet.output
    assert "EC9940 never-fires  [pass]" in verbose.output
    assert "EC0702" in quiet.output and "EC0702" in verbose.output

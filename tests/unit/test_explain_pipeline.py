"""Error output explained by the check itself (envcheck/pipeline/stages.py, `explained`): the library call, the
pytest plugin and `envcheck explain` hand the text to the pipeline as an option, and the report it returns says what
was read and recognised."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import envcheck
from envcheck.cli.click_cli import cli
from envcheck.pipeline.error_output import ErrorOutput
from envcheck.rules.model import Report, Status

pytest_plugins = ["pytester"]

# torch.compile on a Python its Dynamo does not support, as torch raises it (torch/__init__.py, `compile`).
DYNAMO = ('Traceback (most recent call last):\n'
          '  File "/home/u/.venv/lib/python3.13/site-packages/torch/__init__.py", line 2416, in compile\n'
          '    raise RuntimeError("Dynamo is not supported on Python 3.13+")\n'
          "RuntimeError: Dynamo is not supported on Python 3.13+\n")
UNKNOWN = "ValueError: something only this program says\n"


def _check(error_output: ErrorOutput | str | None) -> Report:
    return envcheck.check(static=True, no_project=True, no_config=True, error_output=error_output)


def test_the_library_call_explains_error_output() -> None:
    report = _check(ErrorOutput(DYNAMO, "train.log"))
    # The log's paths name another environment's Python 3.13: judged on what it states, said in the same sentence.
    assert report.explained.startswith("train.log (4 lines): recognised EC0203 at line 4; the error output is not "
                                       "from the checked environment")
    (finding,) = [f for f in report.findings if f.rule_id == "EC0203"]
    assert finding.status is Status.FAIL
    assert "train.log, line 4: «Dynamo is not supported on Python 3.13+»" in finding.evidence


def test_a_plain_string_is_the_text_itself() -> None:
    report = _check(DYNAMO.rstrip("\n"))  # the last line without its newline is still a line
    assert report.explained.startswith("error output (4 lines): recognised EC0203 at line 4;")


def test_without_error_output_nothing_is_explained() -> None:
    report = _check(None)
    assert report.explained == ""
    assert all(f.status is not Status.FAIL for f in report.findings if f.rule_id == "EC0203")


@pytest.mark.parametrize(("text", "lines"), [("", "0 lines"), ("one line, no newline", "1 line"),
                                             ("two\nlines\n", "2 lines")])
def test_explain_counts_the_lines_it_read(tmp_path: Path, text: str, lines: str) -> None:
    """An empty file is 0 lines (it was reported as 1); a last line without a newline counts."""
    log = tmp_path / "build.log"
    log.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["explain", str(log), "--static", "--no-project", "--no-config"])
    assert result.exit_code == 0, result.output
    assert f"explained {log} ({lines}): no known failure recognised in it" in " ".join(result.output.split())


def test_the_command_and_the_library_call_say_the_same(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(DYNAMO, encoding="utf-8")
    result = CliRunner().invoke(cli, ["explain", str(log), "--static", "--no-project", "--no-config"])
    assert result.exit_code == 1
    assert f"explained {_check(ErrorOutput(DYNAMO, str(log))).explained}" in result.output


def _tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_project=textwrap.dedent('''
        import pathlib

        def test_runs():
            pathlib.Path("RAN").write_text("yes")
    '''))


def test_the_plugin_explains_a_log_and_stops_on_the_failure_it_shows(pytester: pytest.Pytester) -> None:
    _tests(pytester)
    (pytester.path / "train.log").write_text(DYNAMO, encoding="utf-8")
    result = pytester.runpytest_subprocess("--envcheck-explain", "train.log", "-p", "no:cacheprovider")
    assert result.ret == 1
    assert not (pytester.path / "RAN").exists()
    result.stderr.fnmatch_lines(["envcheck found * at --fail-on error in this environment; no test was run",
                                 "  EC0203 torch-compile-unsupported-on-this-python: *"])


def test_the_plugin_says_what_it_read_in_the_header(pytester: pytest.Pytester) -> None:
    _tests(pytester)
    (pytester.path / "app.log").write_text(UNKNOWN, encoding="utf-8")
    result = pytester.runpytest_subprocess("--envcheck-explain", "app.log", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["envcheck: *(static) — *",
                                 "envcheck: explained app.log (1 line): no known failure recognised in it*"])


def test_the_plugin_names_a_missing_log(pytester: pytest.Pytester) -> None:
    _tests(pytester)
    result = pytester.runpytest_subprocess("--envcheck-explain", "missing.log", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*envcheck: *missing.log*"])

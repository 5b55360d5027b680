"""The options of a check are the fields of CheckOptions (envcheck/pipeline/options.py): every parameter the check
commands declare reaches the options the check runs with, or is read by the command itself; the command line's
options, the library call's docstring and docs/options.md are made from the fields; the probe timeout's default is
one constant."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from envcheck import api, pipeline
from envcheck.cli.check_options import fields_offered, offer
from envcheck.cli.click_cli import cli
from envcheck.facts.probe_statuses import PROBE_TIMEOUT_S
from envcheck.pipeline.error_output import ErrorOutput
from envcheck.pipeline.options import CheckOptions, Flag, described, markdown_table
from envcheck.pipeline.stages import ProbeOptions
from envcheck.sources.probes.runner import RunOptions

COMMANDS = ("check", "explain", "facts", "fix")
FLAGS = {f.name: flag for f, _text, flag in described()}
DEFAULTS = {f.name: f.default for f in dataclasses.fields(CheckOptions)}
LIBRARY_ONLY = {"project_dir", "discover", "python_named_by", "error_output"}  # no command line option
OPTIONS_MD = Path(__file__).resolve().parents[2] / "docs" / "options.md"


def _given(name: str, tmp_path: Path) -> tuple[list[str], Any]:
    """Arguments that give the field `name` a value other than its default, and the value the field must get."""
    flag = FLAGS[name]
    assert flag is not None
    spelled = flag.names[-1]
    if flag.switch:
        return [spelled], not DEFAULTS[name]
    if flag.seconds is not None:
        return [spelled, "7"], 7.0
    if flag.folder:
        return [spelled, str(tmp_path)], (tmp_path,)
    if flag.commas:
        return [spelled, f"{name}-a,{name}-b"], (f"{name}-a", f"{name}-b")
    if flag.many:
        return [spelled, f"{name}-1", spelled, f"{name}-2"], (f"{name}-1", f"{name}-2")
    return [spelled, f"given-{name}"], f"given-{name}"


def _options_of(command: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> CheckOptions:
    """The options `envcheck COMMAND ARGS` runs its check with (the pipeline is stopped there)."""
    seen: list[CheckOptions] = []

    def capture(options: CheckOptions, **_: object) -> None:
        seen.append(options)
        raise KeyboardInterrupt  # nothing more to run: the options are what is looked at

    monkeypatch.setattr(pipeline, "run", capture)
    monkeypatch.setattr(pipeline, "Check", capture)
    result = CliRunner().invoke(cli, [command, *args])
    assert len(seen) == 1, result.output
    return seen[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_declared_parameter_reaches_the_options_or_the_command(command: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Each option made from a field, given alone, is that field of the options the check runs with, and changes no
    other; each other parameter is an argument of the command's function, and read in its body."""
    made = cli.commands[command]
    offered = fields_offered(made)
    assert offered, f"{command} offers no option of the check"
    log = tmp_path / "error.log"
    log.write_text("RuntimeError: boom\n", encoding="utf-8")
    source = [str(log)] if command == "explain" else []
    plain = _options_of(command, source, monkeypatch)
    for name in offered:
        args, expected = _given(name, tmp_path)
        options = _options_of(command, [*source, *args], monkeypatch)
        assert getattr(options, name) == expected != DEFAULTS[name], (command, name)
        assert dataclasses.replace(options, **{name: getattr(plain, name)}) == plain, (command, name)
    function = made.callback.__wrapped__  # type: ignore[union-attr]  # what `offer` wraps
    arguments = set(inspect.signature(function).parameters) - {"options"}
    declared = {p.name for p in made.params}
    assert declared == {*offered, *arguments}, command
    body = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    read = {n.id for n in ast.walk(body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert arguments - read == set(), f"{command} declares parameters it never reads"


def test_explain_hands_its_source_to_the_check_as_error_output(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "train.log"
    log.write_text("RuntimeError: boom\n", encoding="utf-8")
    options = _options_of("explain", [str(log)], monkeypatch)
    assert options.error_output == ErrorOutput("RuntimeError: boom\n", str(log))


def test_every_field_is_offered_by_a_command_or_is_the_library_s() -> None:
    offered = {name for command in COMMANDS for name in fields_offered(cli.commands[command])}
    assert set(DEFAULTS) - offered == LIBRARY_ONLY
    assert all(FLAGS[name] is None for name in LIBRARY_ONLY)
    assert all(FLAGS[name] is not None for name in offered)


def test_an_option_is_one_field_and_one_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command offering a field gets its option, default and help from the field, and the value in `options`."""
    got: list[CheckOptions] = []

    @click.command()
    @offer("probe_timeout", "select")
    def probe_only(options: CheckOptions) -> None:
        got.append(options)

    (timeout, select) = probe_only.params
    assert (timeout.name, select.name, select.opts) == ("probe_timeout", "select", ["--select"])
    assert timeout.default == PROBE_TIMEOUT_S and timeout.help is not None
    assert timeout.help.startswith(dict((f.name, t) for f, t, _ in described())["probe_timeout"])
    assert CliRunner().invoke(probe_only, ["--select", "EC01,EC02", "--select", "x"]).exit_code == 0
    assert got == [CheckOptions.command_line(probe_timeout=PROBE_TIMEOUT_S, select=("EC01", "EC02", "x"))]
    with pytest.raises(ValueError, match="no CheckOptions field"):
        offer("no_such_field")


def test_the_probe_timeout_default_is_one_constant() -> None:
    probe_timeout = cli.commands["check"].params
    click_default = next(p.default for p in probe_timeout if p.name == "probe_timeout")
    assert {DEFAULTS["probe_timeout"], ProbeOptions().timeout_s, RunOptions(python="x").timeout_s,
            click_default} == {PROBE_TIMEOUT_S}
    signature = inspect.signature(__import__("envcheck.sources.probes", fromlist=["run_probes"]).run_probes)
    assert signature.parameters["timeout_s"].default == PROBE_TIMEOUT_S


def test_the_library_docstring_lists_every_field_with_its_help() -> None:
    doc = " ".join((api.check.__doc__ or "").split())
    assert "{fields}" not in doc
    for f, text, _flag in described():
        assert f"{f.name}: {' '.join(text.split())}" in doc, f.name


def test_docs_options_md_is_generated_from_the_fields() -> None:
    text = OPTIONS_MD.read_text(encoding="utf-8")
    start, end = "<!-- check-options:", "<!-- /check-options -->"
    block = text[text.index(start):text.index(end)].split("\n", 1)[1]
    regenerate = ("replace the table between the check-options markers with the output of `python -c \"from "
                  "envcheck.pipeline.options import markdown_table; print(markdown_table(), end='')\"`")
    assert block == markdown_table(), f"docs/options.md is stale: {regenerate}"


def test_a_flag_shows_as_written() -> None:
    assert Flag(("--report",), "FILE|-").shown == "--report FILE|-"
    assert "`--report FILE\\|-`" in markdown_table()

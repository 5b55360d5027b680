"""The report's note when `pytest --envcheck` cannot work in the checked environment: pytest is there, envcheck is
not, and envcheck runs from an isolated tool environment (which pytest never loads plugins from). Tool environments
are real folders holding the files their tools write (envcheck/pipeline/target.py cites them);
tests/e2e/test_isolated_installs.py runs the real `uv tool install`."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.pipeline.target import pytest_plugin_note
from envcheck.rules.model import Target

PROJECT = Target(python="/p/.venv/bin/python", source="project-venv", reason="from ./.venv", in_process=False)


@pytest.fixture
def pipx_env(tmp_path: Path) -> str:
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (tmp_path / "pipx_metadata.json").write_text("{}", encoding="utf-8")
    return str(tmp_path)


def test_note_when_pytest_cannot_reach_the_plugin(pipx_env: str) -> None:
    """Run from pipx, checking a venv with pytest and without envcheck: one sentence naming where envcheck runs."""
    assert pytest_plugin_note(PROJECT, {"pytest", "torch"}, pipx_env) == (
        "pytest here cannot load envcheck's plugin (`pytest --envcheck`): envcheck runs from pipx's isolated "
        "environment; install envcheck into this environment, beside pytest, to use it")


@pytest.mark.parametrize(
    ("target", "installed"),
    [
        pytest.param(PROJECT, {"torch"}, id="no-pytest"),
        pytest.param(PROJECT, {"pytest", "envcheck-ml"}, id="envcheck-beside-pytest"),
        pytest.param(Target(python="/t/bin/python", source="self", reason="own", in_process=True), {"pytest"},
                     id="own-interpreter"),
        pytest.param(Target(python="/x/python", source="snapshot", reason="from the snapshot f.json",
                            in_process=False), {"pytest"}, id="snapshot"),
        pytest.param(None, {"pytest"}, id="no-target"),
    ],
)
def test_no_note_where_the_plugin_is_not_out_of_reach(pipx_env: str, target: Target | None,
                                                      installed: set[str]) -> None:
    """No pytest, envcheck beside it, envcheck's own interpreter, or a snapshot: nothing to say."""
    assert pytest_plugin_note(target, installed, pipx_env) == ""


def test_no_note_outside_a_tool_environment(tmp_path: Path) -> None:
    """envcheck installed in an ordinary venv (no tool's marker file) says nothing, even beside no pytest plugin."""
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    assert pytest_plugin_note(PROJECT, {"pytest"}, str(tmp_path)) == ""

"""`--format github` cannot be made to forge a workflow command: whatever a pull request writes in its
pyproject.toml, or a snapshot states, every line envcheck prints (the report, and the error line on standard error)
is one of its own annotations or plain text.

The GitHub runner reads every line of a step's log for `::command ...::` at its start and an old-style `##[command]`
anywhere in it (actions/runner, ActionCommand.TryParse); `::add-mask::` hides a value from the rest of the log and
`::stop-commands::` turns command reading off.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _fakes import FIXTURES
from _torch import clean_env

CLEAN = FIXTURES / "clean-cuda-venv.json"
FORGED = "\n::add-mask::secret\r\n::error title=forged::pwned\n##[warning]old\n::stop-commands::x"
# An annotation envcheck writes: a level, properties with `:` and `,` escaped, then the message.
_OWN = re.compile(r"::(error|warning|notice)( (file|line|title)=[^:,]*(,(file|line|title)=[^:,]*)*)?::.*")


def _envcheck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envcheck", *args], cwd=cwd, env=clean_env({"NO_COLOR": "1"}),
                          capture_output=True, text=True, timeout=120, check=False)


def assert_no_forged_command(output: str) -> None:
    """Each line is one of envcheck's annotations, or a plain line without an old-style command (the runner tries
    `##[` only in a line that is not a `::` command)."""
    for line in output.splitlines():
        if line.startswith("::"):
            assert _OWN.fullmatch(line), line
        else:
            assert "##[" not in line, line


def _pyproject(tmp_path: Path, envcheck_table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.envcheck]\n{envcheck_table}\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("table", [
    pytest.param(f"{json.dumps('x' + FORGED)} = 1", id="unknown-key"),
    pytest.param(f"[tool.envcheck.{json.dumps('x' + FORGED)}]\na = 1", id="unknown-table"),
    pytest.param(f"select = [{json.dumps('EC0101' + FORGED)}]", id="value"),
    pytest.param(f"[[tool.envcheck.machines]]\nname = {json.dumps('a' + FORGED)}", id="machine-name"),
])
def test_a_hostile_pyproject_prints_one_error_line_and_no_command(tmp_path: Path, table: str) -> None:
    """A key or value holding newlines and workflow commands is refused in one line of standard error, the
    newlines shown as `\\n`, so that no quoted line starts a command of its own."""
    proc = _envcheck(_pyproject(tmp_path, table), "check", "--facts", str(CLEAN), "--format", "github")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("envcheck: error: ") and "pyproject.toml" in lines[0], lines
    assert "add-mask" in lines[0]  # the value reached the message: the check means something
    assert_no_forged_command(proc.stdout + proc.stderr)


def test_an_interpreter_path_with_newlines_stays_in_its_lines(tmp_path: Path) -> None:
    """The checked interpreter's path is in the notice and in the plain tally line: escaped as data in both."""
    facts = json.loads(CLEAN.read_text(encoding="utf-8"))
    facts["python"]["executable"] = "/opt/venv" + FORGED
    snapshot = tmp_path / "facts.json"
    snapshot.write_text(json.dumps(facts), encoding="utf-8")
    proc = _envcheck(tmp_path, "check", "--facts", str(snapshot), "--format", "github", "--no-config")
    assert proc.returncode in (0, 1), proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("::notice title=envcheck::") and lines[-1].startswith("envcheck ")
    assert "%0A::add-mask::secret\ufffd%0A::error title=forged::pwned%0A##%5Bwarning]old" in lines[-1]
    assert_no_forged_command(proc.stdout + proc.stderr)

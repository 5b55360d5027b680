"""Rule documentation shows commands that are safe to paste: each one reads back, through shell quoting, as the
rule's own argv (`{python}` shown as `python`), in docs/rules.md and in `envcheck rule`.

shlex.split alone cannot tell: it reads `numpy<2` as one word, where a shell sees a redirect. Each command is
therefore also read by a real /bin/sh, which prints the words it would pass (in an empty folder, so a stray glob
matches nothing and a redirect from a missing file fails).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.report.ruledoc import command_line
from envcheck.rules import rule_pack
from envcheck.rules.model import Rule

RULES_MD = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
RULES = rule_pack.load()
# The quoting is POSIX shell quoting, read back by a POSIX sh (Git for Windows puts one on PATH as well).
pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX sh on PATH")


def _expected(rule: Rule) -> list[list[str]]:
    return [["python" if arg == "{python}" else arg for arg in argv] for argv in rule.commands]


def _read_back(line: str, cwd: Path) -> list[str]:
    """The words of `line` as shlex.split reads them, checked against what /bin/sh passes to a command."""
    words = shlex.split(line)
    run = subprocess.run(["sh", "-c", f"printf '%s\\0' {line}"], cwd=cwd, capture_output=True, text=True,
                         check=False)
    assert run.returncode == 0 and run.stdout.split("\0")[:-1] == words, f"not safe to paste: {line}"
    return words


def _markdown_commands(text: str) -> dict[str, list[str]]:
    """Rule id -> the command lines of the ```sh blocks in its section."""
    found: dict[str, list[str]] = {}
    for section in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        rule_id = section.split("\n", 1)[0].strip()
        blocks = re.findall(r"^```sh\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
        found[rule_id] = [line for block in blocks for line in block.splitlines()]
    return found


def _text_commands(text: str) -> dict[str, list[str]]:
    """Rule id -> the `$ ` lines of its block in `envcheck rule` output."""
    found: dict[str, list[str]] = {}
    rule_id = ""
    for line in text.splitlines():
        if re.match(r"EC\d+ ", line):
            rule_id = line.split(" ", 1)[0]
            found[rule_id] = []
        elif line.startswith("    $ "):
            found[rule_id].append(line[len("    $ "):])
    return found


def test_rules_with_shell_metacharacters_exist() -> None:
    """The pack has commands with `<`, `>` or `*` in an argument, so the read-back tests below test quoting."""
    risky = [arg for r in RULES for argv in r.commands for arg in argv if set(arg) & set("<>*|;&")]
    assert "numpy<2" in risky and any(">=" in arg for arg in risky)


def test_every_command_in_docs_reads_back_as_the_rule_argv(tmp_path: Path) -> None:
    """Every command of docs/rules.md parses with shlex.split and sh to its rule's argv (`python` for `{python}`)."""
    documented = _markdown_commands(RULES_MD.read_text(encoding="utf-8"))
    read = {r.id: [_read_back(line, tmp_path) for line in documented.get(r.id, [])] for r in RULES}
    assert read == {r.id: _expected(r) for r in RULES}


def test_every_command_of_envcheck_rule_reads_back_as_the_rule_argv(tmp_path: Path) -> None:
    """`envcheck rule --all` prints each command so that shlex.split and sh read it as the rule's argv."""
    result = CliRunner().invoke(cli, ["rule", "--all"], catch_exceptions=False)
    assert result.exit_code == 0
    shown = _text_commands(result.output)
    read = {r.id: [_read_back(line, tmp_path) for line in shown.get(r.id, [])] for r in RULES}
    assert read == {r.id: _expected(r) for r in RULES}


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        pytest.param(("{python}", "-m", "pip", "install", "numpy<2"), "python -m pip install 'numpy<2'",
                     id="redirect-quoted"),
        pytest.param(("{python}", "-m", "pip", "install", "torch>=2.6"), "python -m pip install 'torch>=2.6'",
                     id="greater-quoted"),
        pytest.param(("{python}", "-m", "pip", "uninstall", "-y", "{item.name}"),
                     "python -m pip uninstall -y {item.name}", id="placeholder-bare"),
        pytest.param(("{python}", "-m", "pip", "install", "{item.name}<2"), "python -m pip install '{item.name}<2'",
                     id="placeholder-with-metacharacter-quoted"),
        pytest.param(("{python}", "-c", "print('a b')"), "python -c 'print('\"'\"'a b'\"'\"')'", id="quote-in-arg"),
    ],
)
def test_command_line(argv: tuple[str, ...], line: str, tmp_path: Path) -> None:
    """A rule's command is quoted where the shell needs it; a bare placeholder is left as written."""
    assert command_line(argv) == line
    assert _read_back(line, tmp_path) == ["python", *argv[1:]]

"""A static check imports only what it runs: no probe machinery, no fix planner for a clean report, no difflib."""

from __future__ import annotations

import subprocess
import sys

from _fakes import FIXTURES

CLEAN = str(FIXTURES / "clean-cuda-venv.json")
UNUSED = ("envcheck.probes", "envcheck.commands.planner", "envcheck.remedy.fix", "envcheck.fleet", "difflib",
          "logging.handlers")


def _modules_after_check(args: list[str]) -> list[str]:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from envcheck.cli.click_cli import cli\n"
        f"result = CliRunner().invoke(cli, {args!r})\n"
        "assert result.exit_code == 0, result.output\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return proc.stdout.split()


def test_a_clean_check_from_the_cached_pack_imports_nothing_it_does_not_run() -> None:
    """With the rule pack cached (a second run), a clean check loads no probe, planner, fix or fleet module."""
    args = ["check", "--facts", CLEAN, "--no-config"]
    _modules_after_check(args)  # the first run validates the pack and caches it
    loaded = _modules_after_check(args)
    assert "envcheck.engine" in loaded
    assert [m for m in loaded if m.startswith(UNUSED)] == []

"""A static check imports only what it runs: no probe machinery, no fix planner for a clean report, no difflib, and
neither the readers of a project's files where there is no project nor conda's records where conda installed
nothing (each module of frozen dataclasses costs its classes' creation on every run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _fakes import FIXTURES

from envcheck.sources.project.root import find_root

CLEAN = str(FIXTURES / "clean-cuda-venv.json")
UNUSED = ("envcheck.sources.probes", "envcheck.remedy.commands.planner", "envcheck.remedy.fix", "envcheck.fleet",
          "difflib", "logging.handlers")
# What a project's files are read with (sources/project/root.py alone tells whether there is a project), and conda's
# records.
PROJECT_READERS = ("envcheck.sources.project.discover", "envcheck.sources.project.locks",
                   "envcheck.sources.project.pixi", "envcheck.sources.project.requirements", "envcheck.rules.generated",
                   "envcheck.facts.project")
CONDA = ("envcheck.facts.conda",)


def _modules_after_check(args: list[str], cwd: Path | None = None) -> list[str]:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from envcheck.cli.click_cli import cli\n"
        f"result = CliRunner().invoke(cli, {args!r})\n"
        "assert result.exit_code in (0, 1), result.output\n"  # 1: the checked interpreter may have findings
        "print(' '.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=cwd)
    return proc.stdout.split()


def _among(loaded: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [m for m in loaded if m.startswith(prefixes)]


def test_a_clean_check_from_the_cached_pack_imports_nothing_it_does_not_run() -> None:
    """With the rule pack cached (a second run), a clean check loads no probe, planner, fix or fleet module, and a
    snapshot without a project or conda records loads neither's classes."""
    args = ["check", "--facts", CLEAN, "--no-config", "--fail-on", "never"]
    _modules_after_check(args)  # the first run validates the pack and caches it
    loaded = _modules_after_check(args)
    assert "envcheck.rules.engine" in loaded
    assert _among(loaded, UNUSED) == []
    assert _among(loaded, PROJECT_READERS + CONDA) == []


def test_a_static_check_where_there_is_no_project_imports_none_of_its_readers(tmp_path: Path) -> None:
    """The static check of this interpreter from a folder with no project file at or above it: the project's readers
    and generated rules are never imported. Beside it, the same check in a project imports them (the control: the
    deferral still reads a project)."""
    bare = tmp_path / "bare"
    bare.mkdir()
    assert find_root(bare) is None, f"{bare} is inside a project: the test needs a temporary folder outside one"
    args = ["check", "--static", "--no-config", "--fail-on", "never"]
    loaded = _modules_after_check(args, cwd=bare)
    assert "envcheck.sources.project.root" in loaded  # it did look for a project
    assert _among(loaded, PROJECT_READERS) == []

    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "1"\ndependencies = ["click"]\n')
    loaded = _modules_after_check(args, cwd=project)
    assert _among(loaded, ("envcheck.sources.project.discover", "envcheck.rules.generated",
                           "envcheck.facts.project")) == ["envcheck.facts.project", "envcheck.rules.generated",
                                                          "envcheck.sources.project.discover"]


def test_a_static_check_without_error_output_never_defines_its_observations(tmp_path: Path) -> None:
    """The static check of this interpreter, its pack cached: no error output, so the class of a recognised failure
    (facts/observed.py) is never defined."""
    args = ["check", "--static", "--no-config", "--fail-on", "never"]
    _modules_after_check(args, cwd=tmp_path)  # the first run caches the pack (parsing it scans the examples)
    loaded = _modules_after_check(args, cwd=tmp_path)
    assert "envcheck.sources.live.raw" in loaded  # the control: it did collect
    assert _among(loaded, ("envcheck.facts.observed",)) == []

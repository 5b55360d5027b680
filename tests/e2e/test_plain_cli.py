"""The plain forms of the check without click (envcheck/cli/plain_cli.py) answer byte for byte as the click CLI does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.cli.plain_cli import applies

# The command as users run it (through envcheck/cli/entry.py), and the click CLI given the same arguments.
ENTRY = "import sys; from envcheck.cli.entry import console; sys.argv = ['envcheck', *sys.argv[1:]]; console()"
CLICK = "import sys; from envcheck.cli.click_cli import console; sys.argv = ['envcheck', *sys.argv[1:]]; console()"
PROBE = ("import sys\nfrom envcheck.cli.entry import console\nsys.argv = ['envcheck', *sys.argv[1:]]\n"
         "try:\n    console()\nfinally:\n    sys.stderr.write('click imported: %s' % ('click' in sys.modules))\n")


def _run(code: str, args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "_ENVCHECK_COMPLETE")}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                          env={**environ, **env}, check=False)


PROJECTS = {
    "no project": None,
    "an unmet requirement": '[project]\nname = "demo"\nversion = "1"\ndependencies = ["no-such-dist-xyz>=1"]\n',
    "a configuration error": "[tool.envcheck]\nfail-on = \"sometimes\"\n",
    "an unknown key": "[tool.envcheck]\nselekt = [\"EC01\"]\n",
    "fail-on info": "[tool.envcheck]\nfail-on = \"info\"\n",
}


@pytest.mark.parametrize("args", [["--static"], ["check", "--static"], [], ["check"]], ids=lambda a: " ".join(a) or "-")
@pytest.mark.parametrize("project", list(PROJECTS))
def test_same_output_and_exit_code_as_the_click_cli(tmp_path: Path, project: str, args: list[str]) -> None:
    """For each kind of project (none, findings, bad configuration), the fast path prints what click's CLI prints
    and exits with its code."""
    text = PROJECTS[project]
    if text is not None:
        (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    fast, slow = _run(ENTRY, args, tmp_path), _run(CLICK, args, tmp_path)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    assert fast.returncode in (0, 1, 2)
    if project == "a configuration error":
        assert fast.returncode == 2 and "envcheck: error:" in fast.stderr


@pytest.mark.parametrize("static", [True, False], ids=["--static", "probes"])
def test_the_same_check_options_as_the_click_cli(monkeypatch: pytest.MonkeyPatch, static: bool) -> None:
    """The plain form runs the check pipeline with the very options click builds for the same argument list."""
    from click.testing import CliRunner

    from envcheck import pipeline
    from envcheck.cli import plain_cli
    from envcheck.cli.click_cli import cli

    seen = []

    def capture(options: pipeline.CheckOptions, **_: object) -> None:
        seen.append(options)
        raise KeyboardInterrupt  # nothing more to run: the options are what is compared

    monkeypatch.setattr(pipeline, "run", capture)
    args = ["--static"] if static else ["check"]
    CliRunner().invoke(cli, args)
    with pytest.raises(KeyboardInterrupt):
        plain_cli._check(None, static=static)
    assert len(seen) == 2
    assert seen[0] == seen[1]
    assert seen[0].static is static and seen[0].discover and seen[0].python_named_by == "--python"


def test_the_fast_path_imports_no_click(tmp_path: Path) -> None:
    """`envcheck --static` runs without importing click; any other form imports it."""
    assert _run(PROBE, ["--static"], tmp_path).stderr.endswith("click imported: False")
    assert _run(PROBE, ["--static", "--no-cache"], tmp_path).stderr.endswith("click imported: True")
    completing = _run(PROBE, ["--static"], tmp_path, _ENVCHECK_COMPLETE="bash_complete", COMP_WORDS="envcheck --st",
                      COMP_CWORD="1")
    assert "click imported: True" in completing.stderr


def test_only_the_exact_forms_apply() -> None:
    """Any other option, order or command goes to the CLI."""
    assert applies(["--static"]) and applies(["check", "--static"]) and applies([]) and applies(["check"])
    for argv in (["-v"], ["check", "-v"], ["--static", "-v"], ["--static", "check"], ["facts", "--static"],
                 ["--Static"], ["--no-cache"], ["facts"]):
        assert not applies(argv)


@pytest.mark.parametrize("args", [[], ["--no-cache"]], ids=["plain", "click"])
def test_a_check_that_fails_early_leaves_no_probe_child(tmp_path: Path, args: list[str]) -> None:
    """The probes' child is begun before the configuration is read; a configuration error ends it and removes its
    folder (both the click-free and the click path)."""
    (tmp_path / "envcheck.toml").write_text('fail-on = "sometimes"\n', encoding="utf-8")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = _run(ENTRY, args, tmp_path, TMPDIR=str(scratch))
    assert proc.returncode == 2 and "fail-on" in proc.stderr
    assert list(scratch.iterdir()) == []


def _stderr_on_a_terminal(code: str, args: list[str], cwd: Path, cache: Path) -> tuple[int, bytes]:
    import pty

    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "_ENVCHECK_COMPLETE")}
    env["ENVCHECK_CACHE_DIR"] = str(cache)
    try:
        proc = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, stdout=subprocess.DEVNULL,
                              stderr=follower, env=env, timeout=600, check=False)
    finally:
        os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other side is closed and everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.returncode, b"".join(chunks)


def test_the_probes_status_line_on_a_terminal_is_the_clis(tmp_path: Path) -> None:
    """While probes run, a terminal's stderr shows the same self-overwriting line, cleared at the end, whichever
    path runs the check; nothing else is written there."""
    fast = _stderr_on_a_terminal(ENTRY, [], tmp_path, tmp_path / "cache-fast")
    slow = _stderr_on_a_terminal(CLICK, ["check"], tmp_path, tmp_path / "cache-slow")
    assert fast == slow
    assert b"envcheck: probing torch-import (1/" in fast[1] and fast[1].endswith(b"\r\x1b[K")

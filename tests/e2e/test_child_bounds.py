"""Every child envcheck starts is bounded from its spawn and never outlives envcheck: a `--python` that is a shell
script sleeping forever (as a wrapper script that waits, or a start-up stalled in a .pth file, would) makes `check`,
`check --static`, `facts` and `fix` end at the user's bound with a clear message, and a signal that ends envcheck
while the collector or an installer of `fix` runs ends them and everything they started. The real `envcheck`
command runs in a child process; the tests read the pids the stuck processes write and check each is gone."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _fakes import write_tree
from _procs import alive
from _torch import BIN, clean_env

pytestmark = pytest.mark.posix

# Writes its pid and its child's, then waits forever without reading its standard input.
SLEEPING_PYTHON = """\
#!/bin/sh
echo $$ >> "$STUCK_PIDS"
sleep 3600 &
echo $! >> "$STUCK_PIDS"
wait
"""

# A pip that hangs in an install, with a child of its own (a build backend, a download), each pid written.
HANGING_PIP = """\
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "3600"])
with open(os.environ["STUCK_PIDS"], "a") as fh:
    fh.write(f"{os.getpid()}\\n{child.pid}\\n")
time.sleep(3600)
"""


def envcheck_command() -> list[str]:
    """The installed `envcheck` console script (`python -m envcheck` would put the test's folder on sys.path)."""
    found = shutil.which("envcheck", path=str(Path(sys.executable).parent))
    assert found is not None, "envcheck's console script is not installed beside the test interpreter"
    return [found]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return clean_env({"TMPDIR": str(tmp_path / "tmp"), "ENVCHECK_CACHE_DIR": str(tmp_path / "cache"),
                      "STUCK_PIDS": str(tmp_path / "pids"), "NO_COLOR": "1", **extra})



def _pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "pids"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _left_running(tmp_path: Path, within: float = 10.0) -> list[int]:
    """The stuck processes still running `within` seconds from now (SIGKILL is not instantaneous)."""
    deadline = time.monotonic() + within
    while (running := [p for p in _pids(tmp_path) if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return running


def _kill_leftovers(tmp_path: Path) -> None:
    """A failing test must not leave its sleeping processes for an hour."""
    for pid in _pids(tmp_path):
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def _started(tmp_path: Path, proc: subprocess.Popen[bytes], count: int, within: float = 120.0) -> None:
    """Wait until `count` pids are written (the stuck processes are running), not for a time."""
    deadline = time.monotonic() + within
    while len(_pids(tmp_path)) < count:
        assert proc.poll() is None, "envcheck ended before its child got stuck"
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)


def _sleeping_python(tmp_path: Path) -> Path:
    script = tmp_path / "python"
    script.write_text(SLEEPING_PYTHON)
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("command", [["check"], ["check", "--static"], ["facts"], ["fix", "--yes"]],
                         ids=["check", "check-static", "facts", "fix"])
def test_a_python_that_never_answers_ends_at_the_bound(tmp_path: Path, command: list[str]) -> None:
    """Each command ends a few seconds after --probe-timeout, non-zero, saying the interpreter did not answer
    within the bound, and leaves no process (neither the script nor its child) and no folder of its own."""
    python = _sleeping_python(tmp_path)
    begun = time.monotonic()
    try:
        proc = subprocess.run([*envcheck_command(), *command, "--python", str(python), "--probe-timeout", "2",
                               "--no-config", "--no-project"], cwd=tmp_path, env=_env(tmp_path),
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, check=False)
        elapsed = time.monotonic() - begun
        assert proc.returncode not in (0, None), proc.stdout
        assert f"--python {python}: no answer within 2 s" in proc.stderr, proc.stderr
        assert elapsed < 2 + 30  # never the fixed 60 s the collector waited, nor forever in the write to its stdin
        assert _pids(tmp_path), "the script never ran"
        assert _left_running(tmp_path) == []
        assert list((tmp_path / "tmp").iterdir()) == []
    finally:
        _kill_leftovers(tmp_path)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_no_collector_outlives_envcheck(tmp_path: Path, signame: str) -> None:
    """Whichever signal ends envcheck while the collector's interpreter hangs, it and its child end too, and the
    collector's folder goes; envcheck ends as that signal ends a process (SIGINT: as an interrupted command)."""
    signum = getattr(signal, signame)
    python = _sleeping_python(tmp_path)
    proc = subprocess.Popen([*envcheck_command(), "check", "--static", "--python", str(python), "--probe-timeout",
                             "300", "--no-config", "--no-project"], cwd=tmp_path, env=_env(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        _started(tmp_path, proc, 2)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        if signum == signal.SIGINT:
            assert proc.returncode not in (0, None), err
        else:
            assert proc.returncode == -signum, err
        assert _left_running(tmp_path) == []
        assert list((tmp_path / "tmp").iterdir()) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_leftovers(tmp_path)


def _venv_with_hanging_pip(tmp_path: Path) -> Path:
    """A real venv (no real pip: seconds saved) whose `pip` is a package that hangs in every command."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=clean_env())
    python = venv / BIN / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    write_tree(site, {"pip/__init__.py": "", "pip/__main__.py": HANGING_PIP})
    return python


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_no_installer_outlives_envcheck_fix(tmp_path: Path, signame: str) -> None:
    """A signal that ends `envcheck fix` while it runs an installer ends the installer and what it started."""
    signum = getattr(signal, signame)
    python = _venv_with_hanging_pip(tmp_path)
    proc = subprocess.Popen([*envcheck_command(), "fix", "--yes", "--static", "--python", str(python), "--no-config",
                             "--no-project", "--require", "absent-package>=1"], cwd=tmp_path, env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        _started(tmp_path, proc, 2)
        proc.send_signal(signum)
        out = proc.communicate(timeout=60)[0].decode()
        assert "-m pip install 'absent-package>=1'" in out, out
        if signum == signal.SIGINT:
            assert proc.returncode not in (0, None), out
        else:
            assert proc.returncode == -signum, out
        assert _left_running(tmp_path) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_leftovers(tmp_path)


def test_a_signal_during_a_spawn_is_handled_once_the_child_is_known() -> None:
    """A terminating signal that arrives while a held child is being spawned (its pid not yet known to whoever
    started it) is handled when the spawn returns: the child is ended then, not forgotten."""
    from envcheck.sources.probes import guard

    seen: list[str] = []

    class Child:
        def abandon(self) -> None:
            seen.append("abandoned")

    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append("embedding program's handler"))
    try:
        child = Child()
        guard.hold(child)
        with guard.spawning():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)  # the handler runs here, in the main thread: it must only take note
            seen.append("spawned")
        assert seen == ["spawned", "abandoned", "embedding program's handler"]
    finally:
        guard.release(child)
        signal.signal(signal.SIGTERM, previous)

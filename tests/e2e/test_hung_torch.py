"""A torch whose import hangs, checked by the real `envcheck` command in a child process: the check fails within
the user's bound, shows the wait on a terminal, and however envcheck ends, leaves no probe process and no folder."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _fakes import write_dist, write_tree
from _procs import alive
from _torch import BIN, clean_env

pytestmark = pytest.mark.posix

# The fake torch writes the pid of the process importing it, then hangs as a deadlocked import would.
HANGING_TORCH = """\
import os, pathlib, time
pathlib.Path(os.environ["HUNG_TORCH_PID_FILE"]).write_text(str(os.getpid()))
time.sleep(3600)
"""


def _venv(tmp_path: Path) -> Path:
    """A real venv (no pip: seconds saved) whose site-packages holds the hanging torch and its dist-info."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=clean_env())
    python = venv / BIN / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    write_tree(site, {"torch/__init__.py": HANGING_TORCH, "torch/version.py": "__version__ = '2.13.0+cpu'\n"})
    write_dist(site, "torch", "2.13.0+cpu", top_level=["torch"])
    return python


def _env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return clean_env({"TMPDIR": str(tmp_path / "tmp"), "ENVCHECK_CACHE_DIR": str(tmp_path / "cache"),
                      "HUNG_TORCH_PID_FILE": str(tmp_path / "torch.pid"), "NO_COLOR": "1"})


def _envcheck(python: Path, timeout: float) -> list[str]:
    return [sys.executable, "-m", "envcheck", "check", "--python", str(python), "--probe-timeout", f"{timeout:g}",
            "--no-project", "--no-config"]



def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _probe_folders(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "tmp").glob("envcheck-probe-*"))


def _hung_pid(tmp_path: Path, proc: subprocess.Popen[bytes], within: float = 60.0) -> int:
    """The pid of the probe child stuck in `import torch`, once it is stuck there."""
    pid_file = tmp_path / "torch.pid"
    deadline = time.monotonic() + within
    while not (pid_file.exists() and pid_file.read_text()):
        assert proc.poll() is None, "envcheck ended before its probe child imported torch"
        assert time.monotonic() < deadline, "the probe child never imported torch"
        time.sleep(0.05)
    return int(pid_file.read_text())


def test_a_hung_import_fails_within_the_bound(tmp_path: Path) -> None:
    """`envcheck check --probe-timeout 3` on a torch whose import hangs exits 1 (EC0409) seconds after the bound, and
    leaves no process or folder."""
    python = _venv(tmp_path)
    begun = time.monotonic()
    proc = subprocess.run(_envcheck(python, 3), cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=120, check=False)
    out = proc.stdout.decode()
    elapsed = time.monotonic() - begun
    assert proc.returncode == 1, out
    assert "EC0409" in out and "did not finish within 3 s" in out.replace("\n    ", " ")
    assert elapsed < 3 + 30  # was the fixed 600 s import bound, whatever --probe-timeout said
    assert _gone(int((tmp_path / "torch.pid").read_text()))
    assert _probe_folders(tmp_path) == []


_TICK = re.compile(rb"importing torch\xe2\x80\xa6 (\d+) s of at most 300 s")


def test_a_hung_import_shows_the_wait_on_a_terminal(tmp_path: Path) -> None:
    """While the import hangs, the status line on a terminal shows the seconds waited and the bound. The test waits
    for the line itself, not for a time: on a loaded machine envcheck may reach its wait loop only after seconds
    (its first tick then says 2 s or 3 s), so a bound of seconds could end the wait before any tick (it failed so
    once); with 300 s the tick comes, and a signal ends the check (nothing is left)."""
    import pty
    import select

    python = _venv(tmp_path)
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(_envcheck(python, 300), cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=secondary, stdin=subprocess.DEVNULL)
    os.close(secondary)
    shown = b""
    try:
        deadline = time.monotonic() + 120  # a guard against a tick that never comes, never a timing assertion
        while (tick := _TICK.search(shown)) is None:
            assert proc.poll() is None, f"envcheck ended without showing the wait: {shown!r}"
            assert time.monotonic() < deadline, f"no tick within 120 s: {shown!r}"
            if select.select([primary], [], [], 0.5)[0]:
                shown += os.read(primary, 4096)
        assert 1 <= int(tick.group(1)) < 300
        hung = _hung_pid(tmp_path, proc)  # the wait shown is the probe child's, stuck in `import torch`
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        assert proc.returncode == -signal.SIGTERM
        assert _gone(hung)
        assert _probe_folders(tmp_path) == []
    finally:
        os.close(primary)
        if proc.poll() is None:
            proc.kill()
        pid_file = tmp_path / "torch.pid"
        if pid_file.exists() and pid_file.read_text() and alive(int(pid_file.read_text())):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGQUIT", "SIGABRT", "SIGINT"])
def test_no_probe_child_outlives_envcheck(tmp_path: Path, signame: str) -> None:
    """Whichever signal ends envcheck while its probe child hangs in `import torch`, the child ends too and its
    folder is removed; envcheck ends as that signal ends a process (SIGINT: as an interrupted command)."""
    signum = getattr(signal, signame)
    python = _venv(tmp_path)
    proc = subprocess.Popen(_envcheck(python, 300), cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    hung = _hung_pid(tmp_path, proc)
    try:
        assert _probe_folders(tmp_path)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
        if signum == signal.SIGINT:
            assert proc.returncode not in (0, None), err
        else:
            assert proc.returncode == -signum, err
        assert _gone(hung), f"the probe child {hung} outlived envcheck ({signame})"
        assert _probe_folders(tmp_path) == []
    finally:  # a failure here must not leave the hung child running for an hour
        if alive(hung):
            os.killpg(hung, signal.SIGKILL)

"""How envcheck starts a child process: the fact collector in another interpreter, the probes, and the commands of
`envcheck fix`. Every one is

- started in a session (process group) of its own, so that ending it ends whatever it started;
- held by envcheck/sources/probes/guard.py from *before* it is spawned until it is closed, so that no signal that ends
  envcheck (SIGTERM, SIGHUP, SIGQUIT, SIGABRT; SIGINT through KeyboardInterrupt and `close`) leaves it behind;
- given nothing that can block envcheck before its bound runs: its program is a file and its standard input is
  empty or the terminal's, never a pipe that envcheck writes into (a pipe holds 64 KB, and an interpreter whose
  start-up stalls never reads it);
- bounded by the caller's deadline (`wait`), counted from the spawn, after which its whole group is killed.

`run_python_file` is how a program of envcheck runs in the checked interpreter without anything of the working folder
running: a script's folder, not the working folder, is put first on `sys.path` (as `python -` and `python -m` would),
and that folder is envcheck's own, holding nothing but the program.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from envcheck.sources.probes import guard

_POLL_S = 0.02
# How long a child that is told to stop (SIGTERM, to its whole group) may take before it is killed: an installer
# interrupted mid-way removes its temporary files and can roll back what it half-installed.
GRACE_S = 2.0

Stream = int | IO[Any] | None


class Spawned:
    """A child process in a group of its own, held by the guard from before its spawn until `close`.

    `grace_s`: 0 kills the group at once (SIGKILL); more sends SIGTERM first and SIGKILL after that many seconds.
    `after`: called once the child is gone (its folder removed), by `close` and by `abandon` alike."""

    def __init__(self, argv: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
                 env: dict[str, str] | None = None, stdin: Stream = subprocess.DEVNULL,
                 stdout: Stream = subprocess.DEVNULL, stderr: Stream = subprocess.DEVNULL, grace_s: float = 0.0,
                 after: Callable[[], None] | None = None) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.grace_s = grace_s
        self._after = after
        kwargs: dict[str, Any] = {}
        if sys.platform != "win32":
            kwargs["start_new_session"] = True
        guard.hold(self)
        try:
            with guard.spawning():  # a signal now is handled once self.proc is set
                self.proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=stdin, stdout=stdout,
                                             stderr=stderr, **kwargs)
        except BaseException:
            if self.proc is not None:  # Ctrl-C during the spawn, raised once the child's pid was known: end it
                self._stop_group(reap=True)
            guard.release(self)
            raise
        self.began = time.monotonic()

    def wait(self, deadline: float | None = None) -> int | None:
        """The exit status once the child ends; None when `deadline` (time.monotonic()) comes first, with its group
        killed. Its status is then no answer: the caller says the bound was reached."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self._stop_group(reap=True)
            return None

    def close(self) -> None:
        """End the child's group (if it still runs, or left something running), reap it and release it."""
        if self.proc is not None:
            self._stop_group(reap=True)
        self._finish()

    def abandon(self) -> None:
        """`close` from a signal handler, as envcheck ends: the interrupted code may be inside `Popen.wait`, whose
        lock is not reentrant, so the child is reaped with waitpid directly (for up to a second after SIGKILL:
        it is not instantaneous, and a child still alive could write into a folder `after` removes)."""
        if self.proc is not None:
            self._stop_group(reap=False)
            for _ in range(100):
                if self._reaped_now():
                    break
                time.sleep(0.01)
        if self._after is not None:
            self._after()

    def _finish(self) -> None:
        try:
            if self._after is not None:
                self._after()
        finally:
            guard.release(self)

    def _stop_group(self, *, reap: bool) -> None:
        assert self.proc is not None
        if self.grace_s > 0 and self.proc.returncode is None:
            kill_group(self.proc.pid, signal.SIGTERM)
            end = time.monotonic() + self.grace_s
            while time.monotonic() < end and not self._reaped_now():
                time.sleep(_POLL_S)
        kill_group(self.proc.pid)  # what the child started goes with it, even after it ended
        if reap:
            self.proc.wait()

    def _reaped_now(self) -> bool:
        """Whether the child has ended (reaping it if so), without Popen's lock."""
        assert self.proc is not None
        if self.proc.returncode is not None:
            return True
        if sys.platform == "win32":  # pragma: no cover - no waitpid there; no signal guard either
            return self.proc.poll() is not None
        try:
            pid, status = os.waitpid(self.proc.pid, os.WNOHANG)
        except ChildProcessError:
            return True  # reaped already (by Popen elsewhere)
        if pid:
            self.proc.returncode = os.waitstatus_to_exitcode(status)
            return True
        return False


def kill_group(pid: int, signum: int | None = None) -> None:
    """Send `signum` (default SIGKILL) to the process group led by `pid` (a child started by `Spawned`)."""
    try:
        if sys.platform != "win32":
            os.killpg(pid, signal.SIGKILL if signum is None else signum)
        else:  # pragma: no cover - no process groups there: the child alone (TerminateProcess)
            os.kill(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass


def absolute_path_entries(path: str | None = None) -> str:
    """PATH (or `path`) without its relative and empty entries: a relative entry (`.`, `bin`, an empty one, which
    means the working folder) makes a program of the working folder the one a bare name finds."""
    value = os.environ.get("PATH", os.defpath) if path is None else path
    return os.pathsep.join(p for p in value.split(os.pathsep) if p and Path(p).is_absolute())


def which(name: str) -> str | None:
    """The absolute path of the program a bare `name` runs, looked up on PATH's absolute entries only."""
    import shutil

    return shutil.which(name, path=absolute_path_entries())

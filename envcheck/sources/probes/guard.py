"""No probe child outlives envcheck: a signal that ends envcheck ends its live children and removes their folders
first, then ends envcheck as the signal would have.

The children run in sessions of their own (so that a timeout kills everything a probe started), so a signal sent to
envcheck, or to its process group, never reaches them. Without this, SIGTERM (a cancelled CI job, `timeout`, a
container stop), SIGHUP (a closed terminal), SIGQUIT or SIGABRT kill envcheck at once and leave a child re-parented
to init, still importing torch or holding the GPU, and its `envcheck-probe-*` folder behind.

SIGINT (Ctrl-C) is handled the same way, then Python's own handler raises KeyboardInterrupt as usual: left to the
`finally` blocks of whoever started a child, a KeyboardInterrupt raised inside `subprocess.Popen` (after the fork,
before the pid is returned) or between the spawn and the `try` that closes it would leave a child nobody knows.
SIGKILL cannot be caught by anyone.

A child is held *before* it is spawned, inside `spawning()`: a signal that arrives while the child is being started
(its pid not yet known to whoever started it) waits until the spawn has returned, and then ends it like any other.

The handlers are installed while a child lives, only from the main thread (the only one that may), never over a
signal set to be ignored (`nohup`), and the handlers they replaced come back when the last child is closed. A
replaced handler that was Python's (a program that embeds envcheck) is called after the cleanup; the default one
(the usual case) is restored and the signal sent again, so envcheck ends with the status the signal gives (a
shell's 143 for SIGTERM).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Protocol

_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGABRT", "SIGINT")
                 if hasattr(signal, name))


class Abandonable(Protocol):
    def abandon(self) -> None:
        """End the child and remove its folder, from a signal handler: nothing that takes a lock."""


_live: list[Abandonable] = []
_replaced: dict[int, Any] = {}  # signal -> the handler installed before ours
_spawning = 0  # spawns under way (`spawning()`): a signal meanwhile is deferred to their end
_deferred: list[tuple[int, FrameType | None]] = []


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def hold(child: Abandonable) -> None:
    """`child` lives: a terminating signal ends it (and installs the handlers with the first child)."""
    _live.append(child)
    if _replaced or sys.platform == "win32" or not _main_thread():
        return
    for signum in _SIGNALS:
        previous = signal.getsignal(signum)
        if previous is signal.SIG_IGN or previous is None:  # ignored, or set outside Python: left as it is
            continue
        _replaced[signum] = previous
        signal.signal(signum, _on_signal)


def release(child: Abandonable) -> None:
    """`child` is closed; with the last one, the replaced handlers come back."""
    if child in _live:
        _live.remove(child)
    if not _live:
        _restore()


@contextmanager
def spawning() -> Iterator[None]:
    """Around starting a child already `hold`: a terminating signal that arrives meanwhile is handled when the spawn
    has returned (and the child's pid is known), not while it is under way."""
    global _spawning
    _spawning += 1
    try:
        yield
    finally:
        _spawning -= 1
        if not _spawning and _deferred:
            _on_signal(*_deferred.pop(0))


def _restore() -> None:
    if not _main_thread():
        return
    while _replaced:
        signum, previous = _replaced.popitem()
        signal.signal(signum, previous)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _spawning:
        _deferred.append((signum, frame))
        return
    previous = _replaced.get(signum, signal.SIG_DFL)
    while _live:
        _live.pop().abandon()
    _restore()
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)

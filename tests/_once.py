"""What one test run builds once and every pytest-xdist worker of that run reuses: a venv with the real torch, a
built wheel, a venv that many tests read.

A session-scoped fixture is built once per worker, so `-n 4` would build each of these four times; here the first
worker to ask builds it in the run's shared temporary folder while the others wait for it. Whoever uses the result
must not change it (`linked_copy` gives a test a copy of a venv of its own to change). A build that skipped or
failed skips or fails every test that asks for it, with the same message.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

_WAIT_S = 1800  # guards against a builder that died without a word; never a timing assertion
_POLL_S = 0.2


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of this run that every worker sees (a worker's own basetemp sits inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """The folder `name` of this run, which `build(folder)` filled (it creates the folder); built by one worker.

    Claiming the build is a `mkdir`, which is atomic on every platform; the builder then writes an outcome file
    (`ok`, or how its build skipped or failed), which the others wait for.
    """
    root = run_folder(tmp_path_factory)
    folder, claim, outcome = root / name, root / f"{name}.claim", root / f"{name}.outcome"
    try:
        claim.mkdir()
    except FileExistsError:
        return _wait(folder, outcome, name)
    try:
        build(folder)
    except BaseException as exc:  # pytest's skip and fail are BaseExceptions: the waiters must see them too
        kind = "skip" if isinstance(exc, pytest.skip.Exception) else "fail"
        _write(outcome, f"{kind}\n{name} could not be built: {type(exc).__name__}: {exc}")
        raise
    _write(outcome, "ok\n")
    return folder


def _wait(folder: Path, outcome: Path, name: str) -> Path:
    deadline = time.monotonic() + _WAIT_S
    while not outcome.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"{name} was not built within {_WAIT_S} s by the worker that claimed it")
        time.sleep(_POLL_S)
    kind, _, message = outcome.read_text(encoding="utf-8").partition("\n")
    if kind == "skip":
        pytest.skip(message)
    if kind != "ok":
        pytest.fail(message)
    return folder


def _write(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)  # the waiters never read half an outcome


def linked_copy(venv: Path, dest: Path) -> Path:
    """A copy of `venv` at `dest` whose files are hard links to the shared one's (a copy of a venv with torch is a
    gigabyte), for a test that installs into it. Installers and Python never write a file in place (they write a new
    file and rename it, or unlink), so a change to the copy leaves the shared venv as it was."""
    shutil.copytree(venv, dest, symlinks=True, copy_function=os.link)
    return dest

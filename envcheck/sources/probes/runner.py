"""Running probes in child processes of the checked interpreter, so that nothing they do can hurt envcheck.

Each child runs in its own process group with a hard per-probe timeout; the group is killed on timeout. A child's
results come back through a file, line by line, so a crash or hang costs only the probe that was running: the
runner starts a new child for the probes after it. The child's stdout is discarded (libraries print there) and the
tail of its stderr is kept for crashed and timed-out probes. CUDA_LAUNCH_BLOCKING=1 makes a failing kernel raise
where it was launched. CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES stay as the user set them, so `cuda:0` in a probe
is the GPU the user's own program gets; NVML's devices are matched to the probe's by UUID, not by index.

Time: the user's bound (--probe-timeout) holds for starting the child and importing torch as for each probe, counted
from the child's start, so a hung `import torch` costs one bound and is a failure (EC0409), not a check that waits
ten minutes and passes; a terminal shows the import's seconds meanwhile. A probe that hangs on the GPU costs one
timeout, and the probes after it that would touch the GPU again are skipped with that reason rather than each
hanging in a fresh child.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from envcheck.errors import FactsError
from envcheck.facts._reader import Reader
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.probe_statuses import PROBE_TIMEOUT_S
from envcheck.sources.probes.catalog import BY_NAME, GPU_PROBES, ProbeSpec
from envcheck.sources.probes.children import Spawned, kill_group
from envcheck.support.names import inline

CHILD_SOURCE_FILE = Path(__file__).with_name("_child.py")
_POLL_S = 0.02
_STDERR_TAIL_BYTES = 4000
_MAIN_GUARD = '\nif __name__ == "__main__":'

class Progress(Protocol):
    """Told as each probe starts (name, index from 1, total); while the child is still importing torch, told again
    about once a second with the seconds waited so far and the bound (`waited`)."""

    def __call__(self, name: str, index: int, total: int, waited: tuple[float, float] | None = None) -> None: ...


@dataclass(frozen=True)
class RunOptions:
    """How the probe child runs: the interpreter, its time limits, environment and progress."""

    python: str  # the checked interpreter
    timeout_s: float = PROBE_TIMEOUT_S  # per probe (envcheck/facts/probe_results.py says why that long)
    # Starting the child and importing torch, before the first probe starts; None: timeout_s, the user's one bound.
    import_timeout_s: float | None = None
    env: dict[str, str] | None = None  # the child's environment; default: envcheck's own
    progress: Progress | None = None


@dataclass(frozen=True)
class Program:
    """What probe children run: envcheck/sources/probes/_child.py with `extra` probe functions inserted before its entry
    point, and the specs of the probes those define."""

    extra: str = ""
    specs: Mapping[str, ProbeSpec] = field(default_factory=dict)


# The catalogue's probes and nothing else. The tests swap in a Program whose probes segfault, hang, exhaust memory
# or fake a GPU, to run them in real children through this same runner.
PROGRAM = Program()


def child_source(extra: str = "") -> str:
    source = inline(CHILD_SOURCE_FILE.read_text(encoding="utf-8"))
    if extra:
        head, guard, tail = source.rpartition(_MAIN_GUARD)
        source = f"{head}\n\n{extra}\n{guard}{tail}"
    return source


def _child_env(base: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["CUDA_LAUNCH_BLOCKING"] = "1"
    # CUDA_DEVICE_ORDER is left alone: forcing PCI_BUS_ID would make CUDA_VISIBLE_DEVICES=0 name another GPU than
    # in the user's programs (CUDA's default order is FASTEST_FIRST).
    env["PYTHONFAULTHANDLER"] = "1"
    env.pop("PYTHONINSPECT", None)
    return env


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _crash_message(returncode: int) -> tuple[str, str]:
    """(error_class, message) for a child that died while a probe ran."""
    if returncode < 0:
        name = _signal_name(returncode)
        hint = {
            "SIGSEGV": "segmentation fault (a native extension or driver crashed)",
            "SIGABRT": "aborted (a C++ exception or assertion in native code)",
            "SIGKILL": "killed (most often the kernel's out-of-memory killer)",
            "SIGBUS": "bus error (a native extension or driver crashed)",
            "SIGILL": "illegal instruction (a binary built for a newer CPU)",
        }.get(name, "killed by a signal")
        return name, f"the probe process died: {name}, {hint}"
    return "ExitCode", f"the probe process exited with code {returncode} before finishing"


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - _STDERR_TAIL_BYTES))
            return fh.read().decode("utf-8", errors="replace").strip()
    except OSError:
        return ""


class _Lines:
    """Reads the complete JSON lines a child has appended to its results file so far."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.buffer = ""

    def read(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("r", encoding="utf-8", errors="replace") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
                self.offset = fh.tell()
        except FileNotFoundError:
            return []
        self.buffer += chunk
        *complete, self.buffer = self.buffer.split("\n")
        events = []
        for line in complete:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a garbled line (a probe wrote into our file descriptor): its probe gets no result
            if isinstance(event, dict):
                events.append(event)
        return events


def _result(raw: object, name: str) -> ProbeResult:
    try:
        return ProbeResult.from_reader(Reader(raw, "<probe child>", name))
    except FactsError as exc:
        return ProbeResult(status="error", error_class="BadProbeResult", message=f"unreadable result: {exc}")


class Child:
    """A probe child started, with the folder its program and results live in; `close` ends it and removes the
    folder, and so does a signal that ends envcheck meanwhile (envcheck/sources/probes/children.py, guard.py).

    The program is a file in that folder, run with the folder as the working directory: nothing is written to the
    child's standard input (an interpreter whose start-up stalls would block envcheck in that write, before any bound
    runs), and nothing of envcheck's working folder is on the child's `sys.path` or resolves a relative path."""

    def __init__(self, opts: RunOptions, request: str) -> None:
        self.python, self.request = opts.python, request
        self._tmp = tempfile.TemporaryDirectory(prefix="envcheck-probe-")
        self.folder = Path(self._tmp.name)
        self.quiet: Callable[[], AbstractContextManager[object]] = nullcontext
        try:
            self.out_path, self.err_path = self.folder / "results.jsonl", self.folder / "stderr.txt"
            self.out_path.touch()
            program = self.folder / "envcheck_probe_child.py"
            program.write_text(child_source(PROGRAM.extra), encoding="utf-8")
            with self.err_path.open("wb") as err:
                self.spawned = Spawned(
                    [opts.python, "-X", "faulthandler", str(program), request, str(self.out_path)],
                    cwd=self.folder, env=_child_env(opts.env), stderr=err, after=self._remove_folder)
        except BaseException:
            self._tmp.cleanup()
            raise
        assert self.spawned.proc is not None
        self.proc = self.spawned.proc
        # Before the first start event the child starts Python and imports torch: the import bound applies, counted
        # from the spawn (a child begun ahead of the run has been importing since then).
        self.began = self.spawned.began

    def _remove_folder(self) -> None:
        with self.quiet():  # removing its own folder is no read of the check's (envcheck/pipeline/replay.py)
            self._tmp.cleanup()

    def close(self) -> None:
        self.spawned.close()  # whatever the probes started (a leftover worker) goes with them

    def abandon(self) -> None:
        self.spawned.abandon()


def _request(specs: Sequence[ProbeSpec]) -> str:
    return json.dumps({"probes": [{"name": s.name, "needs_torch": s.needs_torch} for s in specs]})


def _shared(specs: Sequence[ProbeSpec]) -> list[ProbeSpec]:
    """The probes the first, shared child runs, in its order (see FIRST)."""
    ordered = sorted(specs, key=lambda s: FIRST.index(s.name) if s.name in FIRST else len(FIRST))
    return [s for s in ordered if not s.isolated]


def _specs(names: Sequence[str]) -> list[ProbeSpec]:
    specs = [PROGRAM.specs.get(n) or BY_NAME[n] for n in dict.fromkeys(names)]
    if any(s.needs_torch for s in specs) and "torch-import" not in [s.name for s in specs]:
        specs.insert(0, BY_NAME["torch-import"])
    return specs


class Started:
    """The children of a probe run begun ahead of it (`start`): the shared one and one per isolated probe, each
    waiting to be taken by `run` for the probes it was started for."""

    def __init__(self, children: list[Child]) -> None:
        self.children = children

    def take(self, python: str, request: str) -> Child | None:
        """The child started for `request` with `python`, no longer held here; None if there is none."""
        for child in self.children:
            if (child.python, child.request) == (python, request):
                self.children.remove(child)
                return child
        return None

    def close(self) -> None:
        """End every child not taken (the results came from the cache, or their probes were skipped)."""
        while self.children:
            self.children.pop().close()


def start(names: Sequence[str], opts: RunOptions) -> Started | None:
    """The children of `run(names, opts)`, started now: importing torch (seconds) then overlaps whatever the caller
    does before it calls `run` (collecting the static facts), and the isolated probes' children run beside the
    shared one instead of after it. None when none can be started (`run` then reports why)."""
    specs = _specs(names)
    children: list[Child] = []
    for group in [_shared(specs), *([s] for s in specs if s.isolated)]:
        if group:
            try:
                children.append(Child(opts, _request(group)))
            except OSError:
                break
    return Started(children) if children else None


def _run_child(specs: Sequence[ProbeSpec], opts: RunOptions, done: int, total: int,
               results: dict[str, ProbeResult], started: Started | None = None) -> list[ProbeSpec]:
    """Run `specs` in one child (one of `started`, when it was started for exactly these); fill `results`; return
    the specs it never reached (after a crash or timeout)."""
    request = _request(specs)
    child = None if started is None else started.take(opts.python, request)
    if child is None:
        child = Child(opts, request)
    proc, err_path = child.proc, child.err_path
    try:
        lines = _Lines(child.out_path)
        current: str | None = None
        import_limit = opts.timeout_s if opts.import_timeout_s is None else opts.import_timeout_s
        deadline = child.began + import_limit
        probing = False  # a probe has started (before that, the child imports torch)
        shown = 0  # whole seconds of the import last shown
        finished: set[str] = set()
        killed = False  # by us, at a timeout: the exit status then says nothing about the other probes
        while True:
            for event in lines.read():
                name = str(event.get("probe"))
                if event.get("event") == "start":
                    probing = True
                    current, deadline = name, time.monotonic() + opts.timeout_s
                    if opts.progress is not None:
                        opts.progress(name, done + len(finished) + 1, total)
                elif event.get("event") == "result":
                    results[name] = _result(event.get("result"), name)
                    finished.add(name)
                    current = None
            if proc.poll() is not None:
                break
            now = time.monotonic()
            if not probing and opts.progress is not None and int(now - child.began) > shown:
                shown = int(now - child.began)
                opts.progress(specs[0].name, done + 1, total, waited=(now - child.began, import_limit))
            if now > deadline:
                killed = True
                kill_group(proc.pid)
                proc.wait()
                late = current or next(sp.name for sp in specs if sp.name not in finished)
                if probing or current is not None:
                    message = f"no result within {opts.timeout_s:g} s (the process group was killed)"
                    limit = opts.timeout_s
                else:
                    message = (f"starting Python and importing torch did not finish within {import_limit:g} s "
                               "(a hung import, a cold import from a network filesystem, or a hung GPU during "
                               "CUDA initialization); the process group was killed")
                    limit = import_limit
                results[late] = ProbeResult(status="timeout", error_class="Timeout", message=message,
                                            wall_s=limit, stderr_tail=_tail(err_path) or None)
                finished.add(late)
                break
            time.sleep(_POLL_S)
        for event in lines.read():  # what arrived between the last read and the exit
            if event.get("event") == "result":
                name = str(event.get("probe"))
                results[name] = _result(event.get("result"), name)
                finished.add(name)
            elif event.get("event") == "start":
                current = str(event.get("probe"))
        if not killed and (proc.returncode not in (0, None) or (current is not None and current not in finished)):
            victim: str | None = current if current is not None and current not in finished else None
            if victim is None:
                victim = next((s.name for s in specs if s.name not in finished), None)
            if victim is not None:
                error_class, message = _crash_message(proc.returncode or 0)
                if proc.returncode == 0:
                    error_class, message = "NoResult", "the probe process ended without writing this result"
                results[victim] = ProbeResult(status="crashed", error_class=error_class, message=message,
                                              stderr_tail=_tail(err_path) or None)
                finished.add(victim)
    finally:
        child.close()
    return [s for s in specs if s.name not in finished]


# Probes asked first of the shared child, in this order: torch-import, then extension-imports. The child starts
# extension-imports' importer right after importing torch, forked while it is still single-threaded and CUDA is not
# initialised (no other probe has run), lets it import in the background while the other probes run, and collects
# its result last.
FIRST = ("torch-import", "extension-imports")


def run(names: Sequence[str], opts: RunOptions, started: Started | None = None) -> dict[str, ProbeResult]:
    """Run the named probes; every name gets a result, whatever happens to the children. `started`: children begun
    by `start(names, opts)`.

    torch-import runs first whenever a probe needs torch: if importing torch crashes or hangs, the probes that need
    torch are skipped with that reason instead of each hanging again in a fresh child.
    """
    wanted = list(dict.fromkeys(names))
    specs = _specs(names)
    specs.sort(key=lambda s: FIRST.index(s.name) if s.name in FIRST else len(FIRST))  # stable: the rest as asked
    results: dict[str, ProbeResult] = {}
    total = len(specs)
    queue: list[list[ProbeSpec]] = [_shared(specs)]
    queue += [[s] for s in specs if s.isolated]
    try:
        while queue:
            group = queue.pop(0)
            imported = results.get("torch-import")
            if imported is not None and imported.status in ("crashed", "timeout"):
                # Every catalogue probe uses torch, even those that import it late (apex): each would crash or
                # hang again, so none runs. Test probes that declare they do not need torch still do.
                def uses_torch(spec: ProbeSpec) -> bool:
                    return spec.needs_torch or spec.name in BY_NAME

                for spec in [s for g in [group, *queue] for s in g if uses_torch(s) and s.name != "torch-import"]:
                    results[spec.name] = ProbeResult(
                        status="skipped", message=f"importing torch {imported.status} ({imported.message})")
                group = [s for s in group if not uses_torch(s) or s.name == "torch-import"]
                queue = [[s for s in g if not uses_torch(s)] for g in queue]
            hung = next((n for n in GPU_PROBES if n in results and results[n].status == "timeout"), None)
            if hung is not None:
                # A probe that hung on the GPU would hang again in every fresh child: one timeout, not one per probe.
                for spec in [s for s in group if s.name in GPU_PROBES]:
                    results[spec.name] = ProbeResult(
                        status="skipped", message=f"not run: the {hung} probe timed out on the GPU "
                                                  f"({results[hung].message})")
                group = [s for s in group if s.name not in GPU_PROBES]
            if not group:
                continue
            rest = _run_child(group, opts, len(results), total, results, started)
            if rest:
                queue.insert(0, rest)  # the probes after a crash or timeout get a fresh child
    except OSError as exc:
        for spec in specs:
            results.setdefault(spec.name, ProbeResult(
                status="skipped", message=f"cannot start {opts.python}: {exc.strerror or exc}"))
    finally:
        if started is not None:  # those never taken: their probes were skipped
            started.close()
    return {name: results[name] for name in ([*wanted] if "torch-import" in wanted else ["torch-import", *wanted])
            if name in results}

"""Live probes: tiny programs that find out what actually works on this machine, run in isolated children.

`run_probes(facts, ...)` runs the probes (or takes them from the cache, envcheck/sources/probes/results_cache.py) for
the interpreter the facts describe; `envcheck.pipeline.stages.gather` puts the results into the snapshot.

_child.py is the probes' code, run in the checked interpreter (standard library only); catalog.py their specs;
runner.py starts, watches and ends the children; guard.py ends them however envcheck ends; results_cache.py keeps
their results by a fingerprint of the environment (signed through envcheck/cache/signed.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from envcheck.facts.probe_statuses import PROBE_TIMEOUT_S
from envcheck.sources.probes.catalog import PROBE_NAMES

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from os import PathLike

    from envcheck.facts.probe_results import ProbeResult
    from envcheck.facts.snapshot import Facts
    from envcheck.sources.probes.runner import Progress, Started

__all__ = ["PROBE_NAMES", "ProbeRun", "begin_probes", "run_probes"]


class Recorder(Protocol):
    """What starting the probes tells the recording of a check that may be replayed (envcheck/pipeline/replay.py's
    `Recording`, which sits above the probes: this layer names only what it calls)."""

    def paused(self) -> AbstractContextManager[object]: ...

    def ignore(self, folder: str | PathLike[str]) -> None: ...


def begin_probes(python: str | None, names: Sequence[str] = PROBE_NAMES,
                 recording: Recorder | None = None) -> Started | None:
    """Start the probes' children for the interpreter at `python` (None: this one) before the facts are collected,
    so that the shared child's `import torch` (seconds) runs while envcheck reads the project, loads its rules and
    collects (a fraction of a second); give them to `run_probes`, which ends them when the results come from the
    cache instead. None when none can be started. Their temporary files are their own business, not something the
    check read (`recording`: envcheck/pipeline/replay.py)."""
    import sys
    from contextlib import nullcontext

    from envcheck.sources.probes import runner

    with nullcontext() if recording is None else recording.paused():
        started = runner.start(names, runner.RunOptions(python=python or sys.executable))
    if recording is not None and started is not None:
        for child in started.children:
            recording.ignore(child.folder)
            child.quiet = recording.paused
    return started


@dataclass(frozen=True)
class ProbeRun:
    """What `run_probes` found: a result for every probe asked, whether they came from the cache, and the cache's
    problems in words (an entry that was there but not believed: envcheck.sources.probes.results_cache)."""

    results: dict[str, ProbeResult]
    cached: bool
    problems: tuple[str, ...] = ()


def run_probes(
    facts: Facts,
    names: Sequence[str] = PROBE_NAMES,
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
    use_cache: bool = True,
    progress: Progress | None = None,
    started: Started | None = None,
    env: dict[str, str] | None = None,
) -> ProbeRun:
    """The probes `names`, run with the interpreter the facts describe (or taken from the cache); `started`: the
    children begun by `begin_probes` (each used if it was started for these probes and this interpreter, else
    ended); `env`: the children's environment (default: envcheck's own). With `use_cache` off nothing is read from
    the cache or written to it. The cache is never read or written inside the checked environment."""
    # Imported here: reading the catalogue (rule validation does) must not load the runner and hashlib.
    from envcheck.sources.probes import results_cache as probe_results
    from envcheck.sources.probes import runner
    source = runner.child_source()
    key = probe_results.fingerprint(facts, names, source)
    avoid = (facts.python.prefix,)
    problems: list[str] = []
    if use_cache:
        cached = probe_results.load(key, avoid, problems)
        if cached is not None and all(n in cached for n in names):
            if started is not None:
                started.close()
            return ProbeRun(cached, True)
    results = runner.run(names, runner.RunOptions(python=facts.python.executable, timeout_s=timeout_s,
                                                  progress=progress, env=env), started)
    if use_cache:
        probe_results.store(key, results, avoid)
    return ProbeRun(results, False, tuple(problems))

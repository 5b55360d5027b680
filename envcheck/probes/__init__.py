"""Live probes: tiny programs that find out what actually works on this machine, run in isolated children.

`run_probes(facts, ...)` runs the probes (or takes them from the cache) for the interpreter the facts describe;
`envcheck.api.gather` puts the results into the snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from envcheck.probes.catalog import PROBE_NAMES

if TYPE_CHECKING:
    from envcheck.facts.probe_results import ProbeResult
    from envcheck.facts.snapshot import Facts
    from envcheck.probes.runner import Progress

__all__ = ["PROBE_NAMES", "run_probes"]


def run_probes(
    facts: Facts,
    names: Sequence[str] = PROBE_NAMES,
    *,
    timeout_s: float = 120.0,
    use_cache: bool = True,
    progress: Progress | None = None,
) -> tuple[dict[str, ProbeResult], bool]:
    """(results, from_cache) for the probes `names`, run with the interpreter the facts describe."""
    # Imported here: reading the catalogue (rule validation does) must not load the runner and hashlib.
    from envcheck.probes import cache, runner

    source = runner.child_source()
    key = cache.fingerprint(facts, names, source)
    if use_cache:
        cached = cache.load(key)
        if cached is not None and all(n in cached for n in names):
            return cached, True
    results = runner.run(names, runner.RunOptions(python=facts.python.executable, timeout_s=timeout_s,
                                                  progress=progress))
    cache.store(key, results)
    return results, False


"""Error output joined with the facts of the environment it is explained for (`envcheck explain`).

The facts collected (or loaded) win wherever they know: error output may come from another run, another day or
another machine. The observations are added as evidence, and they fill only what the facts could not know: the
arch list of a torch whose build probe did not run (`--static`), a GPU list that was never collected (a snapshot
made without NVML). Each observation becomes its rule's finding in the engine (envcheck/engine.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from envcheck.facts.observed import Observation
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.snapshot import Facts

__all__ = ["joined", "summary"]


def joined(facts: Facts, observations: Sequence[Observation]) -> Facts:
    """`facts` with `observations` as evidence, and their arch list where the facts have none."""
    if not observations:
        return facts
    probes = dict(facts.probes)
    archs = next((o for o in observations if "torch.arch_list" in o.facts), None)
    if archs is not None and "torch-build" not in probes:
        probes["torch-build"] = ProbeResult(
            status="ok", message=f"not run: the compiled architectures as torch's warning states them "
                                 f"({archs.where()})", details={"arch_list": archs.facts["torch.arch_list"].split()})
    return dataclasses.replace(facts, observed=(*facts.observed, *observations), probes=probes)


def summary(source: str, lines: int, observations: Sequence[Observation]) -> str:
    """What was read and recognised, in words, for the report's header."""
    read = f"{source} ({lines} line{'s' if lines != 1 else ''})"
    if not observations:
        return (f"{read}: no known failure recognised in it; the check of this environment follows, and "
                "`envcheck rule --all` lists the messages envcheck knows")
    seen = ", ".join(f"{o.rule_id} at line {o.line}" for o in observations[:10])
    more = f" and {len(observations) - 10} more" if len(observations) > 10 else ""
    return f"{read}: recognised {seen}{more}"

"""Error output joined with the facts of the environment it is explained for (`envcheck explain`).

First, where the log came from (envcheck/sources/logs/origin.py). A log tied to the checked environment is joined with
its facts: the facts collected (or loaded) win wherever they know, the observations are added as evidence, and they
fill only what the facts could not know (the arch list of a torch whose build probe did not run, `--static`). A log
from another environment, or one that cannot be tied to this one, is not joined: the rules it shows are judged on
the log's own facts (`Foreign`), and the engine writes no command for this environment under them. Each observation
becomes its rule's finding in the engine (envcheck/rules/engine.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

from envcheck.facts.observed import Observation
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.snapshot import Facts
from envcheck.sources.logs.origin import TIED, Foreign, Log, Tie, tie

__all__ = ["Joined", "joined", "summary", "with_observations"]


class Joined(NamedTuple):
    """What the rules are judged on after error output is read: the checked environment's facts (with the log's
    observations where the log is tied to it), the log's own facts where it is not, and the line that says which."""

    facts: Facts
    foreign: Foreign | None
    explained: str


def joined(facts: Facts, log: Log) -> Joined:
    """`log` joined with `facts` where it came from that environment; beside them, on its own facts, where not."""
    if not log.observations:
        return Joined(facts, None, summary(log.source, log.lines, ()))
    where = tie(log, facts)
    if where.status == TIED:
        return Joined(with_observations(facts, log.observations), None,
                      summary(log.source, log.lines, log.observations, where))
    return Joined(facts, Foreign(log.facts, where.reason), summary(log.source, log.lines, log.observations, where))


def with_observations(facts: Facts, observations: Sequence[Observation]) -> Facts:
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


def summary(source: str, lines: int, observations: Sequence[Observation], where: Tie | None = None) -> str:
    """What was read and recognised, in words, for the report's header; where it came from, when told (a log not
    tied to the checked environment is judged on its own facts, and that is said here, once)."""
    read = f"{source} ({lines} line{'s' if lines != 1 else ''})"
    if not observations:
        return (f"{read}: no known failure recognised in it; the check of this environment follows, and "
                "`envcheck rule --all` lists the messages envcheck knows")
    seen = ", ".join(f"{o.rule_id} at line {o.line}" for o in observations[:10])
    more = f" and {len(observations) - 10} more" if len(observations) > 10 else ""
    said = f"{read}: recognised {seen}{more}"
    if where is None:
        return said
    if where.status == TIED:
        return f"{said}; {where.reason}"
    return (f"{said}; {where.reason}, so what it shows is judged on the facts it states alone, with no command "
            "for the checked environment")

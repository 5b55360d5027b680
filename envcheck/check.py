"""The check as a library call: load rules, collect (or load) facts, evaluate. No printing, no exit codes."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envcheck import rules as rules_mod
from envcheck.conditions import Module, Source
from envcheck.engine import evaluate
from envcheck.errors import EnvcheckError
from envcheck.facts import collect as collect_mod
from envcheck.facts.snapshot import Facts
from envcheck.model import Report, Rule
from envcheck.probes import run_probes
from envcheck.probes.runner import Progress


def collection_request(rules: Iterable[Rule]) -> dict[str, Any]:
    """The modules and source patterns the rules ask about: the collector looks up exactly these."""
    modules: set[str] = set()
    sources: dict[str, set[str]] = {}
    for rule in rules:
        for condition in (rule.applies, rule.when):
            for leaf in condition.leaves():
                if isinstance(leaf, Module):
                    modules.add(leaf.name)
                elif isinstance(leaf, Source):
                    sources.setdefault(leaf.file, set()).add(leaf.pattern)
    return collect_mod.request_for(modules, sources)


@dataclass(frozen=True)
class ProbeOptions:
    """Whether and how to run the live probes."""

    run: bool = True  # False: the static tier only (--static)
    timeout_s: float = 120.0  # per probe (--probe-timeout)
    use_cache: bool = True  # False: --no-cache
    progress: Progress | None = None  # called as each probe starts (the CLI draws a line on a terminal)


def gather(rules: Sequence[Rule], *, python: str | None = None, facts_file: str | None = None,
           probes: ProbeOptions = ProbeOptions(run=False)) -> Facts:
    """Facts from a saved snapshot, another interpreter, or this one; with probe results unless `probes.run` is off.

    A saved snapshot is evaluated as it is: its probe results (if any) are the evidence, nothing is re-run.
    """
    if facts_file is not None:
        if python is not None:
            raise EnvcheckError("--facts and --python exclude each other: a snapshot already names its interpreter")
        return collect_mod.load(facts_file)
    facts = collect_mod.collect(collection_request(rules), python=python)
    if not probes.run:
        return facts
    results, _ = run_probes(facts, timeout_s=probes.timeout_s, use_cache=probes.use_cache,
                            progress=probes.progress)
    return dataclasses.replace(facts, probes=results)


def check(
    *,
    python: str | None = None,
    facts_file: str | None = None,
    rule_dirs: Sequence[Path] = (),
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    probes: ProbeOptions = ProbeOptions(),
) -> Report:
    """Check an environment against the rule pack. Raises EnvcheckError for bad input; never prints."""
    all_rules = rules_mod.load(rule_dirs)
    chosen = rules_mod.select(all_rules, select, ignore)
    # Collect what the whole pack needs, not only the selection: the snapshot is then reusable as-is.
    facts = gather(all_rules, python=python, facts_file=facts_file, probes=probes)
    return evaluate(chosen, facts)

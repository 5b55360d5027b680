"""What a check's verdicts did not see, in words, so that a clean tally is not read as a pass of what was absent.

envcheck checks PyTorch environments. In an environment without torch (envcheck's own venv, checked because no
other was found; a project's tooling venv) every rule about torch is n/a, and "no problems" alone would read as if
torch had been checked and found fine. The report's tally says it instead: "torch is not installed here, so 60
rules about torch were not checked" (here: the interpreter the report names). Where whether torch is installed is
unknown (a pasted report whose package list is partial), the same rules were skipped, and the tally says that.

Pure: the rules, the facts and the verdicts in, sentences out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from envcheck.facts.snapshot import Facts, canonical_name
from envcheck.rules.conditions.core import Condition
from envcheck.rules.conditions.environment import Module, Package, Torch
from envcheck.rules.conditions.machine import Probe
from envcheck.rules.model import Finding, Rule, Status

TORCH = "torch"
_IDLE = frozenset({Status.PASS, Status.NA, Status.SKIPPED})  # verdicts that found nothing (not a rule error)


def _names_torch(leaf: Condition) -> bool:
    """A condition that is about torch: the torch package, its build, a torch module, or a live probe (every probe
    runs in torch)."""
    if isinstance(leaf, (Torch, Probe)):
        return True
    if isinstance(leaf, Package):
        return canonical_name(leaf.requirement.name) == TORCH
    return isinstance(leaf, Module) and leaf.name.split(".")[0] == TORCH


def about_torch(rule: Rule) -> bool:
    """Whether `rule`'s conditions (`applies` or `when`) ask about torch."""
    return any(_names_torch(leaf) for part in (rule.applies, rule.when) for leaf in part.leaves())


def unchecked(rules: Iterable[Rule], facts: Facts, findings: Sequence[Finding]) -> int:
    """How many rules about torch found nothing because there is no torch to look at; 0 where torch is installed."""
    if facts.active(TORCH) is not None or (facts.torch is not None and facts.torch.location):
        return 0  # installed (a torch on the path without metadata has a build read from its folder)
    ids = {rule.id for rule in rules if about_torch(rule)}
    return len({f.rule_id for f in findings if f.rule_id in ids and f.status in _IDLE})


def said(reason: str, count: int) -> str:
    """The sentence: `reason` (why there is no torch to look at), then how many rules were not checked."""
    rules_were = f"{count} rule about torch was" if count == 1 else f"{count} rules about torch were"
    return f"{reason}, so {rules_were} not checked"


def unseen(rules: Iterable[Rule], facts: Facts, findings: Sequence[Finding]) -> tuple[str, ...]:
    """One sentence per thing the verdicts could not see; empty when they saw all they asked about. (A declared
    machine's report says its own, from the project's pins: envcheck/machines/check.py.)"""
    count = unchecked(rules, facts, findings)
    if not count:
        return ()
    if facts.absence_known(TORCH):
        return (said("torch is not installed here", count),)
    source = "the report" if facts.origin.startswith("report:") else "the snapshot"  # a partial package list
    return (said(f"{source} does not say whether torch is installed", count),)

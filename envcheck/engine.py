"""evaluate(rules, facts) -> Report. Pure: no I/O, no printing, deterministic order."""

from __future__ import annotations

from collections.abc import Iterable

from envcheck import __version__
from envcheck.commands import choose
from envcheck.conditions import Context
from envcheck.facts.snapshot import Facts
from envcheck.model import FINDING_STATUS, Finding, Report, Rule, Status
from envcheck.templates import render, render_commands


def evaluate(rules: Iterable[Rule], facts: Facts) -> Report:
    """Every rule's verdict on `facts`. A rule that cannot be evaluated becomes an `error` verdict."""
    ctx = Context(facts)
    findings: list[Finding] = []
    for rule in sorted(rules, key=lambda r: r.id):
        try:
            findings.extend(_verdicts(rule, ctx))
        except Exception as exc:  # noqa: BLE001 - one bad rule or odd fact must not cost the other verdicts
            findings.append(_plain(rule, Status.ERROR, detail=f"{type(exc).__name__}: {exc}"))
    return Report(
        findings=tuple(findings),
        python=facts.python.executable,
        origin=facts.origin,
        envcheck_version=__version__,
        collection_problems=facts.problems,
        installer=choose(facts).describe(),
    )


def _plain(rule: Rule, status: Status, *, missing: frozenset[str] = frozenset(), detail: str = "") -> Finding:
    return Finding(rule_id=rule.id, name=rule.name, severity=rule.severity, status=status, summary=rule.name,
                   missing=tuple(sorted(missing)), detail=detail, references=rule.references, area=rule.area)


def _found(rule: Rule, ctx: Context, item: dict[str, str] | None, evidence: str = "") -> Finding:
    facts = ctx.facts
    commands = render_commands(rule.commands, facts, item)
    fix = render(rule.fix, facts, item)
    return Finding(
        rule_id=rule.id,
        name=rule.name,
        severity=rule.severity,
        status=FINDING_STATUS[rule.severity],
        summary=render(rule.summary, facts, item),
        why=render(rule.why, facts, item),
        fix=f"{fix} {commands.by_hand}" if commands.by_hand else fix,
        commands=commands.commands,
        references=rule.references,
        item=item,
        area=rule.area,
        evidence=evidence,
    )


def _verdicts(rule: Rule, ctx: Context) -> list[Finding]:
    applies = rule.applies.evaluate(ctx)
    if applies.value is False:
        return [_plain(rule, Status.NA)]
    if applies.value is None:
        return [_plain(rule, Status.SKIPPED, missing=applies.missing)]
    when = rule.when.evaluate(ctx)
    if when.value is None:
        return [_plain(rule, Status.SKIPPED, missing=when.missing)]
    if when.value is False:
        return [_plain(rule, Status.PASS)]
    if rule.foreach is None:
        return [_found(rule, ctx, None, when.evidence)]
    items = ctx.derived.get(rule.foreach)
    if items is None:  # the derivation lacked its inputs (no NVML facts, a probe that did not run)
        return [_plain(rule, Status.SKIPPED, missing=frozenset({f"fact {rule.foreach}"}))]
    if not items:
        return [_plain(rule, Status.PASS)]
    return [_found(rule, ctx, dict(item), when.evidence) for item in items]

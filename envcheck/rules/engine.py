"""evaluate(pack, facts) -> Report. Pure: no I/O, no printing, deterministic order.

The pack brings its data tables already parsed (envcheck/rules/rule_pack.py loads them with the rules), so nothing here
opens a file: a saved snapshot evaluates the same anywhere, and a bad table has already failed at load time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from envcheck.derived.derive import DERIVATIONS
from envcheck.derived.walk_memo import Memo
from envcheck.facts.snapshot import Facts
from envcheck.remedy.commands.installers import choose
from envcheck.rules.conditions import Context
from envcheck.rules.model import FINDING_STATUS, Finding, Report, Rule, Severity, Status
from envcheck.rules.rule_pack import RulePack
from envcheck.rules.unseen import unseen
from envcheck.version import __version__

if TYPE_CHECKING:
    from envcheck.facts.observed import Observation
    from envcheck.sources.logs.origin import Foreign


def evaluate(pack: RulePack, facts: Facts, *, memo: Memo | None = None, foreign: Foreign | None = None) -> Report:
    """Every rule's verdict on `facts`. A rule that cannot be evaluated becomes an `error` verdict.

    `memo`: where derived results that are costly and keyed by exactly their inputs (the requirement walk) are
    remembered between runs (envcheck.cache.signed.SignedMemo); the verdicts are the same with or without it.
    `foreign`: error output that is not tied to `facts` (envcheck/sources/logs/origin.py): each rule it shows is judged
    on the log's own facts instead, without commands, beside the rule's verdict on `facts` where that is a finding."""
    ctx = Context(facts, pack.tables, memo)
    elsewhere = None if foreign is None else (Context(foreign.facts, pack.tables, None), foreign.reason)
    findings: list[Finding] = []
    by_id = {rule.id: rule for rule in pack.rules}
    for rule in sorted(pack.rules, key=lambda r: r.id):
        try:
            findings.extend(_verdicts(rule, ctx, elsewhere, by_id))
        except Exception as exc:  # noqa: BLE001 - one bad rule or odd fact must not cost the other verdicts
            detail = f"{type(exc).__name__}: {exc}"
            findings.append(_plain(rule, Status.ERROR, f"could not be evaluated: {detail}", detail=detail))
    findings = _confirmed_first(pack, facts, findings)
    return Report(
        findings=tuple(findings),
        python=facts.python.executable,
        origin=facts.origin,
        envcheck_version=__version__,
        collection_problems=facts.problems,
        installer=choose(facts).describe(),
        project="" if facts.project is None else f"{facts.project.root}: {', '.join(facts.project.files)}",
        unseen=unseen(pack.rules, facts, findings),
    )


def _plain(rule: Rule, status: Status, summary: str, *, missing: frozenset[str] = frozenset(),
           detail: str = "") -> Finding:
    """A verdict that found nothing to report: its summary says why, in one line (a rule's own summary describes
    the problem, which was not found)."""
    return Finding(rule_id=rule.id, name=rule.name, severity=rule.severity, status=status, summary=summary,
                   missing=tuple(sorted(missing)), detail=detail, references=rule.references, area=rule.area)


def _skipped(rule: Rule, missing: frozenset[str]) -> Finding:
    return _plain(rule, Status.SKIPPED, f"not checked: needs {'; '.join(sorted(missing))}", missing=missing)


def _found(rule: Rule, ctx: Context, item: dict[str, str] | None, evidence: str = "", *,
           commands: bool = True) -> Finding:
    # Only a rule that fires renders and plans commands: a clean check never imports the planner.
    from envcheck.derived.tables import TORCH_BUILDS
    from envcheck.remedy.commands.installers import for_environment
    from envcheck.remedy.commands.planner import plan_commands
    from envcheck.rules.templates import render, render_argvs

    facts = ctx.facts
    # torch-family installs are planned (envcheck/remedy/commands/planner.py) before they are written for the installer.
    try:
        matrix = ctx.derived.tables[TORCH_BUILDS]  # a torch that is not installed is planned from it
    except LookupError:  # rules evaluated without the pack's tables (built by hand)
        matrix = None
    plan = _plan(rule, ctx)
    fix = render(rule.fix if plan is not None or rule.plan is None else rule.fix_without_plan, facts, item, plan)
    if not commands:  # the facts are a log's own, not the checked environment's: no command is written for them
        return Finding(rule_id=rule.id, name=rule.name, severity=rule.severity, status=FINDING_STATUS[rule.severity],
                       summary=render(rule.summary, facts, item), why=render(rule.why, facts, item), fix=fix,
                       references=rule.references_for(item), item=item, area=rule.area, evidence=evidence)
    planned = plan_commands(render_argvs(rule.commands, facts, item, plan), facts, ctx.derived.companions(), item,
                            matrix)
    written = for_environment(planned, facts)
    return Finding(
        rule_id=rule.id,
        name=rule.name,
        severity=rule.severity,
        status=FINDING_STATUS[rule.severity],
        summary=render(rule.summary, facts, item),
        why=render(rule.why, facts, item),
        fix=f"{fix} {written.by_hand}" if written.by_hand else fix,
        commands=written.commands,
        references=rule.references_for(item),
        item=item,
        area=rule.area,
        evidence=evidence,
    )


def _plan(rule: Rule, ctx: Context) -> dict[str, str] | None:
    """The one item of the rule's `plan`, or None: no plan, or one its facts cannot tell (no GPU list, a platform the
    build matrix lacks) or that is empty (no torch). The finding stands either way; only its fix differs."""
    if rule.plan is None:
        return None
    items = ctx.derived.get(rule.plan)
    return dict(items[0]) if items else None


def _decides(rule: Rule, observation: Observation) -> bool:
    """Whether the observation's message alone shows the rule's failure (a signature with `decides = false` needs
    the facts to fire the rule as well)."""
    signatures = rule.signatures[observation.signature:observation.signature + 1]
    return not signatures or signatures[0].decides


def _verdicts(rule: Rule, ctx: Context, elsewhere: tuple[Context, str] | None = None,
              by_id: Mapping[str, Rule] | None = None) -> list[Finding]:
    if elsewhere is not None:
        log, reason = elsewhere
        shown = [o for o in log.facts.observed if o.rule_id == rule.id and _decides(rule, o)]
        if shown:
            # What the log shows is judged on the log's facts; this environment's own verdict follows where it is a
            # finding of its own (a pass or n/a of this environment says nothing about the log).
            here = [f for f in _verdicts(rule, ctx) if f.status.is_finding]
            return [*_observed(rule, log, shown, elsewhere=reason), *here]
        if rule.foreach is not None and DERIVATIONS[rule.foreach].judges_output:
            # A rule that judges the lines another rule's signatures recognised (EC1904 those of EC1903): on the
            # log's own facts too, and with no command for this environment.
            there = [f for f in _judged(rule, log) if f.status.is_finding]
            if there:
                return [dataclasses.replace(f, commands=(), observed=True,
                                            evidence=f"judged on what the error output states alone ({reason})")
                        for f in there]
    seen = [o for o in ctx.facts.observed if o.rule_id == rule.id] if ctx.facts.observed else []
    if seen and not any(_decides(rule, o) for o in seen):
        # A message with several causes is this rule's failure only where the facts fire the rule: then the
        # finding carries the line as evidence; otherwise the rule is judged as if no line had been given.
        judged = _judged(rule, ctx)
        if not any(f.status.is_finding for f in judged):
            return judged
        return _observed(rule, ctx, seen)
    if seen:
        decided = [o for o in seen if _decides(rule, o)]
        # A pasted report's facts are the output's own (origin "report:..."): what they leave out is not a
        # contradiction, so only facts of an environment itself are weighed against the output.
        if not rule.evidence_only and not ctx.facts.origin.startswith("report:"):
            judged = _judged(rule, ctx)
            if judged and all(f.status in (Status.PASS, Status.NA) for f in judged):
                if rule.foreach is not None and DERIVATIONS[rule.foreach].judges_output:
                    return judged  # its derivation read these lines: they are another rule's, or not its failure
                explainers = [other.id for other in _explainers(rule, by_id)
                              if any(_names(f, decided) for f in _judged(other, ctx) if f.status.is_finding)]
                if explainers:  # another rule's facts show this very failure here: its finding carries the lines
                    return [_plain(rule, Status.PASS, f"not found: the failure the error output shows "
                                                      f"({decided[0].where()}) is {', '.join(explainers)} here")]
                # This environment's facts say the failure is not here: what the output shows is told as the
                # output's, not as a fact of this environment, and no command is written for it.
                return _observed(rule, ctx, decided, elsewhere=f"this environment's facts say otherwise: "
                                                              f"{judged[0].summary}", contradicted=True)
        return _observed(rule, ctx, decided)
    if rule.evidence_only:
        return [_plain(rule, Status.NA, "shown only by error output (envcheck explain, check --report): none "
                                        "was given, or none showed it")]
    judged = _judged(rule, ctx)
    if by_id and ctx.facts.observed and any(f.status.is_finding for f in judged):
        return _with_lines_it_explains(rule, ctx, judged, by_id)
    return judged


def _explainers(rule: Rule, by_id: Mapping[str, Rule] | None) -> list[Rule]:
    return [by_id[i] for i in rule.explained_by if i in by_id] if by_id else []


def _names(finding: Finding, seen: Sequence[Observation]) -> bool:
    """Whether the lines name the package the finding is about (any, for a finding about no one package)."""
    name = (finding.item or {}).get("name", "")
    return not name or any(name.lower() in o.text.lower() for o in seen)


def _with_lines_it_explains(rule: Rule, ctx: Context, judged: list[Finding], by_id: Mapping[str, Rule]
                            ) -> list[Finding]:
    """`judged`, each finding with the error output's lines it explains as evidence: lines another rule's
    signatures recognised, that rule naming this one in `explained_by` and the checked environment's facts
    contradicting that rule (its own verdict, which then is a pass, names this one)."""
    if ctx.facts.origin.startswith("report:"):
        return judged
    seen = [o for o in ctx.facts.observed if o.rule_id in by_id and rule.id in by_id[o.rule_id].explained_by
            and _decides(by_id[o.rule_id], o)]
    seen = [o for o in seen if all(f.status in (Status.PASS, Status.NA) for f in _judged(by_id[o.rule_id], ctx))]
    out = []
    for finding in judged:
        lines = [o for o in seen if finding.status.is_finding and _names(finding, [o])]
        if lines:
            said = _shows(lines)
            finding = dataclasses.replace(finding, evidence=f"{said}; {finding.evidence}" if finding.evidence
                                          else said, observed=True)
        out.append(finding)
    return out


def _confirmed_first(pack: RulePack, facts: Facts, findings: list[Finding]) -> list[Finding]:
    """`findings` without the general reading of a line that a rule's facts confirmed: where a message with several
    causes (`decides = false`) is one rule's failure by the facts, an error-output-only rule that read the same
    lines as "one of several causes" has nothing left to say."""
    if not facts.observed:
        return findings
    by_id = {rule.id: rule for rule in pack.rules}
    fired = {f.rule_id for f in findings if f.observed and f.status.is_finding}
    confirmed = {o.line for o in facts.observed if o.rule_id in fired and o.rule_id in by_id
                 and not _decides(by_id[o.rule_id], o)}
    if not confirmed:
        return findings
    general = {rule_id for rule_id in fired if by_id[rule_id].evidence_only
               and all(o.line in confirmed for o in facts.observed if o.rule_id == rule_id)}
    return [f for f in findings if f.rule_id not in general]


def _shows(seen: Sequence[Observation]) -> str:
    """The evidence the lines give: "the error output shows it (FILE, line N: «text»; ...)", three at most."""
    shown = "; ".join(f"{o.where()}: «{o.text}»" for o in seen[:3])
    return f"the error output shows it ({shown}{f'; and {len(seen) - 3} more' if len(seen) > 3 else ''})"


def _observed(rule: Rule, ctx: Context, seen: list[Observation], elsewhere: str = "",
              contradicted: bool = False) -> list[Finding]:
    """The verdicts of a rule whose failure the error output shows: that is a finding whatever the other facts
    say or leave unknown (the failure happened), with the matched lines as evidence, beside the facts' own.
    `elsewhere`: why the output is not tied to the checked environment, whose facts `ctx` then are not: the
    finding is about the log alone and carries no command. `contradicted`: `ctx`'s facts decide that the rule does
    not fire, so nothing of the rule's own text, which would state it of them, is used."""
    from envcheck.rules.templates import stated

    said = _shows(seen)
    if elsewhere:
        said = f"{said}; judged on what the error output states alone ({elsewhere})"
    judged = [] if rule.evidence_only or contradicted else _judged(rule, ctx)
    fired = [f for f in judged if f.status.is_finding]
    if fired:
        if elsewhere:
            fired = [_found(rule, ctx, f.item, f.evidence, commands=False) for f in fired]
        return [_escalated(dataclasses.replace(f, evidence=f"{said}; {f.evidence}" if f.evidence else said,
                                               observed=True), rule, seen) for f in fired]
    if rule.foreach is not None and DERIVATIONS[rule.foreach].judges_output and judged:
        return judged  # its derivation read these lines and found nothing of its own in them
    first = seen[0]
    signature = rule.signatures[first.signature] if first.signature < len(rule.signatures) else None
    item = None
    if rule.foreach is not None:
        # The facts named no item (no GPU list, no package list was given): what the text states is the item, and
        # what it does not state is not guessed.
        told = {**first.captures, **({group: first.facts[fact] for fact, group in signature.yields.items()
                                      if fact in first.facts} if signature is not None else {})}
        item = {key: told.get(key, "") for key in DERIVATIONS[rule.foreach].fields}
    finding = _found(rule, ctx, item, said, commands=not elsewhere)
    # The rule's own text is shown only where the facts state every value it names; otherwise the signature's text
    # (filled from its captures) says what the error shows, and no command that needs an unstated value is written.
    facts = ctx.facts
    if not all(stated(arg, facts, item) for argv in rule.commands for arg in argv):
        finding = dataclasses.replace(finding, commands=())
    captures = first.captures
    says = signature.says(captures) if signature is not None else ""
    explains = signature.explains(captures) if signature is not None else ""
    fixes = signature.fixes(captures) if signature is not None else ""
    own = not contradicted
    summary = says or (finding.summary if own and stated(rule.summary, facts, item) else
                       f"{rule.name.replace('-', ' ')}: the error output shows it")
    why = explains or (finding.why if own and stated(rule.why, facts, item) else "")
    fix = fixes or (finding.fix if own and stated(rule.fix, facts, item) else
                    "The error output shows this failure but not the facts its usual fix names: `envcheck check` run "
                    "in the environment that printed it gives the fix for that environment.")
    finding = dataclasses.replace(finding, summary=summary, why=why, fix=fix, observed=True)
    return [_escalated(finding, rule, seen)]


def _escalated(finding: Finding, rule: Rule, seen: list[Observation]) -> Finding:
    """`finding` at the severity its signatures claim, where that is higher: the message shows the failure
    happened, so a rule that can only guess from a version range (info) is as severe here as its signature says.
    It cites first the thread of each signature that matched: a real report of this very message."""
    matched = [s for o in seen for s in rule.signatures[o.signature:o.signature + 1]]
    threads = tuple(dict.fromkeys(s.thread for s in matched if s.thread))
    if threads:
        finding = dataclasses.replace(finding, references=(*threads, *(r for r in finding.references
                                                                       if r not in threads)))
    claimed = [Severity(s.severity) for s in matched if s.severity]
    severity = max(claimed, key=lambda s: s.rank, default=finding.severity)
    if severity.rank <= finding.severity.rank:
        return finding
    return dataclasses.replace(finding, severity=severity, status=FINDING_STATUS[severity])


def _judged(rule: Rule, ctx: Context) -> list[Finding]:
    """The verdicts the facts give."""
    applies = rule.applies.evaluate(ctx)
    if applies.value is False:
        return [_plain(rule, Status.NA, f"does not apply here: applies when {rule.applies.describe()}")]
    if applies.value is None:
        return [_skipped(rule, applies.missing)]
    when = rule.when.evaluate(ctx)
    if when.value is None:
        return [_skipped(rule, when.missing)]
    if when.value is False:
        return [_plain(rule, Status.PASS, f"not found: fires when {rule.when.describe()}")]
    # `first` in `applies` or `when` names the part that decided (a driver that answered, for want of a GPU list).
    evidence = "; ".join(e for e in (applies.evidence, when.evidence) if e)
    if rule.foreach is None:
        return [_found(rule, ctx, None, evidence)]
    items = ctx.derived.get(rule.foreach)
    if items is None:  # the derivation lacked its inputs (no NVML facts, a probe that did not run)
        return [_skipped(rule, frozenset({f"fact {rule.foreach}"}))]
    if not items:
        return [_plain(rule, Status.PASS, f"not found: {rule.foreach} is empty")]
    # An item may name the facts that decided it (a probe's answer, else a table's): the rule's own `first`, if
    # any, still comes first.
    return [_found(rule, ctx, dict(item), evidence or item.get("evidence", "")) for item in items]

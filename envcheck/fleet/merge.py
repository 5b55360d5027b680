"""Members (ranks or snapshot files) -> FleetReport: nodes, groups of identical environments, differences, findings.

`build` is pure: the distributed gather and the snapshot loader both end here. The rule pack is evaluated once per
group, on the facts of the group's first member, not once per node: a fleet of a thousand identical nodes costs one
evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from envcheck.errors import EnvcheckError
from envcheck.facts.snapshot import Facts
from envcheck.fleet import checks
from envcheck.fleet.fingerprint import absent_value, fingerprint, sort_key, view
from envcheck.fleet.model import Difference, FleetReport, Group, Member, Node
from envcheck.rules.engine import evaluate
from envcheck.rules.rule_pack import RulePack
from envcheck.sources.live import collect as collect_mod
from envcheck.version import __version__


def build(
    members: Sequence[Member],
    facts_by_fingerprint: Mapping[str, Facts],
    rules: RulePack,
    *,
    expected: int | None = None,
    stopped: str | None = None,
    ignore_checks: Sequence[str] = (),
) -> FleetReport:
    """The fleet report. Every member with a fingerprint must have its facts in `facts_by_fingerprint`."""
    nodes = _nodes(members)
    by_fp: dict[str, list[Node]] = {}
    for node in nodes:
        if node.group is None:
            continue
        fp = node.members[0].fingerprint
        assert fp is not None
        by_fp.setdefault(fp, []).append(node)
    # Largest environment first; ties by the first node's name, so the numbering is stable between runs.
    order = sorted(by_fp, key=lambda fp: (-len(by_fp[fp]), by_fp[fp][0].name, fp))
    ids = {fp: i for i, fp in enumerate(order, start=1)}
    nodes = [n if n.group is None else _with_group(n, ids[n.members[0].fingerprint or ""]) for n in nodes]
    groups: list[tuple[Group, Facts]] = []
    for fp in order:
        facts = facts_by_fingerprint[fp]
        group = Group(id=ids[fp], fingerprint=fp, view=view(facts),
                      nodes=tuple(n.display for n in nodes if n.group == ids[fp]), report=evaluate(rules, facts))
        groups.append((group, facts))
    failed = [n for n in nodes if n.group is None]
    return FleetReport(
        nodes=tuple(nodes),
        groups=tuple(g for g, _ in groups),
        differences=tuple(differences([g for g, _ in groups])),
        findings=tuple(checks.run(groups, failed, ignore_checks)),
        envcheck_version=__version__,
        expected=expected,
        stopped=stopped,
    )


def _nodes(members: Sequence[Member]) -> list[Node]:
    """Members merged by host and environment (failed ones by host and reason), ordered by host, then first rank."""
    merged: dict[tuple[str, str, str], list[Member]] = {}
    for m in members:
        key = (m.host, "ok", m.fingerprint) if m.fingerprint is not None else (m.host, "failed", m.error or "")
        merged.setdefault(key, []).append(m)
    nodes = []
    for (host, kind, detail), group in merged.items():
        ordered = tuple(sorted(group, key=_member_order))
        nodes.append(Node(name=host, members=ordered, group=0 if kind == "ok" else None,
                          error=None if kind == "ok" else detail or "no facts"))
    return sorted(nodes, key=lambda n: (n.name == "", n.name, _member_order(n.members[0])))


def _member_order(m: Member) -> tuple[int, str]:
    return (m.rank if m.rank is not None else -1, m.label)


def _with_group(node: Node, group: int) -> Node:
    return Node(name=node.name, members=node.members, group=group, error=node.error)


def differences(groups: Sequence[Group]) -> list[Difference]:
    """The view keys whose value is not the same in every group, in section order (torch and GPUs first)."""
    if len(groups) < 2:
        return []
    keys = sorted({k for g in groups for k in g.view}, key=sort_key)
    out = []
    for key in keys:
        values = {g.id: g.view.get(key, absent_value(key)) for g in groups}
        if len(set(values.values())) > 1:
            out.append(Difference(key=key, values=values))
    return out


def load_members(files: Sequence[str]) -> tuple[list[Member], dict[str, Facts]]:
    """Snapshots saved by `envcheck facts -o FILE`, one member each; a file that cannot be read is a failed member.

    A node is named by the host name the snapshot records, else by its file name. Every file is read by the one
    strict snapshot reader (a malformed one fails with its key named); the Facts of the first file of each
    environment are kept, which is what the rules are evaluated on. (Worker processes did not pay off: starting
    them and importing envcheck in each cost more than reading a thousand snapshots; see bench/fleet.py.)
    """
    members: list[Member] = []
    facts_by_fp: dict[str, Facts] = {}
    for file in files:
        try:
            facts = collect_mod.load(file)
        except EnvcheckError as exc:
            members.append(Member(host=Path(file).name, label=file, error=str(exc)))
            continue
        fp = fingerprint(view(facts))
        facts_by_fp.setdefault(fp, facts)
        members.append(Member(host=facts.host or Path(file).name, label=file, fingerprint=fp,
                              python=facts.python.executable))
    return members, facts_by_fp

"""The fleet report: nodes, the distinct environments (groups) they fall into, what differs, cross-node findings.

Plain frozen data; merge.py builds it, report.py renders it.
"""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.rules.model import Report, Severity


@dataclass(frozen=True)
class Member:
    """One source of facts: a torchrun rank, or a saved snapshot file. Either it has facts (a fingerprint that
    names them) or it failed (`error`)."""

    host: str  # the machine's host name; for a snapshot without one, its file name; "" when never heard from
    label: str  # "rank 3" or the snapshot's path
    fingerprint: str | None = None  # the environment it reported (envcheck.fleet.fingerprint); None when failed
    error: str | None = None  # why it has no facts: the collection raised, timed out, or the rank never answered
    rank: int | None = None  # torch.distributed rank (torchrun); None for a file
    local_rank: int | None = None
    python: str = ""  # the interpreter that was checked
    device: str | None = None  # the GPU this rank probed (CUDA_VISIBLE_DEVICES value), when it ran probes on one


@dataclass(frozen=True)
class Node:
    """A machine: members on one host with the same environment (or the same failure), merged."""

    name: str  # host name ("" when unknown: ranks that never answered)
    members: tuple[Member, ...]
    group: int | None  # the environment's id; None for a failed node
    error: str | None = None

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(m.rank for m in self.members if m.rank is not None)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(m.label for m in self.members if m.rank is None)

    @property
    def display(self) -> str:
        """"node-a (ranks 0-3)", "node-b" (one snapshot), "node-b (2 snapshots)", "(unknown host) (rank 5)"."""
        name = self.name or "(unknown host)"
        if self.ranks:
            return f"{name} ({'ranks' if len(self.ranks) > 1 else 'rank'} {spans(self.ranks)})"
        if len(self.files) > 1:
            return f"{name} ({len(self.files)} snapshots)"
        return name


def spans(numbers: tuple[int, ...]) -> str:
    """(0, 1, 2, 5, 7, 8) -> "0-2, 5, 7-8"."""
    out: list[str] = []
    ordered = sorted(numbers)
    start = prev = ordered[0]
    for n in [*ordered[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


@dataclass(frozen=True)
class Group:
    """One distinct environment, the nodes that have it, and the rule pack's verdicts on it."""

    id: int  # 1, 2, ...: the largest group first
    fingerprint: str
    view: dict[str, str]  # envcheck.fleet.fingerprint.view of its facts
    nodes: tuple[str, ...]  # Node.display of each node
    report: Report  # evaluated once, on the facts of one member (the first to deliver them)


@dataclass(frozen=True)
class Difference:
    """A fact whose value is not the same in every group."""

    key: str  # a view key: "torch", "driver", "package:numpy", "env:NCCL_DEBUG"
    values: dict[int, str]  # group id -> value


@dataclass(frozen=True)
class FleetFinding:
    """A cross-node problem found by a fleet check (envcheck.fleet.checks): which value is where."""

    check_id: str  # "EC1001"
    name: str  # "fleet-torch-versions-differ"
    severity: Severity
    summary: str
    why: str
    fix: str
    values: tuple[tuple[str, tuple[str, ...]], ...]  # (value, nodes that have it), most common first
    references: tuple[str, ...] = ()
    item: str | None = None  # for checks that report one finding per thing (the package name)


@dataclass(frozen=True)
class FleetReport:
    """Everything `envcheck fleet` prints."""

    nodes: tuple[Node, ...]
    groups: tuple[Group, ...]
    differences: tuple[Difference, ...]
    findings: tuple[FleetFinding, ...]
    envcheck_version: str
    expected: int | None = None  # the world size (torchrun) or the number of files (merge)
    stopped: str | None = None  # why the gather ended early (the launcher stopped the job), else None

    @property
    def failed(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.group is None)

    @property
    def complete(self) -> bool:
        """Every member delivered facts, and the gather was not cut short."""
        return not self.failed and self.stopped is None

    def failing(self, fail_on: str) -> bool:
        """Whether the exit code is 1: a finding at or above `fail_on` anywhere, or an incomplete fleet."""
        if not self.complete:
            return True
        if fail_on == "never":
            return False
        floor = Severity(fail_on).rank
        return (any(g.report.at_or_above(fail_on) for g in self.groups)
                or any(f.severity.rank >= floor for f in self.findings))

"""Fleet checks: problems that exist only between machines, which no single node's rule verdicts can show.

Each check is a rule of its own kind: an id (EC10xx), a kebab-case name, a severity, the documentation `envcheck
rule EC1001` prints and docs/fleet.md is generated from, and what it compares. Most compare one value per
environment (`value`) and fire when the values found disagree (`compare`); one compares a value per item
(`items`: a package's version), one reports the nodes that delivered no facts. A value a node does not know (no
NVML, no NCCL found) is left out of the comparison rather than counted as different. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from envcheck.facts.snapshot import Facts
from envcheck.fleet.fingerprint import packages, torch_build, torch_version
from envcheck.fleet.model import FleetFinding, Group, Node
from envcheck.rules.model import Severity

# Packages with a check of their own, left out of the per-package comparison (EC1007).
_OWN_CHECK = ("torch", "nvidia-nccl-")

Values = Mapping[str, Sequence[str]]  # a value found -> the nodes that have it


def differ(values: Values) -> bool:
    """The usual comparison: more than one value across the fleet."""
    return len(values) > 1


def mixed(values: Values) -> bool:
    """More than one model across the fleet, also when one node has several (its value lists them, ", "-joined)."""
    return len({part for value in values for part in value.split(", ")}) > 1


@dataclass(frozen=True)
class FleetCheck:
    """A cross-node check, documented like a rule (`envcheck rule EC1001`, docs/fleet.md)."""

    id: str
    name: str  # kebab-case, states the bad thing
    severity: Severity
    what: str  # the compared value, in words: "torch versions"
    summary: str  # the problem in one line, for the documentation
    fires_when: str  # the trigger, for the documentation: "torch versions differ between nodes"
    why: str
    fix: str
    references: tuple[str, ...] = ()
    value: Callable[[Facts], str | None] | None = None  # one environment's value; None: unknown there
    items: Callable[[Facts], Mapping[str, str]] | None = None  # item -> value, one finding per item that differs
    compare: Callable[[Values], bool] = differ  # whether the values found are a finding

    def findings(self, groups: Sequence[tuple[Group, Facts]], failed: Sequence[Node]) -> list[FleetFinding]:
        if self.value is not None:
            return self._by_value(self.value, groups)
        if self.items is not None:
            return self._by_item(self.items, groups)
        return self._failed(failed)

    def _by_value(self, value_of: Callable[[Facts], str | None], groups: Sequence[tuple[Group, Facts]]
                  ) -> list[FleetFinding]:
        values: dict[str, list[str]] = {}
        for group, facts in groups:
            value = value_of(facts)
            if value is not None:
                values.setdefault(value, []).extend(group.nodes)
        return [self._finding(values)] if self.compare(values) else []

    def _by_item(self, items_of: Callable[[Facts], Mapping[str, str]], groups: Sequence[tuple[Group, Facts]]
                 ) -> list[FleetFinding]:
        per_group = [(group, items_of(facts)) for group, facts in groups]
        out = []
        for item in sorted({name for _, items in per_group for name in items}):
            values: dict[str, list[str]] = {}
            for group, items in per_group:
                values.setdefault(items.get(item, "not installed"), []).extend(group.nodes)
            if self.compare(values):
                out.append(self._finding(values, item=item))
        return out

    def _failed(self, failed: Sequence[Node]) -> list[FleetFinding]:
        if not failed:
            return []
        by_reason: dict[str, list[str]] = {}
        for node in failed:
            by_reason.setdefault(node.error or "no facts", []).append(node.display)
        count = _nodes(len(failed))
        return [self._finding(by_reason, summary=f"{count} delivered no facts: the fleet was not fully checked")]

    def _finding(self, values: Mapping[str, list[str]], *, item: str | None = None,
                 summary: str | None = None) -> FleetFinding:
        ordered = sorted(values.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        counted = ", ".join(f"{value} ({_nodes(len(nodes))})" for value, nodes in ordered)
        if summary is None:
            if item is not None:
                summary = f"{item} differs between nodes: {counted}"
            elif len(values) == 1:  # one value, yet a finding: several models within the same nodes
                summary = f"mixed {self.what} on the same nodes: {counted}"
            else:
                summary = f"{self.what} differ between nodes: {counted}"
        return FleetFinding(check_id=self.id, name=self.name, severity=self.severity, summary=summary,
                            why=self.why, fix=self.fix, references=self.references, item=item,
                            values=tuple((value, tuple(nodes)) for value, nodes in ordered))


def nccl_version(facts: Facts) -> str | None:
    """NCCL as torch reports it (torch-build probe), else the version of an nvidia-nccl-cu* wheel; None if unknown."""
    probe = facts.probes.get("torch-build")
    if probe is not None and probe.details.get("nccl_version"):
        return str(probe.details["nccl_version"])
    wheels = sorted(d.version for d in facts.distributions if d.canonical_name.startswith("nvidia-nccl-"))
    return ", ".join(wheels) or None


def _driver(facts: Facts) -> str | None:
    nvml = facts.nvml
    if nvml is None:
        return None
    if nvml.status in ("no-driver", "driver-not-loaded"):
        return "no driver"
    return nvml.driver_version if nvml.status == "ok" else None


def _gpus(facts: Facts) -> str | None:
    if facts.nvml is None or not facts.nvml.devices_known:
        return None
    models = sorted({d.name or "unknown GPU" for d in facts.nvml.devices})
    return ", ".join(models) or None  # a node without GPUs has no model to disagree about


def _python(facts: Facts) -> str:
    return ".".join(facts.python.version.split(".")[:2])


def _build(facts: Facts) -> str | None:
    return None if facts.torch is None else torch_build(facts.torch)


def _other_packages(facts: Facts) -> dict[str, str]:
    return {name: version for name, version in packages(facts.distributions).items()
            if not name.startswith(_OWN_CHECK)}


RANKS_FAILED = FleetCheck(
    "EC1000", "fleet-nodes-not-checked", Severity.ERROR, "nodes that delivered no facts",
    summary="Some nodes delivered no facts, so the fleet was not fully checked",
    fires_when="a rank or snapshot delivered no facts (its reason is listed)",
    why="A node that could not be checked may be the broken one: its verdicts and its values in the differences "
        "are missing, so a clean result for the other nodes says nothing about it.",
    fix="Read each failed node's reason, fix it (or raise --gather-timeout when probes start slowly) and run the "
        "check again.",
)
CHECKS: tuple[FleetCheck, ...] = (
    RANKS_FAILED,
    FleetCheck(
        "EC1001", "fleet-torch-versions-differ", Severity.ERROR, "torch versions",
        summary="torch versions differ between nodes",
        fires_when="torch versions differ between nodes (or torch is missing on some)",
        why="torch.distributed does not check that every rank runs the same torch. Releases differ in kernels, "
            "default algorithms and the NCCL they bundle, so collectives can fail or hang, and ranks can compute "
            "slightly different results that data-parallel training does not notice.",
        fix="Install the same torch build on every node (one pinned version from one index URL, or one image).",
        value=lambda facts: torch_version(facts.torch),
    ),
    FleetCheck(
        "EC1002", "fleet-torch-cuda-builds-differ", Severity.ERROR, "torch builds (CUDA / ROCm / CPU)",
        summary="The nodes' torch builds target different CUDA / ROCm runtimes, or none",
        fires_when="torch builds for different CUDA / ROCm runtimes, or CPU builds next to CUDA builds",
        why="Each torch build bundles its own CUDA (or ROCm) libraries and NCCL: a CPU build cannot join an NCCL "
            "process group at all, and builds for different CUDA runtimes bring different NCCL releases and "
            "kernels.",
        fix="Install torch from the same index on every node (for example https://download.pytorch.org/whl/cu124 "
            "everywhere).",
        value=_build,
    ),
    FleetCheck(
        "EC1003", "fleet-nccl-versions-differ", Severity.ERROR, "NCCL versions",
        summary="NCCL versions differ between nodes",
        fires_when="NCCL differs: as torch reports it (`torch-build` probe), else the `nvidia-nccl-cu*` wheel's "
                   "version",
        why="NCCL expects the same version on every rank: when a communicator is created it compares versions and "
            "fails with \"Mismatched NCCL version detected\", so the first collective of the job fails.",
        fix="Install the same NCCL everywhere: the same torch build, and the same nvidia-nccl-cu* wheel if one is "
            "installed separately (it takes precedence over the one torch was built with).",
        references=("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",),
        value=nccl_version,
    ),
    FleetCheck(
        "EC1004", "fleet-driver-versions-differ", Severity.WARNING, "NVIDIA driver versions",
        summary="NVIDIA driver versions differ between nodes",
        fires_when="NVIDIA driver versions differ (a node without a driver counts as `no driver`)",
        why="The driver decides which CUDA runtimes and GPU architectures a node supports and carries its own bugs "
            "and fixes: a node with another driver can fail where the others work, and failures that depend on "
            "the node are hard to reproduce.",
        fix="Install the same driver version on every node (the cluster image or the nodes' package manager).",
        value=_driver,
    ),
    FleetCheck(
        "EC1005", "fleet-gpu-models-differ", Severity.WARNING, "GPU models",
        summary="The fleet mixes GPU models",
        fires_when="the fleet has more than one GPU model, also when one node mixes models",
        why="Data-parallel training runs at the pace of the slowest GPU; kernels chosen per architecture (flash "
            "attention, bf16, tensor-core paths) differ, so ranks can take different code paths or fail on some "
            "nodes only, and a batch size tuned for the largest GPU runs out of memory on the smaller ones.",
        fix="Schedule the job on one GPU model (a Slurm --constraint or partition), or make sure the code copes "
            "with the mix.",
        value=_gpus, compare=mixed,
    ),
    FleetCheck(
        "EC1006", "fleet-python-versions-differ", Severity.WARNING, "Python versions",
        summary="Python versions differ between nodes",
        fires_when="the Python major.minor version differs between nodes",
        why="Each Python minor version has its own builds of torch and of every compiled extension, so the nodes "
            "cannot run identical code, and a failure on one node may not reproduce on another.",
        fix="Use the same Python (major.minor) on every node: one shared environment or one container image.",
        value=_python,
    ),
    FleetCheck(
        "EC1007", "fleet-package-versions-differ", Severity.WARNING, "versions of a package",
        summary="A package's version differs between nodes",
        fires_when="a distribution other than torch and NCCL has another version, or is missing, on some nodes "
                   "(one finding per distribution)",
        why="Nodes with different versions of a library can behave differently for the same step (a changed "
            "default, a bug fixed on some nodes only); in distributed training that shows as ranks that diverge, "
            "hang, or fail on some nodes only.",
        fix="Install the same versions everywhere: one lock file or one container image for every node.",
        items=_other_packages,
    ),
)


def matches(check: FleetCheck, selectors: Sequence[str]) -> bool:
    """Whether a selector (an id prefix such as "EC10", or a name) names this check, as rule selectors do."""
    from envcheck.rules.rule_pack import matches as rule_matches

    return any(rule_matches(s, check.id, check.name) for s in selectors)


def run(groups: Sequence[tuple[Group, Facts]], failed: Sequence[Node], ignore: Sequence[str] = ()
        ) -> list[FleetFinding]:
    """Every fleet check's findings, in id order (EC1007 one per package)."""
    return [f for check in CHECKS if not matches(check, ignore) for f in check.findings(groups, failed)]


def _nodes(n: int) -> str:
    return f"{n} node{'' if n == 1 else 's'}"

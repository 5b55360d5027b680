"""Fleet checks: problems that exist only between machines, which no single node's rule verdicts can show.

Each check compares one value across the groups (distinct environments) and fires when nodes disagree. A value a
node does not know (no NVML, no NCCL found) is left out of the comparison rather than counted as different. The
checks have rule-like ids and names so that `--ignore` and the documentation treat them alike; docs/fleet.md
documents each one. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from envcheck.facts.snapshot import Facts
from envcheck.fleet.model import FleetFinding, Group, Node
from envcheck.model import Severity

# Packages with a check of their own, left out of the per-package comparison (EC1007).
_OWN_CHECK = ("torch", "nvidia-nccl-")


@dataclass(frozen=True)
class FleetCheck:
    id: str
    name: str  # kebab-case, states the bad thing
    severity: Severity
    what: str  # the compared value, in words: "torch versions"
    why: str
    fix: str
    references: tuple[str, ...] = ()


RANKS_FAILED = FleetCheck(
    "EC1000", "fleet-nodes-not-checked", Severity.ERROR, "nodes that delivered no facts",
    why="A node that could not be checked may be the broken one: its verdicts and its values in the differences "
        "are missing, so a clean result for the other nodes says nothing about it.",
    fix="Read each failed node's reason, fix it (or raise --gather-timeout when probes start slowly) and run the "
        "check again.",
)
CHECKS: tuple[FleetCheck, ...] = (
    RANKS_FAILED,
    FleetCheck(
        "EC1001", "fleet-torch-versions-differ", Severity.ERROR, "torch versions",
        why="torch.distributed does not check that every rank runs the same torch. Releases differ in kernels, "
            "default algorithms and the NCCL they bundle, so collectives can fail or hang, and ranks can compute "
            "slightly different results that data-parallel training does not notice.",
        fix="Install the same torch build on every node (one pinned version from one index URL, or one image).",
    ),
    FleetCheck(
        "EC1002", "fleet-torch-cuda-builds-differ", Severity.ERROR, "torch builds (CUDA / ROCm / CPU)",
        why="Each torch build bundles its own CUDA (or ROCm) libraries and NCCL: a CPU build cannot join an NCCL "
            "process group at all, and builds for different CUDA runtimes bring different NCCL releases and "
            "kernels.",
        fix="Install torch from the same index on every node (for example https://download.pytorch.org/whl/cu124 "
            "everywhere).",
    ),
    FleetCheck(
        "EC1003", "fleet-nccl-versions-differ", Severity.ERROR, "NCCL versions",
        why="NCCL expects the same version on every rank: when a communicator is created it compares versions and "
            "fails with \"Mismatched NCCL version detected\", so the first collective of the job fails.",
        fix="Install the same NCCL everywhere: the same torch build, and the same nvidia-nccl-cu* wheel if one is "
            "installed separately (it takes precedence over the one torch was built with).",
        references=("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",),
    ),
    FleetCheck(
        "EC1004", "fleet-driver-versions-differ", Severity.WARNING, "NVIDIA driver versions",
        why="The driver decides which CUDA runtimes and GPU architectures a node supports and carries its own bugs "
            "and fixes: a node with another driver can fail where the others work, and failures that depend on "
            "the node are hard to reproduce.",
        fix="Install the same driver version on every node (the cluster image or the nodes' package manager).",
    ),
    FleetCheck(
        "EC1005", "fleet-gpu-models-differ", Severity.WARNING, "GPU models",
        why="Data-parallel training runs at the pace of the slowest GPU; kernels chosen per architecture (flash "
            "attention, bf16, tensor-core paths) differ, so ranks can take different code paths or fail on some "
            "nodes only, and a batch size tuned for the largest GPU runs out of memory on the smaller ones.",
        fix="Schedule the job on one GPU model (a Slurm --constraint or partition), or make sure the code copes "
            "with the mix.",
    ),
    FleetCheck(
        "EC1006", "fleet-python-versions-differ", Severity.WARNING, "Python versions",
        why="Each Python minor version has its own builds of torch and of every compiled extension, so the nodes "
            "cannot run identical code, and a failure on one node may not reproduce on another.",
        fix="Use the same Python (major.minor) on every node: one shared environment or one container image.",
    ),
    FleetCheck(
        "EC1007", "fleet-package-versions-differ", Severity.WARNING, "versions of a package",
        why="Nodes with different versions of a library can behave differently for the same step (a changed "
            "default, a bug fixed on some nodes only); in distributed training that shows as ranks that diverge, "
            "hang, or fail on some nodes only.",
        fix="Install the same versions everywhere: one lock file or one container image for every node.",
    ),
)
BY_ID = {c.id: c for c in CHECKS}


def matches(check: FleetCheck, selectors: Sequence[str]) -> bool:
    """Whether an --ignore entry (an id prefix such as "EC10", or a name) names this check."""
    return any(check.id.startswith(s.upper()) or check.name == s for s in selectors)


def _torch(facts: Facts, view: Mapping[str, str]) -> str | None:
    return view.get("torch")


def _build(facts: Facts, view: Mapping[str, str]) -> str | None:
    return view.get("torch.build")


def nccl_version(facts: Facts) -> str | None:
    """NCCL as torch reports it (torch-build probe), else the version of an nvidia-nccl-cu* wheel; None if unknown."""
    probe = facts.probes.get("torch-build")
    if probe is not None and probe.details.get("nccl_version"):
        return str(probe.details["nccl_version"])
    wheels = sorted(d.version for d in facts.distributions if d.canonical_name.startswith("nvidia-nccl-"))
    return ", ".join(wheels) or None


def _nccl(facts: Facts, view: Mapping[str, str]) -> str | None:
    return nccl_version(facts)


def _driver(facts: Facts, view: Mapping[str, str]) -> str | None:
    nvml = facts.nvml
    if nvml is None:
        return None
    if nvml.status in ("no-driver", "driver-not-loaded"):
        return "no driver"
    return nvml.driver_version if nvml.status == "ok" else None


def _gpus(facts: Facts, view: Mapping[str, str]) -> str | None:
    if facts.nvml is None or not facts.nvml.devices_known:
        return None
    models = sorted({d.name or "unknown GPU" for d in facts.nvml.devices})
    return ", ".join(models) or None  # a node without GPUs has no model to disagree about


def _python(facts: Facts, view: Mapping[str, str]) -> str | None:
    return ".".join(facts.python.version.split(".")[:2])


_VALUES: dict[str, Callable[[Facts, Mapping[str, str]], str | None]] = {
    "EC1001": _torch, "EC1002": _build, "EC1003": _nccl, "EC1004": _driver, "EC1005": _gpus, "EC1006": _python,
}


def run(groups: Sequence[tuple[Group, Facts]], failed: Sequence[Node], ignore: Sequence[str] = ()
        ) -> list[FleetFinding]:
    """Every fleet check's findings, in id order (EC1007 one per package)."""
    findings: list[FleetFinding] = []
    if failed and not matches(RANKS_FAILED, ignore):
        by_reason: dict[str, list[str]] = {}
        for node in failed:
            by_reason.setdefault(node.error or "no facts", []).append(node.display)
        findings.append(_finding(RANKS_FAILED, by_reason, always=True))
    for check_id, value_of in _VALUES.items():
        check = BY_ID[check_id]
        if matches(check, ignore):
            continue
        values: dict[str, list[str]] = {}
        for group, facts in groups:
            value = value_of(facts, group.view)
            if value is not None:
                values.setdefault(value, []).extend(group.nodes)
        if check_id == "EC1005":  # one node with two models is a mix too
            models = {m for v in values for m in v.split(", ")}
            if len(models) > 1:
                findings.append(_finding(check, values, always=True))
        elif len(values) > 1:
            findings.append(_finding(check, values))
    package_check = BY_ID["EC1007"]
    if not matches(package_check, ignore):
        findings += _packages(package_check, groups)
    return findings


def _packages(check: FleetCheck, groups: Sequence[tuple[Group, Facts]]) -> list[FleetFinding]:
    if len(groups) < 2:
        return []
    names = sorted({k.partition(":")[2] for g, _ in groups for k in g.view if k.startswith("package:")})
    out = []
    for name in names:
        if name.startswith(_OWN_CHECK):
            continue
        values: dict[str, list[str]] = {}
        for group, _ in groups:
            values.setdefault(group.view.get(f"package:{name}", "not installed"), []).extend(group.nodes)
        if len(values) > 1:
            out.append(_finding(check, values, item=name))
    return out


def _finding(check: FleetCheck, values: Mapping[str, list[str]], *, always: bool = False,
             item: str | None = None) -> FleetFinding:
    ordered = sorted(values.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    counted = ", ".join(f"{value} ({_nodes(len(nodes))})" for value, nodes in ordered)
    if check is RANKS_FAILED:
        summary = f"{_nodes(sum(len(n) for n in values.values()))} delivered no facts: the fleet was not fully checked"
    elif item is not None:
        summary = f"{item} differs between nodes: {counted}"
    elif len(values) == 1 and always:
        summary = f"mixed {check.what} on the same nodes: {counted}"
    else:
        summary = f"{check.what} differ between nodes: {counted}"
    return FleetFinding(check_id=check.id, name=check.name, severity=check.severity, summary=summary,
                        why=check.why, fix=check.fix, references=check.references, item=item,
                        values=tuple((value, tuple(nodes)) for value, nodes in ordered))


def _nodes(n: int) -> str:
    return f"{n} node{'' if n == 1 else 's'}"

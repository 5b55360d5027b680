"""Several requirements of one distribution read as one: the intersection of their specifiers, written once.

Findings are made one at a time, so three of them may each ask for a range of numpy (`numpy>=2.0`,
`numpy<2.6,>=2.0`, `numpy>=2.1`). A command names each distribution once, with the range every finding accepts
(`numpy<2.6,>=2.1`), and where no version can be in every range that is said, not handed to the installer.

"No version can" is decided on the specifiers alone, as intervals of versions: the highest lower bound against
the lowest upper bound, and exact pins against every clause. A non-empty interval is taken to hold some release
(the installer then finds one or says which it lacks); pre-release and post-release subtleties are left to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.support.names import canonical_name
from envcheck.support.versions import parse_requirement

__all__ = ["Merged", "merge", "names", "satisfiable"]


@dataclass(frozen=True)
class Merged:
    """The requirements of one command, one per distribution, and the distributions no version fits."""

    requirements: tuple[str, ...]  # in first-seen order; an argument that is not a requirement is kept as it was
    unsatisfiable: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, the requirements that exclude each other)


def _bound(spec: Specifier) -> tuple[str, Version] | None:
    """(`>=` / `>` / `<=` / `<`, version) for a plain bound; None for every other clause."""
    if spec.operator not in (">=", ">", "<=", "<"):
        return None
    try:
        return spec.operator, Version(spec.version)
    except InvalidVersion:
        return None


def _wildcard_range(version: str) -> tuple[Version, Version] | None:
    """`==2.1.*` as [2.1, 2.2): the range of versions a prefix match admits (in the prefix's epoch: `==1!2.1.*` is
    [1!2.1, 1!2.2))."""
    try:
        base = Version(version[:-2])
    except InvalidVersion:
        return None
    release = list(base.release)
    release[-1] += 1
    return base, Version((f"{base.epoch}!" if base.epoch else "") + ".".join(map(str, release)))


def _interval(spec: SpecifierSet) -> tuple[tuple[Version, bool] | None, tuple[Version, bool] | None]:
    """The lowest and highest version `spec` admits by its bounds, each with whether it is included; None: none."""
    low: tuple[Version, bool] | None = None
    high: tuple[Version, bool] | None = None

    def raise_low(version: Version, inclusive: bool) -> None:
        nonlocal low
        if low is None or version > low[0] or (version == low[0] and not inclusive):
            low = (version, inclusive)

    def lower_high(version: Version, inclusive: bool) -> None:
        nonlocal high
        if high is None or version < high[0] or (version == high[0] and not inclusive):
            high = (version, inclusive)

    for clause in spec:
        bound = _bound(clause)
        if bound is not None:
            operator, version = bound
            (raise_low if operator.startswith(">") else lower_high)(version, operator.endswith("="))
            continue
        found = None
        if clause.operator == "==" and clause.version.endswith(".*"):
            found = _wildcard_range(clause.version)
        elif clause.operator == "~=":  # ~=2.1.3 is >=2.1.3 and ==2.1.*; a suffix is not in the prefix (PEP 440:
            # ~=2.2.post3 is >=2.2.post3 and ==2.*)
            floor = Version(clause.version)
            epoch = f"{floor.epoch}!" if floor.epoch else ""
            prefix = _wildcard_range(epoch + ".".join(map(str, floor.release[:-1])) + ".*")
            found = None if prefix is None else (floor, prefix[1])
        if found is not None:
            raise_low(found[0], True)
            lower_high(found[1], False)
    return low, high


def satisfiable(spec: SpecifierSet) -> bool:
    """Whether some version can meet every clause of `spec` (see the module docstring for how far this goes)."""
    pins = [c.version for c in spec if c.operator in ("==", "===") and not c.version.endswith(".*")]
    if pins:
        return any(spec.contains(pin, prereleases=True) for pin in pins)
    low, high = _interval(spec)
    if low is None or high is None:
        return True
    if low[0] < high[0]:
        return True
    return low[0] == high[0] and low[1] and high[1] and spec.contains(low[0], prereleases=True)


def _tightest(spec: SpecifierSet) -> SpecifierSet:
    """`spec` with redundant bounds dropped (`>=2.0,>=2.1,<2.6` is `<2.6,>=2.1`) and, where an exact pin meets
    every clause, that pin alone (`==2.6.0,>=2.4` is `==2.6.0`; the pin with a local tag wins over the same
    release without)."""
    pins = [c for c in spec if c.operator in ("==", "===") and not c.version.endswith(".*")]
    fitting = [c for c in pins if spec.contains(c.version, prereleases=True)]
    if fitting:
        return SpecifierSet(str(max(fitting, key=lambda c: len(c.version))))
    low, high = _interval(spec)
    kept: list[str] = []
    for clause in spec:
        bound = _bound(clause)
        if bound is None:
            kept.append(str(clause))
            continue
        operator, version = bound
        edge = low if operator.startswith(">") else high
        if edge is not None and (version, operator.endswith("=")) == edge:
            kept.append(str(clause))
    return SpecifierSet(",".join(dict.fromkeys(kept)))


def _parse(arg: str) -> Requirement | None:
    """`arg` as a requirement (packaging's, cached: never changed here); None for anything else, or a URL."""
    req = parse_requirement(arg)
    return None if req is None or req.url else req


def merge(args: Sequence[str]) -> Merged:
    """`args` (the requirements of one command) with every distribution named once: extras joined, specifiers
    intersected and tightened. Requirements with different markers are different requirements and stay apart; an
    argument that is not a plain requirement (a URL, a path) is left as it is. A distribution whose requirements
    no version can meet together is left out and named in `unsatisfiable`."""
    groups: dict[tuple[str, str], dict[str, Requirement]] = {}  # (name, marker) -> {text as written: requirement}
    order: list[tuple[str, str] | str] = []
    for arg in args:
        req = _parse(arg)
        if req is None:
            order.append(arg)
            continue
        key = (canonical_name(req.name), str(req.marker or ""))
        if key not in groups:
            groups[key] = {}
            order.append(key)
        groups[key][arg] = req
    out: list[str] = []
    bad: list[tuple[str, tuple[str, ...]]] = []
    for entry in order:
        if isinstance(entry, str):
            out.append(entry)
            continue
        if len(groups[entry]) == 1:  # as written: nothing to join
            out += groups[entry]
            continue
        reqs = list(groups[entry].values())
        try:
            spec = SpecifierSet(",".join(str(r.specifier) for r in reqs if str(r.specifier)))
        except InvalidSpecifier:
            out += dict.fromkeys(str(r) for r in reqs)
            continue
        if not satisfiable(spec):
            bad.append((reqs[0].name, tuple(groups[entry])))
            continue
        joined = Requirement(reqs[0].name)
        joined.extras = set().union(*(r.extras for r in reqs))
        joined.specifier = _tightest(spec)
        joined.marker = reqs[0].marker
        out.append(str(joined))
    return Merged(tuple(out), tuple(bad))


def names(args: Iterable[str]) -> dict[str, list[Requirement]]:
    """The requirements among `args`, by canonical distribution name."""
    out: dict[str, list[Requirement]] = {}
    for arg in args:
        req = _parse(arg)
        if req is not None:
            out.setdefault(canonical_name(req.name), []).append(req)
    return out

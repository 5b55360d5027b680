"""The requirement walk (every reachable Requires-Dist judged once, as `pip check` does, extras followed) and the
derived facts read from it: `requirements.unsatisfied`, `.missing`, `.conflicting`.

The walk is shared: envcheck/derived/layers.py (duplicates) and distributions.py (corrupt metadata) read it too,
through `walk`, which does it once per snapshot, or takes it from the memo (envcheck/derived/walk_memo.py) when its
inputs are unchanged since the last run.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import Requirement

from envcheck.derived import companions, walk_memo
from envcheck.derived.common import Derivation, Item, Values
from envcheck.facts.snapshot import Distribution, Facts, canonical_name
from envcheck.support.patterns import lazy
from envcheck.support.versions import marker_env, parse_requirement, parse_version

__all__ = ["DERIVATIONS", "UNSAT_FIELDS", "Walk", "only_extra", "walk", "walked"]

# `name...; extra == "gpu"`: the common shape of an extra's requirement. Such a line matters only when that extra
# is reached, so it is not parsed otherwise (most lines of large distributions are extras).
# The marker's tail `extra == "gpu"` (alone, or as the last term of a conjunction): such a line is false for every
# other extra. A marker with `or` anywhere is left to the full parser, as the extra test may then not bind the
# whole. Markers cannot contain ';', so the marker is what follows the last one (a URL may contain ';').
_EXTRA_TAIL = lazy(r"""(?:^|\band)\s*extra\s*==\s*['"]([^'"]+)['"]\s*$""")
_OR = lazy(r"\bor\b")


def only_extra(line: str) -> str | None:
    """The extra a requirement line is conditional on, when that can be read without parsing the line."""
    _, sep, marker = line.rpartition(";")
    if not sep or _OR.search(marker):
        return None
    found = _EXTRA_TAIL.search(marker.strip())
    return found.group(1) if found else None


def _marker_holds(req: Requirement, env: dict[str, str]) -> bool | None:
    if req.marker is None:
        return True
    try:
        return req.marker.evaluate(env)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return None


@dataclass
class Walk:
    """The result of checking every reachable requirement once: the unsatisfied ones and unparsable lines."""

    problems: list[Item]
    invalid: dict[str, list[str]]  # canonical distribution name -> Requires-Dist lines that do not parse
    incomplete: bool = False  # some requirement could not be judged: Requires-Dist not stated, or the target's
    # absence not known (a report's partial package list); an empty `problems` then proves nothing


def walked(facts: Facts) -> Walk:
    """Every Requires-Dist of every imported distribution checked against what is installed, extras followed.

    Like `pip check`, only the unconditional requirements of each distribution are roots (which extras a user
    asked for is not recorded anywhere). Unlike it, a requirement with extras (`accelerate[torch]`) also checks the
    extra's own requirements, and markers are evaluated for the checked interpreter, not for envcheck's.
    """
    base_env = marker_env(facts)
    problems: dict[tuple[str, str, str], Item] = {}
    invalid: dict[str, list[str]] = {}
    work: list[tuple[Distribution, str, str]] = [(d[0], "", d[0].name) for d in facts.names.values()]
    # Each (distribution, extra) is queued once: a distribution that requires itself with hundreds of extras
    # (`x[e0,...,e999]` in x's metadata) would otherwise queue every extra again from each extra it reaches, with
    # ever longer `via` paths, and the walk's memory grew with the cube of the number of extras.
    queued: set[tuple[str, str]] = {(d[0].canonical_name, "") for d in facts.names.values()}
    incomplete = not facts.distributions_complete  # what a partial list leaves out may require anything
    while work:
        dist, extra, via = work.pop()
        if dist.problems:
            continue
        if not dist.requires_known:
            incomplete = True  # its requirements were not stated: neither satisfied nor missing
            continue
        env = base_env if not extra else marker_env(facts, extra)
        for line in dist.requires:
            only = only_extra(line)
            if only is not None and canonical_name(only) != extra:
                continue
            req = parse_requirement(line)
            if req is None:
                invalid.setdefault(dist.canonical_name, []).append(line)
                continue
            if not _marker_holds(req, env):
                continue
            target = facts.active(req.name)
            if target is None and not facts.absence_known(req.name):
                incomplete = True  # a partial package list that does not name it: not known to be missing
                continue
            installed = ""
            if target is not None:
                version = parse_version(target.version)
                if version is None:
                    continue  # not comparable; reported by invalid-versions
                if req.specifier.contains(version, prereleases=True):
                    for wanted in sorted(req.extras):
                        key = (target.canonical_name, canonical_name(wanted))
                        if key not in queued:
                            queued.add(key)
                            work.append((target, key[1], f"{via} -> {target.name}[{wanted}]"))
                    continue
                installed = target.version
            # "torchvision 0.21.0", or for a requirement reached through extras
            # "accelerate 1.0.0 (needed as transformers -> accelerate[torch])".
            text = str(req)
            problems.setdefault((dist.canonical_name, extra, text), {
                "package": dist.name,
                "package_version": dist.version,
                "requirer": f"{dist.name} {dist.version}" + (f" (needed as {via})" if extra else ""),
                "via": via,
                "requirement": text,
                "dependency": req.name,
                "specifier": str(req.specifier) or "any version",
                "installed": installed,
                "kind": "conflict" if installed else "missing",
            })
    ordered = sorted(problems.values(), key=lambda i: (i["package"].lower(), i["dependency"].lower(), i["via"]))
    return Walk(ordered, invalid, incomplete)


def _remembered(facts: Facts, memo: walk_memo.Memo) -> Walk:
    """The walk's result from `memo` when its inputs are unchanged (envcheck/derived/walk_memo.py), else computed
    and remembered there."""
    entry, key = walk_memo.name(facts), walk_memo.key(facts)
    payload = memo.load(entry, key)
    found = None if payload is None else walk_memo.loads(payload, UNSAT_FIELDS)
    if found is not None:
        return Walk(*found)
    done = walked(facts)
    memo.store(entry, key, walk_memo.dumps(done.problems, done.invalid, done.incomplete))
    return done


def walk(derived: Values) -> Walk:
    """The requirement walk of `derived`'s snapshot, done once and shared by the derivations that need it."""
    memo = derived.memo
    return derived.once("requirements.walk", lambda: walked(derived.facts) if memo is None
                        else _remembered(derived.facts, memo))


def _unsatisfied(derived: Values) -> list[Item] | None:
    """The unsatisfied requirements; None (unknown) when none were found but some could not be judged."""
    done = walk(derived)
    return None if done.incomplete and not done.problems else done.problems


def _of_kind(derived: Values, kind: str) -> list[Item] | None:
    done = walk(derived)
    found = [i for i in done.problems if i["kind"] == kind]
    return None if done.incomplete and not found else found


def _missing(derived: Values) -> list[Item] | None:
    return _of_kind(derived, "missing")


def _conflicts(derived: Values) -> list[Item] | None:
    """Conflicts, less a torch companion's pin on another torch where the tables know the companion release made
    for the installed torch: `companions.pinned-to-other-torch` reports those with the fix that keeps torch, and
    one finding per problem keeps `envcheck fix` from running both directions."""
    found = _of_kind(derived, "conflict")
    if found is None or not companions.tables_of(derived):
        return found
    pinned = {canonical_name(i["name"]) for i in derived.get("companions.pinned-to-other-torch") or ()}
    pinned |= {canonical_name(i["name"]) for i in derived.get("extensions.vllm-for-other-torch") or ()}
    return [i for i in found
            if not (canonical_name(i["dependency"]) == "torch" and canonical_name(i["package"]) in pinned)]


# The fields of an unsatisfied requirement: the walk's items, and what the memo checks it reads back.
UNSAT_FIELDS = ("package", "package_version", "requirer", "via", "requirement", "dependency", "specifier",
                 "installed", "kind")
_UNSAT_DOC = ("`package`, `package_version`, `requirer` (\"torchvision 0.21.0\", with the extras path when there is "
              "one), `via`, `requirement`, `dependency`, `specifier`, `installed`, `kind` (`missing` or `conflict`)")

DERIVATIONS: list[Derivation] = [
    Derivation("requirements.unsatisfied",
               "every unsatisfied requirement (Requires-Dist of the imported distributions, markers evaluated "
               f"for the checked interpreter, extras followed), as `pip check` reports them: {_UNSAT_DOC}",
               UNSAT_FIELDS, _unsatisfied),
    Derivation("requirements.missing",
               f"the same, where the dependency is not installed: {_UNSAT_DOC}", UNSAT_FIELDS, _missing),
    Derivation("requirements.conflicting",
               f"the same, where it is installed in another version: {_UNSAT_DOC}. A torch companion's pin on "
               "another torch is left to `companions.pinned-to-other-torch` where the tables know the companion "
               "release made for the installed torch", UNSAT_FIELDS, _conflicts),
]

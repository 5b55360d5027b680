"""The checked project's declarations against the environment: unmet requirements and lock drift.

Both read `facts.project` (what envcheck/sources/project/ read from the project's files, or what a saved snapshot
carries) and are empty without one. Markers are evaluated for the checked interpreter. A project that is itself
installed (editable or not) is judged by its installed metadata, which the requirement walk (`requirements.unsatisfied`)
already covers: its `[project] dependencies` / `install_requires` are then left out here, so that nothing is
reported twice. Extras named with --extra, groups, requirements files and locks are checked either way: installed
metadata does not say which extras or groups the user meant to install.
This module exports them as derived facts (`DERIVATIONS`).
"""

from __future__ import annotations

from typing import Any

from envcheck.derived.common import Derivation, Item, Values, of_facts
from envcheck.facts.snapshot import Facts, canonical_name
from envcheck.support.versions import marker_env, marker_holds, parse_requirement, parse_version

UNMET_FIELDS = ("name", "requirement", "source", "installed", "install", "kind")
DRIFT_FIELDS = ("name", "installed", "locked", "lock", "sync", "install")


def _installed_project(facts: Facts) -> bool:
    project = facts.project
    return project is not None and project.name is not None and facts.active(project.name) is not None


def unmet(facts: Facts) -> list[Item]:
    """Each declared requirement the environment does not satisfy (a constraint only where it is installed)."""
    project = facts.project
    if project is None:
        return []
    env = marker_env(facts)
    skip_project = _installed_project(facts)
    out: list[Item] = []
    for declared in project.requirements:
        if (skip_project and declared.kind == "project") or declared.kind == "policy":
            continue  # `policy`: the policy rules (EC99xx) report [tool.envcheck] require
        req = parse_requirement(declared.requirement)
        if req is None:  # a snapshot edited by hand; the project's own files were validated when read
            continue
        if req.marker is not None and marker_holds(req.marker, env) is not True:
            continue  # false here, or not decidable from what the snapshot states
        dist = facts.active(req.name)
        if dist is None:
            if declared.kind == "constraint":
                continue
            installed, kind = "not installed", "missing"
        else:
            version = parse_version(dist.version)
            if not req.specifier or (version is not None and req.specifier.contains(version, prereleases=True)):
                continue
            installed, kind = dist.version, "conflict"
        bare = parse_requirement(declared.requirement.split(";", 1)[0].strip()) if req.url is None else None
        install = str(bare) if bare is not None else declared.requirement
        out.append({"name": dist.name if dist else req.name, "requirement": declared.requirement,
                    "source": declared.source, "installed": installed, "install": install, "kind": kind})
    return out


def lock_drift(facts: Facts) -> list[Item]:
    """Each installed distribution whose version is none of those its lock pins for this environment."""
    project = facts.project
    if project is None:
        return []
    own = canonical_name(project.name) if project.name else None
    out: list[Item] = []
    for lock in project.locks:
        pinned: dict[str, list[str]] = {}
        for pin in lock.pins:
            pinned.setdefault(pin.name, []).append(pin.version)
        for name, versions in pinned.items():
            if name == own:
                continue
            dist = facts.active(name)
            if dist is None:
                continue  # what is declared and missing is `unmet`'s business; see docs/project.md
            have = parse_version(dist.version)
            if any(v == dist.version or (have is not None and parse_version(v) == have) for v in versions):
                continue
            out.append({"name": dist.name, "installed": dist.version, "locked": " or ".join(versions),
                        "lock": lock.file, "sync": lock.sync, "install": f"{dist.name}=={versions[0]}"})
    return sorted(out, key=lambda i: (i["lock"], i["name"].lower()))


def _project_unmet(derived: Values) -> Any:
    """The project's unmet requirements, less those no torch wheel can satisfy on this platform and Python: for
    `torch>=2.3` on macOS x86_64, `pip install 'torch>=2.3'` cannot succeed, and EC1601-EC1603 say what can."""
    items = unmet(derived.facts)
    if not items:
        return items
    try:
        hopeless = {(w["requirement"], w["source"]) for kind in ("platform", "python", "variant")
                    for w in derived.get(f"torch.requirement-without-wheel-for-{kind}") or ()}
    except LookupError:  # an evaluation without the build matrix (rules built by hand): nothing to leave out
        return items
    return [item for item in items if (item["requirement"], item["source"]) not in hopeless]


DERIVATIONS: list[Derivation] = [
    Derivation("project.unmet",
               "the checked project's declared requirements (envcheck/sources/project/: pyproject.toml, setup.cfg, "
               "requirements files, environment.yml) that the environment does not satisfy, markers evaluated "
               "for the checked interpreter; an installed project's own dependencies are left to "
               "`requirements.unsatisfied`: `name`, `requirement`, `source` (\"requirements.txt:3\"), "
               "`installed` (a version, or \"not installed\"), `install` (the requirement without its marker), "
               "`kind` (`missing` or `conflict`). A torch requirement no published wheel can satisfy here is "
               "left to `torch.requirement-without-wheel-for-*`, whose rules say what to do instead of "
               "installing it. Empty without a project",
               UNMET_FIELDS, _project_unmet),
    Derivation("project.lock-drift",
               "installed distributions whose version is none of those the project's lock pins for this "
               "environment: `name`, `installed`, `locked`, `lock` (\"uv.lock\"), `sync` (\"uv sync\"), "
               "`install` (\"name==locked\"). Empty without a lock",
               DRIFT_FIELDS, of_facts(lock_drift)),
]

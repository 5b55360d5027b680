"""Layered environments: one environment's own site-packages first on the path, then another's underneath.

A `--system-site-packages` venv, a `.pth` line naming a base venv's site-packages, a user site over a system
site-packages (Colab, Kaggle), a pip layer over a container's packages: each puts the checked environment's own
folder first and a shared base after it. A name installed in both is normal there (every venv has its own pip and
setuptools); it matters only when the copy that is imported breaks what the shadowed one met. The fixes act on the
checked environment's own layer only (the base is shared, and pip refuses to uninstall outside a venv anyway), and
never remove the installer that the other commands need.

Pure functions of Facts and the requirement walk's problems, exported as derived facts
(`DERIVATIONS`: `distributions.duplicates`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envcheck.derived import companions, requirements
from envcheck.derived.common import Derivation, Item, Values, metadata_unknown
from envcheck.facts.snapshot import Distribution, Facts, canonical_name
from envcheck.support.versions import marker_env, marker_holds, parse_requirement, parse_version

# Never uninstalled by a fix: the commands that follow run with them.
INSTALLERS = frozenset({"pip", "uv"})
DUPLICATE_FIELDS = ("name", "active_version", "active_location", "shadowed_version", "shadowed_location",
                    "shadowed_metadata_dir", "same_location", "breaks", "remove", "remove_again", "reinstall")
NUMPY_FIELDS = ("built_for", "needs", "remove", "install", "evidence")
_SHOWN = 3  # reasons named in a summary; the rest are counted


def _folder(path: str) -> str:
    return path.replace("\\", "/").rstrip("/")


def _under(path: str, folder: str) -> bool:
    path, folder = _folder(path), _folder(folder)
    return bool(folder) and (path == folder or path.startswith(folder + "/"))


def own_layer(facts: Facts, dist: Distribution) -> bool:
    """Whether `dist` is in the checked environment's own layer, the one its installer writes to and removes from:
    in a venv (or a conda environment) its prefix; elsewhere the user site, or the prefix where pip or uv
    installed it and pip may change it (not externally managed)."""
    python = facts.python
    if python.virtualenv or python.conda:
        return _under(dist.location, python.prefix)
    if python.user_site and _folder(dist.location) == _folder(python.user_site):
        return True
    return (_under(dist.location, python.prefix) and not python.externally_managed
            and dist.installer in ("pip", "uv"))


def _requirements_met(facts: Facts, dist: Distribution) -> bool:
    """Whether every requirement of `dist` (outside extras, markers evaluated here) is met by what is imported."""
    if not dist.requires_known or dist.problems:
        return False
    env = marker_env(facts)
    for line in dist.requires:
        req = parse_requirement(line)
        if req is None:
            return False
        if req.marker is not None and marker_holds(req.marker, env) is not True:
            continue  # an extra's requirement, or one for another platform
        if canonical_name(req.name) == dist.canonical_name:
            continue
        target = facts.active(req.name)
        version = None if target is None else parse_version(target.version)
        if version is None or not req.specifier.contains(version, prereleases=True):
            return False
    return True


def _contains(requirement: str, version: str) -> bool:
    req = parse_requirement(requirement)
    found = parse_version(version)
    return req is not None and found is not None and req.specifier.contains(found, prereleases=True)


def _breaks(facts: Facts, active: Distribution, shadowed: Distribution, problems: Sequence[Item]) -> list[str]:
    """What the imported copy breaks that the shadowed one met: others' requirements on it that only the shadowed
    version meets, and its own unmet requirements where the shadowed copy's are all met."""
    reasons = [f"{p['requirer']} requires {p['requirement']}" for p in problems
               if p["kind"] == "conflict" and canonical_name(p["dependency"]) == active.canonical_name
               and _contains(p["requirement"], shadowed.version)]
    own = [p for p in problems if canonical_name(p["package"]) == active.canonical_name and p["via"] == p["package"]]
    if own and _requirements_met(facts, shadowed):
        reasons += [f"it requires {p['requirement']}, but {p['dependency']} {p['installed']} is installed"
                    if p["installed"] else f"it requires {p['requirement']}, which is not installed" for p in own]
    return reasons


def _said(reasons: list[str]) -> str:
    more = len(reasons) - _SHOWN
    shown = "; ".join(reasons[:_SHOWN]) + (f"; and {more} more" if more > 0 else "")
    return f", and the imported copy breaks what the shadowed one met: {shown}"


def duplicates(facts: Facts, problems: Sequence[Item], companions: Collection[str]) -> list[Item]:
    """Distributions installed more than once where it matters (see the module docstring and the derivation's
    doc below): two metadata folders of different versions in one folder, or a copy in another layer whose
    imported version breaks what the shadowed one met."""
    out = []
    for dists in facts.names.values():
        if len(dists) < 2:
            continue
        active = dists[0]
        name = active.canonical_name
        for shadowed in dists[1:]:
            same = _folder(shadowed.location) == _folder(active.location)
            if same and shadowed.version == active.version:
                # e.g. Debian's python3-cryptography ships an .egg-info and a .dist-info for one install: every
                # reader gets the same version and there is one module to import, so nothing can disagree.
                continue
            item = {"name": active.name, "active_version": active.version, "active_location": active.location,
                    "shadowed_version": shadowed.version, "shadowed_location": shadowed.location,
                    "shadowed_metadata_dir": shadowed.metadata_dir, "same_location": "yes" if same else "no",
                    "breaks": "", "remove": "", "remove_again": "", "reinstall": ""}
            if same:
                # pip removes one of the two per uninstall: both go, then one is installed again. A torch
                # companion is named without a version: the planner pins the release made for the installed torch.
                if name not in INSTALLERS:
                    again = active.name if name in companions and facts.torch is not None \
                        else f"{active.name}=={active.version}"
                    item.update(remove=active.name, remove_again=active.name, reinstall=again)
            else:
                reasons = _breaks(facts, active, shadowed, problems)
                if not reasons:
                    continue  # a copy per layer is how layered environments work
                item["breaks"] = _said(reasons)
                if name not in INSTALLERS and own_layer(facts, active):
                    item["remove"] = active.name
            out.append(item)
    return sorted(out, key=lambda i: (i["name"].lower(), i["shadowed_metadata_dir"]))


# --- NumPy: an extension built for a newer NumPy than the one imported ------------------------------------------


def numpy_major(facts: Facts) -> int | None:
    dist = facts.active("numpy")
    version = None if dist is None else parse_version(dist.version)
    return None if version is None else version.major


def _numpy_requirement(facts: Facts, dist: Distribution | None) -> str | None:
    """`dist`'s own requirement on numpy that holds here, as `numpy<2.6,>=2.0`; None when it states none."""
    if dist is None:
        return None
    env = marker_env(facts)
    for line in dist.requires:
        req = parse_requirement(line)
        if req is None or canonical_name(req.name) != "numpy":
            continue
        if req.marker is None or marker_holds(req.marker, env) is True:
            return f"numpy{req.specifier}"
    return None


def _built_for(needs: str, numpy: str) -> str:
    try:
        spec = SpecifierSet(needs[len("numpy"):])
    except InvalidSpecifier:
        return f"a newer NumPy than {numpy}"
    return "NumPy 2" if not spec.contains(Version("1.999"), prereleases=True) else f"a newer NumPy than {numpy}"


def numpy_too_old(facts: Facts, failures: Sequence[Item]) -> list[Item]:
    """The NumPy ABI import failures under a NumPy 1.x: the extension was compiled against a newer NumPy (a module
    built for NumPy 1.x runs with every later 1.x), so NumPy is what moves. What it needs comes from the facts: its
    own requirement on numpy where the installed NumPy fails it, else NumPy 2 where a NumPy 2 lies underneath in a
    base layer, else any NumPy newer than this one. When this environment's own layer holds the old NumPy over a
    copy that meets the need, removing it is the fix (the base is left as it is); else an install of the need."""
    copies = facts.installed("numpy")
    if not copies:
        return []
    numpy = copies[0]
    underneath = copies[1] if len(copies) > 1 else None
    removable = underneath is not None and own_layer(facts, numpy)
    out = []
    for failure in failures:
        own = _numpy_requirement(facts, facts.active(failure["name"]))
        if own is not None and not _contains(own, numpy.version):
            needs, evidence = own, f"{failure['name']} {failure['version']} requires {own}"
        elif underneath is not None and (parse_version(underneath.version) or Version("0")).major >= 2:
            needs = "numpy>=2"
            evidence = f"numpy {underneath.version} lies underneath, in {underneath.location}"
        else:
            needs, evidence = f"numpy>{numpy.version}", f"the import fails with NumPy {numpy.version}"
        remove = removable and underneath is not None and _contains(needs, underneath.version)
        out.append({**failure, "built_for": _built_for(needs, numpy.version), "needs": needs,
                    "remove": "numpy" if remove else "", "install": "" if remove else needs, "evidence": evidence})
    return out


def _duplicates(derived: Values) -> list[Item] | None:
    facts = derived.facts
    if metadata_unknown(facts):
        return None  # a package list names each package once, wherever and however often it is installed
    if not any(len(dists) > 1 for dists in facts.names.values()):
        return []
    return duplicates(facts, requirements.walk(derived).problems, companions.tables_of(derived))


DERIVATIONS: list[Derivation] = [
    Derivation("distributions.duplicates",
               "distributions installed more than once on the import path where it matters (the first is "
               "imported, the rest shadowed): two metadata folders of different versions in one folder, or a "
               "copy in another layer (a `--system-site-packages` venv, a `.pth` line, a user site over a base) "
               "whose imported version breaks what the shadowed one met: a requirement only the shadowed "
               "version meets, or its own unmet requirements where the shadowed copy's are met "
               "(envcheck/derived/layers.py): `name`, `active_version`, `active_location`, "
               "`shadowed_version`, `shadowed_location`, `shadowed_metadata_dir`, `same_location`, `breaks` "
               "(\", and the imported copy breaks what the shadowed one met: ...\", empty for one folder), "
               "`remove` and `remove_again` (the name to uninstall once, twice for one folder; empty where no "
               "command may: pip and uv, the installers the commands need, and a copy outside this "
               "environment's own layer), `reinstall` (the requirement to install again after a one-folder "
               "removal: `name==version`, a torch companion by name alone for the planner to pin)",
               DUPLICATE_FIELDS, _duplicates),
]

"""The installed distributions' metadata, and the interpreter that holds them: corrupt metadata (unreadable, or
Requires-Dist lines the requirement walk could not parse), versions that are not PEP 440, Requires-Python that
excludes the interpreter, `~name` leftovers of an interrupted install, and whether the interpreter is a venv, a
conda environment or externally managed. Pure functions of Facts (and of the requirement walk).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envcheck.derived import requirements
from envcheck.derived.common import Derivation, Item, Values, metadata_unknown
from envcheck.support.versions import parse_version

__all__ = ["DERIVATIONS"]

def _corrupt(derived: Values) -> list[Item] | None:
    facts = derived.facts
    if metadata_unknown(facts):
        return None  # metadata that was not read cannot be judged
    # Only the lines the requirement walk reached are parsed, and so judged.
    invalid = requirements.walk(derived).invalid
    out = []
    for dist in facts.distributions:
        problems = list(dist.problems)
        if dist is facts.active(dist.name):
            problems += [f"invalid Requires-Dist {line!r}" for line in invalid.get(dist.canonical_name, [])]
        if problems:
            out.append({"name": dist.name or "?", "metadata_dir": dist.metadata_dir, "problem": "; ".join(problems)})
    return sorted(out, key=lambda i: (i["name"].lower(), i["metadata_dir"]))


def _invalid_versions(derived: Values) -> list[Item]:
    facts = derived.facts
    out = [
        {"name": d.name, "version": d.version, "metadata_dir": d.metadata_dir}
        for d in facts.distributions
        if not d.problems and parse_version(d.version) is None
    ]
    return sorted(out, key=lambda i: (i["name"].lower(), i["metadata_dir"]))


def _requires_python(derived: Values) -> list[Item] | None:
    facts = derived.facts
    python = parse_version(facts.python.version)
    out: list[Item] = []
    if python is None:
        # No interpreter version (a report that does not state it): nothing can be judged.
        return None if metadata_unknown(facts) else out
    unknown_metadata = False
    excluded: dict[str, bool] = {}  # per distinct Requires-Python: thousands of distributions share a handful
    for dists in facts.names.values():
        dist = dists[0]
        if not dist.requires_known:
            unknown_metadata = True  # Requires-Python, like Requires-Dist, was not stated
            continue
        if not dist.requires_python:
            continue
        if dist.requires_python not in excluded:
            try:
                spec = SpecifierSet(dist.requires_python)
            except InvalidSpecifier:
                excluded[dist.requires_python] = False
                continue
            excluded[dist.requires_python] = not spec.contains(python, prereleases=True)
        if excluded[dist.requires_python]:
            out.append({"name": dist.name, "version": dist.version, "requires_python": dist.requires_python,
                        "python": facts.python.version})
    if unknown_metadata and not out:
        return None
    return sorted(out, key=lambda i: i["name"].lower())


def _partial_installs(derived: Values) -> list[Item] | None:
    if "partial_installs" in derived.facts.unknown:
        return None  # a report does not show site-packages
    out = []
    for path in derived.facts.partial_installs:
        folder, _, leaf = path.replace("\\", "/").rpartition("/")
        out.append({"path": path, "folder": folder, "entry": leaf})
    return out


def _interpreter_flag(name: str) -> Callable[[Values], Any]:
    def compute(derived: Values) -> Any:
        if f"python.{name}" in derived.facts.unknown:
            return None  # not stated (a snapshot read from a report)
        return getattr(derived.facts.python, name)

    return compute


DERIVATIONS: list[Derivation] = [
    Derivation("distributions.corrupt",
               "distributions whose metadata is missing, unreadable, undecodable or malformed: `name`, "
               "`metadata_dir`, `problem`", ("name", "metadata_dir", "problem"), _corrupt),
    Derivation("distributions.invalid-versions",
               "distributions whose version is not a valid PEP 440 version (`1.0-custom`): `name`, `version`, "
               "`metadata_dir`", ("name", "version", "metadata_dir"), _invalid_versions),
    Derivation("distributions.requires-python",
               "imported distributions whose Requires-Python excludes the checked interpreter: `name`, "
               "`version`, `requires_python`, `python`",
               ("name", "version", "requires_python", "python"), _requires_python),
    Derivation("distributions.partial-installs",
               "`~name` entries in site-packages left by an interrupted pip install or uninstall: `path`, "
               "`folder`, `entry`", ("path", "folder", "entry"), _partial_installs),
    Derivation("python.virtualenv",
               "true or false: the checked interpreter runs in a virtual environment (venv, virtualenv, uv)", (),
               _interpreter_flag("virtualenv")),
    Derivation("python.conda", "true or false: the checked interpreter belongs to a conda environment", (),
               _interpreter_flag("conda")),
    Derivation("python.externally-managed",
               "true or false: pip refuses to install into the checked interpreter (PEP 668)", (),
               _interpreter_flag("externally_managed")),
]

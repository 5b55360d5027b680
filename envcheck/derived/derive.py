"""Derived facts: cross-fact computations that a declarative rule cannot express, computed from a Facts snapshot.

Each derivation is a small named function; rules read its result through the `fact` predicate or iterate it with
`foreach`. A derivation is pure (Facts in, JSON-ready value out) and runs only when a selected rule asks for it.
List-valued derivations return items sorted deterministically, each a flat dict of strings that templates can use
as `{item.KEY}`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envcheck._packaging import marker_env, parse_requirement, parse_version
from envcheck.derived import (
    attention,
    builds,
    companions,
    extensions,
    gpu_compat,
    layers,
    multigpu,
    native_libs,
    rocm,
    system_libs,
    wheels,
)
from envcheck.derived import project as project_derived
from envcheck.derived import toolchain as toolchain_derived
from envcheck.derived.common import Item
from envcheck.derived.tables import (
    CUDA_DRIVER,
    EXTENSION_RELEASES,
    NO_TABLES,
    ROCM_ARCHS,
    TORCH_BUILDS,
    TORCH_COMPANIONS,
    XFORMERS,
    Tables,
)
from envcheck.facts.snapshot import Distribution, Facts, canonical_name

if TYPE_CHECKING:
    from envcheck.derived.walk_memo import Memo


@dataclass(frozen=True)
class Derivation:
    name: str
    doc: str  # markdown: what the value is, or what each item is with every field; generates the docs' table
    fields: tuple[str, ...]  # keys of each item, for list-valued derivations (validated in rule templates)
    compute: Callable[[Derived], Any]  # may read other derivations through the Derived it is given


# `name...; extra == "gpu"`: the common shape of an extra's requirement. Such a line matters only when that extra
# is reached, so it is not parsed otherwise (most lines of large distributions are extras).
# The marker's tail `extra == "gpu"` (alone, or as the last term of a conjunction): such a line is false for every
# other extra. A marker with `or` anywhere is left to the full parser, as the extra test may then not bind the
# whole. Markers cannot contain ';', so the marker is what follows the last one (a URL may contain ';').
_EXTRA_TAIL = re.compile(r"""(?:^|\band)\s*extra\s*==\s*['"]([^'"]+)['"]\s*$""")
_OR = re.compile(r"\bor\b")


def _only_extra(line: str) -> str | None:
    """The extra a requirement line is conditional on, when that can be read without parsing the line."""
    _, sep, marker = line.rpartition(";")
    if not sep or _OR.search(marker):
        return None
    found = _EXTRA_TAIL.search(marker.strip())
    return found.group(1) if found else None


def _normalize_extra(name: str) -> str:
    return canonical_name(name)  # PEP 685: extras compare normalised, like distribution names


def _marker_holds(req: Requirement, env: dict[str, str]) -> bool | None:
    if req.marker is None:
        return True
    try:
        return req.marker.evaluate(env)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return None


@dataclass
class _Walk:
    """The result of checking every reachable requirement once: the unsatisfied ones and unparsable lines."""

    problems: list[Item]
    invalid: dict[str, list[str]]  # canonical distribution name -> Requires-Dist lines that do not parse
    incomplete: bool = False  # some requirement could not be judged: Requires-Dist not stated, or the target's
    # absence not known (a report's partial package list); an empty `problems` then proves nothing


def _walk(derived: Derived) -> _Walk:
    """Every Requires-Dist of every imported distribution checked against what is installed, extras followed.

    Like `pip check`, only the unconditional requirements of each distribution are roots (which extras a user
    asked for is not recorded anywhere). Unlike it, a requirement with extras (`accelerate[torch]`) also checks the
    extra's own requirements, and markers are evaluated for the checked interpreter, not for envcheck's.
    """
    facts = derived.facts
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
            only = _only_extra(line)
            if only is not None and _normalize_extra(only) != extra:
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
                        key = (target.canonical_name, _normalize_extra(wanted))
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
    return _Walk(ordered, invalid, incomplete)


def _remembered_walk(derived: Derived, memo: Memo) -> _Walk:
    """The walk's result from `memo` when its inputs are unchanged (envcheck/derived/walk_memo.py), else computed
    and remembered there."""
    from envcheck.derived import walk_memo

    facts = derived.facts
    entry, key = walk_memo.name(facts), walk_memo.key(facts)
    payload = memo.load(entry, key)
    found = None if payload is None else walk_memo.loads(payload, _UNSAT_FIELDS)
    if found is not None:
        return _Walk(*found)
    walk = _walk(derived)
    memo.store(entry, key, walk_memo.dumps(walk.problems, walk.invalid, walk.incomplete))
    return walk


def _unsatisfied(derived: Derived) -> list[Item] | None:
    """The unsatisfied requirements; None (unknown) when none were found but some could not be judged."""
    walk = derived.walk()
    return None if walk.incomplete and not walk.problems else walk.problems


def _of_kind(derived: Derived, kind: str) -> list[Item] | None:
    walk = derived.walk()
    found = [i for i in walk.problems if i["kind"] == kind]
    return None if walk.incomplete and not found else found


def _missing(derived: Derived) -> list[Item] | None:
    return _of_kind(derived, "missing")


def _conflicts(derived: Derived) -> list[Item] | None:
    """Conflicts, less a torch companion's pin on another torch where the tables know the companion release made
    for the installed torch: `companions.pinned-to-other-torch` reports those with the fix that keeps torch, and
    one finding per problem keeps `envcheck fix` from running both directions."""
    found = _of_kind(derived, "conflict")
    if found is None or not derived.companions():
        return found
    pinned = {canonical_name(i["name"]) for i in derived.get("companions.pinned-to-other-torch") or ()}
    pinned |= {canonical_name(i["name"]) for i in derived.get("extensions.vllm-for-other-torch") or ()}
    return [i for i in found
            if not (canonical_name(i["dependency"]) == "torch" and canonical_name(i["package"]) in pinned)]


def _duplicates(derived: Derived) -> list[Item] | None:
    facts = derived.facts
    if _metadata_unknown(facts):
        return None  # a package list names each package once, wherever and however often it is installed
    if not any(len(dists) > 1 for dists in facts.names.values()):
        return []
    return layers.duplicates(facts, derived.walk().problems, derived.companions())


def _corrupt(derived: Derived) -> list[Item] | None:
    facts = derived.facts
    if _metadata_unknown(facts):
        return None  # metadata that was not read cannot be judged
    invalid = derived.walk().invalid  # only the lines the requirement walk reached are parsed, and so judged
    out = []
    for dist in facts.distributions:
        problems = list(dist.problems)
        if dist is facts.active(dist.name):
            problems += [f"invalid Requires-Dist {line!r}" for line in invalid.get(dist.canonical_name, [])]
        if problems:
            out.append({"name": dist.name or "?", "metadata_dir": dist.metadata_dir, "problem": "; ".join(problems)})
    return sorted(out, key=lambda i: (i["name"].lower(), i["metadata_dir"]))


def _invalid_versions(derived: Derived) -> list[Item]:
    facts = derived.facts
    out = [
        {"name": d.name, "version": d.version, "metadata_dir": d.metadata_dir}
        for d in facts.distributions
        if not d.problems and parse_version(d.version) is None
    ]
    return sorted(out, key=lambda i: (i["name"].lower(), i["metadata_dir"]))


def _metadata_unknown(facts: Facts) -> bool:
    """Distribution metadata was not read (a package list from a report): what it would show is unknown."""
    return not facts.distributions_complete or any(not d.requires_known for d in facts.distributions)


def _requires_python(derived: Derived) -> list[Item] | None:
    facts = derived.facts
    python = parse_version(facts.python.version)
    out: list[Item] = []
    if python is None:
        # No interpreter version (a report that does not state it): nothing can be judged.
        return None if _metadata_unknown(facts) else out
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


def _partial_installs(derived: Derived) -> list[Item] | None:
    if "partial_installs" in derived.facts.unknown:
        return None  # a report does not show site-packages
    out = []
    for path in derived.facts.partial_installs:
        folder, _, leaf = path.replace("\\", "/").rpartition("/")
        out.append({"path": path, "folder": folder, "entry": leaf})
    return out


def _interpreter_flag(name: str) -> Callable[[Derived], Any]:
    def compute(derived: Derived) -> Any:
        if f"python.{name}" in derived.facts.unknown:
            return None  # not stated (a snapshot read from a report)
        return getattr(derived.facts.python, name)

    return compute


def _of_facts(fn: Callable[[Facts], Any]) -> Callable[[Derived], Any]:
    def compute(derived: Derived) -> Any:
        return fn(derived.facts)

    return compute


def _driver_vs_torch_cuda(derived: Derived) -> Any:
    return gpu_compat.driver_vs_torch_cuda(derived.facts, derived.tables[CUDA_DRIVER])


def _recommended_build(derived: Derived) -> Any:
    return builds.recommended_build(derived.facts, derived.tables[TORCH_BUILDS])


def _arch_coverage(derived: Derived) -> Any:
    return builds.arch_coverage(derived.facts, derived.tables[TORCH_BUILDS], derived.get("torch.recommended-build"),
                                derived.tables[CUDA_DRIVER])


def _unpublished_build(derived: Derived) -> Any:
    recommendation = derived.get("torch.recommended-build")
    return builds.unpublished_build(derived.facts, derived.tables[TORCH_BUILDS], recommendation)


def _coverage(wanted: str) -> Callable[[Derived], Any]:
    def compute(derived: Derived) -> Any:
        return builds.with_coverage(derived.get("gpu.arch-coverage"), wanted)

    return compute


def _companion_tables(derived: Derived) -> dict[str, companions.Companion]:
    """The companion tables merged by name, with the build matrix's companion releases where it was loaded."""
    try:
        matrix = derived.tables[TORCH_BUILDS]
    except LookupError:  # an evaluation without the build matrix (rules built by hand)
        matrix = None
    return companions.merged((derived.tables[TORCH_COMPANIONS], derived.tables[XFORMERS]), matrix)


def _of_companions(fn: Callable[[Facts, dict[str, companions.Companion]], Any]) -> Callable[[Derived], Any]:
    def compute(derived: Derived) -> Any:
        return fn(derived.facts, _companion_tables(derived))

    return compute


def _companion(fn: Callable[[Facts, companions.Companion], Any], name: str) -> Callable[[Derived], Any]:
    def compute(derived: Derived) -> Any:
        return fn(derived.facts, _companion_tables(derived)[name])

    return compute


def _companion_derivations() -> list[Derivation]:
    """Derived facts about torch's compiled companions (envcheck/derived/companions.py, rules/data tables)."""
    mismatch = ("name", "version", "built_for", "torch", "expected", "install", "index", "requirement", "symptom")
    build = ("name", "version", "build", "torch", "torch_build", "torch_release", "install", "index")
    out = [
        Derivation("companions.torch-mismatch",
                   "installed torch companions (torchvision, torchaudio, torchcodec, xformers) that were built for "
                   "another torch minor than the installed one where no declared requirement says so (no torch "
                   "requirement, or a floor the installed torch meets): `name`, `version`, `built_for` (\"2.6.0\", "
                   "\"2.11\", \"2.11.0 or later\"), `torch`, `expected` (the companion release for the "
                   "installed torch: the one `rules/data/torch-builds.toml` lists for it, \"0.22.0\", else the "
                   "newest the companion table has for it, possibly a series \"0.9.*\"), `install` (the pip "
                   "requirement, "
                   "`torchvision==0.22.0`), `index` (the index torch came from: "
                   "`https://download.pytorch.org/whl/cu126` for a `+cu126` torch, PyPI for an untagged one), "
                   "`requirement` (empty here), `symptom` (how the companion fails, in its own words). An exact pin "
                   "counts at the minor level. Skipped, as absent: pre-release and custom builds of either, conda "
                   "installs, releases not in the tables, a torch no release is known for. The tables are data: "
                   "`rules/data/torch-companions.toml`, `rules/data/xformers.toml`", mismatch,
                   _of_companions(companions.torch_mismatch)),
        Derivation("companions.pinned-to-other-torch",
                   "the same, for companions whose own declared torch requirement the installed torch fails "
                   "(`requirement`, e.g. `torch==2.6.0`, which `requirements.conflicting` also reports): the fix in "
                   "the other direction. Fields as `companions.torch-mismatch`: `name`, `version`, `built_for`, "
                   "`torch`, `expected`, `install`, `index`, `symptom`", mismatch,
                   _of_companions(companions.pinned_to_other_torch)),
    ]
    out += [Derivation(f"companions.{name}-build-mismatch",
                       f"the installed {name}, when it is the release made for the installed torch but of another "
                       "build, as the companion itself checks it: CPU vs CUDA vs ROCm, and for CUDA the major "
                       f"{major}: `name`, `version`, `build` (\"a CUDA 12.6 build\"), `torch`, `torch_build`, "
                       "`torch_release`, `install` (`{name}==X.Y.Z`), `index`. A companion's build comes from its "
                       "local version tag, else from the table's entry for PyPI's wheels on this platform (unknown "
                       "on Linux aarch64)".replace("{name}", name), build,
                       _companion(companions.build_mismatch, name))
            for name, major in (("torchvision", "(from 0.16) or major.minor (0.15)"),
                                ("torchaudio", "and minor"))]
    out.append(Derivation("companions.torchcodec-for-torch",
                          "one item, the torchcodec release for the installed torch, chosen as "
                          "`companions.torch-mismatch`'s `expected` (\"0.11.1\" for torch 2.11.0): `name`, `torch`, "
                          "`expected`, `install`, `index`. Unknown without a torch release the tables know",
                          ("name", "torch", "expected", "install", "index"),
                          _companion(companions.release_for_torch, "torchcodec")))
    return out


_IMPORT_FIELDS = ("name", "version", "release", "module", "error", "symbol", "torch", "numpy")
_IMPORT_DOC = ("`name`, `version`, `release` (the version without its local tag), `module` (the module whose "
               "import failed), `error` (class and first line), `symbol` (the undefined symbol, else empty), "
               "`torch`, `numpy` (installed versions, or \"not installed\"). Unknown when the `extension-imports` "
               "probe did not run to completion")
_TAG_FIELDS = ("name", "version", "release", "tag", "built_torch", "built_cuda", "torch", "torch_cuda", "built_abi",
               "torch_abi")
_TAG_DOC = ("`name`, `version`, `release`, `tag` (the local version tag), `built_torch` (\"2.3\"), `built_cuda` "
            "(\"12.1\", \"12\", or \"none (CPU)\"), `torch`, `torch_cuda`, `built_abi` / `torch_abi` "
            "(\"TRUE\" / \"FALSE\", for the ABI fact only). Tags read: PyG's `+pt23cu121`, "
            "flash-attn's `+cu122torch2.3cxx11abiFALSE`")


# The companion facts whose rules already explain a companion's failed import, with the exact release to install.
_COMPANION_FAULTS = ("companions.torch-mismatch", "companions.pinned-to-other-torch",
                     "companions.torchvision-build-mismatch", "companions.torchaudio-build-mismatch")


def _import_failures(kind: str) -> Callable[[Derived], Any]:
    """The `extension-imports` probe's failures of one kind, less the torch companions that a companion rule
    reports: a CUDA torchvision next to a CPU torch fails to import (`operator torchvision::nms does not exist`),
    and EC0703 already names the build to install, so a second, generic finding would only say it again."""
    failures = extensions.of_kind(kind)

    def compute(derived: Derived) -> Any:
        items = failures(derived.facts)
        if not items:
            return items
        reported = {canonical_name(str(c["name"])) for fact in _COMPANION_FAULTS for c in derived.get(fact) or ()}
        return [item for item in items if canonical_name(str(item["name"])) not in reported]

    return compute


def _numpy_abi(newer: bool) -> Callable[[Derived], Any]:
    """The NumPy ABI failures under a NumPy 2 (`newer` False: built for NumPy 1.x, EC1103's) or under a NumPy 1.x
    (`newer` True: built for a newer NumPy, envcheck/derived/layers.py says what that needs)."""
    failures = _import_failures("numpy-abi")

    def compute(derived: Derived) -> Any:
        items = failures(derived)
        if not items:
            return items
        old = (layers.numpy_major(derived.facts) or 2) < 2
        if not newer:
            return [] if old else items
        return layers.numpy_too_old(derived.facts, items) if old else []

    return compute


def _extension_derivations() -> list[Derivation]:
    """Compiled extensions against torch and NumPy (envcheck/derived/extensions.py)."""
    kinds = {
        "undefined-symbol": "raised `undefined symbol: ...` (Linux), `Symbol not found` (macOS) or `The specified "
                            "procedure could not be found` (Windows): built against another torch (or library)",
        "missing-operator": "raised `operator NS::op does not exist` / `No such operator`: its compiled operators "
                            "did not register with this torch",
        "numpy-abi": "failed, with a NumPy 2 (or no readable NumPy) installed, with NumPy 2's `compiled using "
                     "NumPy 1.x` (or `_ARRAY_API not found`, "
                     "`numpy.core.multiarray failed to import`, `numpy.dtype size changed`)",
        "missing-library": "could not load a shared library it links (`DLL load failed`, `cannot open shared object "
                           "file`, `Library not loaded`)",
        "crash": "killed the importing process (a signal) or hung",
        "other": "raised an error of no kind above",
    }
    out = [Derivation(f"extensions.import-{kind}",
                      f"installed distributions with native extensions on torch or NumPy whose import {doc}: "
                      f"{_IMPORT_DOC}. A torch companion that a `companions.*` fact already reports (built for "
                      "another torch, or of another build) is left to it", _IMPORT_FIELDS,
                      _numpy_abi(newer=False) if kind == "numpy-abi" else _import_failures(kind))
           for kind, doc in kinds.items()]
    out.append(Derivation(
        "extensions.import-numpy-too-old",
        "the same NumPy ABI failures under a NumPy 1.x: the extension was compiled against a newer NumPy (a module "
        f"built for NumPy 1.x runs with every later 1.x): {_IMPORT_DOC}; and `built_for` (\"NumPy 2\", or \"a "
        "newer NumPy than 1.26.4\"), `needs` (the NumPy requirement to meet: the extension's own where this NumPy "
        "fails it, else `numpy>=2` where a NumPy 2 lies underneath in a base layer, else any newer one), `remove` "
        "(`numpy` when this environment's own layer holds the old NumPy over a copy that meets `needs`: removing it "
        "is the fix, the base is left as it is; else empty), `install` (`needs` when nothing is removed, else "
        "empty), `evidence` (what decided `needs`)", (*_IMPORT_FIELDS, *layers.NUMPY_FIELDS), _numpy_abi(newer=True)))
    out += [
        Derivation("extensions.tag-other-torch",
                   f"installed distributions whose local version tag names another torch minor: {_TAG_DOC}. "
                   "Unknown when torch/version.py is unreadable", _TAG_FIELDS,
                   _of_facts(extensions.of_aspect("torch"))),
        Derivation("extensions.tag-other-cuda",
                   "installed distributions whose local version tag names a CUDA build of another CUDA major than "
                   f"torch's, or a CUDA build next to a CPU or ROCm torch: {_TAG_DOC}", _TAG_FIELDS,
                   _of_facts(extensions.of_aspect("cuda"))),
        Derivation("extensions.tag-other-abi",
                   "installed distributions whose local version tag names the installed torch minor but the other "
                   f"C++ ABI (`cxx11abiTRUE` / `FALSE`) than torch's: {_TAG_DOC}. Unknown when torch's ABI is: "
                   "see `torch.cxx11-abi`", _TAG_FIELDS, _of_facts(extensions.of_aspect("abi"))),
        Derivation("torch.cxx11-abi",
                   "true or false: torch was built with `_GLIBCXX_USE_CXX11_ABI=1`. The `torch-build` probe's "
                   "answer, else, for a pip or uv install on Linux, what the official wheels use (false up to 2.5 and "
                   "for 2.6 except its CUDA 12.6 builds, true from 2.7); unknown otherwise (conda, source builds, "
                   "pre-releases)", (),
                   _of_facts(extensions.torch_cxx11_abi)),
    ]
    return out


def _without_wheel(kind: str) -> Callable[[Derived], Any]:
    def compute(derived: Derived) -> Any:
        return wheels.requirements_without_wheel(derived.facts, derived.tables[TORCH_BUILDS],
                                                 derived.get("requirements.unsatisfied"), kind)

    return compute


def _project_unmet(derived: Derived) -> Any:
    """The project's unmet requirements, less those no torch wheel can satisfy on this platform and Python: for
    `torch>=2.3` on macOS x86_64, `pip install 'torch>=2.3'` cannot succeed, and EC1601-EC1603 say what can."""
    items = project_derived.unmet(derived.facts)
    if not items:
        return items
    try:
        hopeless = {(w["requirement"], w["source"]) for kind in ("platform", "python", "variant")
                    for w in derived.get(f"torch.requirement-without-wheel-for-{kind}") or ()}
    except LookupError:  # an evaluation without the build matrix (rules built by hand): nothing to leave out
        return items
    return [item for item in items if (item["requirement"], item["source"]) not in hopeless]


def _release_needs(dependency: str, libraries: tuple[str, ...] | None,
                   with_release_only: bool = False) -> Callable[[Derived], Any]:
    def compute(derived: Derived) -> Any:
        return extensions.unmet_release_needs(derived.facts, derived.tables[EXTENSION_RELEASES], dependency,
                                              libraries, with_release_only=with_release_only)

    return compute


def _wheel_and_multigpu_derivations() -> list[Derivation]:
    """Wheel availability (envcheck/derived/wheels.py) and multi-GPU facts (envcheck/derived/multigpu.py)."""
    doc = ("`requirement`, `source` (\"pyproject.toml: project.dependencies[0]\", or the installed distribution that "
           "requires it), `platform`, `python`, `reason`, `newest` (the newest torch with a wheel for this platform "
           "and Python, or \"none\"), `pythons` (the Pythons the releases in range have wheels for here), "
           "`variants` (the builds PyTorch published of them here). Judged for the project's torch requirements "
           "(`[tool.envcheck] require` included) and the torch requirements of installed distributions that the "
           "installed torch does not meet; not for "
           "requirements no release of the build matrix matches (newer releases, nightlies)")
    return [
        Derivation("torch.requirement-without-wheel-for-platform",
                   "torch requirements no published wheel can satisfy on this platform, for any Python: no release "
                   f"in range was built for it (macOS x86_64 after 2.2.2): {doc}", wheels.REQUIREMENT_FIELDS,
                   _without_wheel("platform")),
        Derivation("torch.requirement-without-wheel-for-python",
                   "torch requirements whose releases have wheels for this platform, but none for this Python "
                   f"(3.13 before torch 2.5): {doc}", wheels.REQUIREMENT_FIELDS, _without_wheel("python")),
        Derivation("torch.requirement-without-wheel-for-variant",
                   "torch requirements that name a build (local tag `+cu124`, `+rocm6.2`) PyTorch never published "
                   f"for this platform, such as CUDA on macOS: {doc}", wheels.REQUIREMENT_FIELDS,
                   _without_wheel("variant")),
        Derivation("torch.index-without-wheel",
                   "PyTorch wheel indexes the project names (`--index-url`, `--extra-index-url` in its requirements "
                   "files) whose build no torch release has for this platform (`.../whl/cu121` on macOS): `url`, "
                   "`variant`, `platform`, `variants` (the builds published for this platform), `source`",
                   wheels.INDEX_FIELDS,
                   lambda derived: wheels.index_without_wheel(derived.facts, derived.tables[TORCH_BUILDS])),
        Derivation("nccl.version",
                   "one item, the NCCL torch uses: `version`, `source` (`torch.cuda.nccl.version()` in the "
                   "`torch-build` probe when it ran, else the installed `nvidia-nccl-cu*` wheel). Empty when neither "
                   "is known", multigpu.NCCL_FIELDS, _of_facts(multigpu.nccl_version)),
        Derivation("nccl.loaded-other-than-wheel",
                   "one item when the NCCL that torch loaded (`torch-build` probe) is another version than the "
                   "`nvidia-nccl-cu*` wheel for torch's CUDA major: `loaded`, `wheel`, `wheel_version`. Empty "
                   "without such a wheel; unknown without the probe", ("loaded", "wheel", "wheel_version"),
                   _of_facts(multigpu.nccl_other_than_wheel)),
        Derivation("gpu.mixed-models",
                   "the GPU models of a machine with more than one model: `name`, `indices` (NVML's, PCI bus "
                   "order). Empty for one model; unknown without NVML's GPUs", ("name", "indices"),
                   _of_facts(multigpu.mixed_models)),
        Derivation("gpu.visible-devices-missing",
                   "the entries of `CUDA_VISIBLE_DEVICES` that name no GPU CUDA can use here: an index at or beyond "
                   "the number of GPUs, a `GPU-` UUID (or prefix) no GPU has, a `MIG-` instance where no GPU is in "
                   "MIG mode or NVML lists other instances, other text: `entry`, `position` (1-based), `reason`, "
                   "`visible` (the number of GPUs), `indices` (\"0 to 3\", \"0\", or \"none\"). A value that hides "
                   "every GPU (empty, or a leading negative index: see `cuda-visible-devices-hides-every-gpu`) and "
                   "indices on a machine with MIG enabled are not "
                   "judged; unknown without NVML's GPUs",
                   multigpu.VISIBLE_FIELDS, _of_facts(multigpu.visible_devices_missing)),
        Derivation("network.nccl-socket-ifname-missing",
                   "one item when `NCCL_SOCKET_IFNAME` (interface-name prefixes, `=name` for an exact name) matches "
                   "no network interface of this machine: `variable`, `value`, `missing` (the prefixes), "
                   "`interfaces` (the machine's). An exclusion list (`^docker,lo`) is not judged; unknown without "
                   "the `network` facts", multigpu.IFNAME_FIELDS, _of_facts(multigpu.nccl_ifname_missing)),
        Derivation("network.gloo-socket-ifname-missing",
                   "one item when `GLOO_SOCKET_IFNAME` (exact interface names) names an interface this machine "
                   "lacks: `variable`, `value`, `missing` (the names not found), `interfaces`. Unknown without the "
                   "`network` facts", multigpu.IFNAME_FIELDS, _of_facts(multigpu.gloo_ifname_missing)),
        Derivation("bitsandbytes.cuda-override",
                   "one item when `BNB_CUDA_VERSION` makes bitsandbytes load the native library of another CUDA "
                   "than torch's: `value`, `library` (`libbitsandbytes_cuda118`), `torch_cuda` (\"12.4\", or "
                   "\"none (CPU build)\"). Empty when it is unset, empty or torch's own CUDA",
                   ("value", "library", "torch_cuda"), _of_facts(multigpu.bitsandbytes_cuda_override)),
    ]


_RELEASE_DOC = ("`name`, `version`, `release`, `dependency` (the distribution it needs in other versions), "
                "`installed` (its installed version), `needs` (the versions the release works with: \"2.8.0\", "
                "\">=2.4,<2.9 (CUDA 12)\", \"CUDA 11.8, 12.1\"), `torch_cuda` (the installed torch's CUDA, or "
                "empty), `requirement` (`torch==2.9.0`), `expected` (the newest release made for the installed "
                "dependency, empty when the table knows none), `install` (`torchao==0.14.1`, or empty), "
                "`symptom`. The releases are data: `rules/data/extension-releases.toml`")


def _extension_release_derivations() -> list[Derivation]:
    """Extension releases against the torch (or mmcv / mmengine) they were built for or accept
    (envcheck/derived/extensions.py, rules/data/extension-releases.toml)."""
    torch_built = {
        "torchao": "whose compiled kernels were built for another torch release than the installed one "
                   "(torchao 0.13 to 0.16 load them only with exactly that torch)",
        "vllm": "whose exact torch pin is not the installed torch (installed with `--no-deps`, a uv override, or "
                "torch changed afterwards); `requirements.conflicting` leaves such a pin to this fact",
        "flash-attn": "installed without a local tag whose release published no wheel for the installed torch "
                      "minor and CUDA major (so it is a source build, or was built for another torch) while another "
                      "release did, unless the `extension-imports` probe imported it without error",
        "deepspeed": "releases that cannot run with the installed torch (before 0.8.2: torch 2.0 removed "
                     "`torch._six`)",
        "detectron2": "pre-built wheels (`+cu113`, `+cpu`) made for another torch minor",
        "bitsandbytes": "from PyPI, whose release ships no library for the CUDA version of the installed torch "
                        "(up to 0.49 one per CUDA minor, loaded by exact version; from 0.50 the nearest of the same "
                        "major); `torch_cuda` is torch's CUDA",
    }
    out = [Derivation(f"extensions.{name}-for-other-torch", f"the installed {name}, {what}: {_RELEASE_DOC}",
                      extensions.RELEASE_FIELDS, _release_needs("torch", (name,), name == "flash-attn"))
           for name, what in torch_built.items()]
    out += [Derivation(f"extensions.openmmlab-rejects-{dependency}",
                       f"installed OpenMMLab packages (mmdet, mmsegmentation, mmpose) whose release asserts at "
                       f"import a {dependency} range the installed {dependency} is outside of: {_RELEASE_DOC}",
                       extensions.RELEASE_FIELDS, _release_needs(dependency, ("mmdet", "mmsegmentation", "mmpose")))
            for dependency in ("mmcv", "mmengine")]
    return out


_UNSAT_FIELDS = ("package", "package_version", "requirer", "via", "requirement", "dependency", "specifier",
                 "installed", "kind")
_GPU_FIELDS = ("index", "name", "compute_capability")
_COVERAGE_FIELDS = builds.COVERAGE_FIELDS
_UNSAT_DOC = ("`package`, `package_version`, `requirer` (\"torchvision 0.21.0\", with the extras path when there is "
              "one), `via`, `requirement`, `dependency`, `specifier`, `installed`, `kind` (`missing` or `conflict`)")
_COVERAGE_DOC = ("`index`, `name`, `compute_capability`, `coverage`, `build_archs`, `evidence`, and the "
                 "`torch.recommended-build` fields `install`, `index_url`, `recommended`, `because`")


def _rocm_derivations() -> list[Derivation]:
    """AMD GPUs against a ROCm build of torch (envcheck/derived/rocm.py, rules/data/rocm-archs.toml)."""

    def tables(fn: Callable[..., Any], *, matrix: bool = True, **kw: Any) -> Callable[[Derived], Any]:
        def compute(derived: Derived) -> Any:
            extra = (derived.tables[TORCH_BUILDS],) if matrix else ()
            return fn(derived.facts, derived.tables[ROCM_ARCHS], *extra, **kw)

        return compute

    gpu_doc = ("`index` (the HIP device index), `gfx_target`, `pci_bus_id`, `build_archs` (the build's targets, "
               "space-separated), `runs_as` and `override` (the target an override makes it run as and the "
               "`HSA_OVERRIDE_GFX_VERSION` value; empty when none is safe), `evidence` "
               "(`rules/data/rocm-archs.toml` for the installed release and variant, which knows what the bundled "
               "rocBLAS lacks, else the `torch-build` probe's arch list), and "
               "the `rocm.recommended-build` fields `install`, `index_url`, `recommended`, `because`")
    return [
        Derivation("rocm.devices",
                   "the AMD GPUs of the KFD topology (`rocm` facts): `index`, `gfx_target`, `pci_bus_id`. Unknown "
                   "when the topology could not be read", ("index", "gfx_target", "pci_bus_id"),
                   _of_facts(rocm.devices)),
        Derivation("rocm.recommended-build",
                   "one item, the ROCm build of torch whose wheels carry kernels for every AMD GPU's target, for "
                   "this Python (the installed release first, then the newest; one that needs "
                   "`HSA_OVERRIDE_GFX_VERSION` only when none has native kernels): `install`, `index_url`, "
                   "`recommended`, `because`, `evidence` (`install` empty when nothing fits or the installed build is "
                   "already the one). Empty without torch; unknown "
                   "without the KFD topology", rocm.RECOMMENDATION_FIELDS, tables(rocm.recommended_build)),
        Derivation("rocm.gpus-not-in-build",
                   "with a ROCm torch and `HSA_OVERRIDE_GFX_VERSION` unset, the AMD GPUs whose target its wheels "
                   f"lack and no override can stand in for (`HIP error: invalid device function`): {gpu_doc}. "
                   "Unknown when the build's targets or the GPUs are", rocm.GPU_FIELDS,
                   tables(rocm.uncovered, overridable=False)),
        Derivation("rocm.gpus-needing-override",
                   "the same, for GPUs whose target the wheels lack but whose ISA family's target they carry "
                   f"(`rules/data/rocm-archs.toml` `[override]`): {gpu_doc}", rocm.GPU_FIELDS,
                   tables(rocm.uncovered, overridable=True)),
        Derivation("rocm.override-not-in-build",
                   "one item when `HSA_OVERRIDE_GFX_VERSION` is set for a ROCm torch to a target its wheels lack, "
                   "or to no target: `value`, `target`, `build_archs`, `gpus` (the GPUs' own targets), `evidence`, "
                   "and the `rocm.recommended-build` fields `install`, `index_url`, `recommended`, `because`",
                   rocm.OVERRIDE_FIELDS, tables(rocm.override_not_in_build)),
        Derivation("rocm.override-on-supported-gpus",
                   "AMD GPUs whose own target the installed ROCm torch carries but which `HSA_OVERRIDE_GFX_VERSION` "
                   f"makes run another target's kernels: {gpu_doc}", rocm.GPU_FIELDS,
                   tables(rocm.override_on_supported, matrix=False)),
        Derivation("rocm.devices-inaccessible",
                   "with a ROCm torch and AMD GPUs, `/dev/kfd` and the GPUs' render nodes this user cannot open for "
                   "reading and writing: `device`, `access` (`no-permission` or `missing`), `problem` (the same in "
                   "words), `group` (the group "
                   "owning `/dev/kfd`), `gpus`", rocm.ACCESS_FIELDS, _of_facts(rocm.inaccessible)),
        Derivation("rocm.system-rocm-other-version",
                   "one item when `/opt/rocm` holds a ROCm of another major.minor than the one the ROCm torch was "
                   "built with (`torch.version.hip`): `system`, `torch_rocm` (\"6.4\", \"6.3\"), and the "
                   "`rocm.recommended-build` fields `install`, `index_url`, `recommended`, `because`, `evidence` for "
                   "the same torch release built for the system's ROCm (`install` empty when PyTorch published none, "
                   "or it lacks a GPU's target)", rocm.SYSTEM_FIELDS, tables(rocm.system_rocm_other_version)),
        Derivation("rocm.visible-devices-out-of-range",
                   "with a ROCm torch, entries of `ROCR_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES` or "
                   "`CUDA_VISIBLE_DEVICES` that name a GPU index beyond the AMD GPUs left visible: `variable`, "
                   "`value`, `entry`, `count`", rocm.VISIBLE_FIELDS, _of_facts(rocm.visible_out_of_range)),
    ]


_TOOLKIT_FIELDS = ("source", "path", "toolkit", "version_file")
_TOOLKIT_DOC = ("`source` (`CUDA_HOME`, `CUDA_PATH`, `PATH`: the folder above the `nvcc` PATH finds, or `default`: "
                "/usr/local/cuda), `path`, `toolkit` (its nvcc release, read from the toolkit's version.json, "
                "version.txt or cuda.h), `version_file`")
_NEED_FIELDS = ("distribution", "file", "needed", "provided", "provider", "via")


def _toolchain_derivations() -> list[Derivation]:
    """The CUDA toolkit that builds extensions (envcheck/derived/toolchain.py) and native libraries
    (envcheck/derived/native_libs.py), from the `toolchain` and `native` facts."""
    def of_facts(fn: Callable[[Facts], Any]) -> Callable[[Derived], Any]:
        return lambda derived: fn(derived.facts)

    shadow = ("directory", "name", "version", "wheel", "wheel_version")
    return [
        Derivation("toolchain.cuda-toolkit",
                   "`\"found\"` (torch.utils.cpp_extension finds a CUDA toolkit with nvcc), `\"none\"` (it finds "
                   "none: CUDA_HOME and CUDA_PATH unset, no nvcc on PATH, no /usr/local/cuda), `\"no-nvcc\"` "
                   "(CUDA_HOME or CUDA_PATH names a folder without bin/nvcc), `\"runtime-only\"` (the default "
                   "folder has no bin/nvcc: a runtime container image), `\"n/a\"` (no CUDA torch). Unknown when "
                   "the toolchain facts were not collected", (), of_facts(toolchain_derived.cuda_toolkit_state)),
        Derivation("toolchain.toolkit-other-major",
                   "the build toolkits (the one torch.utils.cpp_extension takes, and the `nvcc` on PATH when it is "
                   f"another) whose CUDA major differs from torch's: {_TOOLKIT_DOC}, `torch_cuda`. A CUDA_HOME or "
                   "CUDA_PATH whose folder name states a version is `cuda.home-toolkit-other-major`'s. Unknown when "
                   "a toolkit's files tell no version",
                   (*_TOOLKIT_FIELDS, "torch_cuda"), of_facts(toolchain_derived.toolkit_other_major)),
        Derivation("toolchain.nvcc-differs-from-cuda-home",
                   "the toolkit of the `nvcc` on PATH when it is another release than the one CUDA_HOME or CUDA_PATH "
                   "names (which torch builds with): one item `home_path`, `home_version`, `nvcc_path`, "
                   "`nvcc_version`. Unknown when either version is",
                   ("home_path", "home_version", "nvcc_path", "nvcc_version"),
                   of_facts(toolchain_derived.nvcc_differs_from_home)),
        Derivation("toolchain.arch-list-beyond-toolkit",
                   "entries of `TORCH_CUDA_ARCH_LIST` (named ones expanded as torch does) that the toolkit's nvcc "
                   f"cannot compile for: `arch`, `reason`, {_TOOLKIT_DOC}. Unknown when the toolkit's version is",
                   (*_TOOLKIT_FIELDS, "arch", "reason"), of_facts(toolchain_derived.arch_list_beyond_toolkit)),
        Derivation("toolchain.gpus-newer-than-toolkit",
                   "GPUs whose architecture is newer than the toolkit's nvcc can compile for (sm_89 and sm_90 need "
                   "CUDA 11.8, sm_100 and sm_120 12.8, sm_103 and sm_121 12.9), for each build toolkit: `index`, "
                   f"`name`, `compute_capability`, `sm` (\"120\"), `reason`, {_TOOLKIT_DOC}. Unknown without "
                   "NVML's GPUs", (*_TOOLKIT_FIELDS, "index", "name", "compute_capability", "sm", "reason"),
                   of_facts(lambda f: toolchain_derived.gpus_toolkit_cannot_target(f, True))),
        Derivation("toolchain.gpus-dropped-by-toolkit",
                   "GPUs whose architecture the toolkit's nvcc no longer compiles for (CUDA 12 dropped sm_35/37, "
                   f"CUDA 13 sm_50 to sm_72): `index`, `name`, `compute_capability`, `sm`, `reason`, {_TOOLKIT_DOC}",
                   (*_TOOLKIT_FIELDS, "index", "name", "compute_capability", "sm", "reason"),
                   of_facts(lambda f: toolchain_derived.gpus_toolkit_cannot_target(f, False))),
        Derivation("toolchain.gcc-newer-than-toolkit",
                   "the host GCC nvcc would call (`$CC`, else `gcc`) when its major is newer than the toolkit "
                   "accepts (its include/crt/host_config.h, else torch's table): one item `gcc`, `gcc_path`, "
                   f"`gcc_max`, {_TOOLKIT_DOC}. Unknown when either version is",
                   (*_TOOLKIT_FIELDS, "gcc", "gcc_path", "gcc_max"),
                   of_facts(toolchain_derived.gcc_newer_than_toolkit)),
        Derivation("toolchain.source-builds-without-toolkit",
                   "requirements of the checked project, not installed yet, whose install compiles CUDA code "
                   "(flash-attn, causal-conv1d, mamba-ssm, ...) while torch's extension builder cannot: no "
                   "toolkit found, no nvcc in it, or a toolkit of another CUDA major: `name`, `requirement`, "
                   "`source`, `problem` (which, in words)", ("name", "requirement", "source", "problem"),
                   of_facts(toolchain_derived.source_builds_without_toolkit)),
        *[Derivation(f"libraries.{family}-older-on-ld-library-path",
                     f"`LD_LIBRARY_PATH` files of the {family} soname the installed `nvidia-{family}` wheel provides "
                     "but an older release (from the name the file resolves to), which the loader takes first: "
                     "`directory`, `name`, `version`, `wheel`, `wheel_version`. Unknown when the native facts were "
                     "not collected", shadow, of_facts(native_libs.older_on_loader_path(family)))
          for family in ("cudnn", "cublas", "nccl")],
        Derivation("libraries.loaded-outside-wheels",
                   "CUDA libraries the `loaded-libraries` probe saw mapped from outside the pip `nvidia-*` wheels "
                   "although that library's wheel is installed: `library`, `path`, `wheel`, `wheel_version`. "
                   "Unknown without the probe (Linux only)", ("library", "path", "wheel", "wheel_version"),
                   of_facts(native_libs.loaded_outside_wheels)),
        Derivation("libraries.libstdcxx-too-old",
                   "installed distributions whose shared objects need a GLIBCXX or CXXABI version that the "
                   "libstdc++.so.6 the loader finds does not define (read from ELF version sections, nothing "
                   "executed): `distribution`, `file`, `needed`, `provided`, `provider`, `via`",
                   _NEED_FIELDS, of_facts(native_libs.libstdcxx_too_old)),
        Derivation("libraries.glibc-too-old",
                   "installed distributions whose shared objects need a GLIBC version above the system's: "
                   "`distribution`, `file`, `needed`, `provided`, `provider`, `via`",
                   _NEED_FIELDS, of_facts(native_libs.glibc_too_old)),
        Derivation("libraries.wheels-above-glibc",
                   "installed manylinux wheels whose tag promises a glibc newer than the system's: `name`, "
                   "`version`, `tag`, `floor`, `glibc`", ("name", "version", "tag", "floor", "glibc"),
                   of_facts(native_libs.wheels_above_glibc)),
        Derivation("windows.vc-runtime-missing",
                   "Visual C++ runtime DLLs (vcruntime140.dll, vcruntime140_1.dll, msvcp140.dll) found neither in "
                   "System32, beside python.exe, Library\\bin, torch\\lib nor on PATH: `dll`. Empty where none were "
                   "looked for (off Windows)",
                   ("dll",), of_facts(native_libs.missing_windows_dlls(
                       ("vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll")))),
        Derivation("windows.libomp-missing",
                   "libomp140.x86_64.dll (LLVM's OpenMP runtime, which torch 2.4.0's fbgemm.dll links) when found "
                   "neither in System32, beside python.exe, Library\\bin, torch\\lib nor on PATH: `dll`. Empty where "
                   "none were looked for (off Windows)",
                   ("dll",), of_facts(native_libs.missing_windows_dlls(("libomp140.x86_64.dll",)))),
    ]


DERIVATIONS: dict[str, Derivation] = {
    d.name: d
    for d in [
        Derivation("requirements.unsatisfied",
                   "every unsatisfied requirement (Requires-Dist of the imported distributions, markers evaluated "
                   f"for the checked interpreter, extras followed), as `pip check` reports them: {_UNSAT_DOC}",
                   _UNSAT_FIELDS, _unsatisfied),
        Derivation("requirements.missing",
                   f"the same, where the dependency is not installed: {_UNSAT_DOC}", _UNSAT_FIELDS, _missing),
        Derivation("requirements.conflicting",
                   f"the same, where it is installed in another version: {_UNSAT_DOC}. A torch companion's pin on "
                   "another torch is left to `companions.pinned-to-other-torch` where the tables know the companion "
                   "release made for the installed torch", _UNSAT_FIELDS, _conflicts),
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
                   layers.DUPLICATE_FIELDS, _duplicates),
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
        Derivation("project.unmet",
                   "the checked project's declared requirements (envcheck/project/: pyproject.toml, setup.cfg, "
                   "requirements files, environment.yml) that the environment does not satisfy, markers evaluated "
                   "for the checked interpreter; an installed project's own dependencies are left to "
                   "`requirements.unsatisfied`: `name`, `requirement`, `source` (\"requirements.txt:3\"), "
                   "`installed` (a version, or \"not installed\"), `install` (the requirement without its marker), "
                   "`kind` (`missing` or `conflict`). A torch requirement no published wheel can satisfy here is "
                   "left to `torch.requirement-without-wheel-for-*`, whose rules say what to do instead of "
                   "installing it. Empty without a project",
                   project_derived.UNMET_FIELDS, _project_unmet),
        Derivation("project.lock-drift",
                   "installed distributions whose version is none of those the project's lock pins for this "
                   "environment: `name`, `installed`, `locked`, `lock` (\"uv.lock\"), `sync` (\"uv sync\"), "
                   "`install` (\"name==locked\"). Empty without a lock",
                   project_derived.DRIFT_FIELDS, _of_facts(project_derived.lock_drift)),
        Derivation("python.virtualenv",
                   "true or false: the checked interpreter runs in a virtual environment (venv, virtualenv, uv)", (),
                   _interpreter_flag("virtualenv")),
        Derivation("python.conda", "true or false: the checked interpreter belongs to a conda environment", (),
                   _interpreter_flag("conda")),
        Derivation("python.externally-managed",
                   "true or false: pip refuses to install into the checked interpreter (PEP 668)", (),
                   _interpreter_flag("externally_managed")),
        Derivation("gpu.driver-vs-torch-cuda",
                   "`\"ok\"` (the driver supports torch's CUDA runtime), `\"minor-compat\"` (it runs only through "
                   "CUDA minor version compatibility: same major, driver at or above the major's floor, 450.80.02 / "
                   "525.60.13 / 580 on Linux and 452.39 / 527.41 / none on Windows for CUDA 11 / 12 / 13; "
                   "features of the newer minor and PTX JIT need a newer "
                   "driver), `\"too-old\"`, or `\"n/a\"` (no torch, a CPU or ROCm build, or no driver installed). "
                   "Unknown when NVML could not read the driver or `torch/version.py` is unreadable. The floors "
                   "and each toolkit's minimum driver are data: `rules/data/cuda-driver.toml`", (),
                   _driver_vs_torch_cuda),
        Derivation("torch.recommended-build",
                   "one item, the torch-family install that runs this machine (`envcheck plan` prints the same): "
                   "`install` (space-separated requirements: torch pinned to release and variant, "
                   "`torch==2.7.1+cu128`, and each installed torchvision, torchaudio, xformers, torchcodec pinned "
                   "to the release made for it; when the installed torch is that build, only the companions that "
                   "are not yet; empty when nothing fits or nothing needs to change), `index_url` (the variant's "
                   "index URL), `recommended` (in words: `torch 2.7.1+cu128 from INDEX, with ...`, `the installed "
                   "torch 2.11.0+cu130, which is already the right build`, or `no published torch build fits`), "
                   "`because` (what constrained the "
                   "choice), `evidence` (the facts it read). The installed release is kept when one of its "
                   "builds covers every GPU with this driver; else the newest release that does; full driver "
                   "compatibility before minor-version compatibility. Empty without torch; unknown without NVML's "
                   "GPUs and driver",
                   builds.RECOMMENDATION_FIELDS, _recommended_build),
        Derivation("torch.unpublished-build",
                   "one item when the installed torch is a release the build matrix knows but a build nobody "
                   "published for this platform and Python: `torch`, `python`, `platform`, `reason` (no wheel "
                   "for this platform, this Python, or this variant tag), `evidence`, and the "
                   "`torch.recommended-build` fields `install`, `index_url`, `recommended`, `because`. Empty for "
                   "releases the matrix does not know (source builds, nightlies), tags that are no index variant, "
                   "and a torch conda installed", builds.UNPUBLISHED_FIELDS, _unpublished_build),
        Derivation("gpu.devices-without-native-bf16",
                   "GPUs of compute capability below 8.0 (no native bfloat16): `index`, `name`, "
                   "`compute_capability`. Unknown when NVML could not list the GPUs",
                   _GPU_FIELDS, _of_facts(gpu_compat.devices_without_native_bf16)),
        Derivation("gpu.arch-coverage",
                   "every GPU and how torch's compiled architectures cover it: `index`, `name`, "
                   "`compute_capability`, `coverage` (`native`: a cubin of the same major and a minor at most the "
                   "GPU's, `sm_XYa` only on exactly X.Y; `ptx-jit`: only PTX `compute_XY` with X.Y at most the "
                   "GPU's, compiled at first launch, and a driver that can compile it (not one that runs torch's "
                   "CUDA only through minor version compatibility: then `none`); `none`; `unknown` when NVML could "
                   "not read the capability), "
                   "`build_archs` (space-separated), `evidence` (the `torch-build` probe's arch list when the probe "
                   "ran, else the build matrix's list for the installed release and variant, "
                   "`rules/data/torch-builds.toml`), and the `torch.recommended-build` fields (`install`, `index_url`, "
                   "`recommended`, `because`) for the rules' command. Empty for no torch "
                   "or a CPU/ROCm build; unknown without NVML's GPUs, or without the probe when the matrix does not "
                   "know the installed build", _COVERAGE_FIELDS, _arch_coverage),
        Derivation("gpu.devices-not-in-build",
                   "the `gpu.arch-coverage` items whose coverage is `none` (`no kernel image is available`): "
                   f"{_COVERAGE_DOC}; unknown when a GPU of unknown capability could be among them",
                   _COVERAGE_FIELDS, _coverage("none")),
        Derivation("gpu.devices-needing-ptx-jit",
                   "the `gpu.arch-coverage` items whose coverage is `ptx-jit`, JIT-compiled at first use: "
                   f"{_COVERAGE_DOC}; unknown when a GPU of unknown capability could be among them",
                   _COVERAGE_FIELDS, _coverage("ptx-jit")),
        *_companion_derivations(),
        *_extension_derivations(),
        *_wheel_and_multigpu_derivations(),
        *_extension_release_derivations(),
        *_toolchain_derivations(),
        Derivation("attention.sdpa-flash-unavailable",
                   "CUDA devices on which the `sdpa` probe's case `cuda:N/backend=flash,dtype=float16` raised: "
                   "`device` (\"cuda:0\"), `name`, `capability` (from the `torch-build` probe, \"?\" without it), "
                   "`error`, `reason` (torch's own explanation, e.g. `Flash attention only supports gpu "
                   "architectures in the range [sm80, sm90]...`). Unknown when the probe did not run to completion",
                   ("device", "name", "capability", "error", "reason"), _of_facts(attention.sdpa_flash_unavailable)),
        Derivation("cuda.older-toolkits-on-ld-library-path",
                   "the entries of `LD_LIBRARY_PATH` that are a CUDA toolkit's library folder "
                   "(`.../cuda-12.1/lib64`, `.../cuda/lib64`, `.../cuda/12.4/lib64`, `.../targets/<triple>/lib`) of "
                   "torch's CUDA major and older than torch's CUDA, or whose path names no version, in path order: "
                   "`path`, `toolkit` (`\"12.1\"`, or `\"unknown\"`), `torch_cuda`. The loader searches them before "
                   "the pip `nvidia-*` wheels' folders. Empty without a CUDA torch; unknown when `torch/version.py` "
                   "is unreadable", ("path", "toolkit", "torch_cuda"),
                   _of_facts(system_libs.older_toolkits_on_ld_library_path)),
        Derivation("cuda.home-toolkit-other-major",
                   "the toolkit that `torch.utils.cpp_extension` compiles with, as `CUDA_HOME`, else `CUDA_PATH` "
                   "names it (an empty `CUDA_HOME` falls through, as in torch), when the version in its path has "
                   "another CUDA major than torch's: one item `variable`, `path`, `toolkit`, `torch_cuda`, or none. "
                   "The version is the toolkit's files' where the toolchain facts read that folder, else the one "
                   "its path names; a path without a version (`/usr/local/cuda`) and `nvcc` found on `PATH` are "
                   "`toolchain.toolkit-other-major`'s",
                   ("variable", "path", "toolkit", "torch_cuda"), _of_facts(system_libs.cuda_home_other_major)),
        *_rocm_derivations(),
    ]
}


def markdown_table() -> str:
    """The table of derived facts in docs/rule-language.md, generated from `DERIVATIONS` (a test keeps the page in
    step): one row per fact, in registry order, with what its value or items are."""
    rows = [f"| `{d.name}` | {d.doc} |" for d in DERIVATIONS.values()]
    return "\n".join(["| name | value or items |", "|---|---|", *rows]) + "\n"


class Derived:
    """Lazily computed derived facts of one snapshot: each derivation runs at most once, and only if asked.

    `tables` are the rule pack's data tables, already parsed: a derivation reads them, never a file.
    """

    def __init__(self, facts: Facts, tables: Tables = NO_TABLES, memo: Memo | None = None) -> None:
        self.facts = facts
        self.tables = tables
        self.memo = memo  # where the requirement walk's result is remembered between runs (None: nowhere)
        self._values: dict[str, Any] = {}
        self._walk: _Walk | None = None
        self._companions: dict[str, companions.Companion] | None = None

    def companions(self) -> dict[str, companions.Companion]:
        """The companion tables, merged by name; empty where the pack has none (an evaluation built by hand)."""
        if self._companions is None:
            try:
                self._companions = _companion_tables(self)
            except LookupError:
                self._companions = {}
        return self._companions

    def walk(self) -> _Walk:
        """The requirement walk, done once per snapshot and shared by the derivations that need it."""
        if self._walk is None:
            self._walk = _walk(self) if self.memo is None else _remembered_walk(self, self.memo)
        return self._walk

    def get(self, name: str) -> Any:
        if name not in self._values:
            self._values[name] = DERIVATIONS[name].compute(self)
        return self._values[name]

    def all(self) -> dict[str, Any]:
        return {name: self.get(name) for name in sorted(DERIVATIONS)}

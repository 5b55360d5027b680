"""Compiled companions of torch (torchvision, torchaudio, torchcodec, xformers): were they built for this torch?

Pure functions of Facts and the companion tables; this module exports them as derived facts
(`DERIVATIONS`).
Which torch each companion release was built for, and how PyPI's wheels of it are built, is data:
rules/data/torch-companions.toml and rules/data/xformers.toml, read and validated with the rule pack
(`parse_companions`), never constants here.

Which companion release to install for a torch release is one answer, `companion_release`, for every rule and the
planner: the release rules/data/torch-builds.toml lists for that torch release (the build matrix's companions,
which `envcheck recommend` installs too), and only where the matrix lists none for it (a torch release newer than
its companion columns: xformers after 2.10, torchaudio after 2.11) the newest release the companion table says
was built for it. Two tables never print two answers for one torch release.

Each finding carries the exact fix: the companion release made for the installed torch (`install`, a pip
requirement) and the package index that has the build matching torch's (`index`): the PyTorch index named by
torch's local version tag (`+cpu`, `+cu126`, `+rocm6.2`), or PyPI when torch has no tag (it came from PyPI, whose
companion wheels are built like its torch wheel).

A companion whose own `Requires-Dist: torch...` the installed torch fails is listed by `pinned_to_other_torch`,
with the release made for the installed torch (rule EC0702, whose command keeps torch); `requirements.conflicting`
(EC0101) then leaves that requirement out, so one problem is one finding with one direction of fix.
`torch_mismatch` lists the mismatches that no declared requirement reveals. Companions installed by conda are
skipped: conda's builds carry no local tag and follow conda's own pins.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envcheck.derived import build_matrix
from envcheck.derived.common import TORCH_BUILDS, Derivation, Item, Table, Values, release_table
from envcheck.errors import RuleError
from envcheck.facts.snapshot import Distribution, Facts
from envcheck.support.patterns import lazy
from envcheck.support.versions import marker_env, parse_requirement, parse_version

PYPI_INDEX = "https://pypi.org/simple"
PYTORCH_INDEX = "https://download.pytorch.org/whl/"
# Points the PyTorch indexes elsewhere (a mirror that keeps PyTorch's layout, BASE + "cpu", BASE + "cu128"; the
# tests' local index). Read when a finding is made, so a saved snapshot is planned for the reader's mirror.
INDEX_BASE_VARIABLE = "ENVCHECK_TORCH_INDEX_BASE"
# Local version tags of the PyTorch indexes' wheels: "cpu", "cu126" (CUDA 12.6), "rocm6.2" / "rocm6.2.4"; in the
# tables also "cuda" (a CUDA build of a version not recorded).
_TAG = lazy(r"(cpu|cuda|cu(\d+)(\d)|rocm(\d+(?:\.\d+)+))")
_PLATFORMS = ("linux-x86_64", "windows", "macos")  # the keys of PyPI's builds in the tables
_ROW_KEYS = frozenset({"torch", "linux-x86_64", "cuda-match"})
_COMPANION_KEYS = frozenset({"releases", "symptom", "cuda-match", *_PLATFORMS})


@dataclass(frozen=True)
class Build:
    """How a binary was built: "cpu", "cuda" (with "12.4", or "" when not recorded) or "rocm" (with "6.2")."""

    kind: str
    version: str = ""

    def describe(self) -> str:
        if self.kind == "cpu":
            return "a CPU build"
        name = "CUDA" if self.kind == "cuda" else "ROCm"
        return f"a {name} {self.version} build" if self.version else f"a {name} build"


@dataclass(frozen=True)
class Release:
    """One row of a companion table: a release (or series) of the companion and what it was built for."""

    key: str  # as written: "0.21.0", or a series "0.9.*"
    versions: SpecifierSet  # "==0.21.0", "==0.9.*"
    torch: SpecifierSet  # the torch releases it was built for
    pypi: dict[str, Build]  # platform ("linux-x86_64", "windows", "macos") -> the build of its untagged PyPI wheel
    cuda_match: str | None  # "major" | "minor": how it compares its CUDA build with torch's at import; None: not

    def exact_torch(self) -> Version | None:
        """X.Y.Z when the row pins one torch release ("==2.6.0"), else None."""
        specs = list(self.torch)
        if len(specs) == 1 and specs[0].operator == "==" and not specs[0].version.endswith(".*"):
            return Version(specs[0].version)
        return None

    def built_for(self) -> str:
        """The torch it was built for, for people: "2.6.0", "2.11" (a series), "2.11.0 or later"."""
        specs = list(self.torch)
        if len(specs) == 1:
            spec = specs[0]
            if spec.operator == "==":
                return spec.version.removesuffix(".*")
            if spec.operator == ">=":
                return f"{spec.version} or later"
        return str(self.torch)


@dataclass(frozen=True)
class Companion:
    """A companion library of torch (torchvision, torchaudio, ...) and the torch each of its releases was built for."""

    name: str
    symptom: str  # how a build for another torch fails, in the library's own words
    releases: tuple[Release, ...]
    # torch release ("2.11.0") -> the release of this companion the build matrix lists for it ("0.11.1"); empty
    # where the matrix was not merged in (see `merged`)
    made_for: Mapping[str, str] = field(default_factory=dict)

    def release_of(self, version: Version) -> Release | None:
        for release in self.releases:
            if release.versions.contains(version, prereleases=True):
                return release
        return None


def _tag_build(tag: str) -> Build | None:
    """"cpu" -> CPU; "cu124" -> CUDA 12.4; "cuda" -> CUDA; "rocm6.2" -> ROCm 6.2; anything else -> None."""
    match = _TAG.fullmatch(tag)
    if match is None:
        return None
    if match.group(1) in ("cpu", "cuda"):
        return Build(match.group(1))
    if match.group(2) is not None:
        return Build("cuda", f"{int(match.group(2))}.{match.group(3)}")
    return Build("rocm", ".".join(match.group(4).split(".")[:2]))


@dataclass(frozen=True)
class CompanionTable:
    """One companion table file (rules/data/torch-companions.toml, rules/data/xformers.toml), parsed: companion
    name -> its releases."""

    companions: Mapping[str, Companion]


def parse_companions(data: dict[str, Any], file: str) -> CompanionTable:
    """A companion table from its parsed TOML; anything malformed is a RuleError naming `file` and the key."""
    return CompanionTable({name: _companion(file, name, table) for name, table in data.items()})


def merged(tables: Iterable[CompanionTable], matrix: build_matrix.BuildMatrix | None = None) -> dict[str, Companion]:
    """Every companion of `tables`, by name, with the releases the build `matrix` lists for each torch release
    (`Companion.made_for`, which `companion_release` answers from first)."""
    out = {name: companion for table in tables for name, companion in table.companions.items()}
    if matrix is None:
        return out
    for name, companion in out.items():
        made_for = {str(release.version): release.companions[name] for release in matrix.releases
                    if name in release.companions}
        out[name] = replace(companion, made_for=made_for)
    return out


def _companion(file: str, name: str, raw: object) -> Companion:
    table, symptom = release_table(file, name, raw, _COMPANION_KEYS, "the error a mismatched build raises")
    cuda_match = _cuda_match(file, table.get("cuda-match"), f"{name}.cuda-match")
    defaults = _builds(file, table, name)
    releases = []
    for key, row in table["releases"].items():
        where = f"{name}.releases.{key}"
        if not isinstance(row, dict) or not isinstance(row.get("torch"), str) or set(row) - _ROW_KEYS:
            raise RuleError(file, "expected { torch = \"SPECIFIER\", linux-x86_64 = \"cu124\", cuda-match = "
                            "\"major\" }", key=where)
        try:
            versions = SpecifierSet(f"=={key}")
            torch = SpecifierSet(row["torch"])
        except InvalidSpecifier as exc:
            raise RuleError(file, f"not a version or specifier: {exc}", key=where) from None
        if not list(torch):
            raise RuleError(file, "expected a torch specifier such as \"==2.6.0\"", key=f"{where}.torch")
        pypi = {**defaults, **_builds(file, row, where)}
        row_match = _cuda_match(file, row.get("cuda-match"), f"{where}.cuda-match") or cuda_match
        releases.append(Release(key, versions, torch, pypi, row_match))
    return Companion(name, symptom, tuple(releases))


def _builds(file: str, table: dict[str, object], where: str) -> dict[str, Build]:
    out = {}
    for platform in _PLATFORMS:
        if platform in table:
            build = _tag_build(str(table[platform]))
            if build is None:
                raise RuleError(file, f"expected \"cpu\", \"cuda\", \"cuXYZ\" or \"rocmX.Y\", got "
                                f"{table[platform]!r}", key=f"{where}.{platform}")
            out[platform] = build
    return out


def _cuda_match(file: str, value: object, key: str) -> str | None:
    if value not in (None, "major", "minor"):
        raise RuleError(file, f"expected \"major\" or \"minor\", got {value!r}", key=key)
    return None if value is None else str(value)


# --- the installed torch and companions ----------------------------------------------------------------------


@dataclass(frozen=True)
class InstalledTorch:
    """The installed torch release, its build and where its companions come from."""

    version: Version  # the release, X.Y.Z (local tag dropped)
    text: str  # as installed, "2.7.0+cpu"
    build: Build | None  # None when torch/version.py could not be read
    index: str  # where its companions come from


def installed_torch(facts: Facts) -> InstalledTorch | None:
    """The installed torch, if it is a release the tables can speak about (not a nightly, not a custom build)."""
    build_facts = facts.torch
    dist = facts.active("torch")
    text = (build_facts.version if build_facts is not None else None) or (dist.version if dist else None)
    version = parse_version(text)
    if text is None or version is None or version.is_prerelease or version.is_devrelease:
        return None  # no torch, or a nightly / NGC build ("2.6.0a0+ecf3bae40a"): its companions come with it
    if version.local is None:
        index = PYPI_INDEX
    elif _tag_build(version.local) is None:
        return None  # a custom build ("+git1234"): no index has companions for it
    else:
        index = pytorch_index(version.local)
    build: Build | None = None
    if build_facts is not None and build_facts.problem is None:
        if build_facts.hip:
            build = Build("rocm", ".".join(build_facts.hip.split(".")[:2]))
        elif build_facts.cuda:
            build = Build("cuda", build_facts.cuda)
        else:
            build = Build("cpu")
    return InstalledTorch(Version(version.base_version), text, build, index)


def _installed(facts: Facts, name: str) -> tuple[Distribution, Version] | None:
    """The imported `name` and its version, when it is a release the tables can speak about."""
    dist = facts.active(name)
    version = parse_version(dist.version) if dist is not None else None
    if dist is None or version is None or version.is_prerelease or version.is_devrelease:
        return None
    if dist.installer == "conda":
        return None  # conda's builds carry no local tag and follow conda's own pins
    if version.local is not None and _tag_build(version.local) is None:
        return None  # built from source ("+git1234"): against whatever torch was there, not the wheel's
    return dist, version


def _declared_torch_conflict(facts: Facts, dist: Distribution) -> str | None:
    """The torch requirement `dist` declares and the installed torch fails ("torch==2.6.0"), else None."""
    torch = facts.active("torch")
    installed = parse_version(torch.version) if torch is not None else None
    if installed is None:
        return None
    env = marker_env(facts)
    for line in dist.requires:
        req = parse_requirement(line)
        if req is None or req.name.lower() != "torch":
            continue
        try:
            if req.marker is not None and not req.marker.evaluate(env):
                continue
        except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
            continue
        if not req.specifier.contains(installed, prereleases=True):
            return str(req)
    return None


def pytorch_index(tag: str) -> str:
    """The PyTorch index of a variant: "cpu" -> https://download.pytorch.org/whl/cpu (see INDEX_BASE_VARIABLE)."""
    base = os.environ.get(INDEX_BASE_VARIABLE, "").strip() or PYTORCH_INDEX
    return base.rstrip("/") + "/" + tag


def companion_release(companion: Companion, torch: Version) -> str | None:
    """The release of `companion` to install for torch release `torch`: the build matrix's entry for it ("0.28.0"),
    else the newest release the companion table says was built for it ("0.28.0", or a series "0.9.*"), else None.
    Every version a finding or a planned command names for a companion comes from here."""
    base = Version(torch.base_version)
    listed = companion.made_for.get(str(base))
    if listed is not None:
        return listed
    release = _for_torch(companion, base)
    return None if release is None else release.key


def _fits(release: Release, torch: Version) -> bool:
    """Was `release` built for `torch`? An exact pin counts at the minor level: the ABI changes between minors."""
    exact = release.exact_torch()
    if exact is not None:
        return exact.release[:2] == torch.release[:2]
    return release.torch.contains(torch, prereleases=True)


def _for_torch(companion: Companion, torch: Version) -> Release | None:
    """The newest release of `companion` made for `torch`, preferring one pinned to exactly that release."""
    fitting = [r for r in companion.releases if _fits(r, torch)]
    if not fitting:
        return None
    exact = [r for r in fitting if r.exact_torch() == torch]
    return max(exact or fitting, key=lambda r: Version(r.key.replace(".*", "")))


# --- derivations ---------------------------------------------------------------------------------------------


def _mismatches(facts: Facts, tables: Mapping[str, Companion], declared_conflict: bool) -> list[Item]:
    """Installed companions built for another torch minor than the installed one (by the tables), with the
    release made for it, whose own declared torch requirement fails (`declared_conflict`) or holds / is absent."""
    torch = installed_torch(facts)
    if torch is None:
        return []
    out = []
    for name, companion in sorted(tables.items()):
        installed = _installed(facts, name)
        if installed is None:
            continue
        dist, version = installed
        release = companion.release_of(Version(version.public))
        if release is None or _fits(release, torch.version):
            continue
        requirement = _declared_torch_conflict(facts, dist)
        wanted = companion_release(companion, torch.version)
        if (requirement is not None) != declared_conflict or wanted is None:
            continue
        out.append({
            "name": dist.name, "version": dist.version, "built_for": release.built_for(), "torch": torch.text,
            "expected": wanted, "install": f"{name}=={wanted}", "index": torch.index,
            "requirement": requirement or "", "symptom": companion.symptom,
        })
    return out


def torch_mismatch(facts: Facts, tables: Mapping[str, Companion]) -> list[Item]:
    """Companions that the tables say were built for another torch minor, where their own metadata does not say
    so (no torch requirement, or a floor that the installed torch meets): pip cannot see these."""
    return _mismatches(facts, tables, declared_conflict=False)


def pinned_to_other_torch(facts: Facts, tables: Mapping[str, Companion]) -> list[Item]:
    """Companions whose declared torch requirement the installed torch fails (EC0101 reports the requirement),
    with the release of the companion made for the installed torch: the fix in the other direction."""
    return _mismatches(facts, tables, declared_conflict=True)


def _companion_build(facts: Facts, version: Version, release: Release) -> Build | None:
    """The build of an installed companion: its local tag, or for an untagged (PyPI) wheel the table's entry for
    this platform (None where the table has none: Linux aarch64, whose PyPI builds changed over releases)."""
    if version.local is not None:
        return _tag_build(version.local)
    platform, machine = facts.python.platform, facts.python.machine.lower()
    if platform == "linux" and machine in ("x86_64", "amd64"):
        return release.pypi.get("linux-x86_64")
    return release.pypi.get({"win32": "windows", "darwin": "macos"}.get(platform, ""))


def build_mismatch(facts: Facts, companion: Companion) -> list[Item]:
    """The installed `name` if its build (CPU, CUDA X.Y, ROCm) cannot load with torch's, as the companion itself
    checks it (`cuda-match`), when it was made for the installed torch release (otherwise `torch_mismatch`
    reports it). Empty when the companion's or torch's build is unknown."""
    name = companion.name
    installed = _installed(facts, name)
    torch = installed_torch(facts)
    if installed is None or torch is None or torch.build is None:
        return []
    dist, version = installed
    release = companion.release_of(Version(version.public))
    if release is None or not _fits(release, torch.version):
        return []
    build = _companion_build(facts, version, release)
    if build is None or not _differs(build, torch.build, release.cuda_match):
        return []
    return [{
        "name": dist.name, "version": dist.version, "build": build.describe(), "torch": torch.text,
        "torch_build": torch.build.describe(), "torch_release": str(torch.version),
        "install": f"{name}=={version.public}", "index": torch.index,
    }]


def _differs(build: Build, torch: Build, cuda_match: str | None) -> bool:
    if build.kind != torch.kind:
        return True
    if build.kind != "cuda" or cuda_match is None or not build.version or not torch.version:
        return False
    depth = 1 if cuda_match == "major" else 2
    return build.version.split(".")[:depth] != torch.version.split(".")[:depth]


def release_for_torch(facts: Facts, companion: Companion) -> list[Item] | None:
    """The release of `name` made for the installed torch, as one item; None when there is no torch release the
    table can speak about, or the table has no release of `name` for it."""
    torch = installed_torch(facts)
    name = companion.name
    wanted = None if torch is None else companion_release(companion, torch.version)
    if torch is None or wanted is None:
        return None
    return [{"name": name, "torch": torch.text, "expected": wanted, "install": f"{name}=={wanted}",
             "index": torch.index}]


# rules/data/torch-companions.toml and xformers.toml, as the derivations read them.
TORCH_COMPANIONS = Table("torch-companions", parse_companions)
XFORMERS = Table("xformers", parse_companions)


def merged_tables(derived: Values) -> dict[str, Companion]:
    """The companion tables merged by name, with the build matrix's companion releases where it was loaded."""
    try:
        matrix = derived.tables[TORCH_BUILDS]
    except LookupError:  # an evaluation without the build matrix (rules built by hand)
        matrix = None
    return merged((derived.tables[TORCH_COMPANIONS], derived.tables[XFORMERS]), matrix)


def tables_of(derived: Values) -> dict[str, Companion]:
    """`merged_tables`, merged once per snapshot; empty where the pack has none (an evaluation built by hand)."""
    def compute() -> dict[str, Companion]:
        try:
            return merged_tables(derived)
        except LookupError:
            return {}

    return derived.once("companions.tables", compute)


def _of_companions(fn: Callable[[Facts, dict[str, Companion]], Any]) -> Callable[[Values], Any]:
    def compute(derived: Values) -> Any:
        return fn(derived.facts, merged_tables(derived))

    return compute


def _of_one(fn: Callable[[Facts, Companion], Any], name: str) -> Callable[[Values], Any]:
    def compute(derived: Values) -> Any:
        return fn(derived.facts, merged_tables(derived)[name])

    return compute


def _companion_derivations() -> list[Derivation]:
    """Values facts about torch's compiled companions (rules/data/torch-companions.toml, rules/data/xformers.toml)."""
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
                   _of_companions(torch_mismatch)),
        Derivation("companions.pinned-to-other-torch",
                   "the same, for companions whose own declared torch requirement the installed torch fails "
                   "(`requirement`, e.g. `torch==2.6.0`, which `requirements.conflicting` also reports): the fix in "
                   "the other direction. Fields as `companions.torch-mismatch`: `name`, `version`, `built_for`, "
                   "`torch`, `expected`, `install`, `index`, `symptom`", mismatch,
                   _of_companions(pinned_to_other_torch)),
    ]
    out += [Derivation(f"companions.{name}-build-mismatch",
                       f"the installed {name}, when it is the release made for the installed torch but of another "
                       "build, as the companion itself checks it: CPU vs CUDA vs ROCm, and for CUDA the major "
                       f"{major}: `name`, `version`, `build` (\"a CUDA 12.6 build\"), `torch`, `torch_build`, "
                       "`torch_release`, `install` (`{name}==X.Y.Z`), `index`. A companion's build comes from its "
                       "local version tag, else from the table's entry for PyPI's wheels on this platform (unknown "
                       "on Linux aarch64)".replace("{name}", name), build,
                       _of_one(build_mismatch, name))
            for name, major in (("torchvision", "(from 0.16) or major.minor (0.15)"),
                                ("torchaudio", "and minor"))]
    out.append(Derivation("companions.torchcodec-for-torch",
                          "one item, the torchcodec release for the installed torch, chosen as "
                          "`companions.torch-mismatch`'s `expected` (\"0.11.1\" for torch 2.11.0): `name`, `torch`, "
                          "`expected`, `install`, `index`. Unknown without a torch release the tables know",
                          ("name", "torch", "expected", "install", "index"),
                          _of_one(release_for_torch, "torchcodec")))
    return out


DERIVATIONS: list[Derivation] = _companion_derivations()

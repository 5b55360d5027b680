"""conda's torch builds: rules/data/conda-forge-builds.toml (what conda-forge compiled each pytorch build for) and
which conda build an environment's torch is.

A torch that conda installed is none of PyPI's wheels: conda-forge compiles its own, with the architecture lists its
feedstock's recipe/build.sh sets per CUDA version; the old pytorch channel's builds were PyTorch's own (the same
lists as the wheels of that CUDA). The build string (facts/conda.py) says which: `cuda126_mkl_py312_h30b5a27_300` is
conda-forge's build 0 of its release for CUDA 12.6. This module parses the table (`parse`), finds the installed
conda build (`installed`) and its architectures (`archs_of`); the newest conda-forge build with native code for a
set of GPUs is envcheck/derived/conda_native.py's (`native_build`). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from envcheck.derived import build_matrix as tb
from envcheck.derived.common import Derivation, Table, of_facts
from envcheck.errors import RuleError
from envcheck.facts.snapshot import Facts
from envcheck.support.versions import parse_version

if TYPE_CHECKING:
    from envcheck.derived.conda_torch import CondaTorch

__all__ = ["CONDA_FORGE", "DERIVATIONS", "CondaForgeRelease", "CondaForgeTable", "archs_of", "installed",
           "parse", "subdir_of", "system_requirements", "unmet_system_requirements"]

SUBDIRS = ("linux-64", "linux-aarch64", "win-64")
# conda's platform names (subdirs) for the build matrix's platforms
_SUBDIR = {"linux-x86_64": "linux-64", "linux-aarch64": "linux-aarch64", "windows-x86_64": "win-64",
           "macos-arm64": "osx-arm64", "macos-x86_64": "osx-64"}
_KEYS = frozenset({"version", "builds", "source", *SUBDIRS})


@dataclass(frozen=True)
class CondaForgeRelease:
    """The builds `builds[0]..builds[1]` of one pytorch release on conda-forge, and what each CUDA's was compiled
    for, per subdir."""

    version: Version
    builds: tuple[int, int]
    source: str  # the feedstock's recipe/build.sh at the commit it was read from
    archs: Mapping[str, Mapping[tuple[int, int], tuple[str, ...]]]  # subdir -> CUDA -> ("sm_50", ..., "compute_90")


@dataclass(frozen=True)
class CondaForgeTable:
    """conda-forge's pytorch builds, release by release: which CUDA each built for and its architecture list."""

    channel: str  # "conda-forge"
    releases: tuple[CondaForgeRelease, ...]  # oldest first


def parse(data: dict[str, Any], file: str) -> CondaForgeTable:
    """The table from its parsed TOML; anything malformed is a RuleError naming `file` and the key."""
    unknown = sorted(set(data) - {"schema", "channel", "release"})
    if unknown:
        raise RuleError(file, "unknown key; expected schema, channel, release", key=unknown[0])
    if data.get("schema") != 1:
        raise RuleError(file, f"expected schema = 1, got {data.get('schema')!r}", key="schema")
    channel = data.get("channel")
    if not isinstance(channel, str) or not channel:
        raise RuleError(file, "expected the channel's name", key="channel")
    rows = data.get("release")
    if not isinstance(rows, list) or not rows:
        raise RuleError(file, "expected [[release]] entries", key="release")
    releases = [_release(row, f"release[{i}]", file) for i, row in enumerate(rows)]
    seen: dict[Version, list[tuple[int, int]]] = {}
    for i, release in enumerate(releases):
        for low, high in seen.get(release.version, []):
            if release.builds[0] <= high and low <= release.builds[1]:
                raise RuleError(file, f"builds {list(release.builds)} of pytorch {release.version} overlap another "
                                      "entry's", key=f"release[{i}].builds")
        seen.setdefault(release.version, []).append(release.builds)
    return CondaForgeTable(channel, tuple(sorted(releases, key=lambda r: (r.version, r.builds))))


def _release(row: object, key: str, file: str) -> CondaForgeRelease:
    if not isinstance(row, dict):
        raise RuleError(file, "expected a table", key=key)
    stray = sorted(set(row) - _KEYS)
    if stray:
        raise RuleError(file, f"unknown key; expected one of {', '.join(sorted(_KEYS))}", key=f"{key}.{stray[0]}")
    try:
        version = Version(str(row.get("version")))
    except InvalidVersion:
        raise RuleError(file, f"expected a pytorch version, got {row.get('version')!r}", key=f"{key}.version") from None
    builds = row.get("builds")
    if not (isinstance(builds, list) and len(builds) == 2 and all(isinstance(b, int) and 0 <= b < 100 for b in builds)
            and builds[0] <= builds[1]):
        raise RuleError(file, "expected [first, last] feedstock build numbers below 100", key=f"{key}.builds")
    source = row.get("source")
    if not isinstance(source, str) or not re.fullmatch(r"https://\S+", source):
        raise RuleError(file, "expected the URL of the build script read", key=f"{key}.source")
    archs: dict[str, dict[tuple[int, int], tuple[str, ...]]] = {}
    for subdir in SUBDIRS:
        table = row.get(subdir)
        if table is None:
            continue
        if not isinstance(table, dict) or not table:
            raise RuleError(file, "expected a table of CUDA version = architecture list", key=f"{key}.{subdir}")
        for cuda, text in table.items():
            where = f"{key}.{subdir}.{cuda}"
            match = re.fullmatch(r"(\d+)\.(\d+)", cuda)
            if match is None or not isinstance(text, str):
                raise RuleError(file, "expected \"12.6\" = \"5.0;...;9.0+PTX\"", key=where)
            try:
                expanded = tb.expand_arch_list(text)
            except ValueError as exc:
                raise RuleError(file, str(exc), key=where) from None
            archs.setdefault(subdir, {})[(int(match.group(1)), int(match.group(2)))] = expanded
    if not archs:
        raise RuleError(file, f"expected the architectures of at least one of {', '.join(SUBDIRS)}", key=key)
    return CondaForgeRelease(version, (builds[0], builds[1]), source, archs)


# rules/data/conda-forge-builds.toml, as the derivations read it (`tables[CONDA_FORGE]`).
CONDA_FORGE = Table("conda-forge-builds", parse)


def subdir_of(platform: str | None) -> str:
    """conda's subdir for a build-matrix platform ("linux-x86_64" -> "linux-64"); "" for None or another."""
    return _SUBDIR.get(platform or "", "")


def installed(facts: Facts, platform: str | None = None) -> CondaTorch | None:
    """The conda record of the installed torch (the `pytorch` package), when conda installed it and the snapshot
    has its record; `platform` (a build-matrix platform) stands in for a record without a subdir."""
    conda = facts.conda
    package = None if conda is None else conda.get("pytorch")
    if package is None:
        return None
    # Only where conda installed torch: a pip stack never imports these.
    from envcheck.derived.conda_torch import CondaTorch
    from envcheck.facts.conda import parse_build

    return CondaTorch(package, parse_build(package.build), package.subdir or subdir_of(platform))


def archs_of(table: CondaForgeTable, torch: CondaTorch) -> tuple[tuple[str, ...], CondaForgeRelease] | None:
    """The architectures conda-forge compiled the installed build with, and its table entry; None for another
    channel's build, a CPU build, or a build the table does not record (a Tegra or win-64 build, a newer one)."""
    if not torch.conda_forge or torch.build.cuda is None or torch.build.number is None:
        return None
    cuda = tuple(int(p) for p in torch.build.cuda.split("."))
    base = torch.build.number % 100  # +200 for CUDA, +100 for MKL (recipe/meta.yaml)
    try:
        version = Version(torch.package.version)
    except InvalidVersion:
        return None
    for release in table.releases:
        if release.version == version and release.builds[0] <= base <= release.builds[1]:
            if torch.subdir:
                found = release.archs.get(torch.subdir, {}).get((cuda[0], cuda[1]))
                return None if found is None else (found, release)
            # The platform is not stated (a pasted `conda list`): an answer only where every recorded platform's
            # build of this CUDA has the same list.
            lists = {found for by_cuda in release.archs.values() if (found := by_cuda.get((cuda[0], cuda[1])))}
            agreed = lists.pop() if len(lists) == 1 else None
            return None if agreed is None else (agreed, release)
    return None


SYSTEM_REQUIREMENT_FIELDS = ("requirement", "required", "has", "override")


def unmet_system_requirements(facts: Facts) -> list[dict[str, str]] | None:
    """The environment's CUDA system requirement (pixi's `[system-requirements] cuda`) that the machine's `__cuda`
    virtual package does not meet: a driver that runs an older CUDA, or no NVIDIA driver at all. [] when the
    environment states none or the machine meets it; None when the machine's `__cuda` is not known."""
    conda = facts.conda
    if conda is None or "cuda" not in conda.system_requirements:
        return []
    required = parse_version(conda.system_requirements["cuda"])
    if required is None:
        return None
    has = conda.virtual_packages.get("__cuda")

    def item(held: str) -> dict[str, str]:  # in SYSTEM_REQUIREMENT_FIELDS' order
        return {"requirement": "cuda", "required": conda.system_requirements["cuda"], "has": held,
                "override": f"CONDA_OVERRIDE_CUDA={conda.system_requirements['cuda']}"}

    if has is None:
        nvml = facts.nvml
        if nvml is not None and nvml.status in ("no-driver", "driver-not-loaded"):
            return [item("no __cuda (no NVIDIA driver)")]
        return None
    found = parse_version(has)
    if found is None:
        return None
    return [item(f"__cuda {has}")] if found < required else []


def system_requirements(facts: Facts) -> list[dict[str, str]]:
    """The virtual packages the environment requires (pixi's `[system-requirements]`), one item each; empty for
    an environment that states none, or no pixi project."""
    conda = facts.conda
    if conda is None:
        return []
    return [{"requirement": k, "required": v} for k, v in sorted(conda.system_requirements.items())]


DERIVATIONS: list[Derivation] = [
    Derivation("conda.system-requirements",
               "the virtual packages the environment requires, one item each (pixi's `[system-requirements]` of "
               "the environment read, with its features'): `requirement` (`cuda`, `glibc`, ...), `required` (as "
               "written, `12.0`). Empty without a pixi project or requirements", ("requirement", "required"),
               of_facts(system_requirements)),
    Derivation("conda.unmet-system-requirements",
               "one item when the environment requires a CUDA (pixi's `[system-requirements] cuda`, of the "
               "environment read) that the machine's `__cuda` virtual package does not meet: `requirement` "
               "(`cuda`), `required` (as written, `12.0`), `has` (`__cuda 11.4`, or no `__cuda` without an NVIDIA "
               "driver), `override` (the CONDA_OVERRIDE_CUDA setting that would pretend otherwise). Empty without "
               "such a requirement; unknown when the machine's `__cuda` is not known",
               SYSTEM_REQUIREMENT_FIELDS, of_facts(unmet_system_requirements)),
]

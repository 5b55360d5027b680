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

from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from envcheck.derived.common import Derivation, Table, of_facts
from envcheck.facts.snapshot import Facts
from envcheck.support.versions import parse_version

if TYPE_CHECKING:
    from envcheck.derived.conda_forge_table import CondaForgeRelease, CondaForgeTable
    from envcheck.derived.conda_torch import CondaTorch

__all__ = ["CONDA_FORGE", "DERIVATIONS", "archs_of", "installed", "parse", "subdir_of", "system_requirements",
           "unmet_system_requirements"]

# conda's platform names (subdirs) for the build matrix's platforms
_SUBDIR = {"linux-x86_64": "linux-64", "linux-aarch64": "linux-aarch64", "windows-x86_64": "win-64",
           "macos-arm64": "osx-arm64", "macos-x86_64": "osx-64"}


def parse(data: dict[str, Any], file: str) -> CondaForgeTable:
    """The table from its parsed TOML (envcheck/derived/conda_forge_table.py, imported only to parse or read it);
    anything malformed is a RuleError naming `file` and the key."""
    from envcheck.derived import conda_forge_table

    return conda_forge_table.parse(data, file)


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

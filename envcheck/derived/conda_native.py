"""The newest conda-forge build with native code for a set of GPUs (`native_build`, a `NativeBuild`), from
rules/data/conda-forge-builds.toml (envcheck/derived/conda_builds.py). Imported only where a conda-forge torch is
judged on its GPUs (envcheck/derived/conda_recommend.py): a pip environment's check never defines the class."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from envcheck.derived import build_matrix as tb
from envcheck.derived.conda_forge_table import CondaForgeRelease, CondaForgeTable


@dataclass(frozen=True)
class NativeBuild:
    """A conda-forge build with native code for every GPU asked about."""

    release: CondaForgeRelease
    cuda: tuple[int, int]
    archs: tuple[str, ...]

    @property
    def cuda_text(self) -> str:
        return f"{self.cuda[0]}.{self.cuda[1]}"

    @property
    def described(self) -> str:
        """"pytorch 2.7.1 for CUDA 12.8 (build cuda128_*_201 to _204 on conda-forge, feedstock builds 1 to 4)"."""
        low, high = self.release.builds
        tag = f"cuda{self.cuda[0]}{self.cuda[1]}"
        builds = f"build {low}" if low == high else f"builds {low} to {high}"
        return f"pytorch {self.release.version} for CUDA {self.cuda_text} ({tag}_* builds, feedstock {builds})"


def native_build(table: CondaForgeTable, subdir: str, capabilities: Sequence[tb.Capability],
                 driver_cuda: tuple[int, int] | None, keep: str | None = None) -> NativeBuild | None:
    """The conda-forge build with native code (a cubin) for every capability on `subdir`: of release `keep` when one
    of its builds has it, else the newest release that does; among its CUDA builds the newest the driver runs in
    full (`driver_cuda`: the newest CUDA it runs; None: unknown), else one of the same major, which conda-forge's
    `cuda-version` lets a driver of that major install (CUDA minor version compatibility: native code runs, only
    PTX of the newer minor does not). None when no recorded build has native code for them all."""
    try:
        kept = Version(keep) if keep else None
    except InvalidVersion:
        kept = None
    candidates: list[tuple[tuple[bool, bool, Version, int, tuple[int, int]], NativeBuild]] = []
    for release in table.releases:
        for cuda, archs in release.archs.get(subdir, {}).items():
            if driver_cuda is not None and cuda[0] > driver_cuda[0]:
                continue
            if all(tb.coverage(archs, c) == "native" for c in capabilities):
                full = driver_cuda is None or cuda <= driver_cuda
                rank = (release.version == kept, full, release.version, release.builds[1], cuda)
                candidates.append((rank, NativeBuild(release, cuda, archs)))
    return max(candidates, key=lambda c: c[0])[1] if candidates else None

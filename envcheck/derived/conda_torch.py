"""The installed torch as conda recorded it (`CondaTorch`), as envcheck/derived/conda_builds.py finds it
(`installed`). Imported only where conda installed torch: a pip environment's check never defines the class."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envcheck.facts.conda import CondaBuild, CondaPackage


@dataclass(frozen=True)
class CondaTorch:
    """The installed torch as conda recorded it."""

    package: CondaPackage
    build: CondaBuild
    subdir: str  # "linux-64"; "" when neither the record nor the platform says

    @property
    def conda_forge(self) -> bool:
        return self.package.channel == "conda-forge"

    @property
    def described(self) -> str:
        """"conda-forge's pytorch 2.7.1 cuda126_mkl_py312_h30b5a27_300"."""
        channel = f"{self.package.channel}'s " if self.package.channel else "conda's "
        return f"{channel}pytorch {self.package.version} {self.package.build}".rstrip()

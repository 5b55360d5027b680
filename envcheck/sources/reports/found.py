"""What one recognised output in a report states: every field None (or empty) when that output does not say."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from envcheck.facts.conda import CondaPackage
from envcheck.support.patterns import lazy

__all__ = ["Found", "Gpu", "Package", "cuda_of_local_version", "number"]

# torch's local version names its build: +cu124 (CUDA 12.4), +cu92 (9.2), +rocm6.2, +cpu, +xpu.
_LOCAL_CUDA = lazy(r"\+cu(\d+)(\d)\b")
_LOCAL_ROCM = lazy(r"\+rocm(\d+\.\d+)")
# More digits than any version part or size a tool prints: int() refuses a number of over 4,300 digits (and takes
# time quadratic in the length below that), so a longer run is read as no number.
_MAX_DIGITS = 30


class Package(NamedTuple):
    """One listed package (a tuple, not a dataclass: a report's list may hold tens of thousands)."""

    name: str  # as written (a conda name is mapped to its PyPI name where they differ: pytorch -> torch)
    version: str  # "" when the output does not say (a `name @ URL` line)
    installer: str | None = None  # "conda" for a conda package, "pip" for conda's pypi channel; None: not said
    build: str = ""  # conda's build string ("py3.10_cuda11.8_cudnn8.7.0_0")


@dataclass(frozen=True)
class Gpu:
    """A GPU that pasted output names."""

    name: str | None
    compute_capability: str | None = None  # only when the output states it
    memory_total_mib: int | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None


@dataclass(frozen=True)
class Found:
    """One recognised output: its format, where it is, and what it states."""

    fmt: str  # "collect_env", "pip list", "pip freeze", "conda list", "nvidia-smi", "nvidia-smi -q", "prose"
    where: str  # "block 2 (pip list, lines 14-80)"
    packages: tuple[Package, ...] = ()
    packages_complete: bool = False  # the output lists everything installed (not a selection, not cut)
    torch_version: str | None = None
    torch_cuda: str | None = None  # "12.4"; "" when the output states a build without CUDA
    torch_hip: str | None = None
    python_version: str | None = None  # "3.12.9" or "3.6" as stated
    sys_platform: str | None = None  # "linux", "win32", "darwin"
    machine: str | None = None
    libc: tuple[str, str] | None = None  # ("glibc", "2.35")
    os_release: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # "12.4": the newest CUDA the driver supports, as nvidia-smi states it
    gpus: tuple[Gpu, ...] | None = None  # None: the output does not list GPUs
    arch_list: tuple[str, ...] | None = None  # torch's compiled architectures, from torch's own warning
    amd_gpus: tuple[str, ...] | None = None  # a ROCm torch's GPUs as gfx targets ("gfx1100"); None: not listed
    conda: bool = False  # the output shows a conda environment
    conda_packages: tuple[CondaPackage, ...] = ()  # its rows of the torch stack as conda records (conda list)
    problems: tuple[str, ...] = ()  # what looked wrong in this output (cut short, implausible)
    # (field, where) for a field read from its own line rather than from `where` as a whole (free text states each
    # fact on a line of its own): ("torch_version", "prose, line 4"); a package's field is "package:NAME".
    at: tuple[tuple[str, str], ...] = ()

    def where_of(self, field: str) -> str:
        """Where `field` was read: its own line when the output says (`at`), else the whole output's `where`."""
        return next((where for name, where in self.at if name == field), self.where)


def number(digits: str) -> int | None:
    """The value of a run of digits an output printed; None for a run too long to be a version part or a size."""
    return int(digits) if len(digits) <= _MAX_DIGITS else None


def cuda_of_local_version(version: str) -> tuple[str | None, str | None] | None:
    """(cuda, hip) named by torch's local version ("2.6.0+cu124" -> ("12.4", None), "+cpu" -> (None, None));
    None when the version names no build (a PyPI "2.6.0", whose build depends on the platform)."""
    cuda = _LOCAL_CUDA.search(version)
    major = None if cuda is None else number(cuda.group(1))
    if cuda is not None and major is not None:
        return f"{major}.{int(cuda.group(2))}", None
    rocm = _LOCAL_ROCM.search(version)
    if rocm:
        return None, rocm.group(1)
    if re.search(r"\+(cpu|xpu)\b", version):
        return None, None
    return None

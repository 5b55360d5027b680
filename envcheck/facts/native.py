"""Native-library facts: the CUDA libraries that LD_LIBRARY_PATH puts ahead of the pip `nvidia-*` wheels, the C++
runtime (libstdc++) and C library versions that installed extensions need and the system provides, the glibc floor
of each installed manylinux wheel, and the Windows runtime DLLs torch loads.

Collected in envcheck's own process from files (envcheck/sources/live/native_scan.py); ELF files are parsed, never
loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from envcheck.facts._reader import Reader

if TYPE_CHECKING:
    from envcheck.facts.shared_library import SharedLibrary


@dataclass(frozen=True)
class VersionNeed:
    """The highest symbol version of one family (GLIBCXX, CXXABI, GLIBC) that a distribution's ELF files need."""

    distribution: str  # canonical name
    file: str  # the file (relative to the distribution's location) that needs it
    library: str  # "libstdc++.so.6", "libc.so.6", ...
    version: str  # "GLIBCXX_3.4.30"

    @classmethod
    def from_reader(cls, r: Reader) -> VersionNeed:
        return cls(distribution=r.text("distribution"), file=r.text("file"), library=r.text("library"),
                   version=r.text("version"))


@dataclass(frozen=True)
class Provider:
    """The libstdc++.so.6 the loader finds first, and the newest versions it defines."""

    path: str
    via: str  # "LD_LIBRARY_PATH", "conda" (the environment's lib folder) or "system"
    glibcxx: str | None  # "GLIBCXX_3.4.30"; None when its version definitions could not be read
    cxxabi: str | None  # "CXXABI_1.3.13"

    @classmethod
    def from_reader(cls, r: Reader) -> Provider:
        return cls(path=r.text("path"), via=r.text("via"), glibcxx=r.opt_text("glibcxx"),
                   cxxabi=r.opt_text("cxxabi"))


@dataclass(frozen=True)
class WheelFloor:
    """An installed distribution whose wheel tags name a minimum glibc (manylinux)."""

    distribution: str  # canonical name
    version: str
    tag: str  # the platform tag with the lowest floor: "manylinux_2_28_x86_64"
    glibc: str  # the floor: "2.28"

    @classmethod
    def from_reader(cls, r: Reader) -> WheelFloor:
        return cls(distribution=r.text("distribution"), version=r.text("version"), tag=r.text("tag"),
                   glibc=r.text("glibc"))


@dataclass(frozen=True)
class NativeFacts:
    """Native libraries around the checked environment. Empty tuples mean "looked, none"; see each field."""

    loader_path: tuple[SharedLibrary, ...]  # CUDA libraries in LD_LIBRARY_PATH folders, in path order
    needs: tuple[VersionNeed, ...]  # per distribution and family, the highest version its ELF files need (Linux)
    libstdcxx: Provider | None  # None: no libstdc++.so.6 found (or not Linux)
    wheel_floors: tuple[WheelFloor, ...]  # manylinux wheels (Linux)
    windows_dlls: dict[str, bool]  # Windows only: runtime DLL name -> found where torch's loader looks; else empty
    scanned_files: int = 0  # ELF files read (or reused from the cache) for `needs`

    @classmethod
    def from_reader(cls, r: Reader) -> NativeFacts:
        provider = r.opt_obj("libstdcxx")
        return cls(loader_path=r.list_of("loader_path", _library, optional=True),
                   needs=r.list_of("needs", VersionNeed.from_reader, optional=True),
                   libstdcxx=None if provider is None else Provider.from_reader(provider),
                   wheel_floors=r.list_of("wheel_floors", WheelFloor.from_reader, optional=True),
                   windows_dlls=r.flag_map("windows_dlls"),
                   scanned_files=r.opt_integer("scanned_files", minimum=0) or 0)


def _library(r: Reader) -> SharedLibrary:
    """A CUDA library on LD_LIBRARY_PATH, read; the class is imported only here and where one is found (a check
    where LD_LIBRARY_PATH holds none never defines it)."""
    from envcheck.facts.shared_library import SharedLibrary

    return SharedLibrary.from_reader(r)

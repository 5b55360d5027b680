"""Collecting NativeFacts from files, in envcheck's own process (the checked interpreter's files are on this machine).

The ELF scan reads each installed distribution's RECORD for its shared objects and parses their version-needs
sections (envcheck/sources/live/elf.py). Both are cached (envcheck/cache/file_values.py), keyed by each file's path,
mtime and size, so an unchanged environment costs one stat per shared object; nothing from the cache is trusted beyond
its shape, which is checked entry by entry.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.cache.file_values import FileCache, stamp
from envcheck.facts.native import NativeFacts, Provider, VersionNeed, WheelFloor
from envcheck.facts.snapshot import Distribution, Facts
from envcheck.sources.live import elf
from envcheck.support.patterns import lazy

if TYPE_CHECKING:
    from envcheck.facts.shared_library import SharedLibrary

_CUDA_LIBRARY = lazy(r"^lib(cudnn|cublas|cublasLt|nccl|nvJitLink|cusparse|cufft|curand|cusolver|cudart|nvrtc|"
                     r"cupti)\.so\.\d+$")
_SO_VERSION = lazy(r"\.so\.(\d+(?:\.\d+)+)$")
_SHARED_OBJECT = lazy(r"\.so(?:\.\d+)*$")
_FAMILIES = {"GLIBCXX": "libstdc++.so.6", "CXXABI": "libstdc++.so.6", "GLIBC": None}
_VERSION_NAME = lazy(r"^(GLIBCXX|CXXABI|GLIBC)_(\d+(?:\.\d+)*)$")
_MANYLINUX = lazy(r"^manylinux(?:_(\d+)_(\d+)|(1|2010|2014))_")
_LEGACY_MANYLINUX = {"1": "2.5", "2010": "2.12", "2014": "2.17"}
_WINDOWS_DLLS = ("vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll", "libomp140.x86_64.dll")
_SYSTEM_LIB_DIRS = ("/lib/{triple}", "/usr/lib/{triple}", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
_MAX_RECORD_BYTES = 32 * 1024 * 1024
_MAX_WHEEL_BYTES = 64 * 1024


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def newest(names: list[str], family: str) -> str | None:
    """The highest `FAMILY_x.y.z` among `names` ("GLIBCXX_3.4.30"), or None."""
    best: tuple[tuple[int, ...], str] | None = None
    for name in names:
        match = _VERSION_NAME.match(name)
        if match and match.group(1) == family:
            key = _version_key(match.group(2))
            if best is None or key > best[0]:
                best = (key, name)
    return None if best is None else best[1]


# --- CUDA libraries on LD_LIBRARY_PATH ---------------------------------------------------------------------------


def loader_path_libraries(env: Mapping[str, str]) -> tuple[SharedLibrary, ...]:
    out: list[SharedLibrary] = []
    seen: set[str] = set()
    for entry in env.get("LD_LIBRARY_PATH", "").split(":"):
        folder = entry.strip()
        if not folder or folder in seen:
            continue
        seen.add(folder)
        try:
            names = sorted(p.name for p in Path(folder).iterdir() if _CUDA_LIBRARY.match(p.name))
        except OSError:
            continue
        if names:  # the class is imported only where a folder holds one: most checks never define it
            from envcheck.facts.shared_library import SharedLibrary
        for name in names:
            try:
                resolved = (Path(folder) / name).resolve().name
            except (OSError, RuntimeError):  # RuntimeError: a symlink loop
                resolved = name
            match = _SO_VERSION.search(resolved)
            version = match.group(1) if match and "." in match.group(1) else None
            out.append(SharedLibrary(directory=folder, name=name, version=version))
    return tuple(out)


def _reduce(needs: dict[str, list[str]]) -> dict[str, list[str]]:
    """Family -> [library, the highest version of that family the file needs from it]."""
    out: dict[str, list[str]] = {}
    for library, names in needs.items():
        for family, provider in _FAMILIES.items():
            if provider is not None and library != provider:
                continue
            top = newest(names, family)
            if top is not None and (family not in out or _newer(top, out[family][1])):
                out[family] = [library, top]
    return out


def _newer(a: str, b: str) -> bool:
    return _version_key(a.split("_", 1)[1]) > _version_key(b.split("_", 1)[1])


def _valid_reduced(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, list) and len(v) == 2 and all(isinstance(n, str) for n in v)
        for k, v in value.items())


def _cached_needs(cache: FileCache, path: str) -> dict[str, list[str]] | None:
    """The file's highest need per family, from the cache while the file is unchanged; None when it is gone."""
    file_stamp = stamp(path)
    if file_stamp is None:
        return None
    value = cache.get("elf", path, file_stamp)
    if not _valid_reduced(value):
        value = _reduce(elf.version_needs(path) or {})
        cache.put("elf", path, file_stamp, value)
    return dict(value)


def _metadata_lines(cache: FileCache, dist: Distribution, name: str, limit: int,
                    pick: Callable[[str], str | None]) -> list[str]:
    """`pick` applied to each line of the distribution's metadata file `name` (RECORD, WHEEL), the lines it keeps,
    remembered in `cache` while the file is unchanged; empty when the file is missing, larger than `limit` or
    unreadable."""
    if not dist.metadata_dir:
        return []
    path = os.path.join(dist.metadata_dir, name)  # noqa: PTH118 - per distribution per run: a Path costs more
    file_stamp = stamp(path)
    if file_stamp is None or file_stamp[1] > limit:
        return []
    kind = name.lower()
    cached = cache.get(kind, path, file_stamp)
    if isinstance(cached, list) and all(isinstance(p, str) for p in cached):
        return list(cached)
    try:
        with Path(path).open(encoding="utf-8", errors="replace") as fh:
            found = [kept for line in fh if (kept := pick(line)) is not None]
    except OSError:
        return []
    cache.put(kind, path, file_stamp, found)
    return found


def _shared_object(line: str) -> str | None:
    path = line.split(",", 1)[0].strip().strip('"')
    return path if _SHARED_OBJECT.search(path) and not path.startswith("..") else None


def _shared_objects(cache: FileCache, dist: Distribution) -> list[str]:
    """The shared objects a distribution installed (paths relative to its location), from its RECORD."""
    return _metadata_lines(cache, dist, "RECORD", _MAX_RECORD_BYTES, _shared_object)


# --- version needs of installed distributions --------------------------------------------------------------------


def version_needs(cache: FileCache, distributions: tuple[Distribution, ...]) -> tuple[tuple[VersionNeed, ...], int]:
    """Per distribution and version family, the highest version its shared objects need; and how many were read."""
    out: list[VersionNeed] = []
    files = 0
    seen: set[str] = set()
    for dist in distributions:
        if dist.canonical_name in seen:
            continue  # a shadowed install is never imported
        seen.add(dist.canonical_name)
        best: dict[str, tuple[str, VersionNeed]] = {}
        for relative in _shared_objects(cache, dist):
            # os.path.join: one call per shared object on every run, where a Path would cost several times more
            needs = _cached_needs(cache, os.path.join(dist.location, relative))  # noqa: PTH118
            if needs is None:
                continue
            files += 1
            for family, (library, top) in needs.items():
                if family not in best or _newer(top, best[family][0]):
                    best[family] = (top, VersionNeed(distribution=dist.canonical_name, file=relative,
                                                     library=library, version=top))
        out.extend(need for _, need in sorted(best.values(), key=lambda kv: kv[1].version))
    return tuple(out), files


def _triple() -> str:
    import platform

    machine = platform.machine() or "x86_64"
    return {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu",
            "s390x": "s390x-linux-gnu"}.get(machine, machine + "-linux-gnu")


def _provider(cache: FileCache, folder: str, via: str) -> Provider | None:
    path = str(Path(folder) / "libstdc++.so.6")
    file_stamp = stamp(path)
    if file_stamp is None:
        return None
    names = cache.get("verdef", path, file_stamp)
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        names = elf.version_definitions(path) or []
        cache.put("verdef", path, file_stamp, names)
    return Provider(path=path, via=via, glibcxx=newest(names, "GLIBCXX"), cxxabi=newest(names, "CXXABI"))


def _key(provider: Provider) -> tuple[int, ...]:
    return _version_key((provider.glibcxx or "_0").split("_", 1)[1])


def libstdcxx_provider(cache: FileCache, env: Mapping[str, str], facts: Facts) -> Provider | None:
    """The libstdc++.so.6 the loader finds first for an extension without RPATH of its own: the first on
    LD_LIBRARY_PATH, else the system's. In a conda environment, whose own lib folder wins for the packages conda
    built (their RUNPATH names it) and loses for pip's wheels, the process holds whichever was loaded first; the
    newer of the two is taken, so that a finding never depends on import order."""
    for entry in env.get("LD_LIBRARY_PATH", "").split(":"):
        if entry.strip():
            found = _provider(cache, entry, "LD_LIBRARY_PATH")
            if found is not None:
                return found
    system = next((p for p in (_provider(cache, d.format(triple=_triple()), "system") for d in _SYSTEM_LIB_DIRS)
                   if p is not None), None)
    conda = _provider(cache, str(Path(facts.python.prefix) / "lib"), "conda") if facts.python.conda else None
    if conda is None or system is None:
        return conda or system
    return conda if _key(conda) >= _key(system) else system


# --- manylinux floors --------------------------------------------------------------------------------------------


def manylinux_floor(tags: list[str]) -> tuple[str, str] | None:
    """(platform tag, glibc) with the lowest glibc floor among a wheel's tags; None when any tag is not manylinux
    (a pure or `linux_x86_64` wheel promises nothing)."""
    best: tuple[tuple[int, ...], str, str] | None = None
    for tag in tags:
        platform_tag = tag.rsplit("-", 1)[-1]
        for one in platform_tag.split("."):
            match = _MANYLINUX.match(one)
            if match is None:
                return None
            glibc = _LEGACY_MANYLINUX[match.group(3)] if match.group(3) else f"{match.group(1)}.{match.group(2)}"
            key = _version_key(glibc)
            if best is None or key < best[0]:
                best = (key, one, glibc)
    return None if best is None else (best[1], best[2])


def _wheel_tag(line: str) -> str | None:
    return line.split(":", 1)[1].strip() if line.lower().startswith("tag:") else None


def _wheel_tags(cache: FileCache, dist: Distribution) -> list[str]:
    return _metadata_lines(cache, dist, "WHEEL", _MAX_WHEEL_BYTES, _wheel_tag)


def wheel_floors(cache: FileCache, distributions: tuple[Distribution, ...]) -> tuple[WheelFloor, ...]:
    out: list[WheelFloor] = []
    for dist in distributions:
        floor = manylinux_floor(_wheel_tags(cache, dist))
        if floor is not None:
            out.append(WheelFloor(distribution=dist.canonical_name, version=dist.version, tag=floor[0],
                                  glibc=floor[1]))
    return tuple(out)


# --- Windows runtime DLLs ----------------------------------------------------------------------------------------


def windows_dlls(env: Mapping[str, str], facts: Facts) -> dict[str, bool]:
    """Whether each runtime DLL torch needs is where torch's loader finds it: System32, beside python.exe, the
    environment's Library\\bin (conda), torch\\lib, or a folder on PATH (torch retries with PATH when the first
    search fails)."""
    folders = [Path(env.get("SystemRoot", r"C:\Windows")) / "System32", Path(facts.python.executable).parent,
               Path(facts.python.prefix) / "Library" / "bin"]
    if facts.torch is not None:
        folders.append(Path(facts.torch.location) / "lib")
    folders += [Path(p) for p in env.get("PATH", "").split(";") if p.strip()]
    return {name: any((f / name).is_file() for f in folders) for name in _WINDOWS_DLLS}


def collect_native(facts: Facts, env: Mapping[str, str] | None = None, *, use_cache: bool = True) -> NativeFacts:
    """NativeFacts of the checked environment (its distributions and interpreter are taken from `facts`)."""
    env = os.environ if env is None else env
    if facts.python.platform == "win32" or sys.platform == "win32":
        return NativeFacts(loader_path=(), needs=(), libstdcxx=None, wheel_floors=(),
                           windows_dlls=windows_dlls(env, facts))
    if not sys.platform.startswith("linux"):
        return NativeFacts(loader_path=(), needs=(), libstdcxx=None, wheel_floors=(), windows_dlls={})
    directory = None
    if use_cache:
        from envcheck.cache.signed import usable_dir

        directory = usable_dir([facts.python.prefix])
    cache = FileCache(directory, facts.python.prefix)
    needs, files = version_needs(cache, facts.distributions)
    native = NativeFacts(loader_path=loader_path_libraries(env), needs=needs,
                         libstdcxx=libstdcxx_provider(cache, env, facts),
                         wheel_floors=wheel_floors(cache, facts.distributions), windows_dlls={}, scanned_files=files)
    cache.save()
    return native

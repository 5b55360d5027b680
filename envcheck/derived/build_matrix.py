"""The torch build matrix: which builds of each torch release exist, what they run on, and what goes with them.

rules/data/torch-builds.toml holds the data (sources cited there and in docs/torch-builds.md); this module parses
and validates it (`parse`, `load`) and answers the questions a planner and the static GPU rules ask:

- `variants`: the builds (cpu, cuXYZ, rocmX.Y) of a release for a platform and Python, with their index URLs;
- `coverage` / `runs_on`: does a build's compiled architecture list run a GPU of compute capability X.Y;
- `minimum_driver` / `driver_status`: which NVIDIA driver a CUDA build needs;
- `best_build`: the newest release and variant that runs every given GPU with a given driver, Python and platform;
- `companions`: the torchvision, torchaudio, triton, ... releases made for a torch release.

Pure: no I/O outside `load`, which reads the shipped file through `data_file`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.errors import RuleError
from envcheck.support import input_files, resources
from envcheck.support.patterns import lazy
from envcheck.support.versions import major_minor

if TYPE_CHECKING:
    from envcheck.facts.snapshot import Facts

DATA_FILE = "torch-builds.toml"
PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-arm64", "macos-x86_64")
COMPANIONS = ("torchvision", "torchaudio", "triton", "xformers", "torchcodec")
Capability = tuple[int, int]

_VARIANT = lazy(r"cpu|cu(\d+)(\d)|rocm(\d+(?:\.\d+)+)")
# One entry of TORCH_CUDA_ARCH_LIST as PyTorch's build scripts write it: "7.5", "9.0a", "12.0+PTX", "10.0f".
_ARCH_ENTRY = lazy(r"(\d+)\.(\d)([af]?)(\+PTX)?")
# A compiled target as torch reports it: sm_90 (cubin), sm_90a (arch-specific), sm_100f (family), compute_120 (PTX).
_TARGET = lazy(r"(sm|compute)_(\d+)(\d)([af]?)")
_PYTHON = lazy(r"3\.\d+t?")
_TOP_KEYS = frozenset({"schema", "index", "archs", "drivers", "release"})
_RELEASE_KEYS = frozenset({"series", "versions", "python", "platforms", "companions", "sources", "note"})
_PLATFORM_KEYS = frozenset({"variants", "pypi", "python", "archs"})


@dataclass(frozen=True)
class Variant:
    """One build of a torch release for one platform: a wheel index of PyTorch's, e.g. cu128."""

    name: str  # "cpu", "cu128", "rocm6.2.4": the local version tag of its wheels and the index's last path part
    kind: str  # "cpu" | "cuda" | "rocm"
    version: tuple[int, ...]  # CUDA (12, 8) or ROCm (6, 2, 4); () for cpu
    index_url: str
    archs: tuple[str, ...] | None  # compiled CUDA targets ("sm_80", "compute_120"); None where not recorded

    @property
    def cuda(self) -> Capability | None:
        """(major, minor) of the CUDA runtime of a CUDA build, else None."""
        return (self.version[0], self.version[1]) if self.kind == "cuda" else None


@dataclass(frozen=True)
class PlatformBuilds:
    """What a torch release published for one platform."""

    platform: str
    variants: tuple[Variant, ...]
    pypi: str | None  # the variant PyPI's untagged wheel is; None: no wheel of this release on PyPI for it
    python: tuple[str, ...]  # Python versions with wheels ("3.12", "3.13t")


@dataclass(frozen=True)
class Release:
    """One torch release (X.Y.Z) and its builds per platform."""

    version: Version
    series: str  # "2.8"
    platforms: Mapping[str, PlatformBuilds]
    companions: Mapping[str, str]  # "torchvision" -> "0.23.0"
    sources: tuple[str, ...]


@dataclass(frozen=True)
class DriverTable:
    """NVIDIA's minimum drivers: per CUDA toolkit (full compatibility) and per CUDA major (minor-version
    compatibility), each for "linux" and "windows" where NVIDIA states one."""

    toolkit: Mapping[Capability, Mapping[str, Version]]
    minor_compat: Mapping[int, Mapping[str, Version]]


@dataclass(frozen=True)
class BuildMatrix:
    """rules/data/torch-builds.toml, parsed: releases oldest first."""

    releases: tuple[Release, ...]
    drivers: DriverTable


@dataclass(frozen=True)
class Choice:
    """An answer of `best_build`: install this release's variant; `coverage` says how it runs each GPU."""

    release: Release
    variant: Variant
    coverage: tuple[str, ...]  # per requested capability: "native" | "ptx-jit"


# ---------------------------------------------------------------------------------------------------- parsing


class _At:
    """A key path inside the file, for error messages."""

    def __init__(self, file: str, key: str = "") -> None:
        self.file, self.key = file, key

    def at(self, part: str | int) -> _At:
        text = f"[{part}]" if isinstance(part, int) else part
        joined = f"{self.key}{text}" if text.startswith("[") else f"{self.key}.{text}"
        return _At(self.file, joined.lstrip("."))

    def error(self, message: str) -> RuleError:
        return RuleError(self.file, message, key=self.key or None)


def _table(value: object, at: _At, keys: frozenset[str] | None = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise at.error(f"expected a table, got {type(value).__name__}")
    if keys is not None:
        unknown = sorted(set(value) - keys)
        if unknown:
            raise at.at(unknown[0]).error(f"unknown key; expected one of {', '.join(sorted(keys))}")
    return value


def _strings(value: object, at: _At, *, empty: bool = False) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value) or (not value and not empty):
        raise at.error("expected a list of non-empty strings")
    if len(set(value)) != len(value):
        raise at.error("lists an entry twice")
    return list(value)


def _version(value: object, at: _At) -> Version:
    if not isinstance(value, str):
        raise at.error(f"expected a version string, got {value!r}")
    try:
        return Version(value)
    except InvalidVersion:
        raise at.error(f"expected a version, got {value!r}") from None


def _cuda_release(text: str, at: _At) -> Capability:
    """A toolkit's key, exactly a major.minor ("12.8")."""
    release = major_minor(text) if text.count(".") == 1 and text == text.strip() else None
    if release is None:
        raise at.error(f"expected a CUDA release such as \"12.8\", got {text!r}")
    return release


def expand_arch_list(text: str) -> tuple[str, ...]:
    """"7.5;8.0;12.0+PTX" (TORCH_CUDA_ARCH_LIST) -> ("sm_75", "sm_80", "sm_120", "compute_120"); ValueError if bad."""
    out: list[str] = []
    for entry in re.split(r"[;\s]+", text.strip()):
        match = _ARCH_ENTRY.fullmatch(entry)
        if match is None:
            raise ValueError(f"{entry!r} is not an architecture such as 8.6, 9.0a or 12.0+PTX")
        code = f"{match.group(1)}{match.group(2)}{match.group(3)}"
        out.append(f"sm_{code}")
        if match.group(4):
            out.append(f"compute_{code}")
    if len(set(out)) != len(out):
        raise ValueError("lists an architecture twice")
    return tuple(out)


def _variant_kind(name: str, at: _At) -> tuple[str, tuple[int, ...]]:
    match = _VARIANT.fullmatch(name)
    if match is None:
        raise at.error(f"expected a variant such as cpu, cu128 or rocm6.2.4, got {name!r}")
    if name == "cpu":
        return "cpu", ()
    if match.group(1) is not None:
        return "cuda", (int(match.group(1)), int(match.group(2)))
    return "rocm", tuple(int(p) for p in match.group(3).split("."))


def _drivers(value: object, at: _At) -> DriverTable:
    table = _table(value, at, frozenset({"toolkit", "minor-compatibility"}))

    def per_os(entry: object, where: _At) -> dict[str, Version]:
        row = _table(entry, where, frozenset({"linux", "windows"}))
        if "linux" not in row:
            raise where.error("expected at least the Linux driver (key 'linux')")
        return {os_name: _version(v, where.at(os_name)) for os_name, v in row.items()}

    toolkit: dict[Capability, Mapping[str, Version]] = {}
    for name, entry in _table(table.get("toolkit"), at.at("toolkit")).items():
        toolkit[_cuda_release(name, at.at("toolkit").at(name))] = per_os(entry, at.at("toolkit").at(name))
    floors: dict[int, Mapping[str, Version]] = {}
    for name, entry in _table(table.get("minor-compatibility"), at.at("minor-compatibility")).items():
        where = at.at("minor-compatibility").at(name)
        if not name.isdigit():
            raise where.error("expected a CUDA major such as \"12\"")
        floors[int(name)] = per_os(entry, where)
    if not toolkit or not floors:
        raise at.error("expected non-empty 'toolkit' and 'minor-compatibility' tables")
    return DriverTable(toolkit, floors)


def _platform(name: str, value: object, at: _At, context: dict[str, Any]) -> PlatformBuilds:
    table = _table(value, at, _PLATFORM_KEYS)
    if "variants" not in table:
        raise at.error("missing key 'variants'")
    names = _strings(table["variants"], at.at("variants"))
    archs_table = _table(table.get("archs", {}), at.at("archs"))
    named: Mapping[str, tuple[str, ...]] = context["archs"]
    variants = []
    for index, variant_name in enumerate(names):
        kind, version = _variant_kind(variant_name, at.at("variants").at(index))
        if kind == "cuda" and version not in context["drivers"].toolkit:
            raise at.at("variants").at(index).error(
                f"CUDA {version[0]}.{version[1]} has no row in drivers.toolkit")
        if kind != "cuda" and variant_name in archs_table:
            raise at.at("archs").at(variant_name).error("only CUDA variants have an architecture list")
        archs = None
        if variant_name in archs_table:
            ref = archs_table[variant_name]
            if not isinstance(ref, str) or ref not in named:
                raise at.at("archs").at(variant_name).error(
                    f"expected the name of an [archs] entry, got {ref!r}")
            archs = named[ref]
        variants.append(Variant(variant_name, kind, version, context["index"] + variant_name, archs))
    stray = sorted(set(archs_table) - set(names))
    if stray:
        raise at.at("archs").at(stray[0]).error("names a variant not in 'variants'")
    pypi = table.get("pypi")
    if pypi is not None and (not isinstance(pypi, str) or pypi not in names):
        raise at.at("pypi").error(f"expected one of the variants {names}, got {pypi!r}")
    python = table.get("python", context["python"])
    where = at.at("python") if "python" in table else context["python_at"]
    pythons = _strings(python, where)
    for entry in pythons:
        if not _PYTHON.fullmatch(entry):
            raise where.error(f"expected Python versions such as \"3.12\" or \"3.13t\", got {entry!r}")
    return PlatformBuilds(name, tuple(variants), pypi, tuple(pythons))


def _release_rows(value: object, at: _At, context: dict[str, Any]) -> list[Release]:
    table = _table(value, at, _RELEASE_KEYS)
    for key in ("series", "versions", "python", "platforms"):
        if key not in table:
            raise at.error(f"missing key '{key}'")
    series = table["series"]
    if not isinstance(series, str) or not re.fullmatch(r"\d+\.\d+", series):
        raise at.at("series").error(f"expected a minor release such as \"2.8\", got {series!r}")
    listed = _strings(table["versions"], at.at("versions"))
    versions = [_version(v, at.at("versions").at(i)) for i, v in enumerate(listed)]
    for i, version in enumerate(versions):
        if f"{version.major}.{version.minor}" != series or version.local or version.pre or version.dev:
            raise at.at("versions").at(i).error(f"{version} is not a final release of series {series}")
    sources = tuple(_strings(table.get("sources", []), at.at("sources"), empty=True))
    platforms_table = _table(table["platforms"], at.at("platforms"))
    context = {**context, "python": table["python"], "python_at": at.at("python")}
    platforms = {}
    for name, entry in platforms_table.items():
        if name not in PLATFORMS:
            raise at.at("platforms").at(name).error(f"unknown platform; expected one of {', '.join(PLATFORMS)}")
        platforms[name] = _platform(name, entry, at.at("platforms").at(name), context)
    companions_table = _table(table.get("companions", {}), at.at("companions"))
    by_version: dict[Version, dict[str, str]] = {v: {} for v in versions}
    for key, row in companions_table.items():
        where = at.at("companions").at(key)
        version = _version(key, where)
        if version not in by_version:
            raise where.error(f"is not one of this entry's versions ({', '.join(map(str, versions))})")
        for package, pinned in _table(row, where, frozenset(COMPANIONS)).items():
            _version(pinned, where.at(package))
            by_version[version][package] = pinned
    return [Release(v, series, platforms, by_version[v], sources) for v in versions]


def parse(data: dict[str, Any], file: str) -> BuildMatrix:
    """The parsed matrix; any mistake is a RuleError naming `file` and the key path."""
    root = _At(file)
    _table(data, root, _TOP_KEYS)
    if data.get("schema") != 1:
        raise root.at("schema").error(f"expected schema = 1, got {data.get('schema')!r}")
    index = data.get("index")
    if not isinstance(index, str) or not re.fullmatch(r"https://\S+/", index):
        raise root.at("index").error("expected the base URL of the wheel indexes, ending in '/'")
    named: dict[str, tuple[str, ...]] = {}
    for name, text in _table(data.get("archs"), root.at("archs")).items():
        if not isinstance(text, str):
            raise root.at("archs").at(name).error("expected an architecture list such as \"8.0;9.0+PTX\"")
        try:
            named[name] = expand_arch_list(text)
        except ValueError as exc:
            raise root.at("archs").at(name).error(str(exc)) from None
    drivers = _drivers(data.get("drivers"), root.at("drivers"))
    context: dict[str, Any] = {"index": index, "archs": named, "drivers": drivers}
    rows = data.get("release")
    if not isinstance(rows, list) or not rows:
        raise root.at("release").error("expected [[release]] entries")
    releases: list[Release] = []
    for i, row in enumerate(rows):
        releases.extend(_release_rows(row, root.at("release").at(i), context))
    seen: set[Version] = set()
    for release in releases:
        if release.version in seen:
            raise root.at("release").error(f"torch {release.version} is listed twice")
        seen.add(release.version)
    return BuildMatrix(tuple(sorted(releases, key=lambda r: r.version)), drivers)


def data_file() -> Path:
    """rules/data/torch-builds.toml in a source checkout, envcheck/_rules/data/ in an installed wheel."""
    return resources.data_dir() / DATA_FILE


@functools.cache
def load(path: Path | None = None) -> BuildMatrix:
    """The shipped matrix (or the file at `path`), parsed and validated; read once per process (tens of
    milliseconds, most of it TOML parsing), so the static tier pays for it at most once."""
    path = path or data_file()
    # The rule pack's reader: a regular file of bounded size, UTF-8, nested within limits; else one RuleError.
    return parse(input_files.load_toml(path, error=RuleError), str(path))


# ---------------------------------------------------------------------------------------------------- queries


def release(matrix: BuildMatrix, version: str | Version) -> Release | None:
    """The release of `version` ("2.5.1", "2.5.1+cu124": the local tag is ignored); None when not in the table."""
    try:
        public = Version(Version(str(version)).public)
    except InvalidVersion:
        return None
    return next((r for r in matrix.releases if r.version == public), None)


def variants(matrix: BuildMatrix, version: str | Version, platform: str, python: str | None = None,
             ) -> tuple[Variant, ...]:
    """The builds of `version` for `platform` (and `python`, e.g. "3.12" or "3.13t"); () when there is none."""
    found = release(matrix, version)
    builds = None if found is None else found.platforms.get(platform)
    if builds is None or (python is not None and python not in builds.python):
        return ()
    return builds.variants


def installed_variant(matrix: BuildMatrix, version: str, platform: str) -> Variant | None:
    """The build an installed torch version is: its local tag ("2.5.1+cu124" -> cu124), or PyPI's build for
    `platform` when it has none; None when the table does not know it."""
    found = release(matrix, version)
    builds = None if found is None else found.platforms.get(platform)
    if builds is None:
        return None
    tag = Version(version).local
    name = tag if tag else builds.pypi
    return next((v for v in builds.variants if v.name == name), None)


def coverage(archs: Iterable[str], capability: Capability) -> str:
    """"native", "ptx-jit" or "none": how a fat binary with `archs` runs on a GPU of compute `capability`.

    NVIDIA's rules (CUDA C++ Programming Guide, "Binary Compatibility" and "PTX Compatibility"; Blackwell and
    Hopper compatibility guides): a cubin sm_XY runs on capability X.Z for Z >= Y (same major only); an
    arch-specific cubin sm_XYa only on exactly X.Y; a family cubin sm_XYf on the same major with minor >= Y. PTX
    compute_XY is JIT-compiled for any capability >= X.Y; compute_XYa only for X.Y, compute_XYf within its family.
    """
    ptx = False
    for arch in archs:
        match = _TARGET.fullmatch(arch.strip())
        if match is None:
            continue  # gfx90a and the like: not CUDA device code
        kind, major, minor, suffix = match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)
        if suffix == "a":
            fits = (major, minor) == capability
        elif kind == "sm" or suffix == "f":
            fits = major == capability[0] and minor <= capability[1]
        else:
            fits = (major, minor) <= capability
        if fits and kind == "sm":
            return "native"
        ptx = ptx or fits
    return "ptx-jit" if ptx else "none"


def runs_on(variant: Variant, capability: Capability) -> str | None:
    """coverage() of a variant's architectures; "none" for CPU and ROCm builds; None when not recorded."""
    if variant.kind != "cuda":
        return "none"
    return None if variant.archs is None else coverage(variant.archs, capability)


def _os(platform: str) -> str:
    return "windows" if platform.startswith("windows") else "linux"


def minimum_driver(matrix: BuildMatrix, variant: Variant, platform: str, *, minor_compat: bool = False,
                   ) -> Version | None:
    """The oldest NVIDIA driver that runs `variant` on `platform`: the toolkit's own minimum (full compatibility),
    or with `minor_compat` the floor of its CUDA major; None for non-CUDA builds or where NVIDIA states none."""
    cuda = variant.cuda
    if cuda is None:
        return None
    row = matrix.drivers.minor_compat.get(cuda[0]) if minor_compat else matrix.drivers.toolkit.get(cuda)
    return None if row is None else row.get(_os(platform))


def driver_status(matrix: BuildMatrix, variant: Variant, driver: Version, platform: str) -> str | None:
    """"ok" (at or above the toolkit's minimum), "minor-compat" (below it but at or above its major's floor: runs,
    without PTX JIT of newer PTX and some newer features), "too-old", or "n/a" for a CPU or ROCm build; None when
    the table has no driver for this CUDA and platform."""
    if variant.kind != "cuda":
        return "n/a"
    full = minimum_driver(matrix, variant, platform)
    floor = minimum_driver(matrix, variant, platform, minor_compat=True)
    if full is not None and driver >= full:
        return "ok"
    if floor is not None and driver >= floor:
        return "minor-compat"
    if full is None and floor is None:
        return None
    return "too-old"


def best_build(matrix: BuildMatrix, *, platform: str, python: str, capabilities: Sequence[Capability],
               driver: Version | None, releases: SpecifierSet | None = None, allow_ptx: bool = True,
               minor_compat: bool = False) -> Choice | None:
    """The newest release (within `releases`) with a variant for `platform` and `python` that runs every GPU in
    `capabilities` with `driver`; the CPU variant when no GPU is given. Among a release's fitting variants, one that
    runs every GPU natively wins over one that needs PTX JIT, then the newest CUDA. PTX JIT needs the toolkit's full
    driver (a driver below it cannot compile newer PTX); `minor_compat` also accepts drivers at the major's floor
    for natively covered GPUs. None when nothing fits, or GPUs are given without a driver version."""
    if capabilities and driver is None:
        return None
    for candidate in reversed(matrix.releases):
        if releases is not None and not releases.contains(candidate.version, prereleases=True):
            continue
        builds = candidate.platforms.get(platform)
        if builds is None or python not in builds.python:
            continue
        if not capabilities:
            cpu = next((v for v in builds.variants if v.kind == "cpu"), None)
            if cpu is not None:
                return Choice(candidate, cpu, ())
            continue
        fitting: list[tuple[tuple[bool, tuple[int, ...]], Choice]] = []
        for variant in builds.variants:
            status = None if driver is None else driver_status(matrix, variant, driver, platform)
            if variant.kind != "cuda" or status not in (("ok", "minor-compat") if minor_compat else ("ok",)):
                continue
            runs = [runs_on(variant, c) for c in capabilities]
            usable = ("native", "ptx-jit") if allow_ptx and status == "ok" else ("native",)
            if all(r in usable for r in runs):
                native = all(r == "native" for r in runs)
                fitting.append(((native, variant.version), Choice(candidate, variant, tuple(str(r) for r in runs))))
        if fitting:
            return max(fitting, key=lambda item: item[0])[1]
    return None


def companions(matrix: BuildMatrix, version: str | Version) -> Mapping[str, str]:
    """The companion releases made for torch `version` ("torchvision" -> "0.23.0"); empty when not known."""
    found = release(matrix, version)
    return {} if found is None else found.companions


def platform_key(facts: Facts) -> str | None:
    """The matrix's platform for the checked interpreter ("linux-x86_64", "macos-arm64"); None for others."""
    system = {"linux": "linux", "win32": "windows", "darwin": "macos"}.get(facts.python.platform)
    machine = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "arm64"}.get(
        facts.python.machine.lower())
    if system is None or machine is None:
        return None
    if system == "linux" and machine == "arm64":
        machine = "aarch64"
    if system == "macos" and machine == "aarch64":
        machine = "arm64"
    key = f"{system}-{machine}"
    return key if key in PLATFORMS else None

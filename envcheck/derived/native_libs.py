"""Native libraries against what the environment needs: CUDA libraries that LD_LIBRARY_PATH or the loaded process
takes from outside the pip `nvidia-*` wheels, C++ runtime and glibc versions below what installed extensions need,
manylinux floors above the system's glibc, and Windows runtime DLLs torch cannot find. Pure functions of Facts,
exported as derived facts (`DERIVATIONS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from envcheck.derived.common import Derivation, Item, of_facts, without_cuda_torch
from envcheck.facts.snapshot import Distribution, Facts
from envcheck.support.patterns import lazy

# Library family -> (its file-name stem, the wheel name stem). The wheels are nvidia-<stem>-cu11/-cu12/-cu13
# (CUDA 13's are also published without the suffix); a library's soname major is its wheel's major version.
FAMILIES: dict[str, tuple[str, str]] = {
    "cudnn": ("libcudnn", "nvidia-cudnn"),
    "cublas": ("libcublas", "nvidia-cublas"),
    "nccl": ("libnccl", "nvidia-nccl"),
    "nvjitlink": ("libnvJitLink", "nvidia-nvjitlink"),
    "cusparse": ("libcusparse", "nvidia-cusparse"),
    "cufft": ("libcufft", "nvidia-cufft"),
    "curand": ("libcurand", "nvidia-curand"),
    "cusolver": ("libcusolver", "nvidia-cusolver"),
    "cudart": ("libcudart", "nvidia-cuda-runtime"),
    "nvrtc": ("libnvrtc", "nvidia-cuda-nvrtc"),
    "cupti": ("libcupti", "nvidia-cuda-cupti"),
}
_SONAME = lazy(r"^(lib[A-Za-z]+)\.so\.(\d+)")
_WHEEL_SUFFIX = lazy(r"^(?:-cu\d+)?$")


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def _release(text: str) -> tuple[int, ...]:
    """"9.1.0.70" -> (9, 1, 0, 70); stops at the first part that is not a number (a local tag)."""
    out: list[int] = []
    for part in text.split("+", 1)[0].split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def wheel_of(facts: Facts, family: str) -> Distribution | None:
    """The installed `nvidia-*` wheel of a library family, or None."""
    stem = FAMILIES[family][1]
    for name, installs in facts.names.items():
        if name.startswith(stem) and _WHEEL_SUFFIX.match(name[len(stem):]):
            return installs[0]
    return None


def _linux_cuda_torch(facts: Facts) -> bool | None:
    if without_cuda_torch(facts):
        return False
    return facts.python.platform.startswith("linux") if facts.python.platform else None


def older_on_loader_path(family: str) -> Callable[[Facts], list[Item] | None]:
    """LD_LIBRARY_PATH libraries of `family` with the soname the installed wheel provides but an older major.minor
    release, which the loader takes instead of the wheel's: `directory`, `name`, `version`, `wheel`,
    `wheel_version`. A file whose name tells no version is left out. Empty without the wheel or a CUDA torch on
    Linux; unknown when the native facts were not collected."""
    def compute(facts: Facts) -> list[Item] | None:
        linux = _linux_cuda_torch(facts)
        if not linux:
            return None if linux is None else []
        wheel = wheel_of(facts, family)
        if wheel is None:
            return []
        if facts.native is None:
            return None
        wanted = _release(wheel.version)
        if len(wanted) < 2:
            return []
        out: list[Item] = []
        for lib in facts.native.loader_path:
            match = _SONAME.match(lib.name)
            if match is None or match.group(1) != FAMILIES[family][0] or int(match.group(2)) != wanted[0]:
                continue
            if lib.version is None or _release(lib.version)[:2] >= wanted[:2]:
                continue
            out.append({"directory": lib.directory, "name": lib.name, "version": lib.version,
                        "wheel": wheel.name, "wheel_version": wheel.version})
        return out
    return compute


def _family_of(path: str) -> str | None:
    base = path.rsplit("/", 1)[-1]
    match = _SONAME.match(base)
    if match is None:
        return None
    for family, (stem, _) in FAMILIES.items():
        if match.group(1) == stem:
            return family
    return None


def _in_a_wheel(path: str) -> bool:
    # The pip wheels install under <site-packages>/nvidia/<component>/lib (CUDA 13: nvidia/cu13/lib).
    return "/nvidia/" in path and ("/site-packages/" in path or "/dist-packages/" in path)


def loaded_outside_wheels(facts: Facts) -> list[Item] | None:
    """CUDA libraries the `loaded-libraries` probe saw mapped from outside any pip `nvidia-*` wheel although the
    wheel of that library is installed: `library`, `path`, `wheel`, `wheel_version`. Unknown when the probe did not
    run to completion (it runs on Linux only)."""
    probe = facts.probes.get("loaded-libraries")
    if probe is None or probe.status != "ok":
        return None if not without_cuda_torch(facts) else []
    libraries = probe.details.get("libraries")
    if not isinstance(libraries, list):
        return None
    out: list[Item] = []
    for path in libraries:
        if not isinstance(path, str):
            continue
        family = _family_of(path)
        if family is None or _in_a_wheel(path):
            continue
        wheel = wheel_of(facts, family)
        if wheel is None:
            continue
        out.append({"library": family, "path": path, "wheel": wheel.name, "wheel_version": wheel.version})
    return out


def _need_items(facts: Facts, families: tuple[str, ...], provided: dict[str, str | None], provider: str,
                via: str) -> list[Item] | None:
    if facts.native is None:
        return None
    out: list[Item] = []
    for need in facts.native.needs:
        family, _, number = need.version.partition("_")
        if family not in families:
            continue
        have = provided.get(family)
        if have is None:
            return None  # the provider's own versions are unknown: so is whether this need is met
        if _numbers(number) > _numbers(have.partition("_")[2]):
            out.append({"distribution": need.distribution, "file": need.file, "needed": need.version,
                        "provided": have, "provider": provider, "via": via})
    return out


def libstdcxx_too_old(facts: Facts) -> list[Item] | None:
    """Installed distributions whose shared objects need a GLIBCXX or CXXABI version the libstdc++.so.6 the
    loader finds does not define: `distribution`, `file`, `needed`, `provided`, `provider` (its path), `via`
    (`LD_LIBRARY_PATH`, `conda`, `system`). Empty off Linux; unknown when no libstdc++ was found or read."""
    if not facts.python.platform.startswith("linux"):
        return [] if facts.python.platform else None
    if facts.native is None or facts.native.libstdcxx is None:
        return None
    lib = facts.native.libstdcxx
    return _need_items(facts, ("GLIBCXX", "CXXABI"), {"GLIBCXX": lib.glibcxx, "CXXABI": lib.cxxabi}, lib.path,
                       lib.via)


def _glibc(facts: Facts) -> str | None:
    libc = facts.python.libc
    return libc["version"] if libc and libc.get("name") == "glibc" and libc.get("version") else None


def glibc_too_old(facts: Facts) -> list[Item] | None:
    """Installed distributions whose shared objects need a GLIBC symbol version above the system's glibc:
    `distribution`, `file`, `needed`, `provided`, `provider` ("glibc"), `via` ("system"). Empty off glibc Linux."""
    if not facts.python.platform.startswith("linux"):
        return [] if facts.python.platform else None
    glibc = _glibc(facts)
    if glibc is None:
        return [] if facts.python.libc is not None else None
    return _need_items(facts, ("GLIBC",), {"GLIBC": f"GLIBC_{glibc}"}, "glibc", "system")


def wheels_above_glibc(facts: Facts) -> list[Item] | None:
    """Installed manylinux wheels whose tag's glibc floor is above the system's: `name`, `version`, `tag`,
    `floor`, `glibc`. Empty off glibc Linux; unknown when the native facts were not collected."""
    if not facts.python.platform.startswith("linux"):
        return [] if facts.python.platform else None
    glibc = _glibc(facts)
    if glibc is None:
        return [] if facts.python.libc is not None else None
    if facts.native is None:
        return None
    return [{"name": w.distribution, "version": w.version, "tag": w.tag, "floor": w.glibc, "glibc": glibc}
            for w in facts.native.wheel_floors if _numbers(w.glibc) > _numbers(glibc)]


def missing_windows_dlls(names: tuple[str, ...]) -> Callable[[Facts], list[Item] | None]:
    """Of the Windows runtime DLLs `names`, those not found where torch's loader looks: `dll`. Empty where none
    were looked for (off Windows); unknown when the native facts were not collected."""
    def compute(facts: Facts) -> list[Item] | None:
        if facts.native is None:
            return None
        machine = facts.python.machine.upper()
        return [{"dll": name} for name in names
                if facts.native.windows_dlls.get(name) is False
                and not (name == "vcruntime140_1.dll" and machine == "ARM64")]
    return compute


_NEED_FIELDS = ("distribution", "file", "needed", "provided", "provider", "via")
_SHADOW_FIELDS = ("directory", "name", "version", "wheel", "wheel_version")

DERIVATIONS: list[Derivation] = [
    *[Derivation(f"libraries.{family}-older-on-ld-library-path",
                 f"`LD_LIBRARY_PATH` files of the {family} soname the installed `nvidia-{family}` wheel provides "
                 "but an older release (from the name the file resolves to), which the loader takes first: "
                 "`directory`, `name`, `version`, `wheel`, `wheel_version`. Unknown when the native facts were "
                 "not collected", _SHADOW_FIELDS, of_facts(older_on_loader_path(family)))
      for family in ("cudnn", "cublas", "nccl")],
    Derivation("libraries.loaded-outside-wheels",
               "CUDA libraries the `loaded-libraries` probe saw mapped from outside the pip `nvidia-*` wheels "
               "although that library's wheel is installed: `library`, `path`, `wheel`, `wheel_version`. "
               "Unknown without the probe (Linux only)", ("library", "path", "wheel", "wheel_version"),
               of_facts(loaded_outside_wheels)),
    Derivation("libraries.libstdcxx-too-old",
               "installed distributions whose shared objects need a GLIBCXX or CXXABI version that the "
               "libstdc++.so.6 the loader finds does not define (read from ELF version sections, nothing "
               "executed): `distribution`, `file`, `needed`, `provided`, `provider`, `via`",
               _NEED_FIELDS, of_facts(libstdcxx_too_old)),
    Derivation("libraries.glibc-too-old",
               "installed distributions whose shared objects need a GLIBC version above the system's: "
               "`distribution`, `file`, `needed`, `provided`, `provider`, `via`",
               _NEED_FIELDS, of_facts(glibc_too_old)),
    Derivation("libraries.wheels-above-glibc",
               "installed manylinux wheels whose tag promises a glibc newer than the system's: `name`, "
               "`version`, `tag`, `floor`, `glibc`", ("name", "version", "tag", "floor", "glibc"),
               of_facts(wheels_above_glibc)),
    Derivation("windows.vc-runtime-missing",
               "Visual C++ runtime DLLs (vcruntime140.dll, vcruntime140_1.dll, msvcp140.dll) found neither in "
               "System32, beside python.exe, Library\\bin, torch\\lib nor on PATH: `dll`. Empty where none were "
               "looked for (off Windows)",
               ("dll",), of_facts(missing_windows_dlls(
                   ("vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll")))),
    Derivation("windows.libomp-missing",
               "libomp140.x86_64.dll (LLVM's OpenMP runtime, which torch 2.4.0's fbgemm.dll links) when found "
               "neither in System32, beside python.exe, Library\\bin, torch\\lib nor on PATH: `dll`. Empty where "
               "none were looked for (off Windows)",
               ("dll",), of_facts(missing_windows_dlls(("libomp140.x86_64.dll",)))),
]

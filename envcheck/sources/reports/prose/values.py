"""What a `key: value` states (envcheck/sources/reports/prose/): the key says which fact ("PyTorch version",
"CUDA/cuDNN", "GPU", "OS"), the value gives it; a key that names a distribution gives its version."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from envcheck.sources.reports.prose.gpus import gpus_in
from envcheck.sources.reports.prose.said import Said
from envcheck.sources.reports.prose.words import (
    KEYS,
    KNOWN_PACKAGES,
    SPLIT,
    key_of,
    machine_of,
    package_of,
    platform_of,
    version_of,
)
from envcheck.support.patterns import lazy
from envcheck.support.versions import major_minor_text

__all__ = ["key_value", "package"]

_GPU_KEY = lazy(r"gpu ?\d{1,2}")


_OS_NAMES = frozenset(("linux", "ubuntu", "windows", "macos", "debian", "centos", "wsl", "wsl2"))


def key_value(key: str, value: str, number: int, tier: int) -> Iterator[Said]:
    """What `key: value` states, by what the key names (KEYS) or a package it names."""
    name = key_of(key)
    kind = KEYS.get(name) or ("gpu" if _GPU_KEY.fullmatch(name) else None)
    value = value.replace("**", "").replace("`", "").strip().strip("*_").strip()
    if not value or _placeholder(value):
        return
    if kind is None:
        yield from package(name, value, number, tier, any_name=key.lower().rstrip(": ").endswith(" version"))
        return
    words = [w for w in SPLIT.split(value.replace("/", " ")) if w]
    first = next((version_of(w) for w in words if version_of(w)), None)
    if kind == "gpu":
        yield from gpus_in(value, number, tier, context=True, whole=False)
        platform = platform_of([w.lower() for w in words])  # "Model: NVIDIA Jetson AGX Orin - Jetpack 5.1"
        if platform is not None:
            yield Said("platform", platform, number, tier)
    elif kind == "os":
        platform = platform_of([name, *(w.lower() for w in words)] if name in _OS_NAMES else [w.lower() for w in words])
        if platform is not None:
            yield Said("platform", platform, number, tier)
    elif kind == "machine":
        machine = next((machine_of(w) for w in words if machine_of(w)), None)
        if machine is not None:
            yield Said("machine", machine, number, tier)
    elif kind == "libc" and first is not None:
        yield Said("libc", ("glibc", ".".join(first.split(".")[:2])), number, tier)
    elif kind == "torch":
        pinned = next((v for w in words for n, _, v in [w.partition("==")] if package_of(n) == "torch"), None)
        own = list(itertools.takewhile(lambda w: w.lower() not in ("cuda", "with"), words))  # not "(CUDA 12.1)"
        versions = {v for v in map(version_of, own) if v}
        version = version_of(pinned) if pinned else versions.pop() if len(versions) == 1 else None  # "2.9.1, 2.10"
        if version is not None:
            yield Said("torch", version, number, tier)
        build = _cuda_in_value(words)
        if build is not None:
            yield Said("torch_cuda", build, number, tier)
    elif kind == "cudnn" and first is not None:
        yield Said("note", f"cuDNN {first}", number, tier)
    elif kind == "cuda":
        yield from _cuda(name, value, first, words, number, tier)
    elif kind == "torch_cuda" and first is None and (build := _cuda_in_value(words)) is not None:
        yield Said("torch_cuda", build, number, tier)  # "PyTorch index: cu121"
    elif kind in ("toolkit", "driver_cuda", "torch_cuda") and first is not None and "+" not in first \
            and first.count(".") <= 2:
        yield _cuda_said(kind, first, number, tier)
    elif kind == "driver":
        driver = first or next((w for w in words if w.isdigit() and len(w) == 3), None)  # "Driver 535"
        if driver is not None and _driver(driver):
            yield Said("driver", driver, number, tier)
    elif kind == "python" and first is not None and first.startswith(("2.", "3.")):
        yield Said("python", first, number, tier)


def _cuda(name: str, value: str, first: str | None, words: list[str], number: int, tier: int) -> Iterator[Said]:
    """"CUDA: 12.1" names no one's CUDA (torch's build, the toolkit, the driver's?): a note, unless the value says
    whose; "CUDA/cuDNN: 11.3/8.2" and "cuda 10 / cudnn 7.6.0" also name cuDNN."""
    lower = [w.lower() for w in words]
    numbers = [n for n in map(_number, words) if n]
    cuda = _named(lower, words, "cuda") or (numbers[0] if numbers else None)
    cudnn = _named(lower, words, "cudnn") or (numbers[1] if "cudnn" in name and len(numbers) >= 2 else None)
    if cudnn == cuda:
        cudnn = None
    text = value.lower()
    if cuda is None:
        pass
    elif version_of(cuda) is None:  # "cuda 10": a major version, whoever's it is
        yield Said("note", f"CUDA {cuda}", number, tier)
    elif "nvidia-smi" in text or "driver" in text:
        yield _cuda_said("driver_cuda", cuda, number, tier)
    elif "nvcc" in text or "toolkit" in text:
        yield _cuda_said("toolkit", cuda, number, tier)
    elif "torch" in text:
        yield _cuda_said("torch_cuda", cuda, number, tier)
    else:
        yield Said("note", f"CUDA {major_minor_text(cuda) or cuda} (not said whose: torch's build, the toolkit or the "
                           "driver's)", number, tier)
    if cudnn is not None:
        yield Said("note", f"cuDNN {cudnn}", number, tier)


def _named(lower: list[str], words: list[str], name: str) -> str | None:
    """The number written after the word `name` ("cuda 10" -> "10")."""
    for index, word in enumerate(lower[:-1]):
        if word == name and (found := _number(words[index + 1])):
            return found
    return None


def _number(word: str) -> str | None:
    """A version ("11.8"), or a major version alone ("10")."""
    return version_of(word) or (word if word.isdigit() and len(word) <= 2 else None)


def _cuda_said(kind: str, version: str, number: int, tier: int) -> Said:
    version = major_minor_text(version) or version  # a version: it has a major.minor
    if kind == "toolkit":
        return Said("note", f"CUDA toolkit {version} (nvcc; not read: the report does not say where)", number, tier)
    return Said(kind, version, number, tier)


def _cuda_in_value(words: list[str]) -> str | None:
    """The CUDA a torch value names as its build: "2.1.2 (CUDA 12.1)", "2.5.1 with CUDA 12.4 support", "cu121"."""
    for index, word in enumerate(words):
        lower = word.lower()
        if lower == "cuda" and index + 1 < len(words) and version_of(words[index + 1]):
            return major_minor_text(version_of(words[index + 1]) or "")
        if lower.startswith("cu") and lower[2:].isdigit() and 2 <= len(lower) - 2 <= 4:
            return f"{int(lower[2:-1])}.{lower[-1]}"
    return None


def _driver(version: str) -> bool:
    """A version NVIDIA's driver could have (major 100 and above): "Driver 13.0" is the CUDA a driver supports."""
    major = version.split(".")[0]
    return major.isdigit() and 100 <= int(major) < 1000


def _placeholder(value: str) -> bool:
    """A template's placeholder left in place: "[e.g. 22.04]", "<version>", "N/A", "x.y.z"."""
    lower = value.lower()
    return (any(hint in lower for hint in ("e.g", "eg.", "x.y", "your ", "todo")) or lower in ("n/a", "na", "-", "?")
            or (value.startswith(("[", "<")) and value.endswith(("]", ">"))))


def package(name: str, value: str, number: int, tier: int, *, any_name: bool) -> Iterator[Said]:
    canonical = package_of(name)
    words = [w for w in SPLIT.split(value) if w]
    version = version_of(words[0]) if words else None
    if canonical is None or version is None or not (any_name or canonical in KNOWN_PACKAGES):
        return
    if canonical == "torch":
        yield Said("torch", version, number, tier)
    elif canonical == "python":
        yield Said("python", version, number, tier)
    elif canonical:
        yield Said("package", (canonical, version), number, tier)

"""What a signature's captures state about the environment, written the way the snapshot writes it.

A signature names which of its captures states which fact (`yields = { "driver.cuda" = "found" }`); the text says
it in the library's own words ("found version 11040", "sm_70", "['sm_75', 'sm_80']"), and each fact here has one
reader that turns those words into the snapshot's form, or None when they do not state it after all.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from envcheck.support.patterns import lazy

__all__ = ["YIELDS", "normalised"]

_SM = lazy(r"(?:sm_|compute_)?(\d{1,2})(\d)\b")
_DOTTED = lazy(r"(\d{1,2})\.(\d{1,2})\b")
_CUDA_INT = lazy(r"(\d{1,2})0(\d{1,2})0")  # cudaDriverGetVersion's 1000 * major + 10 * minor: 11040 -> 11.4
# torch's "+cu121", bitsandbytes' "libbitsandbytes_cuda124": the last digit is the minor version
_CUDA_TAG = lazy(r"cu(?:da)?(\d{1,2}?)(\d)")
_VERSION = lazy(r"\d+(?:\.\d+){0,3}(?:[a-z]+\d*)?(?:\+[A-Za-z0-9.]+)?")
_ARCH = lazy(r"\b(?:sm|compute)_\d{2,3}[af]?\b")
_PLATFORMS = {"windows": "win32", "win32": "win32", "win_amd64": "win32", "linux": "linux", "darwin": "darwin",
              "macos": "darwin", "macosx": "darwin"}


def _written(match: re.Match[str] | None) -> str | None:
    """A match of a major and a minor number written "major.minor" ("07" -> "7"); None for no match."""
    return None if match is None else f"{int(match[1])}.{int(match[2])}"


def _capability(text: str) -> str | None:
    """"sm_70", "70", "7.0", "(7, 0)" -> "7.0"; "sm_120" -> "12.0"."""
    return _written(_DOTTED.search(text) or re.search(r"(\d{1,2}),\s*(\d)", text) or _SM.search(text))


def _arch_list(text: str) -> str | None:
    """"sm_75 sm_80", "['sm_75', 'sm_80']", "sm_75, sm_80" -> "sm_75 sm_80"."""
    archs = _ARCH.findall(text)
    return " ".join(dict.fromkeys(archs)) or None


def _cuda(text: str) -> str | None:
    """"11040" (an integer as CUDA reports it), "11.4", or a wheel's or library's tag ("cu118", "cuda124") -> "11.4"."""
    return _written(_DOTTED.search(text) or _CUDA_TAG.fullmatch(text.strip())
                        or _CUDA_INT.fullmatch(text.strip()))


def _version(text: str) -> str | None:
    match = _VERSION.search(text)
    return None if match is None else match[0]


def _python(text: str) -> str | None:
    """"3.11", "python3.11", "cpython-311", "cp311" -> "3.11"."""
    return _written(_DOTTED.search(text) or re.search(r"(?:cp|cpython-)?(3)(\d{1,2})\b", text))


def _platform(text: str) -> str | None:
    word = re.search(r"[A-Za-z_0-9]+", text.lower())
    return None if word is None else _PLATFORMS.get(word[0])


def _name(text: str) -> str | None:
    return text.strip() or None


# The facts a signature may state, each with the reader of its words.
YIELDS: dict[str, Callable[[str], str | None]] = {
    "gpu.name": _name,
    "gpu.capability": _capability,
    "torch.arch_list": _arch_list,
    "torch.version": _version,
    "torch.cuda": _cuda,
    "driver.version": _version,
    "driver.cuda": _cuda,
    "python.version": _python,
    "platform": _platform,
}


def normalised(yields: dict[str, str], captures: dict[str, str]) -> dict[str, str]:
    """The facts `yields` (fact -> capture name) reads from `captures`: those whose words state them."""
    out: dict[str, str] = {}
    for fact, group in yields.items():
        words = captures.get(group)
        value = None if words is None else YIELDS[fact](words)
        if value is not None:
            out[fact] = value
    return out

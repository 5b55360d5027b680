"""Mentions in a sentence (envcheck/sources/reports/prose/): "torch 2.1.2+cu121 on an RTX 4090 under Ubuntu 22.04". Read
only in sentences that state what this machine has: not in one that compares, guesses, or says what was tried, needed or
recommended."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envcheck.sources.reports.prose.gpus import gpus_in
from envcheck.sources.reports.prose.said import Said
from envcheck.sources.reports.prose.values import key_value, package
from envcheck.sources.reports.prose.words import KEYS, KNOWN_PACKAGES, SPLIT, platform_of, version_of
from envcheck.support.patterns import lazy

__all__ = ["GLUED", "hedged", "sentence"]

# Words that make a sentence's versions no statement of what is installed: a comparison, an attempt, a need.
# (The first group makes a sentence say nothing of its machine; the second, nothing of its software's versions.)
_HEDGES_ALL = ("tried", "try ", "before", "previous", "earlier", "used to", "instead", " than ", " vs", "versus",
               " or ", "requir", "need", "recommend", "should", "e.g", "for example", "such as", "->", "→",
               "would", "could", "if ", "whether", "expect")


_HEDGES_VERSION = ("used ", "upgrad", "downgrad", "supports", "supported", "works", "worked", "working", "fixed",
                   "solved", "switch", "roll back", "rollback", "revert", "latest", "newer", "older", "same",
                   "until", "wheel for", "compatible", "readme", "documentation")


_HEDGE = lazy("|".join(map(re.escape, _HEDGES_ALL)))


_HEDGE_VERSION = lazy("|".join(map(re.escape, _HEDGES_VERSION)))


GLUED = lazy(r"([a-z][a-z_-]{1,15}?)(\d{1,4}(?:\.\d{1,8}){0,3}\S{0,20})")


# Words that can begin a mention: keys of one word, known distributions; and "torch2.1"-like words run together.
_NAMES = frozenset(k for k in KEYS if " " not in k) | KNOWN_PACKAGES


_GLUED_START = lazy(r"[a-z][a-z_-]{0,15}\d")


# A line without these words names no platform, and one without a digit or these words no GPU: not searched.
_PLATFORM_HINT = lazy(r"ubuntu|debian|centos|rhel|red hat|rocky|alma|fedora|suse|manjaro|arch|gentoo|nixos|"
                      r"linux|mint|pop|win|wsl|mac|osx|darwin|apple|colab|kaggle|jetson|jetpack|l4t")


_GPU_HINT = lazy(r"\d|titan|orin|xavier|spark|thor")


def hedged(lower: str) -> bool:
    """A sentence that compares, guesses or says what was tried or needed: it says nothing of this machine."""
    return _HEDGE.search(lower) is not None


def sentence(text: str, number: int, tier: int) -> Iterator[Said]:
    """Mentions in a sentence: "torch 2.1.2+cu121", "PyTorch version 2.1", "python3.10", "driver 535.54", "cuDNN
    8.9", "CUDA 11.7" (a note: whose CUDA is not said), a `name==version`, GPU names, OS words. A fact named twice
    with two values ("torch 1.2 works, torch 1.3 fails") is no statement, and a sentence about upgrades, what works
    or what is newest states no software version (its driver, GPUs and OS count)."""
    said = list(_mentions(text, number, tier, _HEDGE_VERSION.search(text.lower()) is None))
    values: dict[object, set[str]] = {}
    for s in said:
        values.setdefault(s.value[0] if s.fact == "package" else s.fact, set()).add(str(s.value))
    yield from (s for s in said if len(values[s.value[0] if s.fact == "package" else s.fact]) == 1)


def _mentions(text: str, number: int, tier: int, versions: bool) -> Iterator[Said]:
    text_lower = text.lower()
    platform_hint = _PLATFORM_HINT.search(text_lower) is not None
    if not platform_hint and not _GPU_HINT.search(text_lower):
        return  # no digit: no version and no GPU model number; no platform word either
    lower = [w for w in SPLIT.split(text_lower) if w and "/" not in w and "\\" not in w]
    build_at = -1  # where the words naming torch's build are: not read again as a CUDA of no one's
    for index, word in enumerate(lower):
        if index == build_at:
            continue
        if "=" in word:
            if versions and ("==" in word or word.startswith(("python=", "pytorch="))):
                name, _, version = word.replace("==", "=").partition("=")
                yield from package(name, version, number, tier, any_name="==" in word)
            continue
        if word in _NAMES:
            name, version = word, _after(lower, index)
        elif len(word) <= 40 and _GLUED_START.match(word) and (glued := GLUED.fullmatch(word)):
            name, version = glued.group(1), version_of(glued.group(2))
        else:
            continue
        kind = KEYS.get(name)
        if version is None or (not versions and kind != "driver"):
            continue
        if kind == "torch":
            # "PyTorch 2.5.1 with CUDA 12.4 support", "torch 2.1.2 (CUDA 12.1 build)": the CUDA is torch's build.
            build = _build_words(lower, index)
            build_at = lower.index("cuda", index) if build else build_at
            yield from key_value(name, " ".join([version, *build]), number, tier)
        elif kind in ("python", "driver", "cudnn", "toolkit", "cuda", "libc"):
            yield from key_value(name, version, number, tier)
        elif name in KNOWN_PACKAGES and name not in ("torch", "python"):
            yield from package(name, version, number, tier, any_name=False)
    platform = platform_of(lower) if platform_hint else None
    if platform is not None:
        yield Said("platform", platform, number, tier)
    if _GPU_HINT.search(text_lower):
        # Two GPU models in one sentence ("works on an A100, not on an H100") are compared, not owned.
        yield from (s for s in gpus_in(text, number, tier, context=False, whole=False)
                    if len({g.name for g in s.value}) == 1)


def _build_words(words: list[str], index: int) -> list[str]:
    """["cuda", "12.4"] when the words after a torch version at words[index] say its build: "with CUDA 12.4
    support", "CUDA 12.1 build"; [] otherwise."""
    following = words[index + 1:index + 8]
    for at, word in enumerate(following[:-1]):
        if word == "cuda" and version_of(following[at + 1]):
            said = following[at - 1:at] == ["with"] or following[at + 2:at + 3] in (["support"], ["build"])
            return ["cuda", following[at + 1]] if said else []
    return []


def _after(words: list[str], index: int) -> str | None:
    """The version written after words[index]: "torch 2.1", "torch v2.1", "torch version 2.1", "torch version is
    2.1", "driver version: 535"."""
    for offset in range(1, 4):
        if index + offset >= len(words):
            return None
        word = words[index + offset]
        version = version_of(word)
        if version is not None:
            return version
        if word not in ("version", "is", "=", "v", "ver", "of", "version:"):
            return None
    return None

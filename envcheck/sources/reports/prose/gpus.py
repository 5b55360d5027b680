"""GPUs a text names by product name ("RTX 4090", "A100 80GB", "2x H100", "Tesla T4"), through the one GPU table,
rules/data/gpus.toml (envcheck/derived/nvidia_gpus.py); AMD GPUs ("Radeon RX 7900 XTX", "MI300X") through
rules/data/amd-gpus.toml (envcheck/derived/amd_gpus.py), which gives their gfx targets."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from envcheck.derived import amd_gpus
from envcheck.derived import nvidia_gpus as gpu_table
from envcheck.sources.reports.prose.said import GpuSaid, Said
from envcheck.support.patterns import lazy

__all__ = ["gpus_in"]

_GPU_CONTEXT = lazy(r"gpu|nvidia|geforce|tesla|quadro|graphics")


_GPU_SPLIT = lazy(r"[\s\-_/,;:()\[\]|'\"`*]+")


# "rtx4090", "RTX3090Ti", "5090d", "4090": a GPU's words run together.
_GLUED_GPU = lazy(r"(rtx|gtx)?(\d{3,4})(ti|super|d)?")


# Where an AMD name can begin ("rx 7900", "rx7900", "mi300x", "pro w7900"): a line without one is not split for it.
_AMD_START = lazy(r"(?<![a-z0-9])(?:rx\s?\d|mi\d|pro\s?w\d)")


_COUNT = lazy(r"(?:(\d{1,3})\s?[x×*])|(?:[x×*]\s?(\d{1,3}))")


def gpus_in(text: str, number: int, tier: int, *, context: bool, whole: bool) -> Iterator[Said]:
    """GPUs named in `text` by a name rules/data/gpus.toml lists ("RTX 4090", "A100 80GB", "4x H100", "Tesla T4"). A
    short name ("T4", "A10", "L4") or a bare number ("4090") counts only where the text is about a GPU (`context`:
    a GPU key, or words such as NVIDIA or GPU beside it); `whole`: the text is nothing but the GPU's name."""
    table = gpu_table.shipped()
    lower = text.lower()
    if _AMD_START.search(lower) is not None:
        yield from _amd_in(lower, number, tier)
    context = context or _GPU_CONTEXT.search(lower) is not None
    if _gpu_starts(context).search(lower) is None:
        return
    apple = any(w in lower for w in ("apple", "mac", "macbook"))
    words = [w.rstrip(".!?") for w in _GPU_SPLIT.split(lower) if w.rstrip(".!?")]
    found: list[GpuSaid] = []
    first = _first_words()
    index = 0
    while index < len(words):
        word = words[index]
        match = _gpu_at(table, words, index, context, apple) if (
            word in first or word[0].isdigit() or word.startswith(("rtx", "gtx"))) else None
        if match is None:
            index += 1
            continue
        listed, length = match
        found.append(GpuSaid(listed, _count(words, index, length)))
        index += length
    if found:
        yield Said("gpu", tuple(found), number, tier if context or whole else 1)


@functools.cache
def _gpu_starts(context: bool) -> re.Pattern[str]:
    """Where a GPU's name can begin: a first word of a listed name, "rtx4090"-like words, and where the text is
    about a GPU a bare model number ("4090"). A line without one is not split into words at all."""
    firsts = "|".join(sorted(map(re.escape, _first_words()), key=len, reverse=True))
    bare = r"|\d{4}" if context else ""
    return re.compile(rf"(?<![a-z0-9])(?:{firsts}|rtx\d|gtx\d{bare})")


@functools.cache
def _first_words() -> frozenset[str]:
    """The words a GPU name in rules/data/gpus.toml begins with: only there can a name begin."""
    return frozenset(words[0] for words in gpu_table.shipped().names)


def _gpu_at(table: gpu_table.GpuNames, words: list[str], index: int, context: bool,
            apple: bool) -> tuple[str, int] | None:
    """(listed name, words it spans) of the GPU named at words[index]."""
    word = words[index]
    glued = _GLUED_GPU.fullmatch(word) if len(word) <= 16 else None
    head = [p for p in glued.groups() if p] if glued else [word]
    if head[0].isdigit() and len(head[0]) == 4 and context:
        series = "gtx" if table.names.get(("gtx", head[0])) and not table.names.get(("rtx", head[0])) else "rtx"
        head = [series, *head]
    candidates = head + words[index + 1:index + 4]
    for length in range(min(len(candidates), 5), 0, -1):
        key = tuple(candidates[:length])
        entry = table.names.get(key)
        if entry is None:
            continue
        short = length == 1 and len(key[0]) <= 3  # "T4", "A10", "L40": a GPU only where the text is about one
        if short and (not context or (apple and key[0].startswith("m"))):
            return None
        if word.isdigit() and not context:
            return None
        spanned = max(1, length - (len(head) - 1))
        return entry[0], spanned
    return None


def _amd_in(lower: str, number: int, tier: int) -> Iterator[Said]:
    """AMD GPUs named by a name rules/data/amd-gpus.toml lists ("AMD Radeon RX 7900 XTX", "8x MI300X"): a "amd_gpu"
    statement whose GpuSaid names are the listed names."""
    table = amd_gpus.shipped()
    words = [w for w in (w.rstrip(".!?") for w in _GPU_SPLIT.split(lower)) if amd_gpus.words_of(w)]
    found: list[GpuSaid] = []
    index = 0
    while index < len(words):
        match = amd_gpus.at(table, words, index) if words[index].startswith(("rx", "mi", "pro")) else None
        if match is None:
            index += 1
            continue
        found.append(GpuSaid(match[0], _count(words, index, match[2])))
        index += match[2]
    if found:
        yield Said("amd_gpu", tuple(found), number, tier)


def _count(words: list[str], index: int, length: int) -> int:
    """How many GPUs a name is said with: "2x RTX 4090", "8 x A100", "A100 x8", "dual 3090"."""
    before = " ".join(words[max(0, index - 2):index])
    after = " ".join(words[index + length:index + length + 1])
    for text, at_end in ((before, True), (after, False)):
        for match in _COUNT.finditer(text):
            value = match.group(1) if at_end else match.group(2)
            if value and 1 <= int(value) <= 64 and (not at_end or text.endswith(match.group(0).rstrip())):
                return int(value)
    if words[index - 1:index] in (["dual"], ["two"]):
        return 2
    if words[index - 1:index] in (["quad"], ["four"]):
        return 4
    return 1

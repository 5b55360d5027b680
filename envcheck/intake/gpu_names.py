"""Compute capability from a GPU's marketing name, for reports that name GPUs without it (collect_env, nvidia-smi).

Source: NVIDIA's "CUDA GPUs - Compute Capability" list (https://developer.nvidia.com/cuda-gpus), and for the
Blackwell parts the CUDA 12.8/12.9 release notes. A name answers only when every entry it matches agrees, so a
name cut short by nvidia-smi ("NVIDIA GeForce RTX 4090 ...") still answers when all its completions share one
capability, and an ambiguous one ("TITAN X": Maxwell or Pascal) answers None.
"""

from __future__ import annotations

import re

__all__ = ["capability_of"]

# (pattern over the normalised name, compute capability). Normalised: lower case, vendor and brand words
# (NVIDIA, GeForce, Tesla, Quadro) removed, memory sizes and form factors kept (they never decide).
_TABLE: tuple[tuple[str, str], ...] = (
    # Blackwell
    (r"\bgb10\b", "12.1"),
    (r"\brtx 50[5-9]0( ti| d)?\b", "12.0"),
    (r"\brtx pro [0-9]+ blackwell\b", "12.0"),
    (r"\b(b100|b200|gb200)\b", "10.0"),
    (r"\b(b300|gb300)\b", "10.3"),
    (r"\bjetson thor\b", "11.0"),
    # Hopper
    (r"\b(h100|h200|h800|h20|gh200)\b", "9.0"),
    # Ada Lovelace
    (r"\brtx 40[5-9]0( ti| super| ti super| d)?\b", "8.9"),
    (r"\brtx [0-9]+ ada\b", "8.9"),
    (r"\b(l4|l40|l40s|l20)\b", "8.9"),
    # Ampere
    (r"\b(a100|a800|a30)\b", "8.0"),
    (r"\brtx 30[5-9]0( ti)?\b", "8.6"),
    (r"\brtx a[0-9]{4}\b", "8.6"),
    (r"\b(a40|a10|a10g|a16|a2)\b", "8.6"),
    (r"\bjetson (agx )?orin\b|\borin\b", "8.7"),
    # Turing
    (r"\b(t4|t1000|t600|t400)\b", "7.5"),
    (r"\brtx 20[6-8]0( ti| super)?\b", "7.5"),
    (r"\bgtx 16[5-6]0( ti| super)?\b", "7.5"),
    (r"\btitan rtx\b", "7.5"),
    (r"\brtx [4-8]000\b(?! (ada|blackwell))", "7.5"),  # Quadro RTX 4000-8000 (brand word removed)
    # Volta
    (r"\b(v100|titan v)\b", "7.0"),
    (r"\bxavier\b", "7.2"),
    # Pascal
    (r"\bp100\b", "6.0"),
    (r"\bgtx 10[5-8]0( ti)?\b", "6.1"),
    (r"\b(p40|p4|p6|p1000|p2000|p4000|p5000|p6000|p620|p400)\b", "6.1"),
    (r"\btitan xp\b|\btitan x \(pascal\)", "6.1"),
    # Maxwell
    (r"\bgtx 9[5-8]0( ti)?\b|\b(m40|m60|m4)\b", "5.2"),
    (r"\bgtx titan x\b", "5.2"),
    (r"\bgtx 750( ti)?\b", "5.0"),
    # Kepler
    (r"\bk80\b", "3.7"),
    (r"\b(k40|k20|k20x)\b", "3.5"),
    (r"\bgtx 780( ti)?\b", "3.5"),
)
_COMPILED = tuple((re.compile(pattern), capability) for pattern, capability in _TABLE)
_NOISE = re.compile(r"\b(nvidia|geforce|tesla|quadro)\b")
_CUT = re.compile(r"(\.\.\.|…)\s*$")
# Longer than any GPU's name (under 64 characters), even with text pasted after it: no name the table answers for,
# and each of its patterns (several times over for a cut name) would be searched through all of it.
_MAX_NAME = 1024


def _normalise(name: str) -> str:
    text = _NOISE.sub(" ", name.lower()).replace("-", " ")
    return re.sub(r"\s+", " ", text).strip()


def capability_of(name: str) -> str | None:
    """The compute capability of the GPU called `name`, when NVIDIA's list gives it one unambiguously."""
    if len(name) > _MAX_NAME:
        return None
    cut = _CUT.search(name)
    text = _normalise(_CUT.sub("", name))
    if not text:
        return None
    found = {capability for pattern, capability in _COMPILED if pattern.search(text)}
    if cut and not found:
        # nvidia-smi cut the name ("GeForce GTX 108..."): every table entry it could begin must agree.
        found = {capability for pattern, capability in _COMPILED if _could_complete(text, pattern)}
    return found.pop() if len(found) == 1 else None


def _could_complete(prefix: str, pattern: re.Pattern[str]) -> bool:
    """Whether some name matched by `pattern` begins with the cut `prefix` (tried on digit completions)."""
    return any(pattern.search(prefix + tail) for tail in ("0", "00", "000", "0 ti", "0 super", "0 d"))

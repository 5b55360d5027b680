"""NVIDIA GPU names -> compute capability (rules/data/gpus.toml), for describing a machine by its GPU's name.

A checked machine's GPUs come from NVML with their capability; this table serves only `envcheck recommend --gpu
"RTX 5090"`. Names match without case, without the words NVIDIA / GeForce / Tesla / Quadro, "-" read as a space,
by whole words from the start, longest listed name first (see the file's header).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envcheck.errors import RuleError, check_table_head

Capability = tuple[int, int]
_NOISE = frozenset({"nvidia", "geforce", "tesla", "quadro"})
# "sm_120", "sm120", "12.0", "compute capability 12.0": a capability given directly.
_SM = re.compile(r"sm_?(\d+)(\d)")
_DOTTED = re.compile(r"(\d+)\.(\d)")


@dataclass(frozen=True)
class GpuNames:
    """rules/data/gpus.toml, parsed: normalised name words -> (name as listed, capability)."""

    names: Mapping[tuple[str, ...], tuple[str, Capability]]


def _words(name: str) -> tuple[str, ...]:
    return tuple(w for w in re.split(r"[\s\-_/]+", name.lower()) if w and w not in _NOISE)


def parse(data: dict[str, Any], file: str) -> GpuNames:
    """The table from its parsed TOML; anything malformed is a RuleError naming `file` and the key."""
    check_table_head(data, file, ("schema", "capability"))
    table = data.get("capability")
    if not isinstance(table, dict) or not table:
        raise RuleError(file, "expected a non-empty table of capability -> names", key="capability")
    names: dict[tuple[str, ...], tuple[str, Capability]] = {}
    for key, listed in table.items():
        match = _DOTTED.fullmatch(key)
        if match is None:
            raise RuleError(file, f"expected a compute capability such as \"8.6\", got {key!r}",
                            key=f"capability.{key}")
        if not isinstance(listed, list) or not listed or not all(isinstance(n, str) and _words(n) for n in listed):
            raise RuleError(file, "expected a list of GPU names", key=f"capability.{key}")
        for name in listed:
            words = _words(name)
            if words in names:
                raise RuleError(file, f"{name!r} is listed twice", key=f"capability.{key}")
            names[words] = (name, (int(match.group(1)), int(match.group(2))))
    return GpuNames(names)


def capability_of(text: str) -> Capability | None:
    """A capability written directly ("12.0", "sm_120", "sm120"); None for anything else."""
    text = text.strip().lower()
    match = _SM.fullmatch(text) or _DOTTED.fullmatch(text)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def lookup(table: GpuNames, name: str) -> tuple[str, Capability] | None:
    """(the listed name, its capability) for a GPU name as NVML or a person writes it; None when not listed."""
    words = _words(name)
    for length in range(len(words), 0, -1):
        found = table.names.get(words[:length])
        if found is not None:
            return found
    return None

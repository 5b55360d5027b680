"""NVIDIA GPU names -> compute capability (rules/data/gpus.toml), for describing a machine by its GPU's name.

A checked machine's GPUs come from NVML with their capability; this table serves `envcheck recommend --gpu
"RTX 5090"` and the GPUs a pasted report names without their capability (envcheck/sources/reports/). Names match without
case, without the words NVIDIA / GeForce / Tesla / Quadro, "-" read as a space, by whole words from the start,
longest listed name first (see the file's header).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from envcheck.errors import RuleError, check_table_head
from envcheck.support import input_files, resources
from envcheck.support.patterns import lazy

Capability = tuple[int, int]
V = TypeVar("V")
_NOISE = frozenset({"nvidia", "geforce", "tesla", "quadro"})
# "sm_120", "sm120", "12.0", "compute capability 12.0": a capability given directly.
_SM = lazy(r"sm_?(\d+)(\d)")
_DOTTED = lazy(r"(\d+)\.(\d)")
# Far longer than any GPU's name (they stay under 64 characters, and a pasted name may carry text after it): not a
# name the table answers for.
MAX_NAME = 1024
_CUT = ("...", "\u2026")  # nvidia-smi cuts a long name: "GeForce GTX 108..."


@dataclass(frozen=True)
class GpuNames:
    """rules/data/gpus.toml, parsed: normalised name words -> (name as listed, capability)."""

    names: Mapping[tuple[str, ...], tuple[str, Capability]]
    longest: int = 8  # words in the longest listed name: no longer prefix of a name can be listed


def name_words(name: str, noise: frozenset[str]) -> tuple[str, ...]:
    """A GPU name's words as a name table matches them: lower case, split at spaces, "-", "_" and "/", without the
    vendor's words (`noise`)."""
    return tuple(w for w in re.split(r"[\s\-_/]+", name.lower()) if w and w not in noise)


def _words(name: str) -> tuple[str, ...]:
    return name_words(name, _NOISE)


def parse_names(data: dict[str, Any], file: str, section: str, value: Callable[[str], V | None], expected: str,
                noise: frozenset[str]) -> tuple[dict[tuple[str, ...], tuple[str, V]], int]:
    """(name words -> (name as listed, value), the most words of a name) from a name table's TOML (`section`: value
    -> names; `value` reads a key, None when it is not one, as `expected` says); anything malformed is a RuleError
    naming `file` and the key. The NVIDIA table (capabilities) and the AMD one (gfx targets) are read alike."""
    check_table_head(data, file, ("schema", section))
    table = data.get(section)
    if not isinstance(table, dict) or not table:
        raise RuleError(file, f"expected a non-empty table of {section} -> names", key=section)
    names: dict[tuple[str, ...], tuple[str, V]] = {}
    for key, listed in table.items():
        read = value(key)
        if read is None:
            raise RuleError(file, f"expected {expected}, got {key!r}", key=f"{section}.{key}")
        if not isinstance(listed, list) or not listed or not all(
                isinstance(n, str) and name_words(n, noise) for n in listed):
            raise RuleError(file, "expected a list of GPU names", key=f"{section}.{key}")
        for name in listed:
            words = name_words(name, noise)
            if words in names:
                raise RuleError(file, f"{name!r} is listed twice", key=f"{section}.{key}")
            names[words] = (name, read)
    return names, max(map(len, names))


def longest_at(names: Mapping[tuple[str, ...], tuple[str, V]], longest: int, words: Sequence[str],
               index: int) -> tuple[str, V, int] | None:
    """(listed name, value, words it spans) of the longest listed name that `words` begin at `index`; None when
    none does."""
    for length in range(min(len(words) - index, longest), 0, -1):
        found = names.get(tuple(words[index:index + length]))
        if found is not None:
            return found[0], found[1], length
    return None


def _capability_key(key: str) -> Capability | None:
    # A key is written dotted, "8.6", exactly: the way capability_of reads it, without the "sm_86" spellings.
    return capability_of(key) if "." in key and key == key.strip().lower() else None


def parse(data: dict[str, Any], file: str) -> GpuNames:
    """The table from its parsed TOML; anything malformed is a RuleError naming `file` and the key."""
    names, longest = parse_names(data, file, "capability", _capability_key, 'a compute capability such as "8.6"',
                                 _NOISE)
    return GpuNames(names, longest)


def capability_of(text: str) -> Capability | None:
    """A capability written directly ("12.0", "sm_120", "sm120"); None for anything else."""
    text = text.strip().lower()
    match = _SM.fullmatch(text) or _DOTTED.fullmatch(text)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def lookup(table: GpuNames, name: str) -> tuple[str, Capability] | None:
    """(the listed name, its capability) for a GPU name as NVML or a person writes it; None when not listed."""
    found = longest_at(table.names, table.longest, _words(name), 0)
    return None if found is None else (found[0], found[1])


def capability_of_name(table: GpuNames, name: str) -> Capability | None:
    """The capability of the GPU a tool's output names (collect_env, nvidia-smi, a report's text): its listed name,
    or for a name nvidia-smi cut short ("GeForce GTX 108...") the one capability of every listed name it could
    begin; None when not listed or ambiguous."""
    if len(name) > MAX_NAME:
        return None
    text = name.rstrip()
    cut = text.endswith(_CUT)
    text = text.rstrip(".\u2026") if cut else text
    words = _words(text)
    if not words:
        return None
    if not cut:
        found = lookup(table, text)
        return None if found is None else found[1]
    # Cut: the name may go on as any listed name that extends its last word, or be one its whole words begin.
    head, last = words[:-1], words[-1]
    capabilities = {capability for listed, (_, capability) in table.names.items()
                    if (len(listed) > len(head) and listed[:len(head)] == head and listed[len(head)].startswith(last))
                    or listed == words[:len(listed)]}
    return capabilities.pop() if len(capabilities) == 1 else None


def capability_text(capability: Capability | None) -> str | None:
    """(8, 9) -> "8.9", as the facts write a compute capability."""
    return None if capability is None else f"{capability[0]}.{capability[1]}"


@functools.cache
def shipped() -> GpuNames:
    """The table the rule pack ships (rules/data/gpus.toml), read once: for readers that run without a loaded
    pack, such as the free-text report reader naming GPUs."""
    path = resources.data_dir() / "gpus.toml"
    return parse(input_files.load_toml(path, error=RuleError), str(path))

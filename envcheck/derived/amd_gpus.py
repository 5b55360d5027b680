"""AMD GPU names -> gfx target (rules/data/amd-gpus.toml), for the AMD GPUs a pasted report names without their
target ("GPU: AMD Radeon RX 7900 XTX" in an issue's text). Names match without case, without the words AMD /
Radeon / Instinct, "-" read as a space, by whole words from the start, longest listed name first (see the file's
header).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envcheck.derived.nvidia_gpus import longest_at, name_words, parse_names
from envcheck.errors import RuleError
from envcheck.support import input_files, resources
from envcheck.support.patterns import lazy

__all__ = ["AmdGpuNames", "at", "lookup", "parse", "shipped", "words_of"]

_NOISE = frozenset({"amd", "radeon", "instinct", "ati"})
_TARGET = lazy(r"gfx[0-9]{1,2}[0-9a-f]{2}")


@dataclass(frozen=True)
class AmdGpuNames:
    """rules/data/amd-gpus.toml, parsed: normalised name words -> (name as listed, gfx target)."""

    names: Mapping[tuple[str, ...], tuple[str, str]]
    longest: int = 4  # words in the longest listed name: no longer prefix of a name can be listed


def words_of(name: str) -> tuple[str, ...]:
    """A name's words as the table matches them: lower case, without AMD / Radeon / Instinct."""
    return name_words(name, _NOISE)


def parse(data: dict[str, Any], file: str) -> AmdGpuNames:
    """The table from its parsed TOML; anything malformed is a RuleError naming `file` and the key."""
    names, longest = parse_names(data, file, "gfx", lambda key: key if _TARGET.fullmatch(key) else None,
                                 'a gfx target such as "gfx1100"', _NOISE)
    return AmdGpuNames(names, longest)


def at(table: AmdGpuNames, words: Sequence[str], index: int) -> tuple[str, str, int] | None:
    """(listed name, gfx target, words it spans) of the longest listed name that `words` (as `words_of` gives
    them) begin at `index`; None when none does."""
    return longest_at(table.names, table.longest, words, index)


def lookup(table: AmdGpuNames, name: str) -> tuple[str, str] | None:
    """(the listed name, its gfx target) for a GPU name as a person or a tool writes it; None when not listed."""
    found = at(table, words_of(name), 0)
    return None if found is None else (found[0], found[1])


@functools.cache
def shipped() -> AmdGpuNames:
    """The table the rule pack ships (rules/data/amd-gpus.toml), read once: for the free-text report reader, which
    runs without a loaded pack."""
    path = resources.data_dir() / "amd-gpus.toml"
    return parse(input_files.load_toml(path, error=RuleError), str(path))

"""rules/data/rocm-archs.toml: the gfx targets each ROCm build of torch carries, and the overrides that make a GPU
run another target's kernels; parsed and validated (envcheck/derived/rocm.py declares the table and reads it).
Imported only to parse the table or where a derivation reads it (a ROCm torch, AMD GPUs): other checks, their pack
cached, never define the class (envcheck/cache/pack_data.py decodes a table when it is first read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envcheck.errors import RuleError, check_table_head
from envcheck.facts.rocm import GFX, OVERRIDE, override_target
from envcheck.support.patterns import lazy

_VARIANT = lazy(r"rocm\d+(?:\.\d+)+")
_SERIES = lazy(r"\d+\.\d+")


@dataclass(frozen=True)
class RocmArchTable:
    """rules/data/rocm-archs.toml, parsed."""

    builds: Mapping[tuple[str, str], tuple[str, ...]]  # ("2.5", "rocm6.2") -> ("gfx900", ..., "gfx1100")
    overrides: Mapping[str, tuple[str, str]]  # "gfx1031" -> ("gfx1030", "10.3.0")

    def archs(self, series: str, variant: str) -> tuple[str, ...] | None:
        return self.builds.get((series, variant))


def parse(data: dict[str, Any], file: str) -> RocmArchTable:
    """Validate and parse the table; any mistake is one RuleError naming the file and the key."""
    check_table_head(data, file, ("schema", "lists", "release", "override"))
    lists = data.get("lists")
    if not isinstance(lists, dict) or not lists:
        raise RuleError(file, "expected a non-empty table of named gfx lists", key="lists")
    named = {name: _gfx_list(value, file, f"lists.{name}") for name, value in lists.items()}
    rows = data.get("release")
    if not isinstance(rows, list) or not rows:
        raise RuleError(file, "expected one or more [[release]] tables", key="release")
    builds: dict[tuple[str, str], tuple[str, ...]] = {}
    for i, row in enumerate(rows):
        key = f"release[{i}]"
        if not isinstance(row, dict) or set(row) - {"series", "archs", "sources"}:
            raise RuleError(file, "expected a table of series, archs and sources", key=key)
        series, archs = row.get("series"), row.get("archs")
        if not isinstance(series, str) or not _SERIES.fullmatch(series):
            raise RuleError(file, f"expected a torch series such as \"2.5\", got {series!r}", key=f"{key}.series")
        if not isinstance(archs, dict) or not archs:
            raise RuleError(file, "expected a table of ROCm variant = list name", key=f"{key}.archs")
        for variant, name in archs.items():
            if not _VARIANT.fullmatch(variant):
                raise RuleError(file, f"expected a variant such as rocm6.2.4, got {variant!r}",
                                key=f"{key}.archs.{variant}")
            if name not in named:
                raise RuleError(file, f"no list named {name!r} in [lists]", key=f"{key}.archs.{variant}")
            if (series, variant) in builds:
                raise RuleError(file, f"torch {series} {variant} is listed twice", key=f"{key}.archs.{variant}")
            builds[(series, variant)] = named[name]
    overrides: dict[str, tuple[str, str]] = {}
    for gpu, value in (data.get("override") or {}).items():
        where = f"override.{gpu}"
        if (not GFX.fullmatch(gpu) or not isinstance(value, list) or len(value) != 2
                or not all(isinstance(v, str) for v in value)):
            raise RuleError(file, "expected gfxNNNN = [\"gfxMMMM\", \"X.Y.Z\"]", key=where)
        target, setting = value
        if override_target(setting) != target:
            raise RuleError(file, f"{OVERRIDE}={setting} does not name {target}", key=where)
        overrides[gpu] = (target, setting)
    return RocmArchTable(builds, overrides)


def _gfx_list(value: object, file: str, key: str) -> tuple[str, ...]:
    items = value.split(";") if isinstance(value, str) else []
    if not items or not all(GFX.fullmatch(i) for i in items):
        raise RuleError(file, f"expected gfx targets separated by ';', got {value!r}", key=key)
    return tuple(items)

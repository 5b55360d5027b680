"""The data tables of the rule pack (`rules/data/*.toml`): a registry of table file stem -> validating parser.

A table is read and validated when the pack is loaded (`load`), so that a malformed table is one RuleError naming
the file and the key before anything is collected, never an `error` verdict in the middle of an evaluation. The
parsed tables travel with the rules (`envcheck.rules.RulePack`) into the evaluation, which opens no file.

Adding a table is one `Table` in `REGISTRY`: its file stem and a parser `(data, file) -> T` that returns a frozen
typed object and raises RuleError for anything malformed. A derivation reads it as `tables[THE_TABLE]`, typed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

from envcheck import _files, _resources, amd_gpus, gpus, torch_builds
from envcheck.derived import companions, extension_releases, gpu_compat, rocm
from envcheck.errors import RuleError

__all__ = ["AMD_GPUS", "CUDA_DRIVER", "EXTENSION_RELEASES", "GPUS", "NO_TABLES", "REGISTRY", "ROCM_ARCHS",
           "TORCH_BUILDS", "TORCH_COMPANIONS", "XFORMERS", "Table", "Tables", "load"]

T = TypeVar("T")
_MAX_TABLE_BYTES = 16 * 1024 * 1024  # the largest shipped table is some tens of kilobytes


@dataclass(frozen=True)
class Table(Generic[T]):
    """One kind of table: rules/data/STEM.toml, parsed and validated by `parse(data, file)`."""

    stem: str
    parse: Callable[[dict[str, Any], str], T]


CUDA_DRIVER = Table("cuda-driver", gpu_compat.parse_cuda_driver)
TORCH_COMPANIONS = Table("torch-companions", companions.parse_companions)
XFORMERS = Table("xformers", companions.parse_companions)
TORCH_BUILDS = Table("torch-builds", torch_builds.parse)
GPUS = Table("gpus", gpus.parse)
ROCM_ARCHS = Table("rocm-archs", rocm.parse)
EXTENSION_RELEASES = Table("extension-releases", extension_releases.parse)
AMD_GPUS = Table("amd-gpus", amd_gpus.parse)

REGISTRY: Mapping[str, Table[Any]] = {t.stem: t for t in (CUDA_DRIVER, TORCH_COMPANIONS, XFORMERS, TORCH_BUILDS, GPUS,
                                                          ROCM_ARCHS, EXTENSION_RELEASES, AMD_GPUS)}


@dataclass(frozen=True)
class Tables:
    """Parsed tables by stem, and the file each came from."""

    parsed: Mapping[str, object] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, table: Table[T]) -> T:
        if table.stem not in self.parsed:
            # Only hand-built evaluations (tests, library callers with their own rules) lack a table; the pack
            # loader refuses a pack without one.
            raise LookupError(f"the data table {table.stem!r} was not loaded with these rules")
        return cast(T, self.parsed[table.stem])


NO_TABLES = Tables()


def _read(path: Path) -> dict[str, Any]:
    return _files.load_toml(path, error=RuleError, limit=_MAX_TABLE_BYTES)


def load(rule_dirs: Sequence[Path]) -> Tables:
    """The tables in the data/ folder of each rule directory, every one validated; a later directory's table
    replaces an earlier one's of the same stem (a newer table without a newer envcheck). Every registered table
    must be found, and every file in a data/ folder must be a registered table (a misspelt name is not ignored)."""
    paths: dict[str, Path] = {}
    for rule_dir in rule_dirs:
        folder = _resources.data_dir(rule_dir)
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            if path.stem not in REGISTRY:
                raise RuleError(str(path), f"unknown data table (known: {', '.join(sorted(REGISTRY))})")
            paths[path.stem] = path
    missing = sorted(set(REGISTRY) - set(paths))
    if missing:
        where = _resources.data_dir(rule_dirs[0]) if rule_dirs else _resources.data_dir()
        raise RuleError(str(where / f"{missing[0]}.toml"), "data table missing")
    parsed = {stem: REGISTRY[stem].parse(_read(path), str(path)) for stem, path in paths.items()}
    return Tables(parsed, {stem: str(path) for stem, path in paths.items()})

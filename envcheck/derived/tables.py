"""The data tables of the rule pack (`rules/data/*.toml`): a registry of table file stem -> validating parser.

A table is read and validated when the pack is loaded (`load`), so that a malformed table is one RuleError naming
the file and the key before anything is collected, never an `error` verdict in the middle of an evaluation. The
parsed tables travel with the rules (`envcheck.rules.rule_pack.RulePack`) into the evaluation, which opens no file.

Adding a table is one `Table` (envcheck/derived/common.py), declared beside its parser, and listed in `REGISTRY`:
its file stem and a parser `(data, file) -> T` that returns a frozen typed object and raises RuleError for anything
malformed. A derivation reads it as `tables[THE_TABLE]`, typed. Every key is importable from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.derived.common import NO_TABLES, TORCH_BUILDS, Table, Tables
from envcheck.derived.companions import TORCH_COMPANIONS, XFORMERS
from envcheck.derived.conda_builds import CONDA_FORGE
from envcheck.derived.extension_releases import EXTENSION_RELEASES
from envcheck.derived.gpu_compat import CUDA_DRIVER
from envcheck.derived.rocm import ROCM_ARCHS
from envcheck.errors import RuleError
from envcheck.support import input_files, resources

if TYPE_CHECKING:
    from envcheck.derived.amd_gpus import AmdGpuNames
    from envcheck.derived.nvidia_gpus import GpuNames

__all__ = ["AMD_GPUS", "CONDA_FORGE", "CUDA_DRIVER", "EXTENSION_RELEASES", "GPUS", "NO_TABLES", "REGISTRY",
           "ROCM_ARCHS", "TORCH_BUILDS", "TORCH_COMPANIONS", "XFORMERS", "Table", "Tables", "load",
           "parse_file"]

_MAX_TABLE_BYTES = 16 * 1024 * 1024  # the largest shipped table is some tens of kilobytes


def _gpus(data: dict[str, Any], file: str) -> GpuNames:
    from envcheck.derived import nvidia_gpus

    return nvidia_gpus.parse(data, file)


def _amd_gpus(data: dict[str, Any], file: str) -> AmdGpuNames:
    from envcheck.derived import amd_gpus

    return amd_gpus.parse(data, file)


# Declared beside their parsers (the derivations that read a table import its key from there); these two are read
# only outside the derivations (recommend, the report readers), so their modules are imported only to parse them:
# a check whose pack comes from its cache decodes them only where it reads them (envcheck/cache/pack_data.py).
GPUS = Table("gpus", _gpus)
AMD_GPUS = Table("amd-gpus", _amd_gpus)

REGISTRY: Mapping[str, Table[Any]] = {t.stem: t for t in (CUDA_DRIVER, TORCH_COMPANIONS, XFORMERS, TORCH_BUILDS, GPUS,
                                                          ROCM_ARCHS, EXTENSION_RELEASES, AMD_GPUS,
                                                          CONDA_FORGE)}


def _read(path: Path) -> dict[str, Any]:
    return input_files.load_toml(path, error=RuleError, limit=_MAX_TABLE_BYTES)


def load(rule_dirs: Sequence[Path]) -> Tables:
    """The tables in the data/ folder of each rule directory, every one validated; a later directory's table
    replaces an earlier one's of the same stem (a newer table without a newer envcheck). Every registered table
    must be found, and every file in a data/ folder must be a registered table (a misspelt name is not ignored)."""
    paths: dict[str, Path] = {}
    for rule_dir in rule_dirs:
        folder = resources.data_dir(rule_dir)
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            if path.stem not in REGISTRY:
                raise RuleError(str(path), f"unknown data table (known: {', '.join(sorted(REGISTRY))})")
            paths[path.stem] = path
    missing = sorted(set(REGISTRY) - set(paths))
    if missing:
        where = resources.data_dir(rule_dirs[0]) if rule_dirs else resources.data_dir()
        raise RuleError(str(where / f"{missing[0]}.toml"), "data table missing")
    parsed = {stem: parse_file(stem, str(path)) for stem, path in paths.items()}
    return Tables(parsed, {stem: str(path) for stem, path in paths.items()})


def parse_file(stem: str, file: str) -> object:
    """The registered table `stem`, read from `file` and validated: what `load` does for each, and what a cached
    pack's table whose entry cannot be read is made from again (envcheck/rules/rule_pack.py)."""
    return REGISTRY[stem].parse(_read(Path(file)), file)

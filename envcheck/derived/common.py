"""What the derivations share: how one is declared (`Derivation`) and what it is given (`Values`: the snapshot,
the parsed data tables, the other derived facts), how a data table is named (`Table`, `Tables`), the item type, the
test for a torch without CUDA, and the head of a per-library release table (rules/data/torch-companions.toml,
xformers.toml, extension-releases.toml).

Each module of envcheck/derived/ declares its own derived facts (its `DERIVATIONS`) with these; derive.py
assembles them into the registry. Nothing here imports a module that declares derivations, so each can import this.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, cast

from envcheck.derived import build_matrix
from envcheck.derived.walk_memo import Memo
from envcheck.errors import RuleError
from envcheck.facts.snapshot import Facts

__all__ = ["NO_TABLES", "TORCH_BUILDS", "Derivation", "Item", "Table", "Tables", "Values", "metadata_unknown",
           "of_facts", "release_table", "without_cuda_torch"]

T = TypeVar("T")

Item = dict[str, str]  # one element of a list-valued derived fact; templates read it as {item.KEY}


@dataclass(frozen=True)
class Table(Generic[T]):
    """One kind of table: rules/data/STEM.toml, parsed and validated by `parse(data, file)`. Declared beside its
    parser; envcheck/derived/tables.py lists them all (`REGISTRY`) and loads them."""

    stem: str
    parse: Callable[[dict[str, Any], str], T]


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
# The build matrix: torch releases, their builds and wheels (envcheck/derived/build_matrix.py). Declared here, as
# several modules read it (builds, companions, rocm, wheels).
TORCH_BUILDS = Table("torch-builds", build_matrix.parse)


class Values(Protocol):
    """What a derivation computes from: one snapshot's facts, the pack's parsed tables, and the other derived facts
    (envcheck/derived/derive.py's `Derived` is the one implementation)."""

    facts: Facts
    tables: Tables
    memo: Memo | None  # where the requirement walk's result is remembered between runs (None: nowhere)

    def get(self, name: str) -> Any:
        """The derived fact `name`, computed at most once."""

    def once(self, key: str, compute: Callable[[], T]) -> T:
        """`compute()`, done at most once per snapshot under `key`: what several derivations read (the
        requirement walk, the merged companion tables)."""


@dataclass(frozen=True)
class Derivation:
    """One derived fact, as a rule reads it (`fact = "NAME"`, `foreach = "NAME"`)."""

    name: str
    doc: str  # markdown: what the value is, or what each item is with every field; generates the docs' table
    fields: tuple[str, ...]  # keys of each item, for list-valued derivations (validated in rule templates)
    compute: Callable[[Values], Any]  # may read other derivations through the Values it is given


def of_facts(fn: Callable[[Facts], Any]) -> Callable[[Values], Any]:
    """A derivation's computation from a function of the facts alone."""
    def compute(derived: Values) -> Any:
        return fn(derived.facts)

    return compute


def metadata_unknown(facts: Facts) -> bool:
    """Distribution metadata was not read (a package list from a report): what it would show is unknown."""
    return not facts.distributions_complete or any(not d.requires_known for d in facts.distributions)


def without_cuda_torch(facts: Facts) -> bool:
    """No torch, or a CPU or ROCm build: nothing that needs an NVIDIA driver, CUDA kernels or a CUDA toolkit.

    A torch whose version.py could not be read (`problem`) may well be a CUDA build, so it does not count.
    """
    torch = facts.torch
    return torch is None or (torch.cuda is None and torch.problem is None)


def release_table(file: str, name: str, table: object, keys: Collection[str],
                  symptom_is: str) -> tuple[dict[str, Any], str]:
    """`[NAME]` of a release table checked: a table with a non-empty `[NAME.releases]`, no key outside `keys`, and
    a `symptom` string (what `symptom_is`, in the error). The table and its stripped symptom; else one RuleError
    naming `file` and the key."""
    if not isinstance(table, dict) or not isinstance(table.get("releases"), dict) or not table["releases"]:
        raise RuleError(file, "expected a table with a non-empty [NAME.releases] table", key=name)
    unknown = set(table) - set(keys)
    if unknown:
        raise RuleError(file, f"unknown key (expected {', '.join(sorted(keys))})", key=f"{name}.{sorted(unknown)[0]}")
    symptom = table.get("symptom")
    if not isinstance(symptom, str) or not symptom.strip():
        raise RuleError(file, f"expected {symptom_is}, as a string", key=f"{name}.symptom")
    return table, symptom.strip()

"""The registry of derived facts (`DERIVATIONS`) and `Derived`, their lazy values for one snapshot.

A derived fact is a cross-fact computation that a declarative rule cannot express; rules read its result through
the `fact` predicate or iterate it with `foreach`. A derivation is pure (Facts in, JSON-ready value out) and runs
only when a selected rule asks for it. List-valued derivations return items sorted deterministically, each a flat
dict of strings that templates can use as `{item.KEY}`.

Each module of envcheck/derived/ declares its own (`DERIVATIONS`, with envcheck/derived/common.py's `Derivation`);
this module only puts them together, in the order the docs' table lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from envcheck.derived import (
    attention,
    builds,
    companions,
    conda_builds,
    distributions,
    extensions,
    gpu_compat,
    layers,
    multigpu,
    native_libs,
    project,
    release_names,
    requirements,
    rocm,
    system_libs,
    toolchain,
    wheels,
)
from envcheck.derived.common import NO_TABLES, Derivation, Tables
from envcheck.derived.walk_memo import Memo
from envcheck.facts.snapshot import Facts

__all__ = ["DERIVATIONS", "Derivation", "Derived", "markdown_table"]

T = TypeVar("T")

DERIVATIONS: dict[str, Derivation] = {
    d.name: d
    for module in (requirements, layers, distributions, project, gpu_compat, builds, conda_builds, companions,
                   extensions, wheels, multigpu, toolchain, native_libs, attention, system_libs, rocm, release_names)
    for d in module.DERIVATIONS
}


def markdown_table() -> str:
    """The table of derived facts in docs/rule-language.md, generated from `DERIVATIONS` (a test keeps the page in
    step): one row per fact, in registry order, with what its value or items are."""
    rows = [f"| `{d.name}` | {d.doc} |" for d in DERIVATIONS.values()]
    return "\n".join(["| name | value or items |", "|---|---|", *rows]) + "\n"


class Derived:
    """Lazily computed derived facts of one snapshot: each derivation runs at most once, and only if asked.

    `tables` are the rule pack's data tables, already parsed: a derivation reads them, never a file.
    """

    def __init__(self, facts: Facts, tables: Tables = NO_TABLES, memo: Memo | None = None) -> None:
        self.facts = facts
        self.tables = tables
        self.memo = memo  # where the requirement walk's result is remembered between runs (None: nowhere)
        self._values: dict[str, Any] = {}
        self._shared: dict[str, Any] = {}

    def once(self, key: str, compute: Callable[[], T]) -> T:
        """`compute()`, done at most once for this snapshot under `key` (the walk, the merged companion tables)."""
        if key not in self._shared:
            self._shared[key] = compute()
        found: T = self._shared[key]
        return found

    def companions(self) -> dict[str, companions.Companion]:
        """The companion tables, merged by name; empty where the pack has none (an evaluation built by hand)."""
        return companions.tables_of(self)

    def walk(self) -> requirements.Walk:
        """The requirement walk, done once per snapshot and shared by the derivations that need it."""
        return requirements.walk(self)

    def get(self, name: str) -> Any:
        if name not in self._values:
            self._values[name] = DERIVATIONS[name].compute(self)
        return self._values[name]

    def all(self) -> dict[str, Any]:
        return {name: self.get(name) for name in sorted(DERIVATIONS)}

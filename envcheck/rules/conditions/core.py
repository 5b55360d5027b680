"""Three-valued outcomes, the evaluation context, and the combinators all / any / not.

A condition evaluates to True, False or unknown (None). Unknown means a fact it needs is missing (a module that was
not looked up, a version that is not PEP 440, a probe that did not run); the outcome names those facts so that a
skipped verdict can say what it lacked. Combinators follow Kleene's logic: `all` is False as soon as one part is
False, whatever the others; `any` is True as soon as one part is True.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from envcheck.derived.derive import Derived
from envcheck.derived.tables import NO_TABLES, Tables
from envcheck.derived.walk_memo import Memo
from envcheck.facts.snapshot import Facts
from envcheck.support.versions import marker_env


@dataclass(frozen=True)
class Outcome:
    """A condition's value on some facts: true, false or unknown (and what was missing)."""

    value: bool | None  # None: unknown
    missing: frozenset[str] = frozenset()  # what made it unknown
    evidence: str = ""  # for `first`: which part decided, in words (shown with the finding)


TRUE = Outcome(True)
FALSE = Outcome(False)


def unknown(*what: str) -> Outcome:
    return Outcome(None, frozenset(what))


def of(value: bool) -> Outcome:
    return TRUE if value else FALSE


class Context:
    """What a condition is evaluated against: the facts, and their derived facts computed with the rule pack's
    data tables (already parsed: evaluation opens no file)."""

    def __init__(self, facts: Facts, tables: Tables = NO_TABLES, memo: Memo | None = None) -> None:
        self.facts = facts
        self.derived = Derived(facts, tables, memo)
        self._marker_env: dict[str, str] | None = None

    @property
    def marker_env(self) -> dict[str, str]:
        if self._marker_env is None:
            self._marker_env = marker_env(self.facts)
        return self._marker_env


class Condition(Protocol):
    def evaluate(self, ctx: Context) -> Outcome: ...

    def leaves(self) -> Iterator[Condition]: ...

    def describe(self) -> str: ...


# --- combinators -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class All:
    """`all`: true when every part is true."""

    parts: tuple[Condition, ...]

    def evaluate(self, ctx: Context) -> Outcome:
        missing: set[str] = set()
        evidence: list[str] = []
        for part in self.parts:
            out = part.evaluate(ctx)
            if out.value is False:
                return FALSE
            if out.value is None:
                missing |= out.missing
            elif out.evidence:
                evidence.append(out.evidence)
        if missing:
            return Outcome(None, frozenset(missing))
        return Outcome(True, evidence="; ".join(evidence)) if evidence else TRUE

    def leaves(self) -> Iterator[Condition]:
        for part in self.parts:
            yield from part.leaves()

    def describe(self) -> str:
        return " and ".join(_grouped(p) for p in self.parts) if self.parts else "always"


@dataclass(frozen=True)
class AnyOf:
    """`any`: true when some part is true."""

    parts: tuple[Condition, ...]

    def evaluate(self, ctx: Context) -> Outcome:
        missing: set[str] = set()
        for part in self.parts:
            out = part.evaluate(ctx)
            if out.value is True:
                return out
            if out.value is None:
                missing |= out.missing
        return Outcome(None, frozenset(missing)) if missing else FALSE

    def leaves(self) -> Iterator[Condition]:
        for part in self.parts:
            yield from part.leaves()

    def describe(self) -> str:
        return " or ".join(_grouped(p) for p in self.parts)


@dataclass(frozen=True)
class Not:
    """`not`: the part's value negated (unknown stays unknown)."""

    part: Condition

    def evaluate(self, ctx: Context) -> Outcome:
        out = self.part.evaluate(ctx)
        return out if out.value is None else of(not out.value)

    def leaves(self) -> Iterator[Condition]:
        yield from self.part.leaves()

    def describe(self) -> str:
        return f"not {_grouped(self.part)}"


@dataclass(frozen=True)
class First:
    """The first part whose outcome is known decides: `first = [probe..., version range...]` trusts the live probe
    when it ran and falls back to the version range when it did not. The outcome names the deciding part."""

    parts: tuple[Condition, ...]

    def evaluate(self, ctx: Context) -> Outcome:
        missing: set[str] = set()
        for part in self.parts:
            out = part.evaluate(ctx)
            if out.value is not None:
                because = part.describe()
                if missing:
                    because += f" (instead of: {'; '.join(sorted(missing))})"
                return Outcome(out.value, evidence=because)
            missing |= out.missing
        return Outcome(None, frozenset(missing))

    def leaves(self) -> Iterator[Condition]:
        for part in self.parts:
            yield from part.leaves()

    def describe(self) -> str:
        return "the first known of: " + "; else ".join(_grouped(p) for p in self.parts)


def _grouped(part: Condition) -> str:
    text = part.describe()
    return f"({text})" if isinstance(part, (All, AnyOf, First)) and len(part.parts) > 1 else text


ALWAYS = All(())

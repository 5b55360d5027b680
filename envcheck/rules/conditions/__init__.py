"""The rule condition language: leaf predicates over facts, combined with all / any / not, in three-valued logic.

`parse` turns the TOML value of `applies` / `when` into a tree and rejects anything malformed with a RuleError
naming the file, the rule and the key. The grammar is documented in docs/rule-language.md.

- core.py: outcomes, the evaluation context, combinators;
- environment.py: predicates over the static facts (package, missing, module, source, marker, python, env, fact,
  torch);
- machine.py: predicates over GPUs, the driver and the live probes (gpu, driver, probe).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from envcheck.rules.conditions import environment, machine
from envcheck.rules.conditions.core import ALWAYS, All, AnyOf, Condition, Context, First, Not, Outcome
from envcheck.rules.conditions.environment import Module, Source

if TYPE_CHECKING:
    from envcheck.rules.conditions.where import Where

__all__ = ["ALWAYS", "PREDICATES", "Condition", "Context", "Module", "Outcome", "Source", "parse"]

PREDICATES: dict[str, Callable[[object, Where], Condition]] = {**environment.PARSERS, **machine.PARSERS}
COMBINATORS = ("all", "any", "first", "not")


MAX_DEPTH = 32  # combinators inside combinators; the deepest built-in rule uses 4


def parse(value: object, where: Where, depth: int = 0) -> Condition:
    """A condition from its TOML value. A table with several keys means all of them. Nesting is bounded, so that
    neither parsing nor evaluating a condition can exhaust the stack, whoever built the value."""
    if depth > MAX_DEPTH:
        raise where.error(f"conditions nested more than {MAX_DEPTH} deep")
    if not isinstance(value, dict) or not value:
        raise where.error(f"expected a non-empty table such as {{ package = \"torch<2.6\" }}, got {value!r}")
    parts: list[Condition] = []
    for key, sub in value.items():
        here = where.at(key)
        if key in ("all", "any", "first"):
            if not isinstance(sub, list) or not sub:
                raise here.error("expected a non-empty list of conditions")
            items = tuple(parse(item, here.at(str(i)), depth + 1) for i, item in enumerate(sub))
            combined: Condition = All(items) if key == "all" else AnyOf(items) if key == "any" else First(items)
            parts.append(combined)
        elif key == "not":
            parts.append(Not(parse(sub, here, depth + 1)))
        elif key in PREDICATES:
            parts.append(PREDICATES[key](sub, here))
        else:
            known = ", ".join([*COMBINATORS, *sorted(PREDICATES)])
            raise here.error(f"unknown predicate (known: {known})")
    return parts[0] if len(parts) == 1 else All(tuple(parts))

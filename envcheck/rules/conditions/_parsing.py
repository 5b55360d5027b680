"""Validation helpers shared by the predicate parsers: each raises a RuleError naming file, rule and key."""

from __future__ import annotations

import importlib
import re
import sys
from typing import TYPE_CHECKING, Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envcheck.support.versions import too_complex

if TYPE_CHECKING:
    from envcheck.rules.conditions.where import Where


def string_of(value: object, where: Where) -> str:
    """`value` as a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise where.error(f"expected a non-empty string, got {value!r}")
    return value


def table_of(value: object, where: Where, allowed: set[str], required: set[str]) -> dict[str, Any]:
    """`value` as a table with no key outside `allowed` and every key of `required`."""
    if not isinstance(value, dict):
        raise where.error(f"expected a table, got {value!r}")
    unknown_keys = sorted(set(value) - allowed)
    if unknown_keys:
        raise where.at(unknown_keys[0]).error(f"unknown key (allowed: {', '.join(sorted(allowed))})")
    for key in sorted(required):
        if key not in value:
            raise where.at(key).error("required")
    return value


def first_line(exc: Exception) -> str:
    """The first line of a parse error's message."""
    # packaging's parse errors add the input and a caret on further lines; a RuleError is one line.
    return (str(exc).splitlines() or [""])[0]


def check_bounded(text: str, what: str, where: Where) -> None:
    """Refuses `text` (a `what`) when it is too complex to parse in bounded time (`_packaging.too_complex`)."""
    problem = too_complex(text)
    if problem:
        raise where.error(f"{what} {text if len(text) <= 60 else text[:60] + '…'!r} {problem}")


def requirement_of(value: object, where: Where) -> Requirement:
    """`value` as a PEP 508 requirement."""
    text = string_of(value, where)
    check_bounded(text, "requirement", where)
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        raise where.error(f"invalid requirement {text!r}: {first_line(exc)}") from None


def specifier_of(value: object, where: Where) -> SpecifierSet:
    """`value` as a PEP 440 version specifier."""
    text = string_of(value, where)
    check_bounded(text, "version specifier", where)
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise where.error(f"invalid version specifier {text!r}") from None


def regex_of(value: object, where: Where) -> str:
    """A pattern of a `source` or `env` predicate, refused unless matching it takes time linear in the text.

    Python's backtracking engine can take exponential time on a pattern that repeats a repetition (`(a+)+$`);
    such a pattern is matched by the collector over an installed file and by the engine over an environment
    variable, where nothing could stop it. Rule patterns are literal fragments of source lines, which need none
    of this, so the bound costs nothing real."""
    text = string_of(value, where)
    shown = text if len(text) <= 60 else f"{text[:60]}…"
    if len(text) > MAX_PATTERN:
        raise where.error(f"regular expression {shown!r} is {len(text):,} characters long (at most {MAX_PATTERN})")
    try:
        re.compile(text)
        problem = _slow_part(_sre_parse.parse(text))
    except re.error as exc:
        raise where.error(f"invalid regular expression {shown!r}: {exc}") from None
    except (OverflowError, RecursionError) as exc:  # a{4294967296}; groups nested hundreds deep
        raise where.error(f"invalid regular expression {shown!r}: {str(exc) or 'nested too deeply'}") from None
    if problem:
        raise where.error(f"regular expression {shown!r} {problem}")
    return text


MAX_PATTERN = 1000  # characters
MAX_COUNT = 1000  # the largest {m,n} a pattern may use: a count of millions makes a pattern of megabytes
# re's private parser (sre_parse before 3.11) is the one place the structure of a pattern can be read; it has kept
# this shape (op, argument) since Python 2. A change to it would fail the tests that feed it slow patterns.
_sre_parse: Any = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}


def _slow_part(pattern: Any, inside_repeat: bool = False) -> str | None:
    """Why matching `pattern` (parsed) could backtrack without bound, or None: a repetition (at most once
    excepted) or an alternation inside another, or a count above MAX_COUNT."""
    for op, arg in pattern:
        if str(op) in _REPEATS:
            low, high, body = arg
            unbounded = high == _sre_parse.MAXREPEAT
            if low > MAX_COUNT or (not unbounded and high > MAX_COUNT):
                return f"repeats more than {MAX_COUNT} times"
            repeats = high > 1
            if repeats and inside_repeat:
                return "nests a repetition inside a repetition, which can take exponential time to match"
            found = _slow_part(body, inside_repeat or repeats)
        elif str(op) == "BRANCH" and inside_repeat:
            # (a|a)*: alternatives that can match the same text give every repetition two ways to match
            return "alternates inside a repetition, which can take exponential time to match"
        else:
            found = next((p for sub in _subpatterns(arg) if (p := _slow_part(sub, inside_repeat))), None)
        if found:
            return found
    return None


def _subpatterns(arg: Any) -> list[Any]:
    # A group, a branch, a lookaround, a conditional: the argument holds parsed subpatterns, directly or in a
    # tuple or list.
    if isinstance(arg, _sre_parse.SubPattern):
        return [arg]
    if isinstance(arg, (tuple, list)):
        return [s for item in arg for s in _subpatterns(item)]
    return []

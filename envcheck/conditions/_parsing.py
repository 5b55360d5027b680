"""Validation helpers shared by the predicate parsers: each raises a RuleError naming file, rule and key."""

from __future__ import annotations

import re
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envcheck.conditions.core import Where


def _string(value: object, where: Where) -> str:
    if not isinstance(value, str) or not value.strip():
        raise where.error(f"expected a non-empty string, got {value!r}")
    return value


def _table(value: object, where: Where, allowed: set[str], required: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(f"expected a table, got {value!r}")
    unknown_keys = sorted(set(value) - allowed)
    if unknown_keys:
        raise where.at(unknown_keys[0]).error(f"unknown key (allowed: {', '.join(sorted(allowed))})")
    for key in sorted(required):
        if key not in value:
            raise where.at(key).error("required")
    return value


def _first_line(exc: Exception) -> str:
    # packaging's parse errors add the input and a caret on further lines; a RuleError is one line.
    return (str(exc).splitlines() or [""])[0]


def _requirement(value: object, where: Where) -> Requirement:
    text = _string(value, where)
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        raise where.error(f"invalid requirement {text!r}: {_first_line(exc)}") from None


def _specifier(value: object, where: Where) -> SpecifierSet:
    text = _string(value, where)
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise where.error(f"invalid version specifier {text!r}") from None


def _regex(value: object, where: Where) -> str:
    text = _string(value, where)
    try:
        re.compile(text)
    except re.error as exc:
        raise where.error(f"invalid regular expression {text!r}: {exc}") from None
    return text

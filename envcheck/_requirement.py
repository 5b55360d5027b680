"""A fast reading of the common, simple Requires-Dist lines, giving the very `packaging` Requirement its own parser
gives.

`packaging` parses a requirement with a general tokenizer, about a tenth of a millisecond a line: at thousands of
distributions that was most of a static check. Nearly every real line has one plain shape: a name, maybe extras,
maybe comma-separated `OP VERSION` clauses with a plain release version (in parentheses or not), maybe a marker
(`torch>=2.1,<3`, `accelerate[torch]>=1.0; extra == "gpu"`). Such a line is split here with one regular
expression, and its parts are built with packaging's own classes: `SpecifierSet` from the clauses, and the marker
parsed by packaging (once per distinct marker text, as many lines share one). Anything else (URLs,
arbitrary-equality specifiers, epochs, local or non-canonical versions, unusual whitespace, names packaging would
read differently) answers None, and the caller gives the line to packaging's parser. tests/test_requirement.py
compares both on every line of the installed distributions and on tricky ones.
"""

from __future__ import annotations

import re

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

__all__ = ["simple_requirement"]

# packaging's whitespace is spaces and tabs only; a name ends with a letter or digit (a trailing '.', '-' or '_'
# is read differently by its tokenizer, so such names go to it).
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_RELEASE = r"[0-9]+(?:\.[0-9]+)*"
_PUBLIC = rf"{_RELEASE}(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?"
# `~=` needs two release segments; `.*` follows only a plain release and only with `==` / `!=`.
_CLAUSE = (rf"(?:(?:==|!=)[ \t]*{_RELEASE}\.\*|(?:==|!=|<=|>=|<|>)[ \t]*{_PUBLIC}"
           rf"|~=[ \t]*[0-9]+(?:\.[0-9]+)+(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?)")
_SIMPLE = re.compile(
    rf"[ \t]*(?P<name>{_NAME})[ \t]*"
    rf"(?:\[[ \t]*(?P<extras>{_NAME}(?:[ \t]*,[ \t]*{_NAME})*)[ \t]*\][ \t]*)?"
    rf"(?:(?P<specs>{_CLAUSE}(?:[ \t]*,[ \t]*{_CLAUSE})*)"
    rf"|\([ \t]*(?P<parenthesised>{_CLAUSE}(?:[ \t]*,[ \t]*{_CLAUSE})*)[ \t]*\))?[ \t]*"
    r"(?:;(?P<marker>.*))?"
)
_COMMA = re.compile(r"[ \t]*,[ \t]*")
_MARKERS: dict[str, Marker | None] = {}  # marker text -> packaging's reading of it (None: it does not parse)


def _marker(text: str) -> Marker | None:
    """The marker `text` as packaging reads it after a requirement's semicolon (extra names normalised, as
    Requirement does), or None when it does not parse there."""
    if text not in _MARKERS:
        try:
            _MARKERS[text] = Requirement(f"x;{text}").marker
        except InvalidRequirement:
            _MARKERS[text] = None
    return _MARKERS[text]


def simple_requirement(text: str) -> Requirement | None:
    """The Requirement packaging would make of `text` when `text` has the simple shape; None otherwise (which says
    nothing about whether packaging can parse it)."""
    match = _SIMPLE.fullmatch(text)
    if match is None:
        return None
    marker_text = match.group("marker")
    marker = None
    if marker_text is not None:
        marker = _marker(marker_text)
        if marker is None:
            return None
    specs = match.group("specs") or match.group("parenthesised")  # `name (>=1.0)`: the older spelling
    try:
        specifier = SpecifierSet(_COMMA.sub(",", specs) if specs else "")
    except InvalidSpecifier:
        return None
    req = Requirement.__new__(Requirement)
    req.name = match.group("name")
    req.url = None
    extras = match.group("extras")
    req.extras = set(_COMMA.split(extras)) if extras else set()
    req.specifier = specifier
    req.marker = marker
    return req

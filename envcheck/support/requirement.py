"""A fast reading of the common, simple Requires-Dist lines, giving the very `packaging` Requirement its own parser
gives.

`packaging` parses a requirement with a general tokenizer, about a tenth of a millisecond a line: at thousands of
distributions that was most of a static check. Nearly every real line has one plain shape: a name, maybe extras,
maybe comma-separated `OP VERSION` clauses with a plain release version (in parentheses or not), maybe a marker
(`torch>=2.1,<3`, `accelerate[torch]>=1.0; extra == "gpu"`). Such a line is split here with one regular
expression, and its parts are built with packaging's own classes: `SpecifierSet` from the clauses, and the marker
parsed by packaging (once per distinct marker text, as many lines share one). Anything else (URLs,
arbitrary-equality specifiers, epochs, local or non-canonical versions, unusual whitespace, names packaging would
read differently) answers None, and the caller gives the line to packaging's parser. tests/unit/test_requirement.py
compares both on every line of the installed distributions and on tricky ones.
"""

from __future__ import annotations

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envcheck.support.patterns import lazy

__all__ = ["simple_requirement"]

# packaging's whitespace is spaces and tabs only; a name ends with a letter or digit (a trailing '.', '-' or '_'
# is read differently by its tokenizer, so such names go to it). The line is cut into its parts first, then each
# extra and each clause is matched on its own: one pattern repeating the clause grammar took milliseconds to compile.
_NAME = lazy(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_SHAPE = lazy(r"[ \t]*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)[ \t]*"
              r"(?:\[(?P<extras>[^\]]*)\][ \t]*)?"
              r"(?:\((?P<parenthesised>[^()]*)\)|(?P<specs>[^;()@\[\]]*?))[ \t]*(?:;(?P<marker>.*))?")
# One `OP VERSION` clause with a plain public version: `~=` needs two release segments, `.*` follows only a plain
# release and only with `==` / `!=`.
_CLAUSE = lazy(r"(?:==|!=)[ \t]*[0-9]+(?:\.[0-9]+)*\.\*"
               r"|(?:==|!=|<=|>=|<|>|~=(?=[ \t]*[0-9]+\.[0-9]))[ \t]*[0-9]+(?:\.[0-9]+)*"
               r"(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?")
_STRIP = " \t"
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
    match = _SHAPE.fullmatch(text)
    if match is None:
        return None
    extras_text, specs = match.group("extras"), match.group("specs")
    if specs is None:  # `name (>=1.0)`: the older spelling
        specs = match.group("parenthesised")
        if not specs.strip(_STRIP):
            return None
    extras = [extra.strip(_STRIP) for extra in extras_text.split(",")] if extras_text is not None else []
    if not all(_NAME.fullmatch(extra) for extra in extras):
        return None  # also `[]` and `[a,]`, which packaging reads its own way
    clauses = [clause.strip(_STRIP) for clause in specs.split(",")] if specs.strip(_STRIP) else []
    if not all(_CLAUSE.fullmatch(clause) for clause in clauses):
        return None
    marker_text = match.group("marker")
    marker = None
    if marker_text is not None:
        marker = _marker(marker_text)
        if marker is None:
            return None
    try:
        specifier = SpecifierSet(",".join(clauses))
    except InvalidSpecifier:
        return None
    req = Requirement.__new__(Requirement)
    req.name = match.group("name")
    req.url = None
    req.extras = set(extras)
    req.specifier = specifier
    req.marker = marker
    return req

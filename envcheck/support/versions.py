"""envcheck's one way of reading versions, requirements and markers with `packaging`.

Everything here answers None for what does not parse, never raises: a bad version in someone's metadata is a
finding (or an unknown), not a crash. Parsed lines and versions are cached for the process.
"""

from __future__ import annotations

from typing import Protocol

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from envcheck.support.patterns import lazy
from envcheck.support.requirement import simple_requirement

__all__ = ["MAX_DIGITS", "MAX_PARENS", "major_minor", "major_minor_text", "marker_env", "marker_holds",
           "parse_requirement", "parse_version", "too_complex"]

# Parsed Requires-Dist lines and versions, shared by every snapshot evaluated in this process. Unbounded on
# purpose: an environment has at most some tens of thousands of distinct lines, and an LRU smaller than that
# thrashes (every line missed on every pass).
_REQUIREMENTS: dict[str, Requirement | None] = {}
_VERSIONS: dict[str, Version | None] = {}
_MAJOR_MINOR = lazy(r"(\d+)\.(\d+)(?:\.\d+)*")
# Begun only where a run of digits begins: tried inside one too, a search is quadratic in a long run of digits.
_FIRST_MAJOR_MINOR = lazy(r"(?<!\d)(\d+)\.(\d+)")
# The PEP 508 marker variables (and the legacy dotted spellings packaging still accepts), as they appear in a
# marker's text once its quoted values are removed.
_MARKER_VARIABLE = lazy(r"\b(?:os[._]name|sys[._]platform|platform[._]\w+|python_\w+|implementation_\w+|"
                        r"extra)\b")
_QUOTED = lazy(r"'[^']*'|\"[^\"]*\"")

# Bounds on what packaging is given. Its version parser converts each number with int(), which refuses more than
# 4,300 digits (ValueError, not InvalidVersion), and its marker parser recurses once per parenthesis
# (RecursionError). No real version has a number of 64 digits (a date-time stamp has 14), no real marker nests 32
# parentheses deep.
MAX_DIGITS = 64
MAX_PARENS = 32
_LONG_NUMBER = lazy(rf"\d{{{MAX_DIGITS + 1},}}")


def too_complex(text: str) -> str | None:
    """Why a version, specifier, requirement or marker is beyond what envcheck parses, or None."""
    if _LONG_NUMBER.search(text):
        return f"has a number of more than {MAX_DIGITS} digits"
    depth = deepest = 0
    for char in text:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    if deepest > MAX_PARENS:
        return f"nests parentheses more than {MAX_PARENS} deep"
    return None


def parse_requirement(text: str) -> Requirement | None:
    """The PEP 508 requirement `text`, or None when it does not parse."""
    if text not in _REQUIREMENTS:
        try:
            # The common simple lines are read without packaging's general parser, to the same Requirement.
            _REQUIREMENTS[text] = None if too_complex(text) else simple_requirement(text) or Requirement(text)
        except InvalidRequirement:
            _REQUIREMENTS[text] = None
    return _REQUIREMENTS[text]


def parse_version(text: str | None) -> Version | None:
    """The PEP 440 version `text`, or None when it is absent or does not parse."""
    if text is None:
        return None
    if text not in _VERSIONS:
        try:
            _VERSIONS[text] = None if too_complex(text) else Version(text)
        except InvalidVersion:
            _VERSIONS[text] = None
    return _VERSIONS[text]


def major_minor(text: str | None) -> tuple[int, int] | None:
    """(major, minor) of a dotted release such as a CUDA version or a compute capability: "12.4" -> (12, 4),
    "12.4.1" -> (12, 4); None for anything else ("12", "12.4a", "", None)."""
    match = _MAJOR_MINOR.fullmatch((text or "").strip())
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def major_minor_text(text: str | None) -> str | None:
    """The first major.minor in `text`, as the facts write a CUDA or ROCm release: "10.1.243" -> "10.1",
    "6.3.42131-fa1d09cbd" -> "6.3", "11.8rc1" -> "11.8"; None when it has none, or only one of numbers too long
    to be a version's (int() takes time quadratic in a number's length)."""
    match = _FIRST_MAJOR_MINOR.search(text or "")
    if match is None or len(match.group(1)) > MAX_DIGITS or len(match.group(2)) > MAX_DIGITS:
        return None
    return f"{int(match.group(1))}.{int(match.group(2))}"


class _Python(Protocol):
    @property
    def marker_environment(self) -> dict[str, str]: ...


class _Snapshot(Protocol):
    """What marker_env reads of a snapshot (envcheck/facts/snapshot.py's Facts), named here: facts/ sits above."""

    @property
    def python(self) -> _Python: ...


def marker_env(facts: _Snapshot, extra: str = "") -> dict[str, str]:
    """The PEP 508 marker environment of the checked interpreter, with `extra` set (to "" outside any extra, so
    that a marker naming `extra` evaluates instead of raising)."""
    return {**facts.python.marker_environment, "extra": extra}


def marker_holds(marker: Marker, env: dict[str, str]) -> bool | None:
    """Whether `marker` is true in `env`; None when it names a variable `env` lacks (a snapshot read from a report
    that does not state the OS or the Python) or cannot be compared. `packaging` would silently fill a missing
    variable from envcheck's own interpreter, which is the wrong machine."""
    names = {name.replace(".", "_") for name in _MARKER_VARIABLE.findall(_QUOTED.sub("", str(marker)))}
    if any(name not in env for name in names):
        return None
    try:
        return marker.evaluate(env)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return None

"""tomllib, or its backport tomli on Python 3.10: the one import shim every TOML reader uses.

`loads` refuses a text nested deeper than MAX_DEPTH before tomllib reads it (toml_depth.py): tomllib's time and
memory grow with the square of a key's depth, so a small hostile pyproject.toml would otherwise cost minutes and
gigabytes in every reader, those that parse a file whole with no other bound included.
"""

from __future__ import annotations

import sys
from typing import Any

from envcheck.support.toml_depth import too_deep_at

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 in CI
    import tomli as tomllib

__all__ = ["MAX_DEPTH", "TOMLDecodeError", "TooDeep", "loads"]

MAX_DEPTH = 64  # input_files.MAX_DEPTH: the deepest real input (a rule's condition tree) is about 12 levels

TOMLDecodeError = tomllib.TOMLDecodeError


class TooDeep(tomllib.TOMLDecodeError):  # type: ignore[misc,no-any-unimported]  # tomli is untyped on 3.10
    """A text nested deeper than MAX_DEPTH: a TOMLDecodeError, so that every reader refuses it as invalid TOML."""

    def __init__(self, key: str, line: int) -> None:
        # ValueError's own __init__: TOMLDecodeError's takes (msg, doc, pos) on Python 3.14, a message before that.
        ValueError.__init__(self, f"key '{key}': nested more than {MAX_DEPTH} deep (at line {line})")
        self.key = key
        self.line = line


def loads(text: str) -> dict[str, Any]:
    """tomllib.loads(text), after refusing nesting deeper than MAX_DEPTH (TooDeep)."""
    deep = too_deep_at(text, MAX_DEPTH)
    if deep is not None:
        raise TooDeep(*deep)
    data: dict[str, Any] = tomllib.loads(text)
    return data

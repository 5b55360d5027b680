"""tomllib, or its backport tomli on Python 3.10: the one import shim every TOML reader uses.

The parser is imported on the first `loads` (or the first look at `TOMLDecodeError`), not with this module: a
static check whose rule pack comes from its cache and whose folder holds no pyproject.toml or envcheck.toml reads
no TOML, and tomllib's import (it compiles its regular expressions and imports datetime) was about 2% of that
check's instructions (bench/README.md, "The first run").

`loads` refuses a text nested deeper than MAX_DEPTH before tomllib reads it (toml_depth.py): tomllib's time and
memory grow with the square of a key's depth, so a small hostile pyproject.toml would otherwise cost minutes and
gigabytes in every reader, those that parse a file whole with no other bound included.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any

from envcheck.support.toml_depth import too_deep_at

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from tomllib import TOMLDecodeError as TOMLDecodeError
    else:
        from tomli import TOMLDecodeError as TOMLDecodeError
    TooDeep = TOMLDecodeError  # at run time a subclass of it, made on first use (_too_deep_class)

__all__ = ["MAX_DEPTH", "TOMLDecodeError", "TooDeep", "loads"]

MAX_DEPTH = 64  # input_files.MAX_DEPTH: the deepest real input (a rule's condition tree) is about 12 levels


def _parser() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 in CI
        import tomli as tomllib
    return tomllib


@functools.cache
def _too_deep_class() -> type[ValueError]:
    """TooDeep, made on first use: it subclasses the parser's TOMLDecodeError, imported only when TOML is read."""

    class TooDeep(_parser().TOMLDecodeError):  # type: ignore[misc]  # tomli is untyped on 3.10
        """A text nested deeper than MAX_DEPTH: a TOMLDecodeError, so that every reader refuses it as invalid
        TOML."""

        def __init__(self, key: str, line: int) -> None:
            # ValueError's own __init__: TOMLDecodeError's takes (msg, doc, pos) on Python 3.14, a message before.
            ValueError.__init__(self, f"key '{key}': nested more than {MAX_DEPTH} deep (at line {line})")
            self.key = key
            self.line = line

    return TooDeep


def loads(text: str) -> dict[str, Any]:
    """The parsed TOML document `text`, after refusing nesting deeper than MAX_DEPTH (TooDeep); raises
    TOMLDecodeError."""
    deep = too_deep_at(text, MAX_DEPTH)
    if deep is not None:
        raise _too_deep_class()(*deep)
    data: dict[str, Any] = _parser().loads(text)
    return data


def __getattr__(name: str) -> Any:
    # `except toml.TOMLDecodeError` (and `toml.TooDeep`) looks the class up only when an exception is being matched.
    if name == "TOMLDecodeError":
        return _parser().TOMLDecodeError
    if name == "TooDeep":
        return _too_deep_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

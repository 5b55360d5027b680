"""tomllib, or its backport tomli on Python 3.10: the one import shim every TOML reader uses.

The parser is imported on the first `loads` (or the first look at `TOMLDecodeError`), not with this module: a
static check whose rule pack comes from its cache and whose folder holds no pyproject.toml or envcheck.toml reads
no TOML, and tomllib's import (it compiles its regular expressions and imports datetime) was about 2% of that
check's instructions (bench/README.md, "The first run").
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from tomllib import TOMLDecodeError as TOMLDecodeError
    else:
        from tomli import TOMLDecodeError as TOMLDecodeError

__all__ = ["TOMLDecodeError", "loads"]


def _parser() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 in CI
        import tomli as tomllib
    return tomllib


def loads(text: str) -> dict[str, Any]:
    """The parsed TOML document `text`; raises TOMLDecodeError."""
    data: dict[str, Any] = _parser().loads(text)
    return data


def __getattr__(name: str) -> Any:
    # `except toml.TOMLDecodeError` looks the class up only when an exception is being matched.
    if name == "TOMLDecodeError":
        return _parser().TOMLDecodeError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

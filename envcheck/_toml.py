"""tomllib, or its backport tomli on Python 3.10: the one import shim every TOML reader uses."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 in CI
    import tomli as tomllib

__all__ = ["TOMLDecodeError", "load", "loads"]

TOMLDecodeError = tomllib.TOMLDecodeError
loads = tomllib.loads


def load(path: Path) -> dict[str, Any]:
    """The parsed file; OSError and TOMLDecodeError propagate for the caller to name its own error."""
    with path.open("rb") as fh:
        data: dict[str, Any] = tomllib.load(fh)
    return data

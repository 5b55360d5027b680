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
    """The parsed file, read by envcheck._files (regular file, bounded size and depth, UTF-8): anything wrong with
    it is an InputError naming the file. Readers that name their own error call `_files.load_toml(error=...)`."""
    from envcheck import _files  # imported here: _files imports this module

    return _files.load_toml(path)

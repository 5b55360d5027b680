"""tomllib, or its backport tomli on Python 3.10: the one import shim every TOML reader uses."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 in CI
    import tomli as tomllib

__all__ = ["TOMLDecodeError", "loads"]

TOMLDecodeError = tomllib.TOMLDecodeError
loads = tomllib.loads

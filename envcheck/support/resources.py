"""Where the shipped rule pack lives: the one place that knows it.

The wheel carries the repository's rules/ as envcheck/_rules (pyproject.toml force-includes it); a source
checkout or an editable install reads rules/ beside the package. A leaf module, so that anything may import it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["builtin_rules_dir", "data_dir"]

_PACKAGE = Path(__file__).resolve().parent.parent  # envcheck/, two levels above envcheck/support/resources.py


def builtin_rules_dir() -> Path:
    """The shipped pack: inside the installed wheel, or the repository's rules/ in a source checkout."""
    packaged = _PACKAGE / "_rules"
    return packaged if packaged.is_dir() else _PACKAGE.parent / "rules"


def data_dir(rules_dir: Path | None = None) -> Path:
    """The data tables of a rule directory (the shipped pack's by default): `rules/data/*.toml`."""
    return (rules_dir or builtin_rules_dir()) / "data"

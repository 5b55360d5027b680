"""envcheck's source files that run in envcheck's own process: every module but the two that run standalone inside
the checked interpreter (standard library only, Python 3.8; CONTRIBUTING.md, "Risky to touch"). The import-cost
guard (tests/unit/test_patterns.py) reads these."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "envcheck"
STANDALONE = frozenset({"sources/live/_collector.py", "sources/probes/_child.py"})


def in_process_sources() -> Iterator[tuple[str, Path]]:
    """(path relative to envcheck/, path) of each in-process module, sorted."""
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative not in STANDALONE:
            yield relative, path

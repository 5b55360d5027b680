"""Regular expressions compiled when first used rather than when their module is imported.

A static check imports about a hundred envcheck modules holding some 150 module-level patterns, and on a typical
environment uses about a quarter of them: compiling the rest cost ~8 ms of a check that should stay well under a
second, and most of the way to the first run's target (bench/README.md). `lazy(r"...")` stands where
`re.compile(r"...")` stood and answers the same calls; the pattern is compiled once, by the first of them. (Django's
`_lazy_re_compile` does the same for the same reason.)

Not for envcheck/sources/live/_collector.py or envcheck/sources/probes/_child.py: they run standalone, with the standard
library alone.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["LazyPattern", "lazy"]


class LazyPattern:
    """A `re.Pattern[str]` compiled on its first use; the methods envcheck calls, with re's signatures.

    The first call compiles the pattern and puts the compiled pattern's own methods in the instance's `__dict__`,
    where they shadow the class's: every later call is the C method itself, as fast as on a compiled pattern."""

    def __init__(self, source: str, flags: int = 0) -> None:
        self.pattern = source
        self._flags = flags

    def _compile(self) -> re.Pattern[str]:
        compiled = re.compile(self.pattern, self._flags)
        self.__dict__.update(match=compiled.match, fullmatch=compiled.fullmatch,
                             search=compiled.search, finditer=compiled.finditer, findall=compiled.findall,
                             split=compiled.split, sub=compiled.sub, subn=compiled.subn)
        return compiled

    @property
    def flags(self) -> int:
        return self._compile().flags

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._compile().match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._compile().fullmatch(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._compile().search(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self._compile().finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self._compile().findall(string, pos, endpos)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self._compile().split(string, maxsplit)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self._compile().sub(repl, string, count)

    def subn(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> tuple[str, int]:
        return self._compile().subn(repl, string, count)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r})"


def lazy(source: str, flags: int = 0) -> LazyPattern:
    """`re.compile(source, flags)`, deferred to the first match, search or substitution."""
    return LazyPattern(source, flags)

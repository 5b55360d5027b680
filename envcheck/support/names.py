"""A distribution's (or an extra's, PEP 685) name normalised as PEP 503 says: envcheck's one copy.

The two programs that run inside the checked interpreter (sources/live/_collector.py, sources/probes/_child.py) use it
too, where envcheck cannot be imported: they import it like any module, and the parent writes their program with that
import line replaced by this file's text (`inline`). So this module keeps to what they may run: the standard library and
the syntax of Python 3.8 (no `from __future__` line, which must open a file, and no annotation evaluated at import
that 3.8 cannot evaluate).
"""

import functools
import re

IMPORT_LINE = "from envcheck.support.names import canonical_name\n"


# Memoised: snapshots name the same distributions again, and a pasted report can list tens of thousands of names.
@functools.lru_cache(maxsize=None)  # noqa: UP033 - functools.cache is 3.9's; this runs on 3.8 too
def canonical_name(name: str) -> str:
    """`name` the way packaging.utils.canonicalize_name writes it: "Pytorch_Lightning" -> "pytorch-lightning".
    Lower case first, then "_" and "." as "-": the common spellings need no regular expression."""
    key = name.lower().replace("_", "-").replace(".", "-")
    return re.sub("-{2,}", "-", key) if "--" in key else key


def inline(source: str) -> str:
    """`source`, a program that runs where envcheck is not installed, with its line `IMPORT_LINE` replaced by this
    module's text."""
    if IMPORT_LINE not in source:
        raise ValueError(f"the program does not import canonical_name as {IMPORT_LINE.strip()!r}")
    with open(__file__, encoding="utf-8") as own:  # noqa: PTH123 - pathlib would be imported for this one read
        return source.replace(IMPORT_LINE, own.read(), 1)

"""The requirement walk's result, remembered between runs: its key, and its JSON form read back with every field
checked.

The walk (envcheck/derived/requirements.py) parses and judges every reachable Requires-Dist line: at 2,000 distributions
that is most of a static check. Its result depends only on what the key digests: the active distribution of every
name in import-path order (name, version, whether its metadata is broken or its requirements unstated, its
Requires-Dist lines), whether the distribution list is complete, the checked interpreter's marker environment, and
the code that walks (envcheck's version, packaging's, and the files that hold the walk). Nothing else is read, so a
remembered result under the same key is the result the walk would compute; any change to an input is another key.

Where results are kept is the caller's choice (a `Memo`: envcheck.cache.signed.SignedMemo keeps them signed in the
user's cache directory, never in the checked environment); the evaluation itself does no I/O. An entry that does not
decode to exactly what `dumps` writes is ignored, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from envcheck.facts.snapshot import Facts

_FORMAT = 1  # bumped when the walk's meaning or this encoding changes


class Memo(Protocol):
    """Somewhere to keep a payload under a name and a key, and get it back only under the same key."""

    def load(self, name: str, key: str) -> bytes | None: ...

    def store(self, name: str, key: str, payload: bytes) -> None: ...


def _code_lines() -> list[str]:
    """envcheck's and packaging's versions, and the stamp of each file the walk's code is in: an editable checkout
    changes without a new version."""
    import packaging

    from envcheck.facts import snapshot  # canonical_name: how names and extras compare
    from envcheck.support import requirement, versions
    from envcheck.version import __version__

    lines = [str(_FORMAT), __version__, packaging.__version__, sys.version]
    # The walk itself (named, not imported: it imports this module).
    walk_file = os.path.join(os.path.dirname(__file__), "requirements.py")  # noqa: PTH118, PTH120 - as __file__
    for path in (walk_file, *(getattr(module, "__file__", None) or "" for module in (
            versions, requirement, snapshot, sys.modules[__name__]))):
        try:
            st = os.stat(path)  # noqa: PTH116 - a module's __file__ is a str
            lines.append(f"{path}\0{st.st_mtime_ns}\0{st.st_size}")
        except OSError:
            lines.append(f"{path}\0?")
    return lines


def name(facts: Facts) -> str:
    """The entry's name: one per checked interpreter, so that checking two environments in turn keeps both."""
    return "walk-" + hashlib.sha256(facts.python.executable.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def key(facts: Facts) -> str:
    """A digest of everything the walk reads (see the module's docstring)."""
    active = [(canonical, d.canonical_name, d.name, d.version, bool(d.problems), d.requires_known, d.requires)
              for canonical, (d, *_) in facts.names.items()]
    # JSON keeps every field and line apart (and is encoded in C: a 2,000-distribution key costs milliseconds).
    # ASCII JSON: any string, a lone surrogate from an undecodable folder name included, encodes.
    text = json.dumps([_code_lines(), sorted(facts.python.marker_environment.items()),
                       facts.distributions_complete, active])
    h = hashlib.sha256(text.encode("ascii"))
    return h.hexdigest()


def dumps(problems: list[dict[str, str]], invalid: dict[str, list[str]], incomplete: bool) -> bytes:
    # ASCII JSON round-trips every string exactly, lone surrogates included.
    return json.dumps({"problems": problems, "invalid": invalid, "incomplete": incomplete}).encode("ascii")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def loads(payload: bytes, fields: tuple[str, ...]) -> tuple[list[dict[str, str]], dict[str, list[str]], bool] | None:
    """What `dumps` wrote, with each problem holding exactly `fields` as strings; None for anything else."""
    try:
        data = json.loads(payload.decode("ascii"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(data, dict) or set(data) != {"problems", "invalid", "incomplete"}:
        return None
    problems, invalid, incomplete = data["problems"], data["invalid"], data["incomplete"]
    if not isinstance(incomplete, bool) or not isinstance(problems, list) or not isinstance(invalid, dict):
        return None
    wanted = set(fields)
    for item in problems:
        if not isinstance(item, dict) or set(item) != wanted or not all(isinstance(v, str) for v in item.values()):
            return None
    if not all(isinstance(k, str) and _strings(v) for k, v in invalid.items()):
        return None
    return problems, invalid, incomplete

"""The stamp of a rule pack: a digest of envcheck's code and of every rule and table file the pack is made of.

The cached pack (envcheck/rules/rule_pack.py) is stored under it, and a replayed static check
(envcheck/pipeline/replay.py) compares it again, so both agree on what "the same rules" means. Standard library only:
the replay must not import the rules.
"""

from __future__ import annotations

import hashlib
import os
import sys

from envcheck.version import __version__

TYPE_CHECKING = False  # not typing's: the replay imports this module, and typing costs more than it does
if TYPE_CHECKING:
    from collections.abc import Sequence

PACK_FORMAT = 3  # bumped when a cached pack's meaning changes without a change to envcheck's code (2: plain data;
# 3: the objects' shapes written once)
# envcheck/ itself, two levels above envcheck/cache/pack_stamp.py: the whole package's code.
_CODE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # noqa: PTH100, PTH120 - os.scandir takes a str


def _tree_lines(top: str, suffix: str, lines: list[str]) -> None:
    """A line per file ending in `suffix` under `top` (recursively) and per folder, with its inode, mtime and size:
    a file added, removed, edited or replaced changes at least one of them."""
    st = os.stat(top)  # noqa: PTH116 - os.scandir below yields plain strings; Path objects would cost more here
    lines.append(f"{top}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_size}")
    with os.scandir(top) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_dir() and entry.name != "__pycache__":
                _tree_lines(entry.path, suffix, lines)
            elif entry.name.endswith(suffix) and entry.is_file():
                st = entry.stat()
                lines.append(f"{entry.path}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_size}")


def pack_stamp(dirs: Sequence[str | os.PathLike[str]]) -> str | None:
    """A digest of everything a loaded pack depends on: envcheck's version and code (an editable checkout changes
    without a new version; the cached pack's classes must match), the interpreter, and every rule and table file of the
    rule directories `dirs` (the shipped one first). None when a folder cannot be read."""
    lines = [__version__, sys.version, str(PACK_FORMAT)]
    try:
        _tree_lines(_CODE, ".py", lines)
        for directory in dirs:
            absolute = os.path.abspath(directory)  # noqa: PTH100 - no pathlib: see TYPE_CHECKING above
            lines.append(f"dir\0{absolute}")
            if os.path.isdir(absolute):  # noqa: PTH112 - a missing one is an error on load, never cached
                _tree_lines(absolute, ".toml", lines)
    except OSError:
        return None
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()

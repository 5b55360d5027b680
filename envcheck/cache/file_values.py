"""A cache of values computed from files, keyed by each file's path, mtime and size: one JSON file per checked
environment in envcheck's cache directory (envcheck.cache.signed.usable_dir: the user's own, private, outside the
checked environment). The native-library scan keeps each shared object's ELF needs and each RECORD's shared objects
here. Only the entries a run used are written back, so those of uninstalled files drop out; a value read back is trusted
only after its caller has checked its shape.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat as stat_module
from pathlib import Path
from typing import Any

_FORMAT = 2  # 2: ELF entries hold each family's highest need, not every version named


def stamp(path: str) -> list[int] | None:
    """[mtime, size] of a regular file; None for anything else (a FIFO would block the read that follows)."""
    try:
        st = os.stat(path)  # noqa: PTH116 - one stat per shared object; a Path per file would cost more
    except (OSError, ValueError):
        return None
    return [st.st_mtime_ns, st.st_size] if stat_module.S_ISREG(st.st_mode) else None


class FileCache:
    """kind:path -> [stamp, value] entries; `directory` None caches nothing (--no-cache, no usable directory)."""

    def __init__(self, directory: Path | None, prefix: str) -> None:
        self.file = None if directory is None else directory / (
            "native-" + hashlib.sha256(prefix.encode("utf-8", "surrogateescape")).hexdigest()[:24] + ".json")
        self.entries: dict[str, Any] = {}
        self.used: dict[str, Any] = {}
        if self.file is not None:
            try:
                with self.file.open(encoding="utf-8") as fh:
                    data = json.load(fh)
                if isinstance(data, dict) and data.get("format") == _FORMAT and isinstance(data.get("entries"), dict):
                    self.entries = data["entries"]
            except (OSError, ValueError, RecursionError):
                self.entries = {}

    def get(self, kind: str, path: str, file_stamp: list[int]) -> Any:
        """The value stored for `path` while its stamp is `file_stamp`, else None."""
        entry = self.entries.get(kind + ":" + path)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == file_stamp:
            self.used[kind + ":" + path] = entry
            return entry[1]
        return None

    def put(self, kind: str, path: str, file_stamp: list[int], value: Any) -> None:
        self.used[kind + ":" + path] = [file_stamp, value]

    def save(self) -> None:
        """Write what this run used, atomically, when it differs from what was read; failing to write is harmless."""
        if self.file is None or self.used == self.entries:
            return
        import tempfile  # only when writing: most runs find every value unchanged and write nothing

        try:
            fd, tmp = tempfile.mkstemp(dir=str(self.file.parent), suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"format": _FORMAT, "entries": self.used}, fh)
                Path(tmp).replace(self.file)
            except BaseException:
                Path(tmp).unlink()
                raise
        except (OSError, TypeError, ValueError):
            pass

"""A project file that cannot be read: one line naming the file and the line."""

from __future__ import annotations

from envcheck.errors import EnvcheckError


class ProjectError(EnvcheckError):
    """A project file envcheck cannot use (unparsable requirement, include loop, lock of an unknown version)."""

    def __init__(self, file: str, message: str, *, line: int | None = None, key: str | None = None) -> None:
        self.file = file
        self.line = line
        self.key = key
        where = f"{file}:{line}" if line else file
        if key:
            where += f": key '{key}'"
        super().__init__(f"{where}: {message}")

"""The uv and conda envcheck found for the checked environment (`Found`), which envcheck/remedy/consent.py lets run a
plan's commands unasked. Imported where a plan is made from facts: a check whose report has no fix plan never
defines the class."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envcheck.facts.snapshot import Facts


@dataclass(frozen=True)
class Found:
    """The uv and conda envcheck found for the checked environment, each as the file the OS runs for it."""

    uv: str | None
    conda: str | None

    @classmethod
    def of(cls, facts: Facts) -> Found:
        found = facts.installer
        if found is None:  # a snapshot older than the installer fact: its commands are pip's
            return cls(None, None)
        return cls(uv=None if found.uv is None else resolved(found.uv),
                   conda=None if found.conda is None else resolved(found.conda))


def resolved(executable: str) -> str:
    """The file `executable` runs: a bare name as PATH's absolute entries find it (as `envcheck fix` starts it: a
    relative entry such as `.` would make a project's `./uv` the one found), a path from the working directory,
    symbolic links followed. A bare name PATH does not find stays bare: no path equals it."""
    if os.sep not in executable and not (os.altsep and os.altsep in executable):
        from envcheck.sources.probes.children import which  # not at import: the reports' listing never looks on PATH

        on_path = which(executable)
        if on_path is None:
            return executable
        executable = on_path
    return os.path.realpath(executable)

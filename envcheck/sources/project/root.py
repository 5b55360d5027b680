"""Where a project is: the names of the files that make a folder a project, and the nearest such folder.

Apart from discover.py so that a check run where there is no project (a CI job in a scratch folder, a notebook's
home) finds that out without importing the readers of those files (their dataclasses, packaging's markers).
"""

from __future__ import annotations

from pathlib import Path

PYPROJECT, SETUP_CFG, REQUIREMENTS = "pyproject.toml", "setup.cfg", "requirements.txt"
CONDA = ("environment.yml", "environment.yaml")
# file name -> (tool, the command that syncs the environment to the lock in that tool)
LOCKS = {
    "uv.lock": ("uv", "uv sync"),
    "pylock.toml": ("pylock", "uv pip sync pylock.toml"),
    "poetry.lock": ("poetry", "poetry sync"),
    "pdm.lock": ("pdm", "pdm sync"),
    "pixi.lock": ("pixi", "pixi install"),  # YAML: read by sources/project/pixi.py (discover.read_lock chooses)
}
MARKERS = (PYPROJECT, SETUP_CFG, REQUIREMENTS, *CONDA, *LOCKS)


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` that holds a project file."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / name).is_file() for name in MARKERS):
            return folder
    return None

"""Which installer can change the checked environment: pip inside it, uv beside it, conda for what conda installed.

Collected by the fact collector (envcheck/sources/live/_collector.py) in the checked interpreter;
remedy/commands/installers.py turns the pack's `{python} -m pip ...` commands into what this environment runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.facts._reader import Reader


@dataclass(frozen=True)
class InstallerFacts:
    """What can install into and remove from the checked environment."""

    pip: bool  # `pip` is importable by the checked interpreter (found without importing it): `python -m pip` runs
    ensurepip: bool  # `python -m ensurepip` can install pip (the module ships a pip wheel)
    uv_venv: str | None  # the uv version that made this virtual environment (pyvenv.cfg `uv = ...`); None: not uv's
    uv: str | None  # how to run uv: "uv" when the PATH finds it, else an absolute path; None: no uv found
    conda: str | None  # how to run conda (or mamba / micromamba): a name on PATH or an absolute path; None: none
    conda_owned: dict[str, str]  # canonical distribution name -> the conda package that installed it
    pixi: str | None = None  # the manifest (pixi.toml, or pyproject.toml with [tool.pixi]) of the pixi project
    # whose environment this is (PROJECT/.pixi/envs/NAME); None: not a pixi environment, or not recorded

    @classmethod
    def from_reader(cls, r: Reader) -> InstallerFacts:
        return cls(
            pip=r.flag("pip"), ensurepip=r.flag("ensurepip"), uv_venv=r.opt_text("uv_venv"), uv=r.opt_text("uv"),
            conda=r.opt_text("conda"), conda_owned=r.text_map("conda_owned"), pixi=r.opt_text("pixi"),
        )

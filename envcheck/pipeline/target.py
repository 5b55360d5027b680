"""Which interpreter a check is about: the one the user means, however envcheck itself was installed.

envcheck is often installed where it cannot see the project: `pipx install`, `uv tool install`, `uvx` and
pre-commit each give it an isolated environment of its own. Checking that environment would report on envcheck's
few dependencies and say nothing about the project. So the interpreter is chosen in this order, the first that
applies winning (docs/usage.md, "Which environment is checked"):

1. `--python PATH` (the library's `python=`);
2. an activated environment: `$VIRTUAL_ENV`, then `$CONDA_PREFIX` unless it is conda's base environment;
3. the project's environment, found from the working directory: `$UV_PROJECT_ENVIRONMENT` when the working
   directory is inside a project (a pyproject.toml at or above it); else the nearest folder at or above the
   working directory that holds a `.pdm-python` file, a `.venv` or a `venv` environment (in that order);
4. conda's base environment (`$CONDA_PREFIX` with `$CONDA_DEFAULT_ENV` "base");
5. the interpreter envcheck runs in, unless it is an isolated tool environment: then `TargetError`.

Decisions, with their reasons:
- Conda's base environment is activated in every shell by default (`auto_activate_base`), so an active base says
  nothing about the user's intent: it ranks below the project's `.venv`. conda names the base environment "base"
  in `$CONDA_DEFAULT_ENV` (`"root"` before conda 4.4). `$CONDA_SHLVL` is not read: conda unsets `$CONDA_PREFIX`
  when the last environment is deactivated, and with stacked activations `$CONDA_PREFIX` is the innermost one.
- An activation variable that names an isolated tool environment is passed over: pre-commit sets `$VIRTUAL_ENV`
  (python hooks) or `$CONDA_PREFIX` (conda hooks) to the hook's own environment.
- A variable or folder that names an environment without an interpreter is an error, not a reason to look
  further: checking some other environment instead would be the surprise this module exists to prevent.
- pdm records the interpreter a project uses in `.pdm-python`; its default is an in-project `.venv`. PEP 582
  `__pypackages__` folders have no interpreter of their own and are not looked at.

Isolated tool environments are recognised by what their tools write into them (verified against the tools
themselves): pipx's `pipx_metadata.json` (pipx install and pipx run), uv's `uv-receipt.toml` (uv tool install),
the folder layout of uv's cache for `uvx` / `uv tool run` (`<cache>/archive-vN/<id>`, the cache root tagged
with CACHEDIR.TAG), and pre-commit's `.install_state_v1` / `.install_state_v2` files in a hook environment.

Only the file system and the given environment variables are read; nothing is run.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from envcheck.errors import EnvcheckError
from envcheck.rules.model import Target
from envcheck.support import input_files
from envcheck.support.patterns import lazy

_UV_CACHE_BUCKET = lazy(r"archive-v\d+")
_UV_WORKSPACE = lazy(r"^\s*\[tool\.uv\.workspace\]", re.MULTILINE)
_PROJECT_VENVS = (".venv", "venv")
_BASE_NAMES = ("base", "root")  # $CONDA_DEFAULT_ENV of conda's base environment (root: conda before 4.4)
_NAME_IT = "name the interpreter to check with --python PATH"


class TargetError(EnvcheckError):
    """The interpreter to check cannot be decided, or what names it holds none (exit 2, one line)."""


@dataclass(frozen=True)
class Surroundings:
    """What discovery reads besides the file system: the working directory, the environment variables, and the
    interpreter envcheck runs in. `current()` gives the real ones; tests give their own."""

    cwd: Path
    environ: Mapping[str, str]
    own_prefix: str  # sys.prefix
    own_executable: str  # sys.executable
    windows: bool  # Windows layouts: Scripts\\python.exe in a venv, python.exe at a conda prefix

    @classmethod
    def current(cls, cwd: str | os.PathLike[str] | None = None) -> Surroundings:
        try:
            # absolute(), not resolve(): the paths shown keep the user's spelling of a symlinked folder.
            folder = (Path.cwd() if cwd is None else Path(cwd)).absolute()
        except OSError as exc:  # the working directory was deleted under the shell
            raise TargetError(f"cannot read the working directory ({exc.strerror or exc}); change to the "
                              f"project's folder, or {_NAME_IT}") from None
        return cls(cwd=folder, environ=os.environ, own_prefix=sys.prefix, own_executable=sys.executable,
                   windows=os.name == "nt")


def interpreter_in(prefix: Path, *, windows: bool) -> Path | None:
    """The Python executable of the environment at `prefix`, or None when it holds none.

    venv and virtualenv: bin/python (Scripts\\python.exe on Windows); conda: bin/python (python.exe at the prefix
    on Windows). A venv's bin/python may be a symlink to a base interpreter that is gone: that counts as none.
    """
    names = ("Scripts/python.exe", "python.exe") if windows else ("bin/python", "bin/python3")
    for name in names:
        candidate = prefix.joinpath(*name.split("/"))
        if candidate.is_file():
            return candidate
    return None


def is_environment(path: Path) -> bool:
    """A venv / virtualenv (pyvenv.cfg) or a conda environment (conda-meta/)."""
    return (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir()


def tool_environment(prefix: str | os.PathLike[str]) -> str | None:
    """What made `prefix` an isolated tool environment, in words ("pipx's isolated environment"), or None."""
    root = Path(prefix)
    if (root / "pipx_metadata.json").is_file():  # pipx/pipx_metadata_file.py: PIPX_INFO_FILENAME
        return "pipx's isolated environment"
    if (root / "uv-receipt.toml").is_file():  # written by `uv tool install` at the tool environment's root
        return "the isolated environment of `uv tool install`"
    if (root / ".install_state_v1").is_file() or (root / ".install_state_v2").is_file():  # pre-commit/repository.py
        return "a pre-commit hook environment"
    real = Path(os.path.realpath(root))  # uv's environments-vN/ entries are symlinks into archive-vN/
    if _UV_CACHE_BUCKET.fullmatch(real.parent.name) and (real.parent.parent / "CACHEDIR.TAG").is_file():
        return "a throwaway environment of uvx / uv tool run (in uv's cache)"
    return None


def pytest_plugin_note(target: Target | None, installed: set[str], own_prefix: str | None = None) -> str:
    """A sentence for the report when `pytest --envcheck` cannot work in the checked environment although pytest
    is there: envcheck runs from an isolated tool environment (pipx, `uv tool`, uvx) and is not installed beside
    pytest, whose plugins are those of its own environment (`installed`: its distributions' canonical names).
    "" otherwise, and for a snapshot, which is no environment pytest runs in."""
    if target is None or target.in_process or target.source == "snapshot":
        return ""
    if "pytest" not in installed or "envcheck-ml" in installed:
        return ""
    tool = tool_environment(sys.prefix if own_prefix is None else own_prefix)
    if tool is None:
        return ""
    return (f"pytest here cannot load envcheck's plugin (`pytest --envcheck`): envcheck runs from {tool}; "
            "install envcheck into this environment, beside pytest, to use it")


def shown(path: Path, cwd: Path) -> str:
    """`path` as the report shows it: relative (./.venv) when under the working directory, else absolute."""
    try:
        relative = path.relative_to(cwd)
    except ValueError:
        return str(path)
    return f".{os.sep}{relative}" if relative.parts else "."


def discover(python: str | os.PathLike[str] | None = None, *, where: Surroundings | None = None,
             option: str = "--python") -> Target:
    """The interpreter to check, in the order of this module's docstring. `option` names how `python` was given.

    Raises TargetError when a variable or folder names an environment without an interpreter, or when nothing
    but envcheck's own isolated tool environment is left.
    """
    if python is not None:
        return Target(python=os.fspath(python), source="python-option", reason=f"from {option}", in_process=False)
    here = where or Surroundings.current()
    found = _activated(here) or _project(here) or _conda_base(here)
    if found is not None:
        return found
    tool = tool_environment(here.own_prefix)
    if tool is not None:
        raise TargetError(f"envcheck runs in {tool} at {here.own_prefix}, which is never checked by default, "
                          "and no other environment was found (no $VIRTUAL_ENV or $CONDA_PREFIX, no .venv or venv "
                          f"at or above {here.cwd}): run envcheck in the project's folder, activate the project's "
                          f"environment, or {_NAME_IT}")
    return own(here, "envcheck's own interpreter (no activated or project environment was found)")


def own(here: Surroundings | None = None, reason: str = "the running interpreter") -> Target:
    """The interpreter envcheck runs in, checked in-process."""
    executable = sys.executable if here is None else here.own_executable
    return Target(python=executable, source="self", reason=reason, in_process=True)


def _environment(prefix: Path, source: str, reason: str, what: str, here: Surroundings) -> Target:
    """The target for the environment at `prefix` (in-process when it is envcheck's own); `what` names where
    `prefix` came from, for the error."""
    executable = interpreter_in(prefix, windows=here.windows)
    if executable is None:
        layout = "Scripts\\python.exe or python.exe" if here.windows else "bin/python"
        remedy = {"$VIRTUAL_ENV": "deactivate it or recreate that environment",
                  "$CONDA_PREFIX": "deactivate it or recreate that environment",
                  "$UV_PROJECT_ENVIRONMENT": "create it (`uv sync`)"}.get(what, "recreate it")
        named = f"{what} names {prefix}, which" if what.startswith("$") else f"{what} is an environment that"
        raise TargetError(f"{named} holds no Python interpreter ({layout}): {remedy}, or {_NAME_IT}")
    if os.path.realpath(prefix) == os.path.realpath(here.own_prefix):
        # The same environment: collect in-process, with the executable the facts will name.
        return Target(python=here.own_executable, source=source, reason=reason, in_process=True)
    return Target(python=str(executable), source=source, reason=reason, in_process=False)


def _variable(here: Surroundings, name: str) -> Path | None:
    """The environment named by the variable `name`, unless unset, empty, or an isolated tool environment."""
    value = here.environ.get(name, "")
    if not value:
        return None
    prefix = here.cwd / value  # an absolute value stays as it is
    return None if tool_environment(prefix) is not None else prefix


def _activated(here: Surroundings) -> Target | None:
    venv = _variable(here, "VIRTUAL_ENV")
    if venv is not None:
        return _environment(venv, "virtual-env", "from $VIRTUAL_ENV", "$VIRTUAL_ENV", here)
    conda = _variable(here, "CONDA_PREFIX")
    name = here.environ.get("CONDA_DEFAULT_ENV", "")
    if conda is not None and name not in _BASE_NAMES:
        label = f" (conda environment {name})" if name and name != str(conda) else ""
        return _environment(conda, "conda-env", f"from $CONDA_PREFIX{label}", "$CONDA_PREFIX", here)
    return None


def _conda_base(here: Surroundings) -> Target | None:
    conda = _variable(here, "CONDA_PREFIX")
    if conda is None or here.environ.get("CONDA_DEFAULT_ENV", "") not in _BASE_NAMES:
        return None
    return _environment(conda, "conda-base", "from $CONDA_PREFIX (conda's base environment)", "$CONDA_PREFIX", here)


def _project(here: Surroundings) -> Target | None:
    chain = [here.cwd, *here.cwd.parents]
    uv_env = here.environ.get("UV_PROJECT_ENVIRONMENT", "")
    if uv_env:
        root = _uv_workspace_root(chain)
        if root is not None:  # uv reads the variable for project commands only
            return _environment(root / uv_env, "uv-project-environment", "from $UV_PROJECT_ENVIRONMENT",
                                "$UV_PROJECT_ENVIRONMENT", here)
    for folder in chain:
        pdm = _pdm_python(folder, here)
        if pdm is not None:
            return pdm
        for name in _PROJECT_VENVS:
            candidate = folder / name
            if is_environment(candidate):
                where = shown(candidate, here.cwd)
                return _environment(candidate, "project-venv", f"from {where}", where, here)
    return None


def _uv_workspace_root(chain: list[Path]) -> Path | None:
    """Where uv resolves a relative $UV_PROJECT_ENVIRONMENT: the workspace root, else the project's folder.

    The project is the nearest pyproject.toml at or above the working directory; a pyproject.toml further up that
    declares [tool.uv.workspace] makes that folder the root. None outside any project.
    """
    projects = [folder for folder in chain if (folder / "pyproject.toml").is_file()]
    if not projects:
        return None
    for folder in projects:
        try:
            text = input_files.read_text(folder / "pyproject.toml", limit=4 * 1024 * 1024)
        except EnvcheckError:
            continue
        if _UV_WORKSPACE.search(text):
            return folder
    return projects[0]


def _pdm_python(folder: Path, here: Surroundings) -> Target | None:
    """The interpreter a pdm project uses, recorded by pdm in `.pdm-python` (one path)."""
    record = folder / ".pdm-python"
    if not record.is_file():
        return None
    where = shown(record, here.cwd)
    line = input_files.read_text(record, error=lambda _f, why: TargetError(f"{where}: {why}; {_NAME_IT}"),
                            limit=64 * 1024).strip()
    executable = folder / line  # pdm writes an absolute path; a relative one is taken from the project
    if not line or not executable.is_file():
        raise TargetError(f"{where} names {line or 'nothing'}, which is no interpreter; run `pdm use` to choose "
                          f"one, or {_NAME_IT}")
    # pdm names the venv's bin/python (Scripts\python.exe); its prefix is one folder up from the executable's.
    prefix = executable.parent.parent if executable.parent.name in ("bin", "Scripts") else executable.parent
    if (folder / "__pypackages__").is_dir() and not is_environment(prefix):
        # PEP 582 mode: the packages are in __pypackages__, not in the interpreter's environment; checking the
        # bare interpreter would report on everything but the project's packages.
        raise TargetError(f"{where} names {line}, a bare interpreter for the project's __pypackages__ (PEP 582), "
                          f"which envcheck does not check; use a virtual environment (`pdm venv create`), or "
                          f"{_NAME_IT}")
    if os.path.realpath(prefix) == os.path.realpath(here.own_prefix):
        return Target(python=here.own_executable, source="pdm-python", reason=f"from {where}", in_process=True)
    return Target(python=str(executable), source="pdm-python", reason=f"from {where}", in_process=False)

"""Which interpreter is checked: the discovery order of envcheck/pipeline/target.py, on real folders under tmp_path.

Discovery reads only the file system and the variables it is given (`Surroundings`), so each case lays out the
environments as a tool would (pyvenv.cfg, conda-meta/, bin/python or Scripts\\python.exe, the tools' own marker
files) and gives the working directory, the variables and envcheck's own prefix explicitly. The interpreters are
empty files: which one is chosen is the question here; collecting from real ones is tests/e2e/test_target_cli.py's.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from envcheck.pipeline.target import (
    Surroundings,
    TargetError,
    discover,
    interpreter_in,
    is_environment,
    tool_environment,
)
from envcheck.rules.model import TARGET_SOURCES, Target

OWN = "/opt/envcheck-home"  # envcheck's own prefix unless a test says otherwise: an ordinary, non-tool prefix


def make_env(prefix: Path, *, conda: bool = False, windows: bool = False, interpreter: bool = True) -> Path:
    """A folder laid out like a venv (pyvenv.cfg) or a conda environment (conda-meta/), with its interpreter."""
    prefix.mkdir(parents=True, exist_ok=True)
    if conda:
        (prefix / "conda-meta").mkdir(exist_ok=True)
    else:
        (prefix / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    if interpreter:
        exe = (prefix / "python.exe" if conda else prefix / "Scripts" / "python.exe") if windows \
            else prefix / "bin" / "python"
        exe.parent.mkdir(parents=True, exist_ok=True)
        exe.write_text("", encoding="utf-8")
    return prefix


def where(cwd: Path, environ: Mapping[str, str] | None = None, *, own_prefix: str = OWN,
          windows: bool = False) -> Surroundings:
    return Surroundings(cwd=cwd, environ=dict(environ or {}), own_prefix=own_prefix,
                        own_executable=f"{own_prefix}/bin/python3", windows=windows)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with a pyproject.toml and a .venv."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    make_env(root / ".venv")
    return root


# --- the order ---------------------------------------------------------------------------------------------------


def test_python_option_wins_over_everything(project: Path, tmp_path: Path) -> None:
    """--python is taken as given, before any activated or project environment, and is never run in-process."""
    env = {"VIRTUAL_ENV": str(make_env(tmp_path / "active")), "CONDA_PREFIX": str(make_env(tmp_path / "c", conda=True))}
    target = discover("/usr/bin/python3.12", where=where(project, env))
    assert target == Target(python="/usr/bin/python3.12", source="python-option", reason="from --python",
                            in_process=False)
    assert target.line() == "checked /usr/bin/python3.12: from --python"


def test_virtual_env_wins_over_conda_and_the_project(project: Path, tmp_path: Path) -> None:
    """An activated venv ($VIRTUAL_ENV) comes before an activated conda environment and the project's .venv."""
    active = make_env(tmp_path / "active")
    env = {"VIRTUAL_ENV": str(active), "CONDA_PREFIX": str(make_env(tmp_path / "c", conda=True)),
           "CONDA_DEFAULT_ENV": "c"}
    target = discover(where=where(project, env))
    assert (target.python, target.source, target.reason) == (str(active / "bin" / "python"), "virtual-env",
                                                             "from $VIRTUAL_ENV")


def test_activated_conda_environment_wins_over_the_project(project: Path, tmp_path: Path) -> None:
    """A conda environment other than base, activated, comes before the project's .venv, named in the reason."""
    conda = make_env(tmp_path / "miniconda" / "envs" / "ml", conda=True)
    target = discover(where=where(project, {"CONDA_PREFIX": str(conda), "CONDA_DEFAULT_ENV": "ml",
                                            "CONDA_SHLVL": "2"}))
    assert (target.python, target.source) == (str(conda / "bin" / "python"), "conda-env")
    assert target.reason == "from $CONDA_PREFIX (conda environment ml)"


@pytest.mark.parametrize("name", [pytest.param("base", id="base"), pytest.param("root", id="root-before-conda-4.4")])
def test_conda_base_ranks_below_the_project(project: Path, tmp_path: Path, name: str) -> None:
    """conda's base environment (activated in every shell by default) yields to the project's .venv, and is
    chosen when there is no project environment."""
    base = make_env(tmp_path / "miniconda", conda=True)
    env = {"CONDA_PREFIX": str(base), "CONDA_DEFAULT_ENV": name, "CONDA_SHLVL": "1"}
    assert discover(where=where(project, env)).source == "project-venv"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = discover(where=where(elsewhere, env))
    assert (target.python, target.source, target.reason) == (
        str(base / "bin" / "python"), "conda-base", "from $CONDA_PREFIX (conda's base environment)")


def test_own_interpreter_when_nothing_else_applies(tmp_path: Path) -> None:
    """With no option, no activated and no project environment, envcheck checks its own interpreter in-process."""
    target = discover(where=where(tmp_path))
    assert (target.python, target.source, target.in_process) == (f"{OWN}/bin/python3", "self", True)
    assert target.reason.startswith("envcheck's own interpreter")


# --- the project's environment -------------------------------------------------------------------------------------


def test_project_venv_in_the_working_directory_is_shown_relative(project: Path) -> None:
    """A .venv in the working directory is chosen and shown as ./.venv."""
    target = discover(where=where(project))
    assert target == Target(python=str(project / ".venv" / "bin" / "python"), source="project-venv",
                            reason="from ./.venv", in_process=False)
    assert target.line() == f"checked {project}/.venv/bin/python: from ./.venv"


def test_project_venv_above_the_working_directory_is_shown_absolute(project: Path) -> None:
    """From a subfolder the nearest .venv above is found and shown by its absolute path."""
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    target = discover(where=where(sub))
    assert (target.python, target.reason) == (str(project / ".venv" / "bin" / "python"), f"from {project}/.venv")


def test_venv_named_venv_and_the_nearest_folder_wins(tmp_path: Path) -> None:
    """`venv` counts as well as `.venv`; a folder's .venv comes before its venv; the nearest folder wins."""
    outer = tmp_path / "outer"
    make_env(outer / ".venv")
    inner = outer / "inner"
    make_env(inner / "venv")
    assert discover(where=where(inner)).reason == "from ./venv"
    make_env(inner / ".venv")
    assert discover(where=where(inner)).reason == "from ./.venv"


def test_a_folder_named_venv_that_is_no_environment_is_passed_over(tmp_path: Path) -> None:
    """A `.venv` without pyvenv.cfg or conda-meta/ (a file, or some other folder) is not an environment."""
    outer = tmp_path / "outer"
    make_env(outer / ".venv")
    inner = outer / "inner"
    (inner / ".venv").mkdir(parents=True)
    (inner / "venv").mkdir()
    assert discover(where=where(inner)).reason == f"from {outer}/.venv"


def test_conda_environment_in_the_project(tmp_path: Path) -> None:
    """A conda environment created in the project (`conda create -p .venv`) is a project environment too."""
    make_env(tmp_path / ".venv", conda=True)
    assert discover(where=where(tmp_path)).reason == "from ./.venv"


def test_uv_project_environment_relative_to_the_workspace_root(tmp_path: Path) -> None:
    """A relative $UV_PROJECT_ENVIRONMENT is resolved from the uv workspace root (else the project's folder)
    and comes before any .venv."""
    root = tmp_path / "ws"
    member = root / "packages" / "a"
    member.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.uv.workspace]\nmembers = ['packages/*']\n", encoding="utf-8")
    (member / "pyproject.toml").write_text("[project]\nname = 'a'\n", encoding="utf-8")
    make_env(member / ".venv")
    env_dir = make_env(root / "envs" / "dev")
    target = discover(where=where(member, {"UV_PROJECT_ENVIRONMENT": "envs/dev"}))
    assert (target.python, target.source, target.reason) == (
        str(env_dir / "bin" / "python"), "uv-project-environment", "from $UV_PROJECT_ENVIRONMENT")
    (root / "pyproject.toml").write_text("[project]\nname = 'root'\n", encoding="utf-8")
    make_env(member / "envs" / "dev")
    assert discover(where=where(member, {"UV_PROJECT_ENVIRONMENT": "envs/dev"})).python == \
        str(member / "envs" / "dev" / "bin" / "python")


def test_uv_project_environment_absolute_and_outside_a_project(tmp_path: Path) -> None:
    """An absolute $UV_PROJECT_ENVIRONMENT is used as it is, inside a project only (as uv reads it); one without
    an interpreter is an error naming the variable."""
    opt = make_env(tmp_path / "opt" / "venv")
    app = tmp_path / "app"
    app.mkdir()
    assert discover(where=where(app, {"UV_PROJECT_ENVIRONMENT": str(opt)})).source == "self"
    (app / "pyproject.toml").write_text("[project]\nname = 'app'\n", encoding="utf-8")
    assert discover(where=where(app, {"UV_PROJECT_ENVIRONMENT": str(opt)})).python == str(opt / "bin" / "python")
    with pytest.raises(TargetError, match=r"^\$UV_PROJECT_ENVIRONMENT names .*/absent, which holds no Python "
                                          r"interpreter \(bin/python\): create it \(`uv sync`\)"):
        discover(where=where(app, {"UV_PROJECT_ENVIRONMENT": str(tmp_path / "absent")}))


def test_pdm_python_names_the_interpreter(tmp_path: Path) -> None:
    """pdm's `.pdm-python` (the interpreter `pdm use` chose, here a venv kept outside the project) comes before
    the folder's .venv."""
    central = make_env(tmp_path / "pdm-venvs" / "proj-abc")
    proj = tmp_path / "proj"
    make_env(proj / ".venv")
    (proj / ".pdm-python").write_text(f"{central / 'bin' / 'python'}\n", encoding="utf-8")
    target = discover(where=where(proj))
    assert (target.python, target.source, target.reason) == (str(central / "bin" / "python"), "pdm-python",
                                                             "from ./.pdm-python")


def test_pdm_python_errors(tmp_path: Path) -> None:
    """A `.pdm-python` naming no interpreter, or a bare interpreter of a PEP 582 `__pypackages__` project, is
    an error that says so, not a silent check of something else."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".pdm-python").write_text(f"{tmp_path / 'gone' / 'bin' / 'python'}\n", encoding="utf-8")
    with pytest.raises(TargetError, match=r"^\./\.pdm-python names .*gone/bin/python, which is no interpreter"):
        discover(where=where(proj))
    bare = tmp_path / "usr" / "bin" / "python3"
    bare.parent.mkdir(parents=True)
    bare.write_text("", encoding="utf-8")
    (proj / ".pdm-python").write_text(str(bare), encoding="utf-8")
    assert discover(where=where(proj)).python == str(bare)  # a bare interpreter without __pypackages__: as named
    (proj / "__pypackages__" / "3.12" / "lib").mkdir(parents=True)
    with pytest.raises(TargetError, match=r"__pypackages__ \(PEP 582\), which envcheck does not check"):
        discover(where=where(proj))


# --- broken environments are errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["VIRTUAL_ENV", "CONDA_PREFIX"])
def test_activated_environment_without_interpreter_is_an_error(tmp_path: Path, variable: str) -> None:
    """A stale activation (the folder deleted or its interpreter gone) is one clear error, not a quiet fallback."""
    with pytest.raises(TargetError) as raised:
        discover(where=where(tmp_path, {variable: str(tmp_path / "deleted")}))
    message = str(raised.value)
    assert message.startswith(f"${variable} names {tmp_path}/deleted, which holds no Python interpreter")
    assert "deactivate it" in message and "--python PATH" in message and "\n" not in message


def test_project_venv_without_interpreter_is_an_error(tmp_path: Path) -> None:
    """A .venv whose interpreter is gone is reported by its shown path."""
    make_env(tmp_path / ".venv", interpreter=False)
    with pytest.raises(TargetError, match=r"^\./\.venv is an environment that holds no Python interpreter "
                                          r"\(bin/python\): recreate it, or name the interpreter"):
        discover(where=where(tmp_path))


# --- envcheck's own environment ----------------------------------------------------------------------------------


def test_discovered_environment_that_is_envchecks_own_is_checked_in_process(project: Path) -> None:
    """When the project's .venv is the one envcheck runs in, it is collected in-process under sys.executable."""
    target = discover(where=where(project, own_prefix=str(project / ".venv")))
    assert (target.python, target.source, target.in_process) == (f"{project}/.venv/bin/python3", "project-venv",
                                                                 True)


def _uv_cache_env(tmp_path: Path) -> Path:
    cache = tmp_path / "uv-cache"
    cache.mkdir()
    (cache / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55", encoding="utf-8")
    return make_env(cache / "archive-v0" / "eRtSQuPWuv5AfFh9")


TOOLS = [
    pytest.param(lambda p: make_env(p / "venvs" / "envcheck-ml") / "pipx_metadata.json", "pipx's isolated", id="pipx"),
    pytest.param(lambda p: make_env(p / "tools" / "envcheck-ml") / "uv-receipt.toml", "`uv tool install`",
                 id="uv-tool-install"),
    pytest.param(lambda p: make_env(p / "repoab12" / "py_env-python3.11") / ".install_state_v1",
                 "pre-commit hook", id="pre-commit-v1"),
    pytest.param(lambda p: make_env(p / "repoab12" / "py_env-python3.12") / ".install_state_v2",
                 "pre-commit hook", id="pre-commit-v2"),
]


@pytest.mark.parametrize(("marker", "words"), TOOLS)
def test_tool_environments_are_recognised_by_their_marker_files(tmp_path: Path, marker: object,
                                                                words: str) -> None:
    """pipx, uv tool install and pre-commit environments are recognised by the files those tools write."""
    path = marker(tmp_path)  # type: ignore[operator]
    assert tool_environment(path.parent) is None  # the folder alone is an ordinary venv
    path.write_text("{}", encoding="utf-8")
    assert words in (tool_environment(path.parent) or "")


def test_uvx_environment_is_recognised_by_uvs_cache_layout(tmp_path: Path) -> None:
    """A uvx / uv tool run environment lives at <cache>/archive-vN/<id>, the cache root tagged CACHEDIR.TAG; a
    plain `uv venv` (which also writes CACHEDIR.TAG inside itself) is no tool environment, nor is an archive-v0
    folder outside a cache."""
    env = _uv_cache_env(tmp_path)
    assert "uvx / uv tool run" in (tool_environment(env) or "")
    linked = tmp_path / "uv-cache" / "environments-v2" / "88c0bdea864a6b16"
    linked.parent.mkdir()
    linked.symlink_to(env)
    assert tool_environment(linked) == tool_environment(env)
    plain = make_env(tmp_path / "proj" / ".venv")
    (plain / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55", encoding="utf-8")
    assert tool_environment(plain) is None
    assert tool_environment(make_env(tmp_path / "elsewhere" / "archive-v0" / "x")) is None


@pytest.mark.parametrize(("marker", "words"), TOOLS)
def test_isolated_tool_environment_is_never_checked_by_default(tmp_path: Path, marker: object, words: str) -> None:
    """Run from a tool environment with nothing else to check: one line that says so and how to name one."""
    path = marker(tmp_path)  # type: ignore[operator]
    path.write_text("{}", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(TargetError) as raised:
        discover(where=where(work, own_prefix=str(path.parent)))
    message = str(raised.value)
    assert message.startswith(f"envcheck runs in {tool_environment(path.parent)} at {path.parent}, which is never "
                              "checked by default")
    assert message.endswith("name the interpreter to check with --python PATH") and "\n" not in message
    assert discover("/usr/bin/python3", where=where(work, own_prefix=str(path.parent))).source == "python-option"


def test_uvx_in_a_project_checks_the_project(project: Path, tmp_path: Path) -> None:
    """From uvx's throwaway environment, the project's .venv is found and checked out of process."""
    env = _uv_cache_env(tmp_path)
    target = discover(where=where(project, own_prefix=str(env)))
    assert (target.source, target.reason, target.in_process) == ("project-venv", "from ./.venv", False)


@pytest.mark.parametrize("variable", ["VIRTUAL_ENV", "CONDA_PREFIX"])
def test_activation_naming_a_tool_environment_is_passed_over(project: Path, tmp_path: Path, variable: str) -> None:
    """pre-commit sets $VIRTUAL_ENV (python hooks) or $CONDA_PREFIX (conda hooks) to its own hook environment:
    that is no user's activation, and the project's .venv is checked instead."""
    hook = make_env(tmp_path / "pre-commit" / "repoab12" / "py_env-python3.11", conda=variable == "CONDA_PREFIX")
    (hook / ".install_state_v2").write_text("", encoding="utf-8")
    target = discover(where=where(project, {variable: str(hook), "PRE_COMMIT": "1"}, own_prefix=str(hook)))
    assert (target.source, target.reason) == ("project-venv", "from ./.venv")


# --- Windows layouts -------------------------------------------------------------------------------------------------


def test_windows_venv_and_conda_layouts(tmp_path: Path) -> None:
    """On Windows a venv's interpreter is Scripts\\python.exe and a conda prefix's python.exe at its root; the
    POSIX bin/python is not looked for there, nor Scripts\\python.exe on POSIX."""
    venv = make_env(tmp_path / ".venv", windows=True)
    assert discover(where=where(tmp_path, windows=True)).python == str(venv / "Scripts" / "python.exe")
    with pytest.raises(TargetError, match=r"holds no Python interpreter \(bin/python\)"):
        discover(where=where(tmp_path, windows=False))
    conda = make_env(tmp_path / "Miniconda3" / "envs" / "ml", conda=True, windows=True)
    target = discover(where=where(tmp_path / "Miniconda3", {"CONDA_PREFIX": str(conda), "CONDA_DEFAULT_ENV": "ml"},
                                  windows=True))
    assert target.python == str(conda / "python.exe")
    assert interpreter_in(conda, windows=False) is None


def test_interpreter_in_prefers_python_over_python3(tmp_path: Path) -> None:
    """bin/python is taken when it exists; a prefix with only bin/python3 (a system prefix such as /usr/local)
    still has an interpreter."""
    prefix = tmp_path / "usr-local"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python3").write_text("", encoding="utf-8")
    assert interpreter_in(prefix, windows=False) == prefix / "bin" / "python3"
    (prefix / "bin" / "python").write_text("", encoding="utf-8")
    assert interpreter_in(prefix, windows=False) == prefix / "bin" / "python"
    assert not is_environment(prefix)


def test_dangling_interpreter_symlink_counts_as_none(tmp_path: Path) -> None:
    """A venv whose bin/python points at a removed base interpreter holds no interpreter."""
    prefix = make_env(tmp_path / ".venv", interpreter=False)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "python").symlink_to(tmp_path / "removed-python")
    assert interpreter_in(prefix, windows=False) is None


def test_sources_are_documented_in_the_schema() -> None:
    """Every way a target can be chosen is listed in the report schema's enum, in discovery order."""
    import json

    schema = json.loads((Path(__file__).parents[2] / "envcheck" / "schemas" / "report.schema.json")
                        .read_text(encoding="utf-8"))
    target = next(s for s in schema["properties"]["target"]["oneOf"] if s.get("type") == "object")
    assert tuple(target["properties"]["source"]["enum"]) == TARGET_SOURCES


def test_current_surroundings_are_this_process() -> None:
    """Surroundings.current() describes this interpreter and the working directory given."""
    here = Surroundings.current("/tmp")
    assert (here.own_prefix, here.own_executable, here.cwd) == (sys.prefix, sys.executable, Path("/tmp"))


def test_deleted_working_directory_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A working directory deleted under the shell is a TargetError, not a traceback; --python needs none."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(TargetError, match=r"^cannot read the working directory"):
        discover()
    assert discover("/usr/bin/python3").source == "python-option"

"""envcheck installed the way CLI tools are installed today, run as a user would: the real uv (`uv tool run`,
`uvx`, `uv tool install`), the real pipx and the real pre-commit, each giving envcheck an isolated environment of
its own. Whatever the install, envcheck must check the environment the user means and say which, or refuse in one
line when there is none.

The wheel is built from this checkout with `pip wheel`, which also fetches envcheck's dependencies through pip's
configured index; uv then installs from that wheelhouse alone (`--no-index --find-links`), so these tests need no
index of uv's own. Every tool keeps its cache, tools and binaries under tmp_path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from _fakes import write_dist
from _torch import BIN, clean_env
from test_target_cli import make_broken_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / ".pre-commit-hooks.yaml"
_TIMEOUT_S = 600  # a guard against a hung install, never a timing assertion
_VARIABLES = ("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_SHLVL", "UV_PROJECT_ENVIRONMENT")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the isolated-install tests: {reason}")
    pytest.skip(reason)


def _tool(name: str) -> str:
    """A tool of the [test] extra: next to this interpreter, else on the PATH."""
    beside = Path(sys.executable).parent / (f"{name}.exe" if os.name == "nt" else name)
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        _unavailable(f"`{name}` is not installed (it is part of the [test] extra)")
    return str(found)


def _env(tmp: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment: no activation of the test runner's shell, colour off, every tool's state in `tmp`."""
    env = {k: v for k, v in clean_env().items() if k not in _VARIABLES and not k.startswith(("UV_", "PIPX_"))}
    env.update({"NO_COLOR": "1", "UV_CACHE_DIR": str(tmp / "uv-cache"), "UV_TOOL_DIR": str(tmp / "uv-tools"),
                "UV_TOOL_BIN_DIR": str(tmp / "uv-bin"), "UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never",
                "PIPX_HOME": str(tmp / "pipx-home"), "PIPX_BIN_DIR": str(tmp / "pipx-bin"),
                "PIPX_MAN_DIR": str(tmp / "pipx-man"), "PRE_COMMIT_HOME": str(tmp / "pre-commit-home")})
    env.update(extra or {})
    return env


def _run(argv: Sequence[str | Path], cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=dict(env), capture_output=True, text=True,
                          timeout=_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)


def _ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"{proc.args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def wheelhouse(envcheck_wheelhouse: Path) -> Path:
    """envcheck's wheel, built from this checkout, and the wheels of its dependencies (conftest's, built once)."""
    return envcheck_wheelhouse


@pytest.fixture(scope="module")
def wheel(wheelhouse: Path) -> Path:
    (found,) = wheelhouse.glob("envcheck_ml-*.whl")
    return found


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tools keep their caches and installs, shared by this module's tests (as a user's would be)."""
    return tmp_path_factory.mktemp("tool-state")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder whose .venv has torchvision 0.20.0 (pins torch==2.5.0) beside torch 2.13.0."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'proj'\nversion = '0'\n", encoding="utf-8")
    make_broken_env(root / ".venv")
    return root


@pytest.fixture
def nowhere(tmp_path: Path) -> Path:
    """A folder with no environment at or above it (tmp_path's parents hold none)."""
    path = tmp_path / "nowhere"
    path.mkdir()
    return path


def _uv_run(uv: str, wheelhouse: Path, wheel: Path) -> list[str]:
    return [uv, "tool", "run", "--no-index", "--find-links", str(wheelhouse), "--python", sys.executable,
            "--from", str(wheel), "envcheck"]


def _assert_checked(proc: subprocess.CompletedProcess[str], python: Path, reason: str) -> None:
    """Exit 1 for the planted conflict, with the target as the report's first line."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == f"checked {python}: {reason}", proc.stdout
    assert "torchvision 0.20.0 requires torch==2.5.0, but torch 2.13.0 is installed" in proc.stdout
    # The venv has no pip: the command is uv's or pip's after ensurepip, whichever this machine offers
    # (envcheck/remedy/commands/installers.py); either way it names the checked interpreter.
    # The fix keeps torch and replaces torchvision (EC0702; envcheck/remedy/commands/planner.py).
    assert any((line.lstrip().startswith("$ ") and str(python) in line
                and line.endswith("install --no-deps torchvision==0.28.0"))
               or line.endswith(f"--python {python} --no-deps torchvision==0.28.0")
               for line in proc.stdout.splitlines()), proc.stdout


def _assert_refused(proc: subprocess.CompletedProcess[str], words: str) -> None:
    """Exit 2, nothing on stdout, one line on stderr naming the tool environment and --python."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("envcheck: error: envcheck runs in ") and words in line, line
    assert line.endswith("name the interpreter to check with --python PATH")


def test_uv_tool_run_checks_the_projects_venv(project: Path, wheelhouse: Path, wheel: Path, state: Path) -> None:
    """`uv tool run --from <wheel> envcheck` in a project checks the project's broken .venv and says so."""
    proc = _run([*_uv_run(_tool("uv"), wheelhouse, wheel), "--static"], cwd=project, env=_env(state))
    _assert_checked(proc, project / ".venv" / BIN / "python", "from ./.venv")


def test_uvx_checks_the_activated_venv(project: Path, nowhere: Path, wheelhouse: Path, wheel: Path,
                                       state: Path) -> None:
    """`uvx --from <wheel> envcheck` with $VIRTUAL_ENV set checks that environment, from any folder."""
    uvx = [_tool("uvx"), "--no-index", "--find-links", str(wheelhouse), "--python", sys.executable,
           "--from", str(wheel), "envcheck", "--static"]
    proc = _run(uvx, cwd=nowhere, env=_env(state, {"VIRTUAL_ENV": str(project / ".venv")}))
    _assert_checked(proc, project / ".venv" / BIN / "python", "from $VIRTUAL_ENV")


def test_uv_tool_run_outside_any_project_refuses(nowhere: Path, wheelhouse: Path, wheel: Path, state: Path) -> None:
    """Outside any project, with nothing activated, uvx's throwaway environment is not checked: exit 2."""
    proc = _run([*_uv_run(_tool("uv"), wheelhouse, wheel), "--static"], cwd=nowhere, env=_env(state))
    _assert_refused(proc, "a throwaway environment of uvx / uv tool run (in uv's cache)")


def test_uv_tool_install(project: Path, nowhere: Path, wheelhouse: Path, wheel: Path, state: Path) -> None:
    """An envcheck installed with `uv tool install` refuses to check its own environment and checks the project's
    .venv in the project."""
    env = _env(state)
    _ok(_run([_tool("uv"), "tool", "install", "--force", "--no-index", "--find-links", wheelhouse, "--python",
              sys.executable, wheel], cwd=nowhere, env=env))
    installed = state / "uv-bin" / ("envcheck.exe" if os.name == "nt" else "envcheck")
    _assert_refused(_run([installed, "--static"], cwd=nowhere, env=env), "`uv tool install`")
    checked = _run([installed, "--static"], cwd=project, env=env)
    _assert_checked(checked, project / ".venv" / BIN / "python", "from ./.venv")
    assert "pytest here" not in checked.stdout  # no pytest in the project's venv: nothing to say about its plugin
    (site,) = [*(project / ".venv").glob("lib/python*/site-packages"), *(project / ".venv").glob("Lib/site-packages")]
    write_dist(site, "pytest", "8.3.5")
    with_pytest = _run([installed, "--static"], cwd=project, env=env)
    _assert_checked(with_pytest, project / ".venv" / BIN / "python", "from ./.venv")
    assert ("pytest here cannot load envcheck's plugin (`pytest --envcheck`): envcheck runs from the isolated "
            "environment of `uv tool install`; install envcheck into this environment, beside pytest, to use it"
            ) in with_pytest.stdout.splitlines()


@pytest.fixture(scope="module")
def pipx_envcheck(wheelhouse: Path, wheel: Path, state: Path) -> Path:
    """envcheck installed by the real pipx (its pip backend); returns the command pipx put on its bin dir."""
    _tool("pipx")
    env = _env(state, {"PIP_FIND_LINKS": " ".join([str(wheelhouse), os.environ.get("PIP_FIND_LINKS", "")]).strip()})
    _ok(_run([sys.executable, "-m", "pipx", "install", "--force", "--backend", "pip", wheel], cwd=wheelhouse,
             env=env))
    return state / "pipx-bin" / ("envcheck.exe" if os.name == "nt" else "envcheck")


def test_pipx_install_outside_any_project_refuses(pipx_envcheck: Path, nowhere: Path, state: Path) -> None:
    """A pipx-installed envcheck run outside any project exits 2 with the one-line message."""
    venv = state / "pipx-home" / "venvs" / "envcheck-ml"
    assert (venv / "pipx_metadata.json").is_file()  # the marker discovery relies on, written by pipx itself
    _assert_refused(_run([pipx_envcheck, "--static"], cwd=nowhere, env=_env(state)),
                    f"pipx's isolated environment at {venv}")


def test_pipx_install_checks_an_activated_conda_prefix(pipx_envcheck: Path, nowhere: Path, tmp_path: Path,
                                                      state: Path) -> None:
    """A pipx-installed envcheck checks the activated conda-like environment ($CONDA_PREFIX at a prefix with
    conda-meta/) and names it."""
    prefix = tmp_path / "miniconda" / "envs" / "ml"
    python = make_broken_env(prefix)
    (prefix / "conda-meta").mkdir()
    env = _env(state, {"CONDA_PREFIX": str(prefix), "CONDA_DEFAULT_ENV": "ml", "CONDA_SHLVL": "1"})
    _assert_checked(_run([pipx_envcheck, "--static"], cwd=nowhere, env=env), python,
                    "from $CONDA_PREFIX (conda environment ml)")


def _git_project(project: Path) -> dict[str, str]:
    env = clean_env({"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
                     "GIT_COMMITTER_EMAIL": "t@example.org"})
    for args in (("init", "-q"), ("add", "pyproject.toml"), ("commit", "-q", "-m", "init")):
        _ok(_run(["git", *args], cwd=project, env=env))
    return env


def test_pre_commit_hook_with_a_pipx_installed_envcheck(pipx_envcheck: Path, project: Path, tmp_path: Path,
                                                        state: Path) -> None:
    """The shipped hook (language: system) with envcheck from pipx on the PATH checks the project's .venv."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git_env = _git_project(project)
    hooks = tmp_path / "hook-repo"
    hooks.mkdir()
    shutil.copy(HOOKS, hooks / HOOKS.name)
    for args in (("init", "-q"), ("add", HOOKS.name), ("commit", "-q", "-m", "hooks")):
        _ok(_run(["git", *args], cwd=hooks, env=git_env))
    env = _env(state, {"PATH": f"{pipx_envcheck.parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    proc = _run([sys.executable, "-m", "pre_commit", "try-repo", hooks, "envcheck", "--all-files", "--color",
                 "never", "--verbose"], cwd=project, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"checked {project / '.venv' / BIN / 'python'}: from ./.venv" in proc.stdout
    assert "EC0702 companion-release-for-installed-torch" in proc.stdout


def test_pre_commit_python_hook_environment(project: Path, nowhere: Path, wheelhouse: Path, wheel: Path,
                                            state: Path) -> None:
    """Run from a hook environment of pre-commit's own (language: python, which sets $VIRTUAL_ENV to it),
    envcheck checks the project's .venv, and outside a project refuses in one line."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    config = ("repos:\n- repo: local\n  hooks:\n  - id: envcheck-in-hook-env\n    name: envcheck-in-hook-env\n"
              "    entry: envcheck --static\n    language: python\n"
              f"    additional_dependencies: ['{wheel}']\n    pass_filenames: false\n    always_run: true\n")
    env = _env(state, {"PIP_FIND_LINKS": " ".join([str(wheelhouse), os.environ.get("PIP_FIND_LINKS", "")]).strip()})
    for folder in (project, nowhere):
        (folder / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
        (folder / "pyproject.toml").touch()
        _git_project(folder)
    in_project = _run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never", "--verbose"],
                      cwd=project, env=env)
    assert in_project.returncode == 1, in_project.stdout + in_project.stderr
    assert f"checked {project / '.venv' / BIN / 'python'}: from ./.venv" in in_project.stdout
    outside = _run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never", "--verbose"],
                   cwd=nowhere, env=env)
    assert outside.returncode == 1, outside.stdout + outside.stderr  # pre-commit reports any non-zero exit as 1
    assert "- exit code: 2" in outside.stdout
    assert "envcheck: error: envcheck runs in a pre-commit hook environment at " in outside.stdout

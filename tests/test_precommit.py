"""The pre-commit hook, run by the real pre-commit (`pre-commit try-repo`) in a throwaway project repository.

`try-repo` clones the hook repository. For a local path with uncommitted changes it builds a shadow clone holding
the changes to *tracked* files (staged or not, through `git add -u`); an untracked `.pre-commit-hooks.yaml` would
be invisible to it. So the hook repository is this checkout when it tracks the hooks file (a fresh clone in CI, or a
working tree whose edits are included that way); otherwise (before the file is first committed, or in an unpacked
sdist, which is no git repository) it is a one-commit repository holding this checkout's hooks file. Either way the
manifest under test is the one in this tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import clean_env

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / ".pre-commit-hooks.yaml"
_TIMEOUT_S = 300  # a guard against a hung git or pre-commit, never a timing assertion


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = clean_env({"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
                     "GIT_COMMITTER_EMAIL": "t@example.org"})
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=_TIMEOUT_S,
                          check=False)


def test_manifest_declares_the_hook_as_documented() -> None:
    """The hook is `envcheck --static`, language system, no filenames, always run; pre-commit accepts the file."""
    (hook,) = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    assert {k: hook[k] for k in ("id", "entry", "language", "pass_filenames", "always_run")} == {
        "id": "envcheck", "entry": "envcheck --static", "language": "system", "pass_filenames": False,
        "always_run": True,
    }
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest", str(HOOKS)], capture_output=True,
                          text=True, timeout=_TIMEOUT_S, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hook_repository(tmp_path_factory)


def hook_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository whose .pre-commit-hooks.yaml is this checkout's (the module docstring says which)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    tracked = _git("ls-files", "--error-unmatch", ".pre-commit-hooks.yaml", cwd=ROOT)
    if tracked.returncode == 0:
        return ROOT
    snapshot = tmp_path_factory.mktemp("hook-repo")
    shutil.copy(HOOKS, snapshot / HOOKS.name)
    for args in (("init", "-q"), ("add", HOOKS.name), ("commit", "-q", "-m", "hooks")):
        assert _git(*args, cwd=snapshot).returncode == 0
    return snapshot


def _try_repo(project: Path, hook_repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    # language: system runs `envcheck` from the PATH: this interpreter's, as a developer's activated venv would.
    env = clean_env({"PRE_COMMIT_HOME": str(home), "NO_COLOR": "1",
                     "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "envcheck", "--all-files",
                           "--color", "never", "--verbose"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_try_repo_runs_the_hook_on_the_projects_environment(tmp_path: Path, hook_repo: Path) -> None:
    """In a project repository the hook passes when the project's [tool.envcheck] is met by the environment on
    the PATH (pre-commit itself is installed there, not in any isolated hook environment), and fails, naming the
    rule, when the project requires something absent."""
    project = tmp_path / "project"
    project.mkdir()
    assert _git("init", "-q", cwd=project).returncode == 0
    (project / "train.py").write_text("print('hello')\n", encoding="utf-8")
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[tool.envcheck]\nrequire = ["pre-commit>=3"]\nselect = ["EC01"]\n', encoding="utf-8")
    assert _git("add", ".", cwd=project).returncode == 0

    passed = _try_repo(project, hook_repo, tmp_path / "pre-commit-home")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert any(line.startswith("envcheck") and line.endswith("Passed") for line in passed.stdout.splitlines()), \
        passed.stdout

    pyproject.write_text('[tool.envcheck]\nrequire = ["pre-commit>=3", "no-such-dist-x>=1"]\nselect = ["EC01"]\n',
                         encoding="utf-8")
    failed = _try_repo(project, hook_repo, tmp_path / "pre-commit-home")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert any(line.startswith("envcheck") and line.endswith("Failed") for line in failed.stdout.splitlines())
    assert "EC9902 project-require-no-such-dist-x" in failed.stdout
    assert "- exit code: 1" in failed.stdout

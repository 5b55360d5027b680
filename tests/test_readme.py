"""What the README (and docs/) give a user to paste works when pasted: the pre-commit configuration is loaded and
run by pre-commit itself against this checkout, the GitHub Action snippet names inputs action.yml has and options
`envcheck check` takes, the pytest setup runs in a real pytest, the configuration example is accepted by a real
check. The console samples are tests/test_doc_samples.py's; the commands named, tests/test_doc_commands.py's.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from conftest import clean_env
from test_precommit import _git, hook_repository

from envcheck.cli.click_cli import cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
ACTION: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
HOOKS: list[dict[str, Any]] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
REPOSITORY = "https://github.com/envcheck-ml/envcheck"
MAX_LINES = 300  # read in five minutes; the rest is in docs/ and CONTRIBUTING.md
_FENCED = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
_TIMEOUT_S = 300  # a guard against a hung git, pre-commit or pytest, never a timing assertion


def _blocks(lang: str, containing: str, docs: list[Path] = DOCS) -> list[tuple[str, str]]:
    """(where, text) of every fenced block of `lang` in `docs` that contains `containing`."""
    return [(f"{doc.relative_to(ROOT)}:{doc.read_text(encoding='utf-8').count(chr(10), 0, m.start()) + 1}",
             m.group("body"))
            for doc in docs for m in _FENCED.finditer(doc.read_text(encoding="utf-8"))
            if m.group("lang") == lang and containing in m.group("body")]


PRE_COMMIT_CONFIGS = _blocks("yaml", f"repo: {REPOSITORY}")
ACTION_SNIPPETS = _blocks("yaml", "uses: envcheck-ml/envcheck@")


def test_readme_is_short() -> None:
    """At most 300 lines: what envcheck is for, install, the first run, the integrations, links."""
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; move detail to docs/usage.md or CONTRIBUTING.md"


def test_the_blocks_are_found() -> None:
    """The README holds one pre-commit configuration, one Action snippet and the pytest setup."""
    assert [w for w, _ in PRE_COMMIT_CONFIGS if w.startswith("README.md")] != []
    assert [w for w, _ in ACTION_SNIPPETS if w.startswith("README.md")] != []
    assert _blocks("python", "@pytest.mark.envcheck", [README]) != []


# --- pre-commit -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hook_repository(tmp_path_factory)


@pytest.mark.parametrize(("where", "config"), PRE_COMMIT_CONFIGS, ids=[w for w, _ in PRE_COMMIT_CONFIGS])
def test_pre_commit_config_is_valid_as_pasted(tmp_path: Path, where: str, config: str) -> None:
    """pre-commit loads the block as a whole .pre-commit-config.yaml, and each hook it names is one we declare."""
    path = tmp_path / ".pre-commit-config.yaml"
    path.write_text(config, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "validate-config", str(path)], capture_output=True,
                          text=True, timeout=_TIMEOUT_S, check=False)
    assert proc.returncode == 0, f"{where}: {proc.stdout}{proc.stderr}"
    (repo,) = yaml.safe_load(config)["repos"]
    assert repo["repo"] == REPOSITORY
    assert {hook["id"] for hook in repo["hooks"]} <= {hook["id"] for hook in HOOKS}


def test_pre_commit_validation_can_fail(tmp_path: Path) -> None:
    """The old README's block (a list, no `repos:`) is what pre-commit refuses: the check above can fail."""
    path = tmp_path / ".pre-commit-config.yaml"
    path.write_text(f"- repo: {REPOSITORY}\n  rev: v0.1.0\n  hooks:\n    - id: envcheck\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "validate-config", str(path)], capture_output=True,
                          text=True, timeout=_TIMEOUT_S, check=False)
    assert proc.returncode == 1 and "Expected a Config map but got a list" in proc.stdout


def _pre_commit_run(project: Path, config: str, repository: Path) -> subprocess.CompletedProcess[str]:
    """`pre-commit run --all-files` in `project` with the pasted block, its repository this checkout at HEAD."""
    head = _git("rev-parse", "HEAD", cwd=repository).stdout.strip()
    pasted = config.replace(REPOSITORY, str(repository)).replace("rev: v0.1.0", f"rev: {head}")
    (project / ".pre-commit-config.yaml").write_text(pasted, encoding="utf-8")
    assert _git("add", ".", cwd=project).returncode == 0
    # language: system runs `envcheck` from the PATH: this interpreter's, as a developer's activated venv would.
    env = clean_env({"PRE_COMMIT_HOME": str(project.parent / "pre-commit-home"), "NO_COLOR": "1",
                     "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False,
                          stdin=subprocess.DEVNULL)


@pytest.mark.slow
@pytest.mark.parametrize(("where", "config"), PRE_COMMIT_CONFIGS, ids=[w for w, _ in PRE_COMMIT_CONFIGS])
def test_pre_commit_config_runs_the_hook(tmp_path: Path, hook_repo: Path, where: str, config: str) -> None:
    """The pasted block, pointed at this checkout, runs the hook with the block's args: it passes in a project
    whose policy the environment meets, and fails, naming the rule, where the policy or a declared machine is not
    met (the README's RTX 5090 machine, whose pinned torch has no kernels for it)."""
    project = tmp_path / "project"
    project.mkdir()
    assert _git("init", "-q", cwd=project).returncode == 0
    machine = ('[[tool.envcheck.machines]]\nname = "rtx5090"\ngpu = "RTX 5090"\ndriver = "570.86.10"\n'
               'python = "3.12"\nplatform = "linux-x86_64"\n')
    machines = "--machine" in config
    if machines:  # the machine's pins; the local check would ask for them too, so only where they are judged
        (project / "requirements.txt").write_text(
            "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n", encoding="utf-8")
    pyproject = project / "pyproject.toml"
    policy = 'select = ["EC04"]' if machines else 'require = ["pre-commit>=3"]\nselect = ["EC01"]'
    pyproject.write_text(f"[tool.envcheck]\n{policy}\n\n{machine}", encoding="utf-8")
    proc = _pre_commit_run(project, config, hook_repo)
    assert proc.returncode == (1 if machines else 0), f"{where}: {proc.stdout}{proc.stderr}"
    if machines:
        assert "EC0401 gpu-architecture-not-in-torch-build" in proc.stdout
        return
    pyproject.write_text(f'[tool.envcheck]\nrequire = ["no-such-dist-x>=1"]\nselect = ["EC01"]\n\n{machine}',
                         encoding="utf-8")
    failed = _pre_commit_run(project, config, hook_repo)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "EC9901 project-require-no-such-dist-x" in failed.stdout


# --- the GitHub Action --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("where", "snippet"), ACTION_SNIPPETS, ids=[w for w, _ in ACTION_SNIPPETS])
def test_action_snippet_uses_only_what_the_action_takes(where: str, snippet: str) -> None:
    """The snippet is YAML steps; the envcheck step's `with:` names only action.yml's inputs, its `args` are
    options `envcheck check` accepts (parsed by the real command), and `fail-on` is one of its values."""
    steps = yaml.safe_load(snippet)
    assert isinstance(steps, list) and all(isinstance(step, dict) for step in steps), where
    (step,) = [s for s in steps if str(s.get("uses", "")).startswith("envcheck-ml/envcheck@")]
    given = step.get("with", {})
    assert set(given) <= set(ACTION["inputs"]), f"{where}: {sorted(set(given) - set(ACTION['inputs']))}"
    check = cli.get_command(click.Context(cli), "check")
    assert check is not None
    check.make_context("check", shlex.split(str(given.get("args", ""))))  # a usage error raises here
    if "fail-on" in given:
        (fail_on,) = [p for p in check.params if p.name == "fail_on"]
        assert isinstance(fail_on.type, click.Choice) and given["fail-on"] in fail_on.type.choices


def test_action_snippet_check_can_fail() -> None:
    """An option `envcheck check` lacks is a usage error in the parse the snippet test relies on."""
    check = cli.get_command(click.Context(cli), "check")
    assert check is not None
    with pytest.raises(click.UsageError):
        check.make_context("check", ["--statics"])


# --- pytest ---------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_pytest_setup_runs_as_pasted(tmp_path: Path) -> None:
    """The README's pytest commands, in a project holding its test module, with envcheck installed next to pytest
    (this environment, as the README says): the session is checked before the tests, the markers skip with the
    finding's summary (torch is not installed here), and nothing is an unrecognised argument."""
    ((_, module),) = _blocks("python", "@pytest.mark.envcheck", [README])
    (tmp_path / "test_example.py").write_text(module, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    ((_, commands),) = _blocks("sh", "pytest --envcheck", [README])
    lines = [line.split("#", 1)[0].split() for line in commands.splitlines() if line.startswith("pytest ")]
    assert lines
    env = clean_env({"NO_COLOR": "1", "ENVCHECK_CACHE_DIR": str(tmp_path / "cache")})
    for argv in lines:
        proc = subprocess.run([sys.executable, "-m", *argv, "-p", "no:cacheprovider", "-rs"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "1 skipped" in proc.stdout and "torch" in proc.stdout, proc.stdout


# --- configuration --------------------------------------------------------------------------------------------------


MANUAL = ROOT / "docs" / "usage.md"


@pytest.mark.parametrize("where_block", _blocks("toml", "tool.envcheck", [README, MANUAL]), ids=lambda wb: wb[0])
def test_configuration_example_is_accepted(tmp_path: Path, where_block: tuple[str, str]) -> None:
    """Each [tool.envcheck] example of the README and the manual, as a project's pyproject.toml, is a configuration
    a real static check accepts (its rule names exist, its values parse): exit 0 or 1, never 2."""
    where, block = where_block
    (tmp_path / "pyproject.toml").write_text(block, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "envcheck", "check", "--static", "--no-cache",
                           "--python", sys.executable], cwd=tmp_path, env=clean_env({"NO_COLOR": "1"}),
                          capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
    assert proc.returncode in (0, 1), f"{where}: {proc.stdout}{proc.stderr}"


# --- links ----------------------------------------------------------------------------------------------------------

_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a markdown heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    text = _FENCED.sub("", doc.read_text(encoding="utf-8"))
    return {_anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def test_relative_links_reach_a_file_and_heading() -> None:
    """Every relative link of the README, CONTRIBUTING and docs/ names a file that exists and, after `#`, one of
    its headings: moving a section cannot leave a link behind."""
    broken = []
    for doc in [*DOCS, ROOT / "CONTRIBUTING.md"]:
        for match in _LINK.finditer(_FENCED.sub("", doc.read_text(encoding="utf-8"))):
            target = match.group("target")
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists() or (anchor and file.suffix == ".md" and anchor not in _anchors(file)):
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert broken == []


def test_anchor_is_githubs() -> None:
    """The anchor rule the link check relies on, on headings of this repository."""
    assert _anchor("Which environment is checked") == "which-environment-is-checked"
    assert _anchor("The project's own requirements and lock") == "the-projects-own-requirements-and-lock"
    assert _anchor("`envcheck recommend --machine NAME`") == "envcheck-recommend---machine-name"


def test_install_script_example_runs(tmp_path: Path) -> None:
    """The manual's install-script example runs as written: this environment has no torch, so it prints the
    unmet requirement with its fix and command on standard error and exits 1."""
    ((where, script),) = _blocks("python", "envcheck.check(", [MANUAL])
    (tmp_path / "install_check.py").write_text(script, encoding="utf-8")
    proc = subprocess.run([sys.executable, "install_check.py"], cwd=tmp_path, env=clean_env(), capture_output=True,
                          text=True, timeout=_TIMEOUT_S, check=False)
    assert proc.returncode == 1, f"{where}: {proc.stdout}{proc.stderr}"
    assert proc.stdout == ""
    assert re.search(r"^EC99\d\d .*torch>=2\.6.*\n  fix: .*\n  \$ .* -m pip install .*torch", proc.stderr,
                     re.MULTILINE), proc.stderr


"""The project's own files: reading pyproject.toml, requirements files, setup.cfg, environment.yml and locks, and
checking real virtual environments against them (EC9801 unmet requirements, EC9802 lock drift).

The projects under tests/fixtures/projects/ are trimmed copies of real ones (their README cites each source); each
test copies the one it needs into a temporary folder, so that no file above it is taken for the project.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from _fakes import FIXTURES, write_dist
from _torch import BIN, clean_env
from click.testing import CliRunner, Result

import envcheck
from envcheck.cli.click_cli import cli
from envcheck.facts.project import ProjectFacts
from envcheck.sources.project import locks
from envcheck.sources.project.discover import discover, find_root
from envcheck.sources.project.errors import ProjectError

PROJECTS = FIXTURES / "projects"
LINUX_311 = {"python_full_version": "3.11.9", "python_version": "3.11", "sys_platform": "linux",
             "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
             "platform_python_implementation": "CPython", "os_name": "posix", "platform_release": "",
             "platform_version": "", "implementation_version": "3.11.9", "extra": ""}
_VARIABLES = ("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "UV_PROJECT_ENVIRONMENT", "PDM_PYTHON")


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No activated environment of the shell running the tests leaks into discovery."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def copy_project(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(PROJECTS / name, root)
    (root / "README.md").unlink(missing_ok=True)
    return root


def make_venv(prefix: Path, dists: dict[str, str]) -> Path:
    """A real venv (no pip, no envcheck) holding `dists` as dist-info folders; returns its python."""
    proc = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], capture_output=True,
                          text=True, timeout=120, check=False, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    (site,) = prefix.glob("lib/python3*/site-packages") if sys.platform != "win32" else [prefix / "Lib" /
                                                                                          "site-packages"]
    for name, version in dists.items():
        write_dist(site, name, version)
    return prefix / BIN / ("python.exe" if sys.platform == "win32" else "python")


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- reading -------------------------------------------------------------------------------------------------


def test_requirements_file_includes_markers_and_index_options(tmp_path: Path) -> None:
    """vllm's requirements/cpu.txt: its `-r common.txt` is followed, its index option kept, each line's source named."""
    root = copy_project("vllm-cpu", tmp_path)
    project = discover(root, requirements=[root / "requirements" / "cpu.txt"])
    assert project is not None
    texts = [d.requirement for d in project.requirements]
    assert "transformers >= 4.56.0, < 5" in texts
    assert 'torch==2.9.1+cpu; platform_machine == "x86_64" or platform_machine == "s390x"' in texts
    assert project.index_options == ("--extra-index-url", "https://download.pytorch.org/whl/cpu")
    assert project.files == ("requirements/cpu.txt", "requirements/common.txt")
    sources = {d.requirement: d.source for d in project.requirements}
    assert sources["numpy"] == "requirements/common.txt:5"
    assert sources['numba == 0.61.2; platform_machine != "s390x"'] == "requirements/cpu.txt:4"


def test_requirements_options_hashes_editables_and_constraints(tmp_path: Path) -> None:
    """Hashes and continuations are read as pip reads them; editable and URL lines name nothing; -c constrains."""
    write(tmp_path / "requirements.txt",
          "safetensors==0.4.5 \\\n    --hash=sha256:abc\n-e ./vendor/thing\nhttps://example.org/x.whl\n"
          "--pre\n-c constraints.txt\ntorch>=2.6  # the model needs SDPA\n")
    write(tmp_path / "constraints.txt", "numpy<2\n")
    project = discover(tmp_path)
    assert project is not None
    assert [(d.requirement, d.source, d.kind) for d in project.requirements] == [
        ("safetensors==0.4.5", "requirements.txt:1", "requirements"),
        ("numpy<2", "constraints.txt:1", "constraint"),
        ("torch>=2.6", "requirements.txt:7", "requirements"),
    ]


@pytest.mark.parametrize(("files", "message"), [
    pytest.param({"requirements.txt": "torch\ntorch>=>2\n"},
                 "requirements.txt:2: invalid requirement 'torch>=>2'", id="unparsable"),
    pytest.param({"requirements.txt": "-r a.txt\n", "a.txt": "numpy\n-r requirements.txt\n"},
                 "a.txt:2: -r requirements.txt: include loop (requirements.txt -> a.txt -> requirements.txt)",
                 id="include-loop"),
    pytest.param({"requirements.txt": "-r missing.txt\n"}, "requirements.txt:1: -r missing.txt: no such file",
                 id="missing-include"),
    pytest.param({"pyproject.toml": '[project]\nname = "p"\ndependencies = [\n  "ok",\n  "not ok!",\n]\n'},
                 "pyproject.toml:5: invalid requirement 'not ok!'", id="pyproject"),
    pytest.param({"uv.lock": "version = 2\n"}, "uv.lock:1: key 'version': lock version 2 is not one this envcheck "
                 "reads (uv lock versions 1.x)", id="uv-lock-version"),
    pytest.param({"poetry.lock": '[[package]]\nname = "a"\nversion = "1"\n\n[metadata]\nlock-version = "3.0"\n'},
                 "poetry.lock:6: key 'metadata.lock-version': lock version '3.0' is not one", id="poetry-version"),
    pytest.param({"pylock.toml": 'created-by = "x"\n'}, "pylock.toml: key 'lock-version': lock version missing",
                 id="pylock-no-version"),
    pytest.param({"pdm.lock": "[metadata\n"}, "pdm.lock:1: invalid TOML", id="lock-not-toml"),
    pytest.param({"environment.yml": "dependencies:\n  - python=3.11\n  - pip:\n    - torch>=2\n    - bad req!\n"},
                 "environment.yml:5: invalid requirement 'bad req!'", id="conda"),
    pytest.param({"pyproject.toml": '[dependency-groups]\na = [{include-group = "b"}]\nb = [{include-group = "a"}]\n'},
                 "pyproject.toml: key 'dependency-groups.b': include-group loop: a -> b -> a", id="group-loop"),
])
def test_bad_project_files_are_one_line_naming_file_and_line(tmp_path: Path, quiet: pytest.MonkeyPatch,
                                                             files: dict[str, str], message: str) -> None:
    """A project file envcheck cannot use is exit 2 and one line naming the file (and line), not a traceback."""
    for name, text in files.items():
        write(tmp_path / name, text)
    quiet.chdir(tmp_path)
    args = ["--static", "--no-config"] + (["--group", "a"] if "dependency-groups" in str(files) else [])
    result = run(*args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"envcheck: error: {message}"), lines[0]


def test_pyproject_extras_groups_and_includes(tmp_path: Path) -> None:
    """nanochat's pyproject.toml: dependencies always, the named extra and group (include-group followed) on top."""
    root = copy_project("nanochat", tmp_path)
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    text = text.replace('[dependency-groups]\ndev = [',
                        '[dependency-groups]\nci = [{include-group = "dev"}, "mypy"]\ndev = [')
    (root / "pyproject.toml").write_text(text, encoding="utf-8")
    project = discover(root, extras=["gpu"], groups=["ci"])
    assert project is not None
    assert project.name == "nanochat"
    kinds = {(d.requirement, d.kind) for d in project.requirements}
    assert ("torch==2.9.1", "project") in kinds
    assert ("torch==2.9.1", "extra") in kinds
    assert ("pytest>=8.0.0", "group") in kinds and ("mypy", "group") in kinds
    with pytest.raises(ProjectError, match="--extra rocm: the project declares no such extra"):
        discover(root, extras=["rocm"])
    with pytest.raises(ProjectError, match="--group docs: the project declares no such group"):
        discover(root, groups=["docs"])


def test_setup_cfg_and_conda_environment(tmp_path: Path) -> None:
    """setup.cfg's install_requires and a conda environment.yml's pip list (with its -r include) are read."""
    write(tmp_path / "setup.cfg", "[metadata]\nname = legacy-proj\n\n[options]\ninstall_requires =\n"
                                  "    torch>=2.1\n    # a comment\n    einops\n")
    write(tmp_path / "environment.yml", "name: legacy\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11\n"
                                        "  - pip\n  - pip:\n    - --extra-index-url https://download.pytorch.org/whl/cu121\n"
                                        "    - -r extra.txt\n    - 'xformers==0.0.28'\n  - numpy\n")
    write(tmp_path / "extra.txt", "safetensors\n")
    project = discover(tmp_path)
    assert project is not None
    assert project.name == "legacy-proj"
    assert [(d.requirement, d.source) for d in project.requirements] == [
        ("torch>=2.1", "setup.cfg:6"), ("einops", "setup.cfg:8"), ("safetensors", "extra.txt:1"),
        ("xformers==0.0.28", "environment.yml:10"),
    ]
    assert project.index_options == ("--extra-index-url", "https://download.pytorch.org/whl/cu121")
    assert project.files == ("setup.cfg", "environment.yml", "extra.txt")


def test_nearest_project_and_explicit_files(tmp_path: Path) -> None:
    """The nearest folder with a project file is the project; --requirements replaces its requirements.txt."""
    write(tmp_path / "requirements.txt", "outer\n")
    inner = tmp_path / "inner"
    write(inner / "requirements.txt", "inner\n")
    write(inner / "requirements-dev.txt", "pytest\n")
    (inner / "src").mkdir()
    project = discover(inner / "src")
    assert project is not None and [d.requirement for d in project.requirements] == ["inner"]
    project = discover(inner, requirements=[inner / "requirements-dev.txt"])
    assert project is not None and [d.requirement for d in project.requirements] == ["pytest"]
    assert find_root(inner / "src") == inner.resolve()


def test_uv_lock_markers_pick_this_platform() -> None:
    """nanochat's uv.lock: torch is forked by platform and index; only the forks whose markers hold apply."""
    lock = locks.read(PROJECTS / "nanochat" / "uv.lock", "uv.lock")
    assert "nanochat" not in {e.name for e in lock.entries}  # the project itself (editable source) pins nothing
    torch = {e.version for e in lock.entries if e.name == "torch" and locks.applies(e, LINUX_311)}
    assert torch == {"2.9.1", "2.9.1+cpu", "2.9.1+cu128"}
    darwin = {**LINUX_311, "sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"}
    # On macOS the CPU fork (a Linux/Windows wheel of the CPU index) does not apply; the others' markers allow it.
    assert {e.version for e in lock.entries if e.name == "torch" and locks.applies(e, darwin)} == {"2.9.1",
                                                                                                  "2.9.1+cu128"}


def test_pylock_markers_pick_this_python() -> None:
    """maia3's pylock.toml (PEP 751): numpy is locked once per Python minor, colorama only on Windows."""
    lock = locks.read(PROJECTS / "maia3" / "pylock.toml", "pylock.toml")
    applying = {(e.name, e.version) for e in lock.entries if locks.applies(e, LINUX_311)}
    assert ("numpy", "2.4.6") in applying
    assert ("numpy", "2.2.6") not in applying and ("numpy", "2.5.2") not in applying
    assert not any(name == "colorama" for name, _ in applying)
    assert ("torch", "2.13.0") in applying


def test_poetry_and_pdm_locks(tmp_path: Path) -> None:
    """poetry.lock (lock-version 2.1, per-group markers) and pdm.lock (lock_version 4.5) are read with markers."""
    poetry = write(tmp_path / "poetry.lock", '[[package]]\nname = "torch"\nversion = "2.5.1"\noptional = false\n'
                                             'python-versions = ">=3.8"\ngroups = ["main"]\n'
                                             'markers = {main = "sys_platform == \\"linux\\""}\n\n'
                                             '[[package]]\nname = "pywin32"\nversion = "308"\n'
                                             'markers = "sys_platform == \\"win32\\""\n\n'
                                             '[metadata]\nlock-version = "2.1"\npython-versions = ">=3.10"\n'
                                             'content-hash = "0"\n')
    pdm = write(tmp_path / "pdm.lock", '[metadata]\ngroups = ["default"]\nstrategy = ["inherit_metadata"]\n'
                                       'lock_version = "4.5.0"\ncontent_hash = "sha256:0"\n\n'
                                       '[[package]]\nname = "Numpy"\nversion = "1.26.4"\n'
                                       'requires_python = ">=3.9"\nmarker = "python_version < \\"3.13\\""\n')
    read_poetry = locks.read(poetry, "poetry.lock")
    assert [(e.name, locks.applies(e, LINUX_311)) for e in read_poetry.entries] == [("torch", True),
                                                                                     ("pywin32", False)]
    assert read_poetry.sync == "poetry sync"
    read_pdm = locks.read(pdm, "pdm.lock")
    assert [(e.name, e.version, locks.applies(e, LINUX_311)) for e in read_pdm.entries] == [("numpy", "1.26.4", True)]


# --- checking real environments ------------------------------------------------------------------------------


def test_clone_before_first_run_reports_what_the_project_needs(tmp_path: Path, quiet: pytest.MonkeyPatch) -> None:
    """The issue's case: pyproject requires torch>=2.6, requirements.txt lists safetensors; torch 2.5.1 is there."""
    root = tmp_path / "clone"
    write(root / "pyproject.toml", '[project]\nname = "clone"\nversion = "0"\ndependencies = ["torch>=2.6"]\n')
    write(root / "requirements.txt", "safetensors\n")
    python = make_venv(tmp_path / "env", {"torch": "2.5.1"})
    quiet.chdir(root)
    result = run("--static", "--no-color", "--python", str(python))
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[1] == f"project {root.resolve()}: pyproject.toml, requirements.txt"
    assert "    - pyproject.toml:4 requires torch>=2.6; torch is 2.5.1" in lines
    assert "    - requirements.txt:1 requires safetensors; safetensors is not installed" in lines
    # One install command for both (the venv has no pip: it is written for what the environment has).
    assert "'torch>=2.6' safetensors" in result.output
    assert run("--static", "--no-project", "--python", str(python)).exit_code == 0
    # Every format names the project files: the JSON report (valid against its schema) and a junit property too.
    report = json.loads(run("--static", "--format", "json", "--python", str(python)).output)
    assert report["project"] == f"{root.resolve()}: pyproject.toml, requirements.txt"
    schema = json.loads((Path(envcheck.__file__).parent / "schemas" / "report.schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator(schema).validate(report)
    junit = run("--static", "--format", "junit", "--python", str(python)).output
    assert f'<property name="project" value="{root.resolve()}: pyproject.toml, requirements.txt" />' in junit


def test_satisfied_project_passes(tmp_path: Path, quiet: pytest.MonkeyPatch) -> None:
    """maia3 with everything its pyproject.toml and requirements.txt ask for: EC9801 passes."""
    root = copy_project("maia3", tmp_path)
    (root / "pylock.toml").unlink()
    python = make_venv(tmp_path / "env", {"huggingface-hub": "0.26.0", "numpy": "2.1.0", "chess": "1.11.2",
                                          "python-chess": "1.999", "torch": "2.13.0"})
    quiet.chdir(root)
    result = run("--static", "--python", str(python), "--format", "json", "--no-config")
    report = json.loads(result.output)
    verdicts = [f for f in report["findings"] if f["id"] == "EC9801"]
    assert [v["status"] for v in verdicts] == ["pass"], verdicts


def test_installed_project_is_judged_by_its_metadata(tmp_path: Path, quiet: pytest.MonkeyPatch) -> None:
    """With maia3 itself installed, its pyproject dependencies are left to EC0102; requirements.txt still counts."""
    root = copy_project("maia3", tmp_path)
    (root / "pylock.toml").unlink()
    python = make_venv(tmp_path / "env", {"maia3": "0.1.0"})
    quiet.chdir(root)
    result = run("--static", "--no-color", "--python", str(python))
    assert "requirements.txt:4 requires torch; torch is not installed" in result.output
    assert "pyproject.toml" not in result.output.split("\n", 2)[2]  # only the header names it


def test_lock_drift_is_a_warning_with_the_sync_command(tmp_path: Path, quiet: pytest.MonkeyPatch) -> None:
    """nanochat's uv.lock pins numpy 1.26.4, filelock 3.19.1, regex 2025.9.1: other versions are drift, a warning."""
    root = copy_project("nanochat", tmp_path)
    python = make_venv(tmp_path / "env", {"numpy": "2.1.0", "regex": "2025.9.1", "torch": "2.9.1+cu128",
                                          "filelock": "3.20.0"})
    quiet.chdir(root)
    result = run("--static", "--no-color", "--python", str(python), "--no-config")
    assert "    - numpy 2.1.0 installed, uv.lock pins 1.26.4" in result.output
    assert "    - filelock 3.20.0 installed, uv.lock pins 3.19.1" in result.output
    assert "regex" not in result.output.split("EC9802", 1)[1].split("why:")[0]
    assert "torch 2.9.1+cu128 installed" not in result.output  # one of the platform's forks
    assert "Run `uv sync` in the project's folder" in result.output
    assert run("--static", "--python", str(python), "--no-config", "--ignore", "EC9801",
               "--fail-on", "error").exit_code == 0
    assert run("--static", "--python", str(python), "--no-config", "--ignore", "EC9801",
               "--fail-on", "warning").exit_code == 1


def test_snapshot_carries_the_project(tmp_path: Path, quiet: pytest.MonkeyPatch) -> None:
    """`envcheck facts` records what the project declared; `check --facts` elsewhere judges against it."""
    root = copy_project("nanochat", tmp_path)
    python = make_venv(tmp_path / "env", {"numpy": "2.1.0"})
    quiet.chdir(root)
    snapshot = tmp_path / "facts.json"
    assert run("facts", "--static", "--python", str(python), "-o", str(snapshot)).exit_code == 0
    data = json.loads(snapshot.read_text(encoding="utf-8"))
    assert data["schema"] == 3
    schema = json.loads((Path(envcheck.__file__).parent / "schemas" / "facts.schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator(schema).validate(data)
    project = data["project"]
    assert project["name"] == "nanochat" and project["files"] == ["pyproject.toml", "uv.lock"]
    assert {"name": "numpy", "version": "1.26.4"} in project["locks"][0]["pins"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    quiet.chdir(elsewhere)
    result = run("--facts", str(snapshot), "--no-color", "--no-config")
    assert "numpy 2.1.0 installed, uv.lock pins 1.26.4" in result.output
    assert f"project {root.resolve()}: pyproject.toml, uv.lock" in result.output
    assert run("--facts", str(snapshot), "--requirements", "x.txt").exit_code == 2
    older = {k: v for k, v in data.items() if k != "project"} | {"schema": 2}
    old_file = tmp_path / "old.json"
    old_file.write_text(json.dumps(older), encoding="utf-8")
    assert "EC980" not in run("--facts", str(old_file), "--no-config", "-v").output


def test_project_facts_round_trip() -> None:
    """The snapshot's project record reads back equal to what was written."""
    from dataclasses import asdict

    from envcheck.facts._reader import Reader
    from envcheck.facts.project import Declared, Lock, Pin

    facts = ProjectFacts(root="/p", name="p", files=("pyproject.toml",),
                         requirements=(Declared("torch>=2.6", "pyproject.toml:4", "project"),),
                         index_options=("--index-url", "https://download.pytorch.org/whl/cu124"),
                         locks=(Lock("uv.lock", "uv", "uv sync", (Pin("torch", "2.6.0+cu124"),)),))
    assert ProjectFacts.from_reader(Reader(json.loads(json.dumps(asdict(facts))), "f.json")) == facts


def test_library_check_reads_the_project(tmp_path: Path, quiet: pytest.MonkeyPatch) -> None:
    """`envcheck.check(project_dir=...)` reads the project there; `no_project=True` does not."""
    write(tmp_path / "requirements.txt", "surely-not-installed-anywhere>=1\n")
    report = envcheck.check(project_dir=tmp_path, static=True, no_config=True)
    (finding,) = [f for f in report.findings if f.rule_id == "EC9801"]
    assert finding.item is not None and finding.item["name"] == "surely-not-installed-anywhere"
    assert report.project == f"{tmp_path.resolve()}: requirements.txt"
    report = envcheck.check(project_dir=tmp_path, static=True, no_config=True, no_project=True)
    assert not [f for f in report.findings if f.rule_id.startswith("EC98")]


def test_real_torch_wheel_against_a_real_lock(torch_python: str, tmp_path: Path, quiet: pytest.MonkeyPatch) -> None:
    """The real torch CPU wheel against maia3's pylock.toml, which locks PyPI's torch 2.13.0: drift, named."""
    root = copy_project("maia3", tmp_path)
    quiet.chdir(root)
    result = run("--static", "--no-color", "--python", torch_python, "--no-config")
    assert "    - torch 2.13.0+cpu installed, pylock.toml pins 2.13.0" in result.output
    assert "requires chess; chess is not installed" in result.output


@pytest.mark.parametrize("lock", ["nanochat/uv.lock", "maia3/pylock.toml"])
def test_lock_scan_reads_what_the_toml_parser_reads(lock: str) -> None:
    """The fast scan of a real lock gives the names, versions and markers the full TOML parse gives."""
    import tomllib

    text = (PROJECTS / lock).read_text(encoding="utf-8")
    key = "packages" if lock.endswith("pylock.toml") else "package"

    def essentials(data: dict[str, object]) -> list[tuple[object, ...]]:
        return [(p["name"], p.get("version"), p.get("resolution-markers"), p.get("marker"))
                for p in data[key]]  # type: ignore[attr-defined]

    assert essentials(locks._scan(text)) == essentials(tomllib.loads(text))


def test_lock_with_a_multiline_string_is_parsed_whole(tmp_path: Path) -> None:
    """A lock the scan cannot cut safely (a multi-line string) is parsed by the TOML parser instead, keys and all."""
    path = write(tmp_path / "pdm.lock", '[metadata]\nlock_version = "4.4"\n\n[[package]]\nname = "torch"\n'
                                        'version = "2.5.1"\nsummary = """two\nname = "not-a-package"\nlines"""\n')
    assert [(e.name, e.version) for e in locks.read(path, "pdm.lock").entries] == [("torch", "2.5.1")]

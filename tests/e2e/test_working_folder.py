"""Nothing from the working folder runs: a project's `platform.py` or `json.py` is not imported by the collector or
the probes, a project's `pip/` folder does not run instead of pip, a project's `./uv` is not "the uv found" because
of a relative PATH entry, and a requirement named like a wheel file in the working folder is not installed without
--allow-other. Each with the real `envcheck` command, real venvs and files that would leave a marker if they ran."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from _fakes import write_tree
from _torch import BIN, clean_env
from _venvs import VenvMaker
from test_child_bounds import envcheck_command

pytestmark = pytest.mark.posix


def _marker(name: str) -> str:
    """A module that, if it ever runs, leaves a file named after itself beside the markers."""
    return (f"import os\nopen(os.path.join(os.environ['MARKERS'], {name!r}), 'w').close()\n")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    (tmp_path / "markers").mkdir(exist_ok=True)
    return clean_env({"ENVCHECK_CACHE_DIR": str(tmp_path / "cache"), "MARKERS": str(tmp_path / "markers"),
                      "NO_COLOR": "1", "PIP_NO_INDEX": "1", "UV_OFFLINE": "1", **extra})


def _ran(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "markers").iterdir())


def _bare_venv(tmp_path: Path) -> Path:
    """A real venv without pip (seconds saved where pip is not what is tested)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=clean_env())
    return venv / BIN / "python"


def _envcheck(tmp_path: Path, project: Path, *args: str, env: dict[str, str] | None = None,
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*envcheck_command(), *args, "--no-config", "--no-project"], cwd=project,
                          env=env or _env(tmp_path), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=300, check=False)


@pytest.mark.parametrize("command", [["check", "--static"], ["check", "--probe-timeout", "60"]],
                         ids=["collector", "collector-and-probes"])
def test_the_projects_modules_never_replace_the_standard_librarys(tmp_path: Path, command: list[str]) -> None:
    """The collector and the probe children import `platform` and `json`: the project's files of those names are
    never what they import (`python -` put the working folder first on sys.path)."""
    python = _bare_venv(tmp_path)
    project = tmp_path / "project"
    write_tree(project, {"platform.py": _marker("platform.py"), "json.py": _marker("json.py")})
    result = _envcheck(tmp_path, project, *command, "--python", str(python), "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    assert _ran(tmp_path) == []
    assert json.loads(result.stdout)["python"] == str(python)  # and the check itself ran on that interpreter


def test_a_pip_folder_in_the_project_never_runs(tmp_path: Path, venv_maker: VenvMaker) -> None:
    """`envcheck fix` runs pip as `python -m pip`; the project's `pip/` package is not what runs, the
    environment's pip is (it fails here: no index is reachable)."""
    python = venv_maker.make(tmp_path / "venv")
    project = tmp_path / "project"
    write_tree(project, {"pip/__init__.py": _marker("pip/__init__.py"), "pip/__main__.py": _marker("pip/__main__.py")})
    result = _envcheck(tmp_path, project, "fix", "--yes", "--static", "--python", str(python),
                       "--require", "absent-package>=1")
    assert "-m pip install 'absent-package>=1'" in result.stdout, result.stdout + result.stderr
    assert "ERROR: " in result.stderr or "ERROR: " in result.stdout  # pip itself ran, and found no index
    assert _ran(tmp_path) == []


def test_a_relative_path_entry_does_not_make_the_projects_uv_the_one_found(tmp_path: Path) -> None:
    """With `.` first on PATH and a `./uv` in the project, the uv envcheck reports and `fix` runs is never that
    script (an environment without pip installs with uv)."""
    python = _bare_venv(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    fake = project / "uv"
    fake.write_text("#!/bin/sh\n: > \"$MARKERS/uv\"\n")
    fake.chmod(0o755)
    env = _env(tmp_path, PATH=f".{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    facts = _envcheck(tmp_path, project, "facts", "--static", "--python", str(python), env=env)
    assert facts.returncode == 0, facts.stderr
    found = json.loads(facts.stdout)["installer"]["uv"]
    assert found is None or (Path(found).is_absolute() and Path(found).parent != project), found
    _envcheck(tmp_path, project, "fix", "--yes", "--static", "--python", str(python), "--require",
              "absent-package>=1", env=env)
    assert _ran(tmp_path) == []


def _wheel(folder: Path) -> Path:
    """A real wheel, `evil-1.0-py3-none-any.whl`, whose .pth file leaves a marker at every interpreter start."""
    files = {"evil.pth": "import os; open(os.path.join(os.environ['MARKERS'], 'evil.pth'), 'w').close()\n",
             "evil-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
             "evil-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                         "Tag: py3-none-any\n"}
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append("evil-1.0.dist-info/RECORD,,")
    path = folder / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)
        whl.writestr("evil-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def test_a_requirement_named_like_a_wheel_waits_for_allow_other(tmp_path: Path, venv_maker: VenvMaker) -> None:
    """`--require evil-1.0-py3-none-any.whl` is a valid PEP 508 name, which pip installs from the file of that name
    in the working folder: `fix --yes` holds it back; with --allow-other it is installed (so the wheel is real)."""
    python = venv_maker.make(tmp_path / "venv")
    project = tmp_path / "project"
    project.mkdir()
    _wheel(project)
    args = ("fix", "--yes", "--static", "--python", str(python), "--require", "evil-1.0-py3-none-any.whl")
    held = _envcheck(tmp_path, project, *args)
    assert "not run without --allow-other" in held.stdout, held.stdout + held.stderr
    assert "evil-1.0-py3-none-any.whl" in held.stdout and "not a requirement by name" in held.stdout
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    assert not (site / "evil.pth").exists() and _ran(tmp_path) == []
    _envcheck(tmp_path, project, *args, "--allow-other")
    assert (site / "evil.pth").exists()


def test_the_packs_rules_may_not_install_a_file_either() -> None:
    """A rule of the shipped pack fills names in from the environment and the project: a name an installer reads as
    a file waits for --allow-other, whoever asks; a name, a range or the pack's own link does not."""
    from envcheck.remedy import fix as fix_mod
    from envcheck.remedy.fix_steps import Step
    from envcheck.rules.model import Finding, Severity, Status

    python = "/opt/venv/bin/python"

    def step(arg: str) -> Step:
        finding = Finding(rule_id="EC0702", name="rule", severity=Severity.ERROR, status=Status.FAIL,
                          summary="s", commands=((python, "-m", "pip", "install", arg),))
        (only,) = fix_mod.plan([finding], python).steps
        return only

    for arg in ("evil-1.0-py3-none-any.whl", "evil.tar.gz", "Evil.ZIP", "evil.whl[extra]",
                "evil.whl; os_name=='posix'"):
        assert "as a file" in step(arg).held, arg
    for arg in ("torch>=2.6", "evil", "a.b", "flash-attn==2.5.8", "a @ https://example.org/a-1.0-py3-none-any.whl"):
        assert step(arg).held == "", arg

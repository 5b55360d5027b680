"""envcheck installed from its wheel into real virtual environments, checking real wheels installed by real pip.

The fake distributions are real wheels (a zip with METADATA, WHEEL and a hashed RECORD) written here and installed
offline with `--no-index --find-links`; `--no-deps` is how the pin gets violated, as it does for users. envcheck's
own wheel and its dependencies are built once per module into a wheelhouse (this step may reach the package index).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import shlex
import subprocess
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _once import built_once
from _torch import BIN, clean_env
from _venvs import VenvMaker

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
_PIP_TIMEOUT_S = 600  # guards against a hung subprocess; never a timing assertion
_RUN_TIMEOUT_S = 120

# A torchvision-like companion pinned to a torch other than the one installed: rule EC0101's case.
FAKES: list[tuple[str, str, list[str]]] = [
    ("fakevision", "0.21.0", ["faketorch==2.6.0"]),
    ("faketorch", "2.13.0", []),
    ("faketorch", "2.6.0", []),  # what the fix installs
]
PIN = "faketorch==2.6.0"


def _clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The shared clean environment, with colour off so the console script's output can be compared as text."""
    return clean_env({"NO_COLOR": "1", **(extra or {})})


def _run(argv: Sequence[str | Path], cwd: Path, env: Mapping[str, str] | None = None,
         timeout: float = _RUN_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=_clean_env(env), capture_output=True, text=True,
                          timeout=timeout, check=False, stdin=subprocess.DEVNULL)


def _ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"{shlex.join(proc.args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def make_wheel(dest: Path, name: str, version: str, requires: Sequence[str] = ()) -> Path:
    """A minimal, valid pure-Python wheel (PEP 427) with a hashed RECORD, installable by pip."""
    dist_info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name}/__init__.py": f'__version__ = "{version}"\n',
        f"{dist_info}/METADATA": metadata,
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: envcheck-tests\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n",
        f"{dist_info}/top_level.txt": f"{name}\n",
    }
    record = [f"{path},{_record_hash(text.encode())},{len(text.encode())}" for path, text in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    wheel = dest / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return wheel


@dataclass(frozen=True)
class Venv:
    path: Path

    @property
    def python(self) -> Path:
        return self.path / BIN / "python"

    def script(self, name: str) -> Path:
        return self.path / BIN / name

    def pip_install(self, *args: str | Path, env: Mapping[str, str] | None = None) -> None:
        _ok(_run([self.python, "-m", "pip", "install", "--quiet", *args], cwd=self.path, env=env,
                 timeout=_PIP_TIMEOUT_S))


@dataclass(frozen=True)
class Houses:
    envcheck: Path  # envcheck's wheel and the wheels of its dependencies
    fakes: Path  # the fake distributions
    work: Path  # an empty working directory for the commands (never the checkout: `-m` would import from it)


@pytest.fixture(scope="module")
def houses(tmp_path_factory: pytest.TempPathFactory, envcheck_wheelhouse: Path) -> Houses:
    if importlib.util.find_spec("ensurepip") is None:
        pytest.skip("this Python cannot create virtual environments with pip (no ensurepip; Debian: python3-venv)")
    assert len(list(envcheck_wheelhouse.glob("envcheck_ml-*.whl"))) == 1
    fakes = tmp_path_factory.mktemp("fakes")
    for name, version, requires in FAKES:
        make_wheel(fakes, name, version, requires)
    return Houses(envcheck_wheelhouse, fakes, tmp_path_factory.mktemp("work"))


def _new_venv(path: Path, houses: Houses, venv_maker: VenvMaker, *, envcheck: bool,
              fakes: Sequence[str] = ()) -> Venv:
    venv_maker.make(path, env=_clean_env(None))
    venv = Venv(path)
    if envcheck:
        venv.pip_install("--no-index", "--find-links", houses.envcheck, "envcheck-ml")
        where = _ok(_run([venv.python, "-c", "import envcheck; print(envcheck.__file__)"], cwd=houses.work))
        # The installed copy is under test, not the checkout (an editable install or a stray sys.path entry).
        assert Path(where.stdout.strip()).is_relative_to(path), where.stdout
    if fakes:
        # --no-deps: a companion installed without its pinned torch, the way the pin gets violated in practice.
        venv.pip_install("--no-index", "--find-links", houses.fakes, "--no-deps", *fakes)
    return venv


@pytest.fixture(scope="module")
def conflicted(tmp_path_factory: pytest.TempPathFactory, houses: Houses, venv_maker: VenvMaker) -> Venv:
    """envcheck plus fakevision 0.21.0 (which pins faketorch 2.6.0) next to faketorch 2.13.0; built once for the
    run (the tests only run it)."""
    return Venv(built_once(tmp_path_factory, "real-env-conflicted", lambda folder: _new_venv(
        folder, houses, venv_maker, envcheck=True, fakes=["fakevision==0.21.0", "faketorch==2.13.0"])))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory, houses: Houses, venv_maker: VenvMaker) -> Venv:
    """envcheck and its dependencies only; built once for the run (the tests only run it)."""
    return Venv(built_once(tmp_path_factory, "real-env-clean",
                           lambda folder: _new_venv(folder, houses, venv_maker, envcheck=True)))


def _bare(tmp_path: Path, houses: Houses, venv_maker: VenvMaker) -> Venv:
    """The conflicting wheels without envcheck: a project's environment checked from outside."""
    return _new_venv(tmp_path / "target", houses, venv_maker, envcheck=False,
                     fakes=["fakevision==0.21.0", "faketorch==2.13.0"])


def _pin_command(python: Path) -> str:
    return shlex.join([str(python), "-m", "pip", "install", PIN])


def _json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(f"not JSON ({exc}):\n{proc.stdout}\n{proc.stderr}") from None
    return data


def _conflicts(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"] == "EC0101" and f["status"] == "fail"]


def test_console_script_reports_violated_pin(conflicted: Venv, houses: Houses) -> None:
    """The installed `envcheck` exits 1, names the broken pin and prints the fix for this venv's own python."""
    proc = _run([conflicted.script("envcheck")], cwd=houses.work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "EC0101" in out
    assert "fakevision 0.21.0 requires faketorch==2.6.0, but faketorch 2.13.0 is installed" in out
    commands = [line.strip()[2:] for line in out.splitlines() if line.strip().startswith("$ ")]
    assert commands == [_pin_command(conflicted.python)]
    assert out.rstrip().splitlines()[-1].startswith("envcheck ")
    assert str(conflicted.python) in out.rstrip().splitlines()[-1]
    assert proc.stderr == ""


def test_console_script_json_report(conflicted: Venv, houses: Houses) -> None:
    """`--format json` is valid JSON with one failed EC0101 finding whose argv targets this venv's python."""
    proc = _run([conflicted.script("envcheck"), "--format", "json"], cwd=houses.work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = _json(proc)
    assert report["python"] == str(conflicted.python)
    assert report["origin"] == "local"
    (finding,) = _conflicts(report)
    assert finding["severity"] == "error"
    assert finding["item"]["package"] == "fakevision"
    assert finding["item"]["dependency"] == "faketorch"
    assert [c["argv"] for c in finding["commands"]] == [[str(conflicted.python), "-m", "pip", "install", PIN]]
    assert [c["shell"] for c in finding["commands"]] == [_pin_command(conflicted.python)]


def test_json_report_matches_the_shipped_schema(conflicted: Venv, houses: Houses) -> None:
    """The real JSON report validates against the report schema installed with envcheck in the venv."""
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is part of the [test] extra")
    if not (ROOT / "envcheck" / "schemas" / "report.schema.json").is_file():
        pytest.skip("this checkout has no envcheck/schemas/report.schema.json")
    where = _ok(_run([conflicted.python, "-c", "import envcheck; print(envcheck.__file__)"], cwd=houses.work))
    installed = Path(where.stdout.strip()).parent / "schemas" / "report.schema.json"
    assert installed.is_file(), f"{installed} was not installed"
    schema = json.loads(installed.read_text(encoding="utf-8"))
    report = _json(_run([conflicted.script("envcheck"), "--format", "json"], cwd=houses.work))
    jsonschema.validators.validator_for(schema)(schema).validate(report)


def test_python_option_checks_another_venv(clean: Venv, houses: Houses, tmp_path: Path,
                                           venv_maker: VenvMaker) -> None:
    """`--python` checks a venv without envcheck: the finding and the command are that venv's, not envcheck's."""
    target = _bare(tmp_path, houses, venv_maker)
    proc = _run([clean.script("envcheck"), "--python", target.python], cwd=houses.work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "fakevision 0.21.0 requires faketorch==2.6.0, but faketorch 2.13.0 is installed" in proc.stdout
    assert _pin_command(target.python) in proc.stdout
    assert str(clean.path) not in proc.stdout
    assert str(target.python) in proc.stdout.rstrip().splitlines()[-1]
    # The target really lacks envcheck: the collector ran there from source, not from an installed copy.
    assert _run([target.python, "-c", "import envcheck"], cwd=houses.work).returncode != 0


def test_printed_command_fixes_the_conflict(clean: Venv, houses: Houses, tmp_path: Path,
                                            venv_maker: VenvMaker) -> None:
    """Running the reported command, exactly as reported, makes the next check of that venv exit 0."""
    target = _bare(tmp_path, houses, venv_maker)
    report = _json(_run([clean.script("envcheck"), "--python", target.python, "--format", "json"], cwd=houses.work))
    (finding,) = _conflicts(report)
    (argv,) = (c["argv"] for c in finding["commands"])
    # Offline: the index is replaced by the folder of fake wheels; the argv itself is used unchanged.
    _ok(_run(argv, cwd=houses.work, env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(houses.fakes)},
             timeout=_PIP_TIMEOUT_S))
    proc = _run([clean.script("envcheck"), "--python", target.python], cwd=houses.work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "EC0101" not in proc.stdout


def test_clean_venv_prints_one_quiet_line(clean: Venv, houses: Houses) -> None:
    """A venv with only envcheck in it exits 0 and prints the checked interpreter, then a single summary line
    naming its python."""
    proc = _run([clean.script("envcheck")], cwd=houses.work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # Indented lines are hints under the summary (e.g. "run with -v to see what skipped rules need").
    target, *headlines = [line for line in lines if line and not line[0].isspace()]
    assert target == f"checked {clean.python}: envcheck's own interpreter (no activated or project environment " \
                     "was found)"
    assert len(headlines) == 1, proc.stdout
    assert lines[:2] == [target, headlines[0]]
    assert headlines[0].startswith("envcheck ")
    assert "no problems" in headlines[0]
    assert headlines[0].endswith(str(clean.python))
    assert proc.stderr == ""


def test_python_m_envcheck_matches_console_script(conflicted: Venv, houses: Houses) -> None:
    """`python -m envcheck` in the venv runs the same check, with the same verdicts, as the console script."""
    version = _ok(_run([conflicted.python, "-m", "envcheck", "--version"], cwd=houses.work))
    assert version.stdout.split()[-1] == _run(
        [conflicted.python, "-c", "import envcheck; print(envcheck.__version__)"], cwd=houses.work).stdout.strip()
    via_module = _run([conflicted.python, "-m", "envcheck", "--format", "json"], cwd=houses.work)
    via_script = _run([conflicted.script("envcheck"), "--format", "json"], cwd=houses.work)
    assert via_module.returncode == via_script.returncode == 1, via_module.stdout + via_module.stderr
    verdicts = [(f["id"], f["status"], f["summary"]) for f in _json(via_module)["findings"]]
    assert verdicts == [(f["id"], f["status"], f["summary"]) for f in _json(via_script)["findings"]]
    assert len(_conflicts(_json(via_module))) == 1

"""End to end: a venv layered over a base environment, as a `.pth` line and `--system-site-packages` make one.

Real venvs, real pip, and a local index of stand-in wheels (tests/_index.py), which also serves PyTorch's CPU index
layout; envcheck is pointed there by ENVCHECK_TORCH_INDEX_BASE, so the commands it prints run here as printed. The
base holds torch 2.13.0+cpu with torchvision 0.28.0+cpu and a NumPy 2 stack; the layer on top gets its own pip and
setuptools (as every venv does) and then a copy that breaks what the base's met: torchvision 0.20.0 (pinned to
torch 2.5.0) or numpy 1.26.4. envcheck must not report pip, setuptools or wheel for being in both layers, must
print no command that uninstalls pip or installs the broken copy again, and following its plan must leave a clean
re-check and the base as it was.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import sysconfig
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from _index import CPU_INDEX, STAND_INS, LocalIndex, StandIn, platform_tag, serve, torchvision_stand_in, write_index
from _index import envcheck as _envcheck
from _index import failing as _failing
from _index import ok as _ok
from _index import run as _run
from _index import static_report as _report
from _torch import BIN
from _venvs import VenvMaker

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (sys.platform == "linux" and os.uname().machine == "x86_64"),
                                 reason="the tables know PyPI's torchvision builds for Linux x86_64")]

# The base: torch and torchvision as the CPU index names them, NumPy 2, and two libraries that need NumPy 2.
BASE_PACKAGES = ("torch==2.13.0+cpu", "torchvision==0.28.0+cpu", "numpy==2.3.5", "pillow", "contourpy", "tifffile")
LAYERED = (
    torchvision_stand_in("0.20.0", "2.5.0"),  # made for torch 2.5.0, and pinning it
    StandIn("numpy", "1.26.4", tag=platform_tag()),
    StandIn("contourpy", "1.4.0", ("numpy>=2.0",)),
    StandIn("tifffile", "2026.9.20", ("numpy<2.6,>=2.1",)),
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    root = write_index(tmp_path_factory.mktemp("index"), (*STAND_INS, *LAYERED))
    write_index(root, CPU_INDEX, simple="whl/cpu", files="whl/files-cpu")
    with serve(root, tmp_path_factory.mktemp("uv-cache")) as served:
        yield served


@pytest.fixture
def env(index: LocalIndex) -> dict[str, str]:
    return index.env()


def _python(prefix: Path) -> Path:
    return prefix / BIN / "python"


def _site(python: Path, env: Mapping[str, str], cwd: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(_ok(_run([python, "-c", code], env, cwd)).stdout.strip())


def _pip(python: Path, env: Mapping[str, str], cwd: Path, *args: str) -> None:
    _ok(_run([python, "-m", "pip", "install", "--quiet", "--no-deps", *args], env, cwd))


def _versions(python: Path, env: Mapping[str, str], cwd: Path) -> dict[str, list[tuple[str, str]]]:
    """Every copy of every distribution `python` sees: name -> [(version, folder)], the imported one first."""
    code = ("import importlib.metadata as m, json, os; out = {}\n"
            "for d in m.distributions():\n"
            "    out.setdefault(d.metadata['Name'].lower(), []).append((d.version, os.path.dirname(str(d._path))))\n"
            "print(json.dumps(out))")
    found: dict[str, list[tuple[str, str]]] = json.loads(_ok(_run([python, "-c", code], env, cwd)).stdout)
    return {name: [tuple(c) for c in copies] for name, copies in found.items()}  # type: ignore[misc]


def _assert_sound(commands: list[list[str]], broken: str) -> None:
    """No command uninstalls pip or installs `broken` again; each names a distribution at most once."""
    for argv in commands:
        words = argv[argv.index("uninstall") + 1:] if "uninstall" in argv else []
        assert "pip" not in words, argv
        assert not any(a.startswith(broken) for a in argv if "install" in argv and "uninstall" not in argv), argv
        names = [a.split("=")[0].split("<")[0].split(">")[0] for a in argv[4:] if not a.startswith("-")]
        assert len(names) == len(set(names)), argv


def _assert_clean(python: Path, env: Mapping[str, str], cwd: Path) -> None:
    proc = _envcheck("check", "--static", "--fail-on", "warning", "--python", python, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- the layered environments ----------------------------------------------------------------------------------


def _pth_layered(tmp_path: Path, env: Mapping[str, str], venv_maker: VenvMaker) -> tuple[Path, Path]:
    """A base venv, and a venv over it: its own site-packages first, then the base's, by a `.pth` line."""
    base, over = (venv_maker.make(tmp_path / name, env=env) for name in ("base", "over"))
    _pip(base, env, tmp_path, *BASE_PACKAGES)
    (_site(over, env, tmp_path) / "_base.pth").write_text(f"{_site(base, env, tmp_path)}\n", encoding="utf-8")
    return base, over


def _python_installation(tmp_path: Path, env: Mapping[str, str]) -> Path:
    """A Python installation of this test's own, whose site-packages it may fill: this interpreter's executable
    copied, its standard library linked. A `--system-site-packages` venv made by it layers over that folder."""
    real = Path(sys.base_prefix)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    root = tmp_path / "installation"
    (root / "bin").mkdir(parents=True)
    (root / "lib" / version / "site-packages").mkdir(parents=True)
    executable = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    shutil.copy2(executable, root / "bin" / version)
    (root / "bin" / "python").symlink_to(version)
    for entry in (real / "lib").glob("libpython*"):
        (root / "lib" / entry.name).symlink_to(entry)
    for entry in Path(sysconfig.get_paths()["stdlib"]).iterdir():
        if entry.name != "site-packages":
            (root / "lib" / version / entry.name).symlink_to(entry)
    proc = _run([root / "bin" / "python", "-c", "import sys; print(sys.base_prefix)"], env, tmp_path)
    if proc.returncode != 0 or Path(proc.stdout.strip()) != root:
        pytest.skip(f"this Python cannot be copied into an installation of its own: {proc.stdout}{proc.stderr}")
    _ok(_run([root / "bin" / "python", "-m", "ensurepip", "--default-pip"], env, tmp_path))  # pip in the base too
    return root / "bin" / "python"


def _system_site_layered(tmp_path: Path, env: Mapping[str, str], venv_maker: VenvMaker) -> tuple[Path, Path]:
    """A Python installation with packages, and a `--system-site-packages` venv made by it."""
    base = _python_installation(tmp_path, env)
    _pip(base, env, tmp_path, *BASE_PACKAGES)
    over = venv_maker.make(tmp_path / "over", python=base, system_site_packages=True, env=env)
    return base, over


LAYERINGS = [pytest.param(_pth_layered, id="pth-line"), pytest.param(_system_site_layered, id="system-site-packages")]


@pytest.mark.parametrize("layered", LAYERINGS)
def test_installer_in_both_layers_is_not_reported(layered: Any, tmp_path: Path, env: dict[str, str],
                                                  venv_maker: VenvMaker) -> None:
    """pip and setuptools in the venv and in its base, nothing broken: the check is clean."""
    _, over = layered(tmp_path, env, venv_maker)
    copies = _versions(over, env, tmp_path)
    assert len(copies["pip"]) == 2, copies["pip"]
    assert not _failing(_report(over, env, tmp_path))
    _assert_clean(over, env, tmp_path)


@pytest.mark.parametrize("layered", LAYERINGS)
def test_layered_torchvision_commands_run_as_printed(layered: Any, tmp_path: Path, env: dict[str, str],
                                                     venv_maker: VenvMaker) -> None:
    """torchvision 0.20.0 over the base's 0.28.0+cpu: EC0702 and one EC0103 (torchvision, not pip); the printed
    commands neither uninstall pip nor install 0.20.0, run as printed, and leave the base as it was."""
    base, over = layered(tmp_path, env, venv_maker)
    _pip(over, env, tmp_path, "torchvision==0.20.0")
    before = _versions(base, env, tmp_path)
    failing = _failing(_report(over, env, tmp_path))
    assert sorted((f["id"], (f.get("item") or {}).get("name", "")) for f in failing) == [
        ("EC0103", "torchvision"), ("EC0702", "torchvision")]
    printed = [c for f in failing for c in f["commands"]]
    _assert_sound([c["argv"] for c in printed], "torchvision==0.20.0")
    assert [c["argv"][3:] for f in failing if f["id"] == "EC0103" for c in f["commands"]] == [
        ["uninstall", "-y", "torchvision"]]
    for command in printed:
        _ok(_run(shlex.split(command["shell"]), env, tmp_path))
    _assert_clean(over, env, tmp_path)
    assert _versions(over, env, tmp_path)["torchvision"][0][0] == "0.28.0+cpu"
    assert _versions(base, env, tmp_path) == before


@pytest.mark.parametrize("layered", LAYERINGS)
def test_layered_numpy_fix_yes_brings_numpy_2_back(layered: Any, tmp_path: Path, env: dict[str, str],
                                                   venv_maker: VenvMaker) -> None:
    """numpy 1.26.4 over the base's NumPy 2: EC0101's command names numpy once, with the range every requirer
    accepts; `envcheck fix --yes` removes the layered numpy only, and the re-check is clean."""
    base, over = layered(tmp_path, env, venv_maker)
    _pip(over, env, tmp_path, "numpy==1.26.4")
    before = _versions(base, env, tmp_path)
    failing = _failing(_report(over, env, tmp_path))
    assert {f["id"] for f in failing} == {"EC0101", "EC0103"}
    _assert_sound([c["argv"] for f in failing for c in f["commands"]], "numpy==1.26.4")
    dry = _envcheck("fix", "--dry-run", "--static", "--fail-on", "warning", "--python", over, env=env, cwd=tmp_path)
    python = shlex.quote(str(over))
    assert [line.split("    (")[0].strip() for line in dry.stdout.splitlines() if line[:5] in ("  1. ", "  2. ")] == [
        f"1. {python} -m pip uninstall -y numpy", f"2. {python} -m pip install 'numpy<2.6,>=2.1'"]
    proc = _envcheck("fix", "--yes", "--static", "--fail-on", "warning", "--python", over, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"$ {python} -m pip uninstall -y numpy" in proc.stdout
    assert "uninstall -y pip" not in proc.stdout
    _assert_clean(over, env, tmp_path)
    assert _versions(over, env, tmp_path)["numpy"] == [("2.3.5", str(_site(base, env, tmp_path)))]
    assert _versions(base, env, tmp_path) == before


def test_layered_torchvision_fix_yes(tmp_path: Path, env: dict[str, str], venv_maker: VenvMaker) -> None:
    """`envcheck fix --yes --fail-on warning` on the `.pth` layering: it runs the plan and the re-check is clean."""
    base, over = _pth_layered(tmp_path, env, venv_maker)
    _pip(over, env, tmp_path, "torchvision==0.20.0")
    proc = _envcheck("fix", "--yes", "--static", "--fail-on", "warning", "--python", over, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "uninstall -y pip" not in proc.stdout
    assert "torchvision==0.20.0" not in proc.stdout.replace("requires torch==2.5.0", "")
    _assert_clean(over, env, tmp_path)
    assert _versions(base, env, tmp_path)["torchvision"] == [("0.28.0+cpu", str(_site(base, env, tmp_path)))]

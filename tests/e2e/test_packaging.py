"""The built distributions: what `python -m build` makes from this checkout is what a user's pip installs.

The wheel is built from the sdist (build's default), so these tests also prove the sdist is complete.
"""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from email.message import Message
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath

import pytest
from _ci import verify_dist
from packaging.requirements import Requirement

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
_BUILD_TIMEOUT_S = 600  # a guard against a hung build, not a timing assertion


@dataclass(frozen=True)
class Dists:
    wheel: Path
    sdist: Path
    wheel_names: frozenset[str]
    sdist_names: frozenset[str]  # relative to the sdist's top folder


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    pytest.importorskip("build", reason="the 'build' package is part of the [test] extra")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"python -m build failed:\n{proc.stdout}\n{proc.stderr}"
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    with zipfile.ZipFile(wheel) as zf:
        wheel_names = frozenset(zf.namelist())
    with tarfile.open(sdist) as tf:
        sdist_names = frozenset(str(PurePosixPath(*PurePosixPath(m.name).parts[1:])) for m in tf.getmembers()
                                if m.isfile())
    return Dists(wheel, sdist, wheel_names, sdist_names)


def _dist_info_file(dists: Dists, name: str) -> str:
    (path,) = [n for n in dists.wheel_names if re.fullmatch(rf"[^/]+\.dist-info/{name}", n)]
    with zipfile.ZipFile(dists.wheel) as zf:
        return zf.read(path).decode("utf-8")


def _metadata(dists: Dists) -> Message:
    return HeaderParser().parsestr(_dist_info_file(dists, "METADATA"))


def _source_version() -> str:
    text = (ROOT / "envcheck" / "version.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    assert match, "envcheck/version.py has no __version__ line"
    return match.group(1)


def test_wheel_is_pure_python_and_named_for_the_project(dists: Dists) -> None:
    """The wheel is a universal pure-Python wheel of envcheck-ml at the version in envcheck/version.py."""
    assert dists.wheel.name == f"envcheck_ml-{_source_version()}-py3-none-any.whl"
    assert dists.sdist.name == f"envcheck_ml-{_source_version()}.tar.gz"


def test_wheel_ships_the_whole_rule_pack(dists: Dists) -> None:
    """Every rules/*.toml of the checkout is in the wheel as envcheck/_rules/*.toml, its data tables as
    envcheck/_rules/data/*.toml (and the release-name table, data/*.json), and nothing else is there."""
    data = ROOT / "rules" / "data"
    in_repo = sorted(p.relative_to(ROOT / "rules").as_posix()
                     for p in [*(ROOT / "rules").glob("*.toml"), *data.glob("*.toml"), *data.glob("*.json")])
    in_wheel = sorted(n.removeprefix("envcheck/_rules/") for n in dists.wheel_names if n.startswith("envcheck/_rules/"))
    assert any("/" not in n for n in in_repo), "the checkout has no rules/*.toml"
    assert "data/cuda-driver.toml" in in_repo, "the derivations' data tables are missing from rules/data/"
    assert in_wheel == in_repo


def test_wheel_ships_every_package_file(dists: Dists) -> None:
    """Every file under envcheck/ (modules, schemas/*.json, py.typed) is in the wheel; no caches or tests are."""
    expected = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "envcheck").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    }
    assert "envcheck/py.typed" in expected, "the 'Typing :: Typed' classifier needs envcheck/py.typed"
    schemas = {n for n in expected if n.startswith("envcheck/schemas/")}
    assert all(n.endswith(".json") for n in schemas), schemas
    missing = sorted(expected - dists.wheel_names)
    assert not missing, f"not in the wheel: {missing}"
    stray = sorted(n for n in dists.wheel_names if "__pycache__" in n or n.startswith(("tests/", "rules/")))
    assert not stray, f"in the wheel but should not be: {stray}"


def test_wheel_and_sdist_pass_the_release_check(dists: Dists) -> None:
    """The built wheel holds exactly what .ci/verify_dist.py reads from the source tree (every file under envcheck/,
    every file under rules/ as envcheck/_rules/, the .dist-info), and the sdist their sources: the file checks CI's
    smoke job and the release workflow run on the artifacts they ship."""
    version = verify_dist.source_version(ROOT)
    account = verify_dist.check_wheel_files(dists.wheel_names, version, ROOT)
    assert account.startswith(f"{len(dists.wheel_names)} files: ")
    verify_dist.check_sdist_files(dists.sdist_names, ROOT)
    assert [p.name for p in verify_dist.find_dists(dists.wheel.parent, version)] == [dists.wheel.name, dists.sdist.name]


def test_wheel_declares_the_console_script(dists: Dists) -> None:
    """The wheel's entry points make `envcheck` run envcheck.cli.entry:console (--version at once, else the CLI)."""
    parser = configparser.ConfigParser()
    parser.read_string(_dist_info_file(dists, "entry_points.txt"))
    assert dict(parser["console_scripts"]) == {"envcheck": "envcheck.cli.entry:console"}


def test_wheel_metadata_names_the_distribution(dists: Dists) -> None:
    """METADATA says envcheck-ml, the source version, Python >= 3.10 and the Typed classifier."""
    meta = _metadata(dists)
    assert meta["Name"] == "envcheck-ml"
    assert meta["Version"] == _source_version()
    assert meta["Requires-Python"] == ">=3.10"
    assert "Typing :: Typed" in meta.get_all("Classifier", [])


def test_wheel_runtime_requirements(dists: Dists) -> None:
    """The runtime needs packaging, click and nvidia-ml-py everywhere and tomli only below Python 3.11; nothing
    else."""
    runtime = [Requirement(r) for r in _metadata(dists).get_all("Requires-Dist", [])
               if not (Requirement(r).marker and "extra" in str(Requirement(r).marker))]
    by_name = {r.name.lower(): r for r in runtime}
    assert sorted(by_name) == ["click", "nvidia-ml-py", "packaging", "tomli"]
    assert by_name["packaging"].marker is None
    assert by_name["click"].marker is None
    assert by_name["nvidia-ml-py"].marker is None
    tomli = by_name["tomli"].marker
    assert tomli is not None
    assert tomli.evaluate({"python_version": "3.10"})
    assert not tomli.evaluate({"python_version": "3.11"})
    assert not tomli.evaluate({"python_version": "3.13"})


def test_wheel_never_requires_torch(dists: Dists) -> None:
    """No requirement of the wheel, in any extra, is torch: envcheck must run where torch is absent or broken.

    NVML comes from nvidia-ml-py (ctypes only, no CUDA context); the deprecated PyPI `pynvml` wrapper is not used.
    """
    names = {Requirement(r).name.lower() for r in _metadata(dists).get_all("Requires-Dist", [])}
    assert names, "METADATA has no Requires-Dist at all"
    assert not names & {"torch", "pytorch", "torchvision", "torchaudio", "pynvml"}


def test_sdist_is_a_buildable_source_tree(dists: Dists) -> None:
    """The sdist holds the package, the rule pack, the tests and the docs, and no virtual environment or VCS."""
    names = dists.sdist_names
    for required in ("pyproject.toml", "README.md", "CHANGELOG.md", "envcheck/__init__.py",
                     "envcheck/cli/click_cli.py"):
        assert required in names, f"{required} is not in the sdist"
    rules = sorted(p.name for p in (ROOT / "rules").glob("*.toml"))
    assert sorted(PurePosixPath(n).name for n in names if re.fullmatch(r"rules/[^/]+\.toml", n)) == rules
    data = sorted(p.name for p in (ROOT / "rules" / "data").glob("*.toml"))
    assert sorted(PurePosixPath(n).name for n in names if re.fullmatch(r"rules/data/[^/]+\.toml", n)) == data
    stray = sorted(n for n in names if n.startswith((".venv/", ".git/", "dist/", "build/")) or "__pycache__" in n)
    assert not stray, f"in the sdist but should not be: {stray[:10]}"

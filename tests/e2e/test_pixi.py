"""pixi projects and conda environments as they are on disk: real pixi.lock files (format 6 and 7, from public
projects: tests/fixtures/projects/README.md), a real venv laid out as pixi lays out a project's environment
(PROJECT/.pixi/envs/default) with conda-meta records in the format conda writes, the lock-drift check against
pixi.lock, and `check --machine` judging a pixi project's locked conda-forge torch on each declared machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _fakes import write_dist
from _torch import BIN, clean_env
from click.testing import CliRunner, Result
from test_machines import sections
from test_project import quiet  # noqa: F401 - the fixture

from envcheck.cli.click_cli import cli
from envcheck.sources.live.collect import collect
from envcheck.sources.project import pixi
from envcheck.sources.project.discover import discover
from envcheck.sources.project.errors import ProjectError

PROJECTS = Path(__file__).parents[1] / "fixtures" / "projects"
MACHINES = """\
[[machines]]
name = "workstation"
gpu = ["RTX 5090"]
driver = "575.64.03"
python = "3.12"
platform = "linux-x86_64"

[[machines]]
name = "old-cluster"
gpu = ["Tesla K80"]
driver = "470.256.02"
python = "3.12"
platform = "linux-x86_64"

[[machines]]
name = "h100"
gpu = ["H100"]
driver = "570.133.07"
python = "3.12"
platform = "linux-x86_64"
"""


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _copy(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(PROJECTS / name, root)
    return root


def test_lock_format_6_lists_each_platforms_packages() -> None:
    """matthewfeickert/pytorch-gpu-pixi-example's pixi.lock (format 6): conda-forge's CUDA 12.6 torch on linux-64,
    its CPU build on osx-arm64, each entry's name, version and build from its file name."""
    lock = pixi.read_lock(PROJECTS / "pixi-pytorch-gpu" / "pixi.lock", "pixi.lock")
    assert lock.version == 6 and sorted(lock.environments["default"]) == ["linux-64", "osx-arm64"]
    torch = {p: next(e for e in lock.installs("default", p) if e.name == "pytorch") for p in ("linux-64", "osx-arm64")}
    assert (torch["linux-64"].version, torch["linux-64"].build) == ("2.6.0", "cuda126_mkl_py312_h8bb5dc9_300")
    assert torch["osx-arm64"].build.startswith("cpu_generic_")
    assert torch["linux-64"].channel == "conda-forge" and torch["linux-64"].dist_name == "torch"
    record = torch["linux-64"].conda_record()
    assert record is not None and record.subdir == "linux-64" and record.source.startswith("pixi.lock:")


def test_lock_format_7_names_platforms_with_their_virtual_packages() -> None:
    """prefix-dev/pixi's multi-machine example (format 7): named platforms, each with its subdir and the virtual
    packages it was solved for (`__cuda=12` for the CUDA ones)."""
    lock = pixi.read_lock(PROJECTS / "pixi-multi-machine" / "pixi.lock", "pixi.lock")
    assert lock.version == 7
    assert lock.platforms["p2"][0] == "linux-64" and "__cuda=12" in lock.platforms["p2"][1]
    assert "__cuda=12" not in lock.platforms["linux-64"][1]
    assert {e.name for e in lock.installs("default", "p2")} >= {"pytorch", "python", "polars"}


def test_an_unknown_lock_version_is_refused(tmp_path: Path) -> None:
    """A pixi.lock of a format this envcheck does not read is one ProjectError naming the file, line and key."""
    path = tmp_path / "pixi.lock"
    path.write_text("version: 5\nenvironments: {}\n", encoding="utf-8")
    with pytest.raises(ProjectError) as caught:
        pixi.read_lock(path, "pixi.lock")
    assert "pixi.lock" in str(caught.value) and "version" in str(caught.value) and "6, 7" in str(caught.value)


def test_the_manifest_gives_system_requirements_and_the_torch_dependency() -> None:
    """pixi.toml's [system-requirements] and its pytorch dependency, as written."""
    name, table = pixi.manifest(PROJECTS / "pixi-pytorch-gpu") or ("", {})
    assert name == "pixi.toml"
    assert pixi.system_requirements(table) == {"cuda": "12.0"}
    assert pixi.manifest_requirements(table) == {"pytorch": ">=2.6.0,<3"}


def test_features_add_their_system_requirements() -> None:
    """An environment's features add their system requirements to the manifest's own."""
    table = {"feature": {"gpu": {"system-requirements": {"cuda": "12.0"}}}, "environments": {"default": ["gpu"],
                                                                                             "cpu": []}}
    assert pixi.system_requirements(table) == {"cuda": "12.0"}
    assert pixi.system_requirements(table, "cpu") == {}


def test_drift_is_judged_against_pixi_lock(tmp_path: Path, quiet: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A venv whose numpy differs from what pixi.lock pins for its platform drifts; `pixi install` syncs it."""
    root = _copy("pixi-pytorch-gpu", tmp_path)
    project = discover(root)
    assert project is not None and [lock.tool for lock in project.locks] == ["pixi"]
    env = tmp_path / "env"
    proc = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], capture_output=True, text=True,
                          timeout=120, check=False, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    (site,) = env.glob("lib/python3*/site-packages")
    write_dist(site, "numpy", "1.26.4")
    quiet.chdir(root)
    result = run("--static", "--no-color", "--python", str(env / BIN / "python"), "--no-config")
    locked = next(e.version for e in project.locks[0].entries if e.name == "numpy")
    assert f"numpy 1.26.4 installed, pixi.lock pins {locked}" in result.output
    assert "Run `pixi install` in the project's folder" in result.output


def test_declared_machines_are_judged_from_pixi_lock(tmp_path: Path, quiet: pytest.MonkeyPatch) -> None:  # noqa: F811
    """Acceptance: each declared machine gets the conda-forge torch that pixi.lock pins for its platform, judged by
    conda-forge's architectures, with pixi commands in the fix: the RTX 5090 runs the CUDA 12.6 build through PTX,
    the K80 not at all (and its driver is below the project's cuda system requirement), the H100 natively."""
    root = _copy("pixi-pytorch-gpu", tmp_path)
    (root / "envcheck.toml").write_text(MACHINES, encoding="utf-8")
    quiet.chdir(root)
    result = run("check", "--machine", "all", "--no-color")
    by_machine = sections(result.output)
    workstation = by_machine["workstation"]
    assert "EC0402 gpu-covered-only-by-ptx-jit" in workstation and "cuda126_mkl_py312_h8bb5dc9_300" in workstation
    assert "pixi.lock:" in workstation
    flat = " ".join(workstation.split())
    assert f"Run `pixi add --manifest-path {root / 'pixi.toml'} pytorch-gpu=" in flat
    assert "$ " not in workstation and "-m pip" not in workstation  # a machine's fix changes the project
    old = by_machine["old-cluster"]
    assert "EC0401 gpu-architecture-not-in-torch-build" in old and "EC0414" in old and "CONDA_OVERRIDE_CUDA" in old
    h100 = by_machine["h100"]
    assert "EC0401" not in h100 and "EC0402" not in h100 and "EC0414" not in h100
    assert result.exit_code == 1


def test_a_pixi_environment_is_collected_with_conda_records(tmp_path: Path) -> None:
    """A real venv at PROJECT/.pixi/envs/default with conda-meta records in conda's format: the collector reads the
    torch stack's records (build string, channel from the channel URL, subdir) and the project's manifest."""
    project = tmp_path / "proj"
    (project / ".pixi" / "envs").mkdir(parents=True)
    shutil.copy(PROJECTS / "pixi-pytorch-gpu" / "pixi.toml", project / "pixi.toml")
    prefix = project / ".pixi" / "envs" / "default"
    proc = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], capture_output=True,
                          text=True, timeout=120, check=False, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    (site,) = prefix.glob("lib/python3*/site-packages")
    write_dist(site, "torch", "2.6.0", installer="conda")
    relative = site.relative_to(prefix).as_posix()
    meta = prefix / "conda-meta"
    meta.mkdir()
    build = "cuda126_mkl_py312_h8bb5dc9_300"
    url = f"https://conda.anaconda.org/conda-forge/linux-64/pytorch-2.6.0-{build}.conda"
    # The keys conda writes in a PrefixRecord (conda/models/records.py), as in any conda-meta/*.json.
    (meta / f"pytorch-2.6.0-{build}.json").write_text(json.dumps({
        "build": build, "build_number": 300, "channel": "https://conda.anaconda.org/conda-forge/linux-64",
        "constrains": ["pytorch-cpu <0.0a0", "pytorch-gpu 2.6.0"], "depends": ["cuda-version >=12.6,<13"],
        "extracted_package_dir": "", "files": [f"{relative}/torch/__init__.py",
                                               f"{relative}/torch-2.6.0.dist-info/METADATA"],
        "fn": f"pytorch-2.6.0-{build}.conda", "license": "BSD-3-Clause", "md5": "0" * 32, "name": "pytorch",
        "requested_spec": "", "sha256": "0" * 64, "size": 1, "subdir": "linux-64", "timestamp": 1739000000000,
        "url": url, "version": "2.6.0"}), encoding="utf-8")
    (meta / "cuda-version-12.8-h5d125a7_3.json").write_text(json.dumps({
        "build": "h5d125a7_3", "build_number": 3, "name": "cuda-version", "version": "12.8", "subdir": "noarch",
        "url": "https://conda.anaconda.org/conda-forge/noarch/cuda-version-12.8-h5d125a7_3.conda", "files": []}),
        encoding="utf-8")
    (meta / "pytorch-gpu-2.6.0-broken.json").write_text("{not json", encoding="utf-8")
    facts = collect({}, python=str(prefix / BIN / "python"))
    assert facts.conda is not None and facts.installer is not None
    torch = facts.conda.get("pytorch")
    assert torch is not None and (torch.build, torch.channel, torch.subdir) == (build, "conda-forge", "linux-64")
    cuda = facts.conda.get("cuda-version")
    assert cuda is not None and cuda.channel == "conda-forge"  # from the url: the record names no channel
    assert any("pytorch-gpu-2.6.0-broken.json" in p for p in facts.conda.problems)
    assert facts.installer.pixi == str(project / "pixi.toml")
    again = type(facts).from_dict(json.loads(json.dumps(facts.to_dict())), file="<again>")
    assert again.conda == facts.conda


def _hostile_lock(tmp_path: Path, size: int) -> Path:
    """A pixi.lock with long runs of spaces inside values and many entries."""
    path = tmp_path / f"pixi-{size}.lock"
    url = "https://conda.anaconda.org/conda-forge/linux-64/pytorch-2.6.0-cuda126_mkl_py312_h8bb5dc9_300.conda"
    entries = "".join(f"      - conda: {url}{i}\n" for i in range(size))
    path.write_text(f"version: 6\nenvironments:\n  default:\n    packages:\n      linux-64:\n{entries}packages:\n"
                    f"- conda: {url}\n  name: a{' ' * size}b\n  build: x{' ' * size}\n", encoding="utf-8")
    return path


@pytest.mark.timing
def test_reading_a_hostile_pixi_lock_grows_linearly(tmp_path: Path) -> None:
    """A pixi.lock four times as large (long space runs in values, many entries) takes well under sixteen times as
    long to read."""
    from test_parse_bounds import RATIO, growth

    def make(size: int) -> Callable[[], object]:
        path = _hostile_lock(tmp_path, size)
        return lambda: pixi.read_lock(path, "pixi.lock")

    assert growth(make, 2000) < RATIO


@pytest.mark.timing
def test_reading_a_hostile_conda_build_string_grows_linearly() -> None:
    """A conda list row of the torch stack with a build string of long runs is read in linear time."""
    from test_parse_bounds import RATIO, growth

    from envcheck.sources.reports import read_report

    def make(size: int) -> Callable[[], object]:
        text = (f"# packages in environment at /a:\npytorch 2.7.1 cuda126_{'_' * size}py3{'1' * size}_h{'.' * size} "
                f"https://x/{'/' * size}conda-forge/\n").encode()
        return lambda: read_report(text, "hostile.txt")

    assert growth(make, 2000) < RATIO

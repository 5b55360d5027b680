"""conda-forge's torch builds: build strings read, conda-forge's architecture table (and the script that regenerates it
from a feedstock checkout), a conda-forge torch judged on the GPUs it runs, and fixes in conda's, mamba's or pixi's
own command, never a pip install over conda's torch.

The conda list of issue 36 (`pytorch 2.7.1 cuda126_mkl_py312_h30b5a27_300 conda-forge`, with `pytorch-gpu` and
`cuda-version 12.6`) is the report the acceptance tests read; the build strings of the table below are real ones:
conda-forge's from the pixi.lock files of tests/fixtures/projects/ (README there), from conda-forge/pytorch-cpu-
feedstock#521 (`libtorch 2.12.0 cuda130_mkl_h6edde62_300`) and prefix-dev/pixi#4392 (`pytorch 2.5.1
cuda126_py312h1763f6d_306`), the pytorch channel's from tests/fixtures/reports/ (SOURCES.md there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _fakes import build_facts, collect_facts, dist_dict, gpu_dict, nvml_dict, torch_dict, write_dist, write_torch

from envcheck.derived import build_matrix as tb
from envcheck.derived import builds, conda_builds, conda_native
from envcheck.derived.conda_torch import CondaTorch
from envcheck.derived.tables import CONDA_FORGE, load
from envcheck.errors import RuleError
from envcheck.facts.conda import channel_name, parse_build
from envcheck.facts.snapshot import Facts
from envcheck.remedy.commands.installers import for_environment
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Finding
from envcheck.sources.reports import read_report
from envcheck.support import resources, toml

ROOT = Path(__file__).resolve().parents[2]
TABLE = load([resources.data_dir().parent])[CONDA_FORGE]

# Issue 36's conda list, in conda's column layout, and the GPU it names.
ISSUE_36 = """\
On my {gpu} with driver {driver}, `conda list | grep -E "pytorch|cuda-version"` prints:

```
cuda-version              12.6                 h7480c83_3    conda-forge
pytorch                   2.7.1           cuda126_mkl_py312_h30b5a27_300    conda-forge
pytorch-gpu               2.7.1           cuda126_mkl_ha999a5f_300    conda-forge
```
"""


@pytest.mark.parametrize(("build", "cuda", "cpu", "python", "number"), [
    pytest.param("cuda126_mkl_py312_h30b5a27_300", "12.6", False, "3.12", 300, id="conda-forge-2.6-on"),
    pytest.param("cuda129_mkl_py313_h7947483_302", "12.9", False, "3.13", 302, id="conda-forge-cuda129"),
    pytest.param("cuda130_mkl_h6edde62_300", "13.0", False, None, 300, id="conda-forge-libtorch"),
    pytest.param("cuda126_py312h1763f6d_306", "12.6", False, "3.12", 306, id="conda-forge-before-2.6"),
    pytest.param("cpu_generic_py313_h2e75435_0", None, True, "3.13", 0, id="conda-forge-cpu"),
    pytest.param("py3.7_cuda10.1.243_cudnn7.6.3_0", "10.1", False, "3.7", 0, id="pytorch-channel"),
    pytest.param("py3.8_cpu_0", None, True, "3.8", 0, id="pytorch-channel-cpu"),
    pytest.param("h5d125a7_3", None, False, None, 3, id="says-nothing"),
])
def test_build_strings_name_their_cuda(build: str, cuda: str | None, cpu: bool, python: str | None,
                                       number: int) -> None:
    """A build string gives its CUDA, CPU-ness, Python and build number, and nothing it does not say."""
    said = parse_build(build)
    assert (said.cuda, said.cpu, said.python, said.number) == (cuda, cpu, python, number)


def test_channel_names_as_conda_writes_them() -> None:
    """conda-meta's channel URL, a pixi.lock URL's folder and a conda list column give the same channel name."""
    assert channel_name("https://conda.anaconda.org/conda-forge/linux-64") == "conda-forge"
    assert channel_name("https://conda.anaconda.org/conda-forge/") == "conda-forge"
    assert channel_name("conda-forge") == "conda-forge"
    assert channel_name("https://repo.anaconda.com/pkgs/main/linux-64") == "pkgs/main"


def _torch(version: str, build: str, subdir: str = "linux-64") -> CondaTorch:
    from envcheck.facts.conda import CondaPackage

    return CondaTorch(CondaPackage("pytorch", version, build, "conda-forge", subdir), parse_build(build),
                                   subdir)


def test_the_table_gives_each_builds_architectures() -> None:
    """2.7.1's build 0 for CUDA 12.6 ends at 9.0+PTX (an RTX 5090 gets PTX, a K80 nothing); its builds 1 to 4 for
    CUDA 12.9 (12.8 on win-64) carry sm_120 code (feedstock recipe/build.sh and bld.bat, cited per entry)."""
    archs, entry = conda_builds.archs_of(TABLE, _torch("2.7.1", "cuda126_mkl_py312_h30b5a27_300")) or ((), None)
    assert entry is not None and entry.builds == (0, 0) and "pytorch-cpu-feedstock/blob/" in entry.source
    assert tb.coverage(archs, (12, 0)) == "ptx-jit"
    assert tb.coverage(archs, (3, 7)) == "none"
    assert tb.coverage(archs, (9, 0)) == "native"
    # pixi.lock of matthewfeickert/pytorch-gpu-pixi-example at f6d486002274526f5a02c14615b42275a6dc90ee
    newer, _ = conda_builds.archs_of(TABLE, _torch("2.7.1", "cuda129_mkl_py312_hfde4d7d_304")) or ((), None)
    assert tb.coverage(newer, (12, 0)) == "native"
    windows, _ = conda_builds.archs_of(TABLE, _torch("2.7.1", "cuda128_mkl_py312_hd1c3b22_302", "win-64")) or ((), None)
    assert tb.coverage(windows, (12, 0)) == "native"
    assert conda_builds.archs_of(TABLE, _torch("2.7.1", "cuda128_mkl_py312_hd1c3b22_302")) is None  # not on linux
    assert conda_builds.archs_of(TABLE, _torch("2.7.1", "cuda126_mkl_py312_h30b5a27_399")) is None  # build 99
    assert conda_builds.archs_of(TABLE, _torch("2.7.1", "cpu_mkl_py312_h0_100")) is None


def test_native_build_keeps_the_release_and_the_drivers_cuda() -> None:
    """For an sm_120 GPU the installed release's own CUDA 12.9 build is named on linux-64 (also for a driver that
    runs 12.8 only: conda-forge built 2.7.1 for 12.9 there, which runs through minor version compatibility), its
    CUDA 12.8 build on win-64; a Kepler GPU with a 470 driver (CUDA 11.4) gets the newest build that still has
    sm_35 code, for CUDA 11.2."""
    for driver in ((12, 9), (12, 8)):
        chosen = conda_native.native_build(TABLE, "linux-64", [(12, 0)], driver, keep="2.7.1")
        assert chosen is not None and (str(chosen.release.version), chosen.cuda) == ("2.7.1", (12, 9))
    windows = conda_native.native_build(TABLE, "win-64", [(12, 0)], (12, 8), keep="2.7.1")
    assert windows is not None and windows.cuda == (12, 8)
    assert conda_native.native_build(TABLE, "linux-64", [(12, 0)], (11, 8), keep="2.7.1") is None
    kepler = conda_native.native_build(TABLE, "linux-64", [(3, 7)], (11, 4))
    assert kepler is not None and kepler.cuda == (11, 2) and "sm_35" in kepler.archs
    assert conda_native.native_build(TABLE, "linux-64", [(3, 0)], None) is None


@pytest.mark.parametrize(("change", "key"), [
    pytest.param({"builds": [0, 100]}, "release[0].builds", id="build-number-with-offset"),
    pytest.param({"linux-64": {"12.6": "5.0;9.0+PTX;9.0"}}, "release[0].linux-64.12.6", id="arch-twice"),
    pytest.param({"linux-64": {"twelve": "5.0"}}, "release[0].linux-64.twelve", id="bad-cuda"),
    pytest.param({"osx-arm64": {"12.6": "5.0"}}, "release[0].osx-arm64", id="unknown-subdir"),
])
def test_a_malformed_table_names_the_key(change: dict[str, object], key: str) -> None:
    """Each mistake in the table is one RuleError naming the file and the key."""
    row = {"version": "2.7.1", "builds": [0, 0], "source": "https://example.org/build.sh",
           "linux-64": {"12.6": "5.0;9.0+PTX"}, **change}
    with pytest.raises(RuleError) as caught:
        conda_builds.parse({"schema": 1, "channel": "conda-forge", "release": [row]}, "conda-forge-builds.toml")
    assert key in str(caught.value) and "conda-forge-builds.toml" in str(caught.value)


def test_overlapping_build_ranges_are_refused() -> None:
    """Two entries may not claim the same build of a release."""
    rows = [{"version": "2.7.1", "builds": [0, 2], "source": "https://example.org/a", "linux-64": {"12.6": "5.0"}},
            {"version": "2.7.1", "builds": [2, 3], "source": "https://example.org/b", "linux-64": {"12.8": "5.0"}}]
    with pytest.raises(RuleError, match="overlap"):
        conda_builds.parse({"schema": 1, "channel": "conda-forge", "release": rows}, "t.toml")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def test_the_script_regenerates_the_table_from_a_feedstock_history(tmp_path: Path) -> None:
    """.ci/conda_forge_archs.py reads recipe/meta.yaml, recipe/build.sh (the old if/elif chain and the case block
    with an aarch64 branch) and .ci_support/ across a branch's history, and prints one entry per build range."""
    repo = tmp_path / "feedstock"
    (repo / "recipe").mkdir(parents=True)
    (repo / ".ci_support").mkdir()
    _git(repo, "init", "-q", "-b", "main")
    meta = '{% set version = "VERSION" %}\n{% set build = BUILD %}\n'
    old = ('if [[ ${cuda_compiler_version} == 11.8 ]]; then\n    export TORCH_CUDA_ARCH_LIST="3.5;5.0;8.9+PTX"\n'
           'elif [[ ${cuda_compiler_version} == 12.0 ]]; then\n    export TORCH_CUDA_ARCH_LIST="5.0;9.0+PTX"\nfi\n')
    new = ('case ${cuda_compiler_version} in\n    12.[89])\n        export TORCH_CUDA_ARCH_LIST="5.0;12.0+PTX"\n'
           '        ;;\n    13.0)\n        if [[ "${target_platform}" == "linux-aarch64" ]]; then\n'
           '            export TORCH_CUDA_ARCH_LIST="7.5;8.7;12.0+PTX"\n        else\n'
           '            export TORCH_CUDA_ARCH_LIST="7.5;12.0+PTX"\n        fi\n        ;;\nesac\n')
    configs_21 = ["linux_64_cuda_compiler_version11.8.yaml", "linux_64_cuda_compiler_version12.0.yaml"]
    configs_29 = ["linux_64_cuda_compiler_version12.8.yaml", "linux_aarch64_cuda_compiler_version13.0.yaml",
                  "linux_64_cuda_compiler_version13.0.yaml", "win_64_cuda_compiler_version12.8.yaml"]
    batch = ('if "%cuda_compiler_version:~0,2%"=="12" (\n    set "TORCH_CUDA_ARCH_LIST=5.0;9.0;12.0+PTX"\n'
             ') else if "%cuda_compiler_version%" == "13.0" (\n    set "TORCH_CUDA_ARCH_LIST=7.5;12.0+PTX"\n)\n')
    steps = [("2.1.0", 0, old, configs_21), ("2.1.0", 1, old, configs_21), ("2.9.0", 0, new, configs_29)]
    for version, build, script, configs in steps:
        (repo / "recipe" / "meta.yaml").write_text(meta.replace("VERSION", version).replace("BUILD", str(build)))
        (repo / "recipe" / "build.sh").write_text(script)
        (repo / "recipe" / "bld.bat").write_text(batch if version == "2.9.0" else "")
        for old_config in (repo / ".ci_support").iterdir():
            old_config.unlink()
        for config in configs:
            (repo / ".ci_support" / config).write_text("")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"{version} build {build}")
    done = subprocess.run([sys.executable, str(ROOT / ".ci" / "conda_forge_archs.py"), str(repo / ".git")],
                          capture_output=True, text=True, check=True)
    table = conda_builds.parse(toml.loads('schema = 1\nchannel = "conda-forge"\n' + done.stdout), "generated")
    first, second = table.releases
    assert (str(first.version), first.builds) == ("2.1.0", (0, 1))
    assert first.archs["linux-64"][(11, 8)] == ("sm_35", "sm_50", "sm_89", "compute_89")
    assert (str(second.version), second.builds) == ("2.9.0", (0, 0))
    assert second.archs["linux-64"][(12, 8)] == ("sm_50", "sm_120", "compute_120")
    assert second.archs["linux-64"][(13, 0)] == ("sm_75", "sm_120", "compute_120")
    assert second.archs["linux-aarch64"][(13, 0)] == ("sm_75", "sm_87", "sm_120", "compute_120")
    assert second.archs["win-64"] == {(12, 8): ("sm_50", "sm_90", "sm_120", "compute_120")}
    assert "win-64" not in first.archs


def _report(tmp_path: Path, gpu: str, driver: str) -> Facts:
    text = ISSUE_36.format(gpu=gpu, driver=driver)
    return read_report(text.encode(), str(tmp_path / "report.md"))


def _findings(facts: Facts) -> dict[str, Finding]:
    report = evaluate(rule_pack.load(), facts)
    return {f.rule_id: f for f in report.findings if f.status.is_finding}


def test_issue_36_report_warns_of_ptx_and_names_the_native_build(tmp_path: Path) -> None:
    """Acceptance: conda-forge's 2.7.1 cuda126 build beside an RTX 5090 is read as CUDA 12.6, and the report says the
    GPU runs it only through PTX, what that costs, and which conda-forge build has sm_120 code, with conda's
    command; no pip command that would shadow conda's torch."""
    facts = _report(tmp_path, "RTX 5090", "575.64.03")
    assert facts.torch is not None and facts.torch.cuda == "12.6"
    found = _findings(facts)
    assert "EC0401" not in found
    ptx = found["EC0402"]
    text = f"{ptx.why} {ptx.fix}"
    assert "JIT-compiles every kernel" in text and "CUDA_CACHE_MAXSIZE" in text and "sm_120" in text
    assert "conda-forge's pytorch 2.7.1 for CUDA 12.9" in text
    assert ptx.commands == (("conda", "install", "-c", "conda-forge", "-y", "pytorch-gpu=2.7.1", "cuda-version=12.9"),)
    assert not any("pip" in c for f in found.values() for c in f.commands)


def test_issue_36_build_beside_a_k80_fails(tmp_path: Path) -> None:
    """Acceptance: the same build string beside a Tesla K80 (sm_37, below the build's lowest architecture) fails."""
    found = _findings(_report(tmp_path, "Tesla K80", "470.256.02"))
    assert "EC0401" in found and "EC0402" not in found
    assert "sm_35" in found["EC0401"].fix


def _conda_facts(**installer: object) -> Facts:
    data = {"schema": 3, "python": {"version": "3.12.9", "implementation": "cpython",
                                    "executable": "/opt/conda/envs/ml/bin/python", "prefix": "/opt/conda/envs/ml",
                                    "base_prefix": "/opt/conda/envs/ml", "virtualenv": False, "conda": True,
                                    "platform": "linux", "machine": "x86_64", "system": "Linux", "release": "",
                                    "libc": None, "user_site": None, "cwd": "/", "path": [],
                                    "marker_environment": {}},
            "distributions": [dist_dict("torch", "2.7.1", installer="conda"), dist_dict("numpy", "2.2.0")],
            "torch": torch_dict("2.7.1", "12.6"), "modules": {}, "sources": {}, "env": {}, "problems": [],
            "nvml": nvml_dict(gpu_dict(capability="12.0", name="NVIDIA GeForce RTX 5090"), driver="575.64.03",
                              cuda="12.9"),
            "installer": {"pip": True, "ensurepip": True, "uv_venv": None, "uv": None, "conda": "/opt/conda/bin/mamba",
                          "conda_owned": {"torch": "pytorch"}, **installer},
            "conda": {"packages": [{"name": "pytorch", "version": "2.7.1", "build": "cuda126_mkl_py312_h30b5a27_300",
                                    "channel": "conda-forge", "subdir": "linux-64"}]}}
    return Facts.from_dict(json.loads(json.dumps(data)), file="<test>")


def test_torch_family_installs_go_to_the_environments_conda() -> None:
    """A pip install of the torch family in an environment whose torch conda installed is mamba's install from
    conda-forge into that prefix; the rest of the command stays with pip."""
    facts = _conda_facts()
    python = facts.python.executable
    rendered = for_environment([(python, "-m", "pip", "install", "torch==2.7.1+cu128", "torchvision==0.22.1+cu128",
                                 "numpy<2", "--index-url", "https://download.pytorch.org/whl/cu128")], facts)
    assert rendered.commands == (
        ("/opt/conda/bin/mamba", "install", "-p", "/opt/conda/envs/ml", "-c", "conda-forge", "-y",
         "pytorch-gpu=2.7.1", "cuda-version=12.8", "torchvision=0.22.1"),
        (python, "-m", "pip", "install", "numpy<2"))
    assert "conda installed torch here" in rendered.by_hand


def test_a_pixi_environment_gets_pixi_add() -> None:
    """In a pixi project's environment the torch family is `pixi add` to the project's manifest."""
    facts = _conda_facts(pixi="/work/proj/pixi.toml")
    rendered = for_environment([(facts.python.executable, "-m", "pip", "install", "torch==2.7.1+cpu")], facts)
    assert rendered.commands == (("pixi", "add", "--manifest-path", "/work/proj/pixi.toml", "pytorch-cpu=2.7.1"),)


def test_pip_torch_keeps_pip() -> None:
    """Where pip installed torch, nothing changes."""
    facts = build_facts(dists=[dist_dict("torch", "2.7.1")], torch=torch_dict("2.7.1", "12.6"))
    argv = (facts.python.executable, "-m", "pip", "install", "torch==2.7.1+cu128")
    assert for_environment([argv], facts).commands == (argv,)


# The layout of variant.json in PEP 825's draft (peps/pep-0825.rst, "Variant metadata"), with NVIDIA's variant
# provider's `sm_arch` property (`120_real`: a cubin, `90_virtual`: PTX).
VARIANT_JSON = {
    "$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
    "default-priorities": {"namespace": ["nvidia"]},
    "variants": {"cu128": {"nvidia": {"cuda_version": [">=12.8,<13"], "sm_arch": ["90_real", "120_real",
                                                                                    "120_virtual"]}}},
}


def _variant_site(tmp_path: Path, variant: dict[str, object]) -> Path:
    site = tmp_path / "site"
    write_torch(site, '__version__ = "2.9.0"\ncuda = "12.8"\n')
    dist_info = write_dist(site, "torch", "2.9.0")
    (dist_info / "variant.json").write_text(json.dumps(variant), encoding="utf-8")
    return site


def test_a_variant_wheels_properties_are_its_build(tmp_path: Path) -> None:
    """A torch variant wheel's variant.json (PEP 825 draft) is collected, and its sm_arch properties decide the GPU
    coverage as a build tag would: an RTX 5090 natively, a V100 not at all."""
    facts = collect_facts(_variant_site(tmp_path, VARIANT_JSON))
    assert facts.torch is not None and facts.torch.variant is not None
    assert facts.torch.variant["label"] == "cu128" and facts.torch.variant["problem"] is None
    archs = builds.wheel_variant_archs(facts.torch.variant)
    assert archs == ("sm_90", "sm_120", "compute_120")
    assert tb.coverage(archs, (12, 0)) == "native" and tb.coverage(archs, (7, 0)) == "none"


def test_a_variant_json_of_another_format_is_not_read(tmp_path: Path) -> None:
    """A variant.json whose schema is not the draft's v0.0.x is a problem, and says nothing of the build."""
    other = {**VARIANT_JSON, "$schema": "https://packaging.python.org/variants/v1.0.0.json"}
    facts = collect_facts(_variant_site(tmp_path, other))
    assert facts.torch is not None and facts.torch.variant is not None
    assert "not the draft format" in (facts.torch.variant["problem"] or "")
    assert builds.wheel_variant_archs(facts.torch.variant) is None


def test_recommend_names_conda_forges_build_where_conda_installed_torch() -> None:
    """`envcheck recommend` for a conda environment plans conda-forge's build (one that exists on conda-forge, for
    CUDA 12.9 on linux-64), in mamba's command, not PyPI's cu128 wheel."""
    from envcheck.derived.tables import load as load_tables
    from envcheck.remedy import recommend as recommend_mod

    plan = recommend_mod.plan(_conda_facts(), recommend_mod.Described(), load_tables([resources.data_dir().parent]))
    text = recommend_mod.render_text(plan)
    assert text.startswith("recommended: conda-forge's pytorch 2.7.1 for CUDA 12.9")
    assert plan.command == ("/opt/conda/bin/mamba", "install", "-p", "/opt/conda/envs/ml", "-c", "conda-forge", "-y",
                            "pytorch-gpu=2.7.1", "cuda-version=12.9")
    assert "download.pytorch.org" not in text

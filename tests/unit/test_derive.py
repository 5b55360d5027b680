"""Derived facts over real dist-info folders: `pip check` semantics, duplicates, corrupt metadata, Requires-Python."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _fakes import (
    MARKER_ENV,
    SITE,
    build_facts,
    collect_facts,
    dist_dict,
    facts_dict,
    gpu_dict,
    nvml_dict,
    torch_dict,
    write_dist,
)

from envcheck.derived import tables as tables_mod
from envcheck.derived.derive import DERIVATIONS, Derived
from envcheck.facts.snapshot import Facts
from envcheck.rules.rule_pack import builtin_rules_dir

TABLES = tables_mod.load([builtin_rules_dir()])


def _derived(facts: Facts, name: str) -> Any:
    return Derived(facts, TABLES).get(name)


def _unsatisfied(facts: Facts) -> list[tuple[str, str, str, str]]:
    """(package, requirement, kind, via) of every unsatisfied requirement."""
    return [(i["package"], i["requirement"], i["kind"], i["via"])
            for i in _derived(facts, "requirements.unsatisfied")]


def test_exact_pin_conflict(site: Path) -> None:
    """torchvision 0.21.0 pinning torch==2.6.0 next to torch 2.13.0 is an unsatisfied requirement naming both
    versions; `requirements.conflicting` leaves it to `companions.pinned-to-other-torch`, which knows the fix."""
    write_dist(site, "torch", "2.13.0")
    write_dist(site, "torchvision", "0.21.0", requires=["numpy", "torch==2.6.0", "pillow!=8.3.*,>=5.3.0"])
    write_dist(site, "numpy", "2.1.0")
    write_dist(site, "pillow", "11.0.0")
    facts = collect_facts(site)
    [item] = _derived(facts, "requirements.unsatisfied")
    assert _derived(facts, "requirements.conflicting") == []
    assert [i["expected"] for i in _derived(facts, "companions.pinned-to-other-torch")] == ["0.28.0"]
    assert item == {"package": "torchvision", "package_version": "0.21.0", "requirer": "torchvision 0.21.0",
                    "via": "torchvision",
                    "requirement": "torch==2.6.0", "dependency": "torch", "specifier": "==2.6.0",
                    "installed": "2.13.0", "kind": "conflict"}
    assert _derived(facts, "requirements.missing") == []


def test_companion_pin_the_tables_cannot_place_stays_a_conflict(site: Path) -> None:
    """A torchvision release the tables do not know, pinned to another torch, is still a conflict (EC0101)."""
    write_dist(site, "torch", "2.13.0")
    write_dist(site, "torchvision", "0.99.0", requires=["torch==2.99.0"])
    [item] = _derived(collect_facts(site), "requirements.conflicting")
    assert (item["package"], item["requirement"]) == ("torchvision", "torch==2.99.0")


def test_missing_dependency(site: Path) -> None:
    """A requirement whose distribution is not installed is reported as missing, with 'any version'."""
    write_dist(site, "transformers", "4.46.0", requires=["safetensors>=0.4.1", "tokenizers"])
    write_dist(site, "tokenizers", "0.20.0")
    [item] = _derived(collect_facts(site), "requirements.missing")
    assert (item["dependency"], item["specifier"], item["installed"], item["kind"]) == (
        "safetensors", ">=0.4.1", "", "missing")
    write_dist(site, "plain", "1.0", requires=["absent-dep"])
    items = _derived(collect_facts(site), "requirements.missing")
    assert [(i["package"], i["specifier"]) for i in items] == [("plain", "any version"),
                                                               ("transformers", ">=0.4.1")]


@pytest.mark.parametrize(
    ("requirement", "reported"),
    [
        pytest.param('pywin32; sys_platform == "win32"', False, id="other-platform"),
        pytest.param('uvloop; sys_platform == "linux"', True, id="this-platform"),
        pytest.param('tomli; python_version < "3.11"', False, id="other-python"),
        pytest.param('extra-dep; extra == "x"', False, id="extra-not-asked"),
        pytest.param("not a requirement!", False, id="invalid-requirement"),
    ],
)
def test_markers_are_evaluated_for_the_checked_interpreter(site: Path, requirement: str, reported: bool) -> None:
    """Markers use the snapshot's marker environment (Linux, Python 3.11), and `extra ==` needs that extra."""
    write_dist(site, "pkg", "1.0", requires=[requirement])
    raw = collect_facts(site).to_dict()
    raw["python"]["marker_environment"] = dict(MARKER_ENV)
    facts = Facts.from_dict(raw)
    assert bool(_derived(facts, "requirements.missing")) is reported


def test_extras_are_followed(site: Path) -> None:
    """a requires b[fast]; b's `c; extra == "fast"` is then required and, missing, reported via the chain."""
    write_dist(site, "a", "1.0", requires=["b[fast]>=1"])
    write_dist(site, "b", "1.2", requires=['c; extra == "fast"', 'd[gpu]; extra == "fast"', 'e; extra == "slow"'])
    write_dist(site, "d", "3.0", requires=['f>=2; extra == "gpu"'])
    write_dist(site, "f", "1.0")
    facts = collect_facts(site)
    assert _unsatisfied(facts) == [
        ("b", 'c; extra == "fast"', "missing", "a -> b[fast]"),
        ("d", 'f>=2; extra == "gpu"', "conflict", "a -> b[fast] -> d[gpu]"),
    ]
    assert _derived(facts, "requirements.missing")[0]["requirer"] == "b 1.2 (needed as a -> b[fast])"


def test_extras_of_an_unsatisfied_requirement_are_not_followed(site: Path) -> None:
    """A conflicting `b[fast]` is reported once; the extra of the wrong version is not checked as well."""
    write_dist(site, "a", "1.0", requires=["b[fast]>=2"])
    write_dist(site, "b", "1.0", requires=['c; extra == "fast"'])
    assert _unsatisfied(collect_facts(site)) == [("a", "b[fast]>=2", "conflict", "a")]


@pytest.mark.parametrize(
    ("installed", "requirement", "satisfied"),
    [
        pytest.param("2.7.0rc1", "torch>=2.6", True, id="prerelease-satisfies"),
        pytest.param("2.6.0+cu124", "torch==2.6.0", True, id="local-version-satisfies-pin"),
        pytest.param("2.6.0", "torch<2.6", False, id="upper-bound"),
        pytest.param("1.0-custom", "torch>=1", True, id="invalid-version-not-compared"),
    ],
)
def test_version_semantics(site: Path, installed: str, requirement: str, satisfied: bool) -> None:
    """Pre-releases satisfy a range (as in pip check); a version that is not PEP 440 is never a conflict."""
    write_dist(site, "torch", installed)
    write_dist(site, "user", "1.0", requires=[requirement])
    assert (_derived(collect_facts(site), "requirements.unsatisfied") == []) is satisfied


def test_only_the_active_copy_is_checked(tmp_path: Path) -> None:
    """The shadowed copy's requirements are not checked, and requirements are checked against the active copy."""
    first, second = tmp_path / "a", tmp_path / "b"
    write_dist(first, "user", "2.0", requires=["torch>=2"])
    write_dist(second, "user", "1.0", requires=["absent-dep"])
    write_dist(first, "torch", "2.5.0")
    write_dist(second, "torch", "1.13.0")
    assert _derived(collect_facts(first, second), "requirements.unsatisfied") == []


def test_distribution_with_problems_is_not_a_root(site: Path) -> None:
    """Requirements of a distribution whose metadata is broken are not trusted, but it is reported as corrupt."""
    write_dist(site, "broken", "1.0", metadata="Metadata-Version: 2.1\nVersion: 1.0\nRequires-Dist: absent\n")
    facts = collect_facts(site)
    assert _derived(facts, "requirements.unsatisfied") == []
    [item] = _derived(facts, "distributions.corrupt")
    assert (item["name"], item["problem"]) == ("broken", "METADATA has no Name")


def test_duplicates(tmp_path: Path) -> None:
    """A copy layered over another counts only where the imported one breaks what the shadowed one met; one
    version with two metadata folders in one folder does not count at all."""
    user, venv = tmp_path / "user", tmp_path / "venv"
    write_dist(user, "numpy", "1.26.4")
    write_dist(venv, "numpy", "2.1.0")
    write_dist(venv, "contourpy", "1.3.0", requires=["numpy>=2.0"])
    write_dist(venv, "cryptography", "41.0.7")
    write_dist(venv, "cryptography", "41.0.7", folder="cryptography-41.0.7.egg-info")
    write_dist(venv, "six", "1.16.0")
    write_dist(user, "six", "1.17.0")
    items = _derived(collect_facts(user, venv), "distributions.duplicates")
    assert [(i["name"], i["active_version"], i["shadowed_version"], i["same_location"]) for i in items] == [
        ("numpy", "1.26.4", "2.1.0", "no")]
    assert items[0]["active_location"] == str(user)
    assert items[0]["shadowed_metadata_dir"] == str(venv / "numpy-2.1.0.dist-info")
    assert items[0]["breaks"].endswith("contourpy 1.3.0 requires numpy>=2.0")


def test_stale_metadata_in_one_folder_is_a_duplicate(site: Path) -> None:
    """Two versions' metadata folders side by side (a half-finished upgrade) are reported as in one location."""
    write_dist(site, "torch", "2.5.1")
    write_dist(site, "torch", "2.6.0")
    [item] = _derived(collect_facts(site), "distributions.duplicates")
    assert item["same_location"] == "yes"
    assert {item["active_version"], item["shadowed_version"]} == {"2.5.1", "2.6.0"}
    assert (item["remove"], item["remove_again"], item["breaks"]) == ("torch", "torch", "")


def test_corrupt_and_invalid_versions(site: Path) -> None:
    """Unreadable metadata and invalid Requires-Dist lines are corrupt; `1.0-custom` is an invalid version."""
    write_dist(site, "nometa", "1.0", metadata=None)
    write_dist(site, "badreq", "1.0", requires=["ok>=1", "bad req !!"])
    write_dist(site, "ok", "1.0")
    write_dist(site, "custom", "1.0-custom")
    facts = collect_facts(site)
    corrupt = {i["name"]: i["problem"] for i in _derived(facts, "distributions.corrupt")}
    assert corrupt == {"badreq": "invalid Requires-Dist 'bad req !!'", "nometa": "no METADATA file"}
    assert [(i["name"], i["version"]) for i in _derived(facts, "distributions.invalid-versions")] == [
        ("custom", "1.0-custom")]


@pytest.mark.parametrize(
    ("requires_python", "reported"),
    [
        pytest.param(">=3.12", True, id="too-new"),
        pytest.param(">=3.9,<3.11", True, id="too-old"),
        pytest.param(">=3.10", False, id="fits"),
        pytest.param(">=3.11.7rc1", False, id="prerelease-bound"),
        pytest.param("not a specifier", False, id="invalid-ignored"),
    ],
)
def test_requires_python(requires_python: str, reported: bool) -> None:
    """An imported distribution whose Requires-Python excludes the checked interpreter (3.11.7) is reported."""
    facts = build_facts(dists=[dist_dict("pkg", "1.0", requires_python=requires_python)])
    items = _derived(facts, "distributions.requires-python")
    assert items == ([{"name": "pkg", "version": "1.0", "requires_python": requires_python, "python": "3.11.7"}]
                     if reported else [])


def test_list_derivations_declare_their_item_fields() -> None:
    """Every item of a list-valued derivation has exactly the fields it declares (rules validate against them)."""
    raw = facts_dict(dists=[
        dist_dict("a", "1", "b>=2", "c", requires_python=">=3.12"), dist_dict("b", "1"),
        dist_dict("b", "2.0", location="/elsewhere"), dist_dict("x", "1.0-custom"),
        dist_dict("y", "1", problems=["no METADATA file"]),
        # torch's companions (envcheck/derived/companions.py): torchcodec declares no torch and is torch 2.9's,
        # xformers pins another torch, torchvision and torchaudio are CPU builds next to a CUDA torch; torch 2.5.1
        # was never built for CUDA 12.8 (torch.unpublished-build).
        dist_dict("torch", "2.5.1+cu128"), dist_dict("torchcodec", "0.9.1"),
        dist_dict("xformers", "0.0.28", "torch==2.4.1"), dist_dict("torchvision", "0.20.1+cpu", "torch==2.5.1"),
        dist_dict("torchaudio", "2.5.1+cpu", "torch==2.5.1"),
        # compiled extensions (envcheck/derived/extensions.py): a PyG wheel for torch 2.4 and CUDA 11.8, a
        # flash-attn wheel of the other C++ ABI (tags are read whatever the distribution's name); the
        # extension-imports probe saw one failure of each kind.
        dist_dict("torch-scatter", "2.1.2+pt24cu118"), dist_dict("fa-wheel", "2.7.0+cu12torch2.5cxx11abiTRUE"),
        # the release table (rules/data/extension-releases.toml): each of its libraries in a release made for
        # another torch (or CUDA), and mmdet next to an mmcv and an mmengine it refuses.
        dist_dict("torchao", "0.13.0"), dist_dict("vllm", "0.6.3", "torch==2.4.0"), dist_dict("flash-attn", "2.5.8"),
        dist_dict("deepspeed", "0.8.0"), dist_dict("detectron2", "0.6+cu113"), dist_dict("bitsandbytes", "0.45.2"),
        dist_dict("mmdet", "3.3.0"), dist_dict("mmcv", "2.2.0"), dist_dict("mmengine", "1.0.0"),
        # the pip CUDA libraries, which older copies on LD_LIBRARY_PATH shadow (envcheck/derived/native_libs.py);
        # nvidia-nccl-cu12 is appended below
        dist_dict("nvidia-cudnn-cu12", "9.1.0.70"), dist_dict("nvidia-cublas-cu12", "12.4.5.8")],
        torch=torch_dict("2.5.1+cu128", "12.8"),
        # Driver 570 (CUDA 12.8) runs the cu128 torch fully, so it can JIT compute_90 for the RTX 5090.
        nvml=nvml_dict(gpu_dict(0, "6.1", "GTX 1080"), gpu_dict(1, "12.0", "RTX 5090"), driver="570.133.07",
                       cuda="12.8"),
        probes={"torch-build": {"status": "ok", "details": {"arch_list": ["sm_75", "sm_90", "compute_90"],
                                                           "cxx11_abi": False}},
                "extension-imports": {"status": "ok", "cases": {
                    "a": {"status": "error", "message": "a.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"},
                    "b": {"status": "error", "message": "operator torchvision::nms does not exist"},
                    "c": {"status": "error", "message": "numpy.core.multiarray failed to import",
                          "stderr": "A module that was compiled using NumPy 1.x cannot be run in"},
                    "d": {"status": "error", "message": "libcudart.so.11.0: cannot open shared object file"},
                    "e": {"status": "crashed", "error_class": "SIGSEGV", "message": "killed"},
                    "f": {"status": "error", "error_class": "ModuleNotFoundError", "message": "No module named 'q'"}}},
                "loaded-libraries": {"status": "ok", "details": {"libraries": ["/usr/lib/libcudnn.so.9"]}},
                "sdpa": {"status": "ok", "cases": {"cuda:0/backend=flash,dtype=float16": {
                    "status": "error", "error_class": "RuntimeError", "message": "No available kernel.",
                        "can_use": False}}}},
        env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.1/lib64", "CUDA_HOME": "/usr/local/cuda-11.8",
             # multi-GPU and bitsandbytes (envcheck/derived/multigpu.py): a GPU index this machine lacks, another
             # CUDA's bitsandbytes library, socket interfaces it does not have.
             "CUDA_VISIBLE_DEVICES": "0,5", "BNB_CUDA_VERSION": "118", "NCCL_SOCKET_IFNAME": "ib",
             "GLOO_SOCKET_IFNAME": "bond1", "TORCH_CUDA_ARCH_LIST": "8.6;12.0"})
    raw["distributions"].append(dist_dict("nvidia-nccl-cu12", "2.26.2"))  # torch loaded 2.21.5 (the probe)
    raw["probes"]["torch-build"]["details"]["nccl_version"] = "2.21.5"
    raw["network"] = {"interfaces": ["eth0", "lo"]}
    # The build toolchain (envcheck/derived/toolchain.py): CUDA_HOME's 11.8 (too old for sm_120 and
    # TORCH_CUDA_ARCH_LIST's 12.0, GCC 11 at most) and a CUDA 13.0 nvcc on PATH (another major, without Pascal).
    raw["toolchain"] = {
        "cuda_home": {"source": "CUDA_HOME", "path": "/usr/local/cuda-11.8", "exists": True, "nvcc": True,
                      "version": "11.8", "version_file": "/usr/local/cuda-11.8/version.json", "gcc_max": 11},
        "nvcc_on_path": {"source": "PATH", "path": "/opt/cuda-13.0", "exists": True, "nvcc": True, "version": "13.0",
                         "version_file": "/opt/cuda-13.0/version.json", "gcc_max": 15},
        "gcc": {"path": "/usr/bin/gcc", "version": "13"}}
    # Native libraries (envcheck/derived/native_libs.py): older CUDA libraries on LD_LIBRARY_PATH, needs above what
    # libstdc++ and glibc provide, a wheel for a newer glibc, Windows runtime DLLs that are missing.
    old = "/usr/local/cuda-12.1/lib64"
    raw["native"] = {
        "loader_path": [{"directory": old, "name": "libcudnn.so.9", "version": "9.0.0"},
                        {"directory": old, "name": "libcublas.so.12", "version": "12.1.3.1"},
                        {"directory": old, "name": "libnccl.so.2", "version": "2.18.3"}],
        "needs": [{"distribution": "torch", "file": "torch/lib/libc10.so", "library": "libstdc++.so.6",
                   "version": "GLIBCXX_3.4.32"},
                  {"distribution": "torch", "file": "torch/lib/libc10.so", "library": "libc.so.6",
                   "version": "GLIBC_2.99"}],
        "libstdcxx": {"path": "/usr/lib/libstdc++.so.6", "via": "system", "glibcxx": "GLIBCXX_3.4.28",
                      "cxxabi": "CXXABI_1.3.12"},
        "wheel_floors": [{"distribution": "torch", "version": "2.5.1+cu128", "tag": "manylinux_2_99_x86_64",
                          "glibc": "2.99"}],
        "windows_dlls": {"msvcp140.dll": False, "libomp140.x86_64.dll": False}}
    raw["partial_installs"] = [f"{SITE}/~orch"]
    # conda's facts (envcheck/derived/conda_builds.py): a pixi environment that requires CUDA 12.9 on a machine
    # whose driver runs 12.8 (no conda package of the torch stack, so PyPI's torch above is still the one judged).
    raw["conda"] = {"packages": [], "virtual_packages": {"__cuda": "12.8"}, "system_requirements": {"cuda": "12.9"}}
    # Failed imports in error output (envcheck/derived/release_names.py): a dtype torch 2.5.1 does not have yet
    # (2.7.0 added it), and a module it has (so the release is not the cause).
    raw["observed"] = [
        {"rule_id": "EC1903", "signature": 2, "line": 1, "text": "module 'torch' has no attribute 'float8_e8m0fnu'",
         "captures": {"module": "torch", "name": "float8_e8m0fnu"}, "facts": {}, "source": ""},
        {"rule_id": "EC1903", "signature": 2, "line": 2, "text": "module 'torch' has no attribute 'compiler'",
         "captures": {"module": "torch", "name": "compiler"}, "facts": {}, "source": ""}]
    # The checked project (envcheck/derived/project.py): a requirement that is missing, a lock torch drifted from.
    raw["project"] = {"root": "/p", "name": "p", "files": ["requirements.txt", "uv.lock"], "index_options": [],
                      "requirements": [{"requirement": "safetensors", "source": "requirements.txt:1",
                                        "kind": "requirements"},
                                       {"requirement": "mamba-ssm", "source": "requirements.txt:2",
                                        "kind": "requirements"}],
                      "locks": [{"file": "uv.lock", "tool": "uv", "sync": "uv sync",
                                 "pins": [{"name": "torch", "version": "2.6.0+cu124"}]}]}
    derived = Derived(Facts.from_dict(raw), TABLES)
    # Wheel availability (envcheck/derived/wheels.py) needs a platform or Python some release has no wheel for:
    # an Intel Mac with Python 3.13, whose project asks for torch 2.3 or later, for 2.2 (no 3.13 wheels), for a
    # CUDA build, and names a CUDA index.
    mac = facts_dict(python={"platform": "darwin", "machine": "x86_64", "system": "Darwin", "version": "3.13.1"})
    mac["project"] = {"root": "/p", "name": "p", "files": ["requirements.txt"],
                      "index_options": ["--index-url", "https://download.pytorch.org/whl/cu121"], "locks": [],
                      "requirements": [{"requirement": r, "source": f"requirements.txt:{i}", "kind": "requirements"}
                                       for i, r in enumerate(["torch>=2.3", "torch<2.3", "torch==2.2.2+cu121"])]}
    on_a_mac = Derived(Facts.from_dict(mac), TABLES)
    # A NumPy ABI failure under a NumPy 1.x is the other direction (envcheck/derived/layers.py).
    old_numpy = Derived(Facts.from_dict(facts_dict(
        dists=[dist_dict("numpy", "1.26.4"), dist_dict("c", "1", "numpy>=2")],
        probes={"extension-imports": {"status": "ok", "cases": {
            "c": {"status": "error", "message": "numpy.core.multiarray failed to import"}}}})), TABLES)
    for name, derivation in DERIVATIONS.items():
        if not derivation.fields or name.startswith("rocm."):  # a ROCm torch's: tests/unit/test_rocm.py checks them
            continue
        items = (on_a_mac if name.startswith(("torch.requirement-without-wheel", "torch.index-without-wheel"))
                 else old_numpy if name == "extensions.import-numpy-too-old" else derived).get(name)
        assert items, f"{name} is empty in this fixture"
        for item in items:
            assert tuple(item) == derivation.fields, name
            assert all(isinstance(v, str) for v in item.values()), name


@pytest.mark.parametrize(
    ("line", "extra"),
    [
        pytest.param('psutil>=4.0; extra == "dmypy"', "dmypy", id="only-an-extra"),
        pytest.param('tomli; python_version < "3.11" and extra == "toml"', "toml", id="conjunction-ending-in-extra"),
        pytest.param('x; (python_version < "3.8" or sys_platform == "win32") and extra == "a"', None, id="has-or"),
        pytest.param('y; extra == "a" or python_version < "3.8"', None, id="extra-then-or"),
        pytest.param('z; python_version < "3.11"', None, id="no-extra"),
        pytest.param("numpy>=1.21", None, id="no-marker"),
        pytest.param("u @ https://host/a;b", None, id="semicolon-in-url"),
    ],
)
def test_extra_only_lines_are_recognised_without_parsing(line: str, extra: str | None) -> None:
    """A line the walk may skip unparsed is one whose marker is false for every extra but the one it names."""
    from envcheck.derived.requirements import only_extra

    assert only_extra(line) == extra

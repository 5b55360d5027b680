"""Derived CUDA toolkit facts: toolkit folders on LD_LIBRARY_PATH, and the toolkit CUDA_HOME / CUDA_PATH names."""

from __future__ import annotations

from typing import Any

import pytest
from _fakes import build_facts, torch_dict

from envcheck.derived import system_libs
from envcheck.derived.derive import DERIVATIONS, Derived

LD_FACT = "cuda.older-toolkits-on-ld-library-path"
HOME_FACT = "cuda.home-toolkit-other-major"


def _derived(name: str, **facts: Any) -> Any:
    return Derived(build_facts(**facts)).get(name)  # no derivation here reads a data table


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/usr/local/cuda-12.1/lib64", (12, 1), id="versioned-folder"),
        pytest.param("/usr/local/cuda_11.8", (11, 8), id="underscore"),
        pytest.param("/opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4/lib64", (12, 4), id="hpc-sdk"),
        pytest.param("C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8", (11, 8), id="windows"),
        pytest.param("/home/me/cuda/cuda-12.6/lib64", (12, 6), id="last-one-wins"),
        pytest.param("/usr/local/cuda/lib64", None, id="no-version"),
        pytest.param("/usr/local/cuda-12/lib64", None, id="major-only"),
        pytest.param("/opt/conda/lib", None, id="not-a-toolkit"),
    ],
)
def test_toolkit_version_is_read_from_the_folder_name(path: str, expected: tuple[int, int] | None) -> None:
    """The version a toolkit folder names, taken from its last `cuda<sep>X.Y`; none when it names no minor."""
    assert system_libs.toolkit_version(path) == expected


def test_ld_library_path_lists_older_and_unversioned_toolkits_of_torchs_major_in_order() -> None:
    """Toolkit library folders of torch's CUDA major that are older, or unversioned, are listed once, in order."""
    path = ":".join([
        "/usr/local/cuda/lib64",  # no version: listed
        "/usr/local/cuda-12.1/lib64",  # older than 12.4: listed
        "/usr/local/cuda-12.1/lib64",  # repeated: once
        "/usr/local/cuda-12.4/targets/x86_64-linux/lib",  # same: not older
        "/usr/local/cuda-12.8/lib64",  # newer: has every older symbol version
        "/usr/local/cuda-11.8/lib64",  # CUDA 11 ships no libnvJitLink.so.12
        "/usr/local/cuda-13.0/lib64",  # libnvJitLink.so.13: another soname
        "/usr/local/cuda/extras/CUPTI/lib64",  # not a toolkit's library folder
        "/opt/conda/lib",
        "",
    ])
    items = _derived(LD_FACT, torch=torch_dict(cuda="12.4"), env={"LD_LIBRARY_PATH": path})
    assert items == [
        {"path": "/usr/local/cuda/lib64", "toolkit": "unknown", "torch_cuda": "12.4"},
        {"path": "/usr/local/cuda-12.1/lib64", "toolkit": "12.1", "torch_cuda": "12.4"},
    ]


@pytest.mark.parametrize(
    ("torch", "env", "expected"),
    [
        pytest.param(None, {"LD_LIBRARY_PATH": "/usr/local/cuda-12.1/lib64"}, [], id="no-torch"),
        pytest.param(torch_dict(version="2.5.1+cpu", cuda=None), {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}, [],
                     id="cpu-build"),
        pytest.param(torch_dict(cuda="12.4"), {}, [], id="unset"),
        pytest.param(torch_dict(version=None, cuda=None, problem="unreadable"),
                     {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}, None, id="torch-build-unknown"),
    ],
)
def test_ld_library_path_fact_is_empty_without_a_cuda_torch_and_unknown_without_its_build(
        torch: dict[str, Any] | None, env: dict[str, str], expected: list[Any] | None) -> None:
    """No CUDA torch (or no LD_LIBRARY_PATH) means nothing to shadow; an unreadable torch build is unknown."""
    assert _derived(LD_FACT, torch=torch, env=env) == expected


@pytest.mark.parametrize(
    ("env", "cuda", "expected"),
    [
        pytest.param({"CUDA_HOME": "/usr/local/cuda-11.8"}, "12.4",
                     [{"variable": "CUDA_HOME", "path": "/usr/local/cuda-11.8", "toolkit": "11.8",
                       "torch_cuda": "12.4"}], id="home-older-major"),
        pytest.param({"CUDA_PATH": "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v13.0"}, "12.8",
                     [{"variable": "CUDA_PATH", "path": "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v13.0",
                       "toolkit": "13.0", "torch_cuda": "12.8"}], id="path-newer-major"),
        pytest.param({"CUDA_HOME": "", "CUDA_PATH": "/usr/local/cuda-11.8"}, "12.4",
                     [{"variable": "CUDA_PATH", "path": "/usr/local/cuda-11.8", "toolkit": "11.8",
                       "torch_cuda": "12.4"}], id="empty-home-falls-through"),
        # torch reads CUDA_HOME first: a matching CUDA_HOME hides a mismatched CUDA_PATH.
        pytest.param({"CUDA_HOME": "/usr/local/cuda-12.1", "CUDA_PATH": "/usr/local/cuda-11.8"}, "12.4", [],
                     id="home-wins"),
        pytest.param({"CUDA_HOME": "/usr/local/cuda-12.1"}, "12.4", [], id="minor-differs-only"),
        pytest.param({"CUDA_HOME": "/usr/local/cuda"}, "12.4", [], id="no-version-in-path"),
        pytest.param({}, "12.4", [], id="unset"),
        pytest.param({"CUDA_HOME": "/usr/local/cuda-11.8"}, None, [], id="cpu-build"),
    ],
)
def test_cuda_home_toolkit_of_another_major(env: dict[str, str], cuda: str | None,
                                            expected: list[dict[str, str]]) -> None:
    """The toolkit torch.utils.cpp_extension would build with, reported only when its CUDA major differs."""
    torch = torch_dict(version="2.5.1+cpu" if cuda is None else "2.5.1", cuda=cuda)
    assert _derived(HOME_FACT, torch=torch, env=env) == expected


def test_item_fields_are_declared() -> None:
    """Each item carries exactly the fields the derivation declares, so rule templates are validated against them."""
    items = _derived(LD_FACT, torch=torch_dict(cuda="12.4"), env={"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"})
    assert set(items[0]) == set(DERIVATIONS[LD_FACT].fields)
    items = _derived(HOME_FACT, torch=torch_dict(cuda="12.4"), env={"CUDA_HOME": "/usr/local/cuda-11.8"})
    assert set(items[0]) == set(DERIVATIONS[HOME_FACT].fields)

"""The build toolchain read from files: toolkit folders laid out as the CUDA installers lay them out, found the way
torch.utils.cpp_extension finds them, and the host GCC's version from the names it resolves to."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest
from _fakes import build_facts

from envcheck.facts.snapshot import Facts
from envcheck.sources.live.toolchain_scan import collect_toolchain

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX toolkit layouts and executables")

HOST_CONFIG = """#if defined(__GNUC__)
#if __GNUC__ > 13
#error -- unsupported GNU version! gcc versions later than 13 are not supported! The nvcc flag \
'-allow-unsupported-compiler' can be used to override this version check
#endif
#endif
"""


def _toolkit(root: Path, *, version_json: dict[str, object] | None = None, version_txt: str | None = None,
             cuda_h: str | None = None, host_config: str | None = HOST_CONFIG, nvcc: bool = True,
             include: str = "include") -> Path:
    (root / "bin").mkdir(parents=True)
    if nvcc:
        (root / "bin" / "nvcc").write_text("#!/bin/sh\nexit 0\n")
        (root / "bin" / "nvcc").chmod(0o755)
    if version_json is not None:
        (root / "version.json").write_text(json.dumps(version_json))
    if version_txt is not None:
        (root / "version.txt").write_text(version_txt)
    (root / include / "crt").mkdir(parents=True)
    if cuda_h is not None:
        (root / include / "cuda.h").write_text(cuda_h)
    if host_config is not None:
        (root / include / "crt" / "host_config.h").write_text(host_config)
    return root


def _env(tmp_path: Path, **values: str) -> dict[str, str]:
    """An environment whose PATH finds nothing but what a test puts in tmp_path/empty-bin."""
    (tmp_path / "empty-bin").mkdir(exist_ok=True)
    return {"PATH": str(tmp_path / "empty-bin"), **values}


@pytest.mark.parametrize(("files", "version", "version_file"), [
    pytest.param({"version_json": {"cuda": {"name": "CUDA SDK", "version": "12.4.1"},
                                   "cuda_nvcc": {"name": "CUDA NVCC", "version": "12.4.131"}}},
                 "12.4", "version.json", id="version.json, nvcc's own entry"),
    pytest.param({"version_json": {"cuda": {"version": "11.8.0"}}}, "11.8", "version.json", id="version.json cuda"),
    pytest.param({"version_txt": "CUDA Version 11.0.228\n"}, "11.0", "version.txt", id="version.txt (CUDA 11.0)"),
    pytest.param({"cuda_h": "#pragma once\n#define CUDA_VERSION 12060\n"}, "12.6", "include/cuda.h", id="cuda.h"),
    pytest.param({"version_json": ["not", "an", "object"], "cuda_h": "#define CUDA_VERSION 12080\n"}, "12.8",
                 "include/cuda.h", id="malformed version.json falls through"),
    pytest.param({}, None, None, id="no file tells"),
])
def test_toolkit_version_from_its_files(tmp_path: Path, files: dict[str, object], version: str | None,
                                        version_file: str | None) -> None:
    """CUDA_HOME's toolkit version comes from version.json, else version.txt, else cuda.h's CUDA_VERSION."""
    root = _toolkit(tmp_path / "cuda", **files)  # type: ignore[arg-type]
    home = collect_toolchain(_env(tmp_path, CUDA_HOME=str(root))).cuda_home
    assert home is not None
    assert (home.source, home.exists, home.nvcc, home.version) == ("CUDA_HOME", True, True, version)
    assert home.version_file == (None if version_file is None else str(root / version_file))
    assert home.gcc_max == 13


def test_conda_layout_headers_under_targets(tmp_path: Path) -> None:
    """conda's cuda-nvcc packages keep cuda.h and host_config.h under targets/<triple>/include."""
    root = _toolkit(tmp_path / "env", cuda_h="#define CUDA_VERSION 12040\n", include="targets/x86_64-linux/include")
    home = collect_toolchain(_env(tmp_path, CUDA_PATH=str(root))).cuda_home
    assert home is not None
    assert (home.source, home.version, home.gcc_max) == ("CUDA_PATH", "12.4", 13)


def test_empty_cuda_home_falls_through_to_cuda_path(tmp_path: Path) -> None:
    """An empty CUDA_HOME is skipped, as torch skips it (`CUDA_HOME or CUDA_PATH`)."""
    root = _toolkit(tmp_path / "cuda-12.1", version_json={"cuda": {"version": "12.1.1"}})
    home = collect_toolchain(_env(tmp_path, CUDA_HOME="", CUDA_PATH=str(root))).cuda_home
    assert home is not None and home.source == "CUDA_PATH" and home.version == "12.1"


def test_cuda_home_without_nvcc_and_missing_folder(tmp_path: Path) -> None:
    """A CUDA_HOME without bin/nvcc, or naming no folder at all, is still the one torch takes: recorded as such."""
    runtime_only = _toolkit(tmp_path / "runtime", version_json={"cuda": {"version": "12.4.1"}}, nvcc=False)
    home = collect_toolchain(_env(tmp_path, CUDA_HOME=str(runtime_only))).cuda_home
    assert home is not None and (home.exists, home.nvcc, home.version) == (True, False, "12.4")
    gone = collect_toolchain(_env(tmp_path, CUDA_HOME=str(tmp_path / "gone"))).cuda_home
    assert gone is not None and (gone.exists, gone.nvcc, gone.version) == (False, False, None)


def test_nvcc_on_path_is_the_toolkit_without_variables(tmp_path: Path) -> None:
    """Without CUDA_HOME and CUDA_PATH, the folder above the nvcc PATH finds is the toolkit (source PATH); with
    CUDA_HOME set, that nvcc is still recorded as nvcc_on_path."""
    on_path = _toolkit(tmp_path / "cuda-11.8", version_json={"cuda_nvcc": {"version": "11.8.89"}})
    env = _env(tmp_path)
    env["PATH"] = f"{on_path / 'bin'}{os.pathsep}{env['PATH']}"
    facts = collect_toolchain(env)
    assert facts.cuda_home is not None and facts.nvcc_on_path is not None
    assert (facts.cuda_home.source, facts.cuda_home.path, facts.cuda_home.version) == ("PATH", str(on_path), "11.8")
    other = _toolkit(tmp_path / "cuda-12.4", version_json={"cuda_nvcc": {"version": "12.4.131"}})
    both = collect_toolchain({**env, "CUDA_HOME": str(other)})
    assert both.cuda_home is not None and both.nvcc_on_path is not None
    assert (both.cuda_home.version, both.nvcc_on_path.version) == ("12.4", "11.8")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the host compiler is judged on Linux")
def test_gcc_version_from_the_name_it_resolves_to(tmp_path: Path) -> None:
    """`gcc -> gcc-12` (Debian's alternatives) gives 12; $CC wins over gcc."""
    bin_dir = tmp_path / "empty-bin"
    bin_dir.mkdir()
    real = bin_dir / "x86_64-linux-gnu-gcc-12"
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    (bin_dir / "gcc").symlink_to(real.name)
    gcc = collect_toolchain({"PATH": str(bin_dir)}).gcc
    assert gcc is not None and (gcc.path, gcc.version) == (str(bin_dir / "gcc"), "12")
    cc = bin_dir / "gcc-11"
    cc.write_text("#!/bin/sh\n")
    cc.chmod(0o755)
    chosen = collect_toolchain({"PATH": str(bin_dir), "CC": str(cc)}).gcc
    assert chosen is not None and chosen.version == "11"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the host compiler is judged on Linux")
def test_gcc_version_from_its_lib_folder(tmp_path: Path) -> None:
    """A plain `gcc` (Fedora, conda) is read from the single lib/gcc/<triple>/<N> folder of its installation;
    two versions there are ambiguous, so unknown."""
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    gcc = prefix / "bin" / "gcc"
    gcc.write_text("#!/bin/sh\n")
    gcc.chmod(0o755)
    (prefix / "lib" / "gcc" / "x86_64-redhat-linux" / "14").mkdir(parents=True)
    found = collect_toolchain({"PATH": str(prefix / "bin")}).gcc
    assert found is not None and found.version == "14"
    (prefix / "lib" / "gcc" / "x86_64-redhat-linux" / "13").mkdir()
    ambiguous = collect_toolchain({"PATH": str(prefix / "bin")}).gcc
    assert ambiguous is not None and ambiguous.version is None


def test_toolchain_round_trips_through_the_snapshot(tmp_path: Path) -> None:
    """The toolchain facts written by to_dict read back identical, and a snapshot without them reads None."""
    root = _toolkit(tmp_path / "cuda", version_json={"cuda": {"version": "12.4.1"}})
    toolchain = collect_toolchain(_env(tmp_path, CUDA_HOME=str(root)))
    facts = dataclasses.replace(build_facts(), toolchain=toolchain)
    again = Facts.from_dict(json.loads(json.dumps(facts.to_dict())))
    assert again.toolchain == toolchain
    assert build_facts().toolchain is None


@pytest.mark.parametrize("how", ["symlink", "wrapper script"])
def test_nvcc_standing_for_another_toolkit(tmp_path: Path, how: str) -> None:
    """An nvcc on PATH that is a symlink to, or a small script exec'ing, another toolkit's nvcc: torch takes the
    folder above it as the toolkit, and `nvcc --version` reports the other toolkit's release, read from its files."""
    real = _toolkit(tmp_path / "cuda-13.0", cuda_h="#define CUDA_VERSION 13000\n",
                    host_config=HOST_CONFIG.replace("13", "15"), include="targets/x86_64-linux/include")
    shim = tmp_path / "shim"
    (shim / "bin").mkdir(parents=True)
    if how == "symlink":
        (shim / "bin" / "nvcc").symlink_to(real / "bin" / "nvcc")
    else:
        (shim / "bin" / "nvcc").write_text(f'#!/bin/sh\nexec {real}/bin/nvcc "$@"\n')
        (shim / "bin" / "nvcc").chmod(0o755)
    env = _env(tmp_path)
    env["PATH"] = f"{shim / 'bin'}{os.pathsep}{env['PATH']}"
    home = collect_toolchain(env).cuda_home
    assert home is not None
    assert (home.source, home.path, home.version, home.gcc_max) == ("PATH", str(shim), "13.0", 15)
    assert home.version_file == str(real / "targets" / "x86_64-linux" / "include" / "cuda.h")

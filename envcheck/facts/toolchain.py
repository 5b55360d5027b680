"""The toolchain that builds CUDA extensions on this machine: the CUDA toolkit torch.utils.cpp_extension would use,
the nvcc that PATH finds, and the host C++ compiler nvcc calls.

Collected in envcheck's own process (envcheck/sources/live/toolchain_scan.py) from files only: no compiler is run, so
the static check stays fast and a saved snapshot evaluates the same anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.facts._reader import Reader

# How a toolkit was found, in the order torch.utils.cpp_extension._find_cuda_home tries: CUDA_HOME, else CUDA_PATH,
# else the folder above the `nvcc` that PATH finds, else the platform's default install folder.
TOOLKIT_SOURCES = ("CUDA_HOME", "CUDA_PATH", "PATH", "default")


@dataclass(frozen=True)
class CudaToolkit:
    """One CUDA toolkit folder."""

    source: str  # one of TOOLKIT_SOURCES
    path: str  # the toolkit's root folder (CUDA_HOME's value, or the folder above bin/nvcc)
    exists: bool  # the folder exists
    nvcc: bool  # bin/nvcc (bin/nvcc.exe on Windows) exists in it
    version: str | None  # "12.4" (nvcc's release, major.minor) read from version.json, version.txt or cuda.h
    version_file: str | None  # the file the version was read from; None when no file told it
    gcc_max: int | None  # the newest GCC major its include/crt/host_config.h accepts; None when unread

    @classmethod
    def from_reader(cls, r: Reader) -> CudaToolkit:
        return cls(source=r.choice("source", TOOLKIT_SOURCES), path=r.text("path"), exists=r.flag("exists"),
                   nvcc=r.flag("nvcc"), version=r.opt_text("version"), version_file=r.opt_text("version_file"),
                   gcc_max=r.opt_integer("gcc_max", minimum=0))


@dataclass(frozen=True)
class HostCompiler:
    """The C compiler nvcc calls as its host compiler: $CC (which torch passes to nvcc as -ccbin), else `gcc`."""

    path: str  # as found on PATH (or $CC's value)
    version: str | None  # its major version ("13"), from the resolved file's name or its lib/gcc/<triple>/<N> folder

    @classmethod
    def from_reader(cls, r: Reader) -> HostCompiler:
        return cls(path=r.text("path"), version=r.opt_text("version"))


@dataclass(frozen=True)
class ToolchainFacts:
    """What would build a CUDA extension here. None fields: not found (no toolkit at all, no nvcc on PATH)."""

    cuda_home: CudaToolkit | None  # the toolkit torch.utils.cpp_extension builds with; None: it finds none
    nvcc_on_path: CudaToolkit | None  # the toolkit of the `nvcc` PATH finds (what Makefile and CMake builds use)
    gcc: HostCompiler | None  # None: no gcc found (or not Linux)

    @classmethod
    def from_reader(cls, r: Reader) -> ToolchainFacts:
        home, on_path, gcc = r.opt_obj("cuda_home"), r.opt_obj("nvcc_on_path"), r.opt_obj("gcc")
        return cls(cuda_home=None if home is None else CudaToolkit.from_reader(home),
                   nvcc_on_path=None if on_path is None else CudaToolkit.from_reader(on_path),
                   gcc=None if gcc is None else HostCompiler.from_reader(gcc))

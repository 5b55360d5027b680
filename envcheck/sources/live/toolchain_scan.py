"""Finding the CUDA toolkit and host compiler from files, as torch.utils.cpp_extension would find them.

Nothing is executed: nvcc's release comes from the toolkit's version.json (CUDA 11.1 and later; its `cuda_nvcc`
entry is the compiler's own version), else version.txt (CUDA 11.0 and older), else CUDA_VERSION in cuda.h; the
newest GCC it accepts from the `#error -- unsupported GNU version! gcc versions later than N` line of
include/crt/host_config.h. Every read is bounded, and an unreadable file is an unknown, never an exception.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from envcheck.facts.toolchain import CudaToolkit, HostCompiler, ToolchainFacts
from envcheck.support.patterns import lazy
from envcheck.support.versions import major_minor_text

_MAX_READ = 256 * 1024  # version.json is 2 KB, host_config.h 12 KB, cuda.h 1 MB: its CUDA_VERSION is near the top
_CUDA_H_VERSION = re.compile(rb"#define\s+CUDA_VERSION\s+(\d{4,6})\b")
_VERSION_TXT = re.compile(rb"CUDA Version\s+(\d+)\.(\d+)")
_GCC_LATER = re.compile(rb"gcc versions later than (\d+) are not supported")
_NUMBERED = lazy(r"(?:gcc|g\+\+|c\+\+|cc)-(\d+)(?:\.\d+)*$")
_WINDOWS_DEFAULT = "C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA"


def _read(path: Path) -> bytes | None:
    try:
        if not path.is_file():
            return None
        with path.open("rb") as fh:
            return fh.read(_MAX_READ)
    except OSError:
        return None


def _from_version_json(root: Path) -> str | None:
    data = _read(root / "version.json")
    if data is None:
        return None
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict):
        return None
    for key in ("cuda_nvcc", "cuda"):  # nvcc's own version first: it is what torch compares
        entry = parsed.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            found = major_minor_text(entry["version"])
            if found:
                return found
    return None


def _include_dirs(root: Path) -> list[Path]:
    # The runfile and deb layouts put headers in include/; conda's cuda-nvcc packages in targets/<triple>/include/.
    try:
        targets = sorted(p / "include" for p in (root / "targets").iterdir())
    except OSError:
        targets = []
    return [root / "include", *targets]


def toolkit_version(root: Path) -> tuple[str | None, str | None]:
    """(major.minor, the file it was read from) of the toolkit at `root`; (None, None) when no file tells."""
    found = _from_version_json(root)
    if found:
        return found, str(root / "version.json")
    match = _VERSION_TXT.search(_read(root / "version.txt") or b"")
    if match:
        return f"{int(match.group(1))}.{int(match.group(2))}", str(root / "version.txt")
    for include in _include_dirs(root):
        header = include / "cuda.h"
        match = _CUDA_H_VERSION.search(_read(header) or b"")
        if match:
            number = int(match.group(1))  # 12040 = 12.4
            return f"{number // 1000}.{number % 1000 // 10}", str(header)
    return None, None


def gcc_max(root: Path) -> int | None:
    """The newest GCC major the toolkit's host_config.h accepts without -allow-unsupported-compiler."""
    for include in _include_dirs(root):
        match = _GCC_LATER.search(_read(include / "crt" / "host_config.h") or b"")
        if match:
            return int(match.group(1))
    return None


_WRAPPED_NVCC = re.compile(rb"(/[^\s'\"]+)/bin/nvcc\b")
_MAX_WRAPPER = 4096


def _real_root(nvcc: Path) -> Path | None:
    """The toolkit an nvcc stands for when it is not in its own toolkit: the target of a symlink
    (/usr/bin/nvcc -> /usr/local/cuda-12.4/bin/nvcc), or of a small wrapper script (`exec /usr/local/cuda-13.0/bin/nvcc
    "$@"`). `nvcc --version`, which torch runs, reports that toolkit's release."""
    try:
        real = nvcc.resolve()
        if real != nvcc.absolute():
            return real.parent.parent
        if nvcc.stat().st_size > _MAX_WRAPPER:
            return None
        with nvcc.open("rb") as fh:
            head = fh.read(_MAX_WRAPPER)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        return None
    match = _WRAPPED_NVCC.search(head) if head.startswith(b"#!") else None
    return None if match is None else Path(match.group(1).decode("utf-8", "replace"))


def _toolkit(source: str, path: str) -> CudaToolkit:
    root = Path(path)
    exists = root.is_dir()
    binary = root / "bin" / ("nvcc.exe" if sys.platform == "win32" else "nvcc")
    nvcc = exists and binary.is_file()
    version, version_file = toolkit_version(root) if exists else (None, None)
    limit = gcc_max(root) if exists else None
    if version is None and nvcc:
        real = _real_root(binary)
        if real is not None and real != root:
            version, version_file = toolkit_version(real)
            limit = gcc_max(real) if limit is None else limit
    return CudaToolkit(source=source, path=path, exists=exists, nvcc=nvcc, version=version,
                       version_file=version_file, gcc_max=limit)


def _nvcc_root(env: Mapping[str, str]) -> str | None:
    nvcc = shutil.which("nvcc", path=env.get("PATH", ""))
    # A wrapper script on PATH (`exec /usr/local/cuda-13.0/bin/nvcc "$@"`) is judged where it lies, as torch does.
    return None if nvcc is None else str(Path(nvcc).parent.parent)


def _cuda_home(env: Mapping[str, str], nvcc_root: str | None) -> CudaToolkit | None:
    """torch.utils.cpp_extension._find_cuda_home, step for step (an empty CUDA_HOME falls through, as there)."""
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(variable):
            return _toolkit(variable, env[variable])
    if nvcc_root is not None:
        return _toolkit("PATH", nvcc_root)
    if sys.platform == "win32":
        try:  # torch takes glob's first `v*.*` folder: os.listdir order, which is sorted on NTFS
            homes = sorted(str(p) for p in Path(_WINDOWS_DEFAULT).glob("v*.*"))
        except OSError:
            homes = []
        return _toolkit("default", homes[0]) if homes else None
    default = _toolkit("default", "/usr/local/cuda")
    return default if default.exists else None


def _gcc_version(found: str) -> str | None:
    """The major version of the compiler at `found`: from the name it resolves to (`gcc -> gcc-12`), else from the
    single `lib/gcc/<triple>/<N>` folder beside its installation (Fedora, conda); None when that is ambiguous."""
    real = Path(found).resolve()
    for name in (real.name, Path(found).name):
        match = _NUMBERED.search(name)
        if match:
            return match.group(1)
    versions: set[str] = set()
    try:
        for folder in (real.parent.parent / "lib" / "gcc").glob("*/*"):
            if folder.name.split(".")[0].isdigit():
                versions.add(folder.name.split(".")[0])
    except OSError:
        return None
    return versions.pop() if len(versions) == 1 else None


def _host_compiler(env: Mapping[str, str]) -> HostCompiler | None:
    if not sys.platform.startswith("linux"):
        return None  # nvcc's GNU version check; Windows builds use MSVC, which this does not judge
    wanted = env.get("CC") or "gcc"
    found = wanted if Path(wanted).is_absolute() and Path(wanted).is_file() else shutil.which(
        wanted, path=env.get("PATH", ""))
    if found is None:
        return None
    return HostCompiler(path=found, version=_gcc_version(found))


def collect_toolchain(env: Mapping[str, str] | None = None) -> ToolchainFacts:
    """The toolchain facts of this machine under `env` (os.environ by default)."""
    env = os.environ if env is None else env
    nvcc_root = _nvcc_root(env)
    return ToolchainFacts(cuda_home=_cuda_home(env, nvcc_root),
                          nvcc_on_path=None if nvcc_root is None else _toolkit("PATH", nvcc_root),
                          gcc=_host_compiler(env))

"""Facts about the CUDA toolkits that the loader and the extension builder will use instead of torch's own: pure
functions of Facts, exported as derived facts (`DERIVATIONS`).

They read only what the snapshot holds: the collected environment variables (LD_LIBRARY_PATH, CUDA_HOME,
CUDA_PATH) and torch's build. A toolkit's version comes from its folder's name (`/usr/local/cuda-12.1/lib64`,
`.../CUDA/v11.8`, the NVIDIA HPC SDK's `.../cuda/12.4/lib64`); a folder that names none (`/usr/local/cuda`) has an
unknown version, which no file is opened to resolve: the facts stay pure and a saved snapshot evaluates the same
on any machine.
"""

from __future__ import annotations

from envcheck.derived.common import Derivation, Item, of_facts, without_cuda_torch
from envcheck.facts.snapshot import Facts
from envcheck.support.patterns import lazy
from envcheck.support.versions import major_minor

UNKNOWN = "unknown"

# A CUDA toolkit's library folder: `cuda`, `cuda-12.1`, `CUDA/v12.4` or `cuda/12.4` (NVIDIA HPC SDK), then
# `lib64`, `lib` or `targets/<triple>/lib`. Not `cuda/extras/CUPTI/lib64`: CUPTI ships no libnvJitLink.
_TOOLKIT_LIB_DIR = lazy(
    r"(?i)(?:^|/)cuda(?:[-_]?v?\d+(?:\.\d+)*)?(?:/v?\d+(?:\.\d+)+)?(?:/targets/[^/]+)?/lib(?:64)?/*$")
# The toolkit version a path names: the last `cuda-12.1`, `cuda_12.1`, `CUDA\v11.8` or `cuda/12.4` in it.
_TOOLKIT_VERSION = lazy(r"(?i)cuda[-_/\\]?v?(\d+)\.(\d+)")


def toolkit_version(path: str) -> tuple[int, int] | None:
    """The CUDA version a toolkit folder's path names (the last one), or None: "/usr/local/cuda-12.1/lib64" ->
    (12, 1); "/usr/local/cuda/lib64" -> None."""
    found = _TOOLKIT_VERSION.findall(path)
    return None if not found else (int(found[-1][0]), int(found[-1][1]))


def _file_version(facts: Facts, variable: str, path: str) -> tuple[int, int] | None:
    """The version the toolkit's own files state (version.json, version.txt, cuda.h), when the toolchain facts
    read the folder `variable` names: it beats the folder's name (a `/usr/local/cuda-12.1` symlinked to 12.4)."""
    home = None if facts.toolchain is None else facts.toolchain.cuda_home
    if home is None or home.source != variable or home.path != path:
        return None
    return major_minor(home.version)


def _torch_cuda(facts: Facts) -> tuple[int, int] | None:
    """torch's CUDA runtime; None when torch/version.py could not be read."""
    return None if facts.torch is None else major_minor(facts.torch.cuda)


def older_toolkits_on_ld_library_path(facts: Facts) -> list[Item] | None:
    """LD_LIBRARY_PATH entries that are CUDA toolkit library folders of torch's CUDA major, older than torch's
    CUDA runtime or of a version their path does not name, in LD_LIBRARY_PATH order.

    The dynamic loader searches LD_LIBRARY_PATH before the RUNPATH of the pip `nvidia-*` libraries, so such a
    folder's libnvJitLink.so.12 (same soname) replaces the wheel's. A folder of another major carries another
    soname (CUDA 11 has no nvJitLink, CUDA 13's is .so.13) and is left out. Empty without a CUDA torch.
    """
    if without_cuda_torch(facts):
        return []
    runtime = _torch_cuda(facts)
    if runtime is None:
        return None
    out: list[Item] = []
    seen: set[str] = set()
    for entry in facts.env.get("LD_LIBRARY_PATH", "").split(":"):
        path = entry.strip()
        if not path or path in seen or not _TOOLKIT_LIB_DIR.search(path):
            continue
        seen.add(path)
        version = toolkit_version(path)
        if version is not None and (version[0] != runtime[0] or version >= runtime):
            continue
        out.append({"path": path, "toolkit": UNKNOWN if version is None else f"{version[0]}.{version[1]}",
                    "torch_cuda": f"{runtime[0]}.{runtime[1]}"})
    return out


def cuda_home_other_major(facts: Facts) -> list[Item] | None:
    """The CUDA toolkit that torch.utils.cpp_extension builds with, when its folder names a CUDA major other
    than torch's: one item, or none.

    torch takes `CUDA_HOME or CUDA_PATH` first (an empty CUDA_HOME falls through to CUDA_PATH, as in torch),
    then `nvcc` on PATH and /usr/local/cuda; only the two variables are read here (the others are
    envcheck/derived/toolchain.py's). The version is the toolkit's files' where the toolchain facts read them, else
    the one its path names. Empty when neither tells a version, or without a CUDA torch.
    """
    if without_cuda_torch(facts):
        return []
    runtime = _torch_cuda(facts)
    if runtime is None:
        return None
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        path = facts.env.get(variable, "")
        if not path:
            continue
        version = _file_version(facts, variable, path) or toolkit_version(path)
        if version is None or version[0] == runtime[0]:
            return []
        return [{"variable": variable, "path": path, "toolkit": f"{version[0]}.{version[1]}",
                 "torch_cuda": f"{runtime[0]}.{runtime[1]}"}]
    return []


DERIVATIONS: list[Derivation] = [
    Derivation("cuda.older-toolkits-on-ld-library-path",
               "the entries of `LD_LIBRARY_PATH` that are a CUDA toolkit's library folder "
               "(`.../cuda-12.1/lib64`, `.../cuda/lib64`, `.../cuda/12.4/lib64`, `.../targets/<triple>/lib`) of "
               "torch's CUDA major and older than torch's CUDA, or whose path names no version, in path order: "
               "`path`, `toolkit` (`\"12.1\"`, or `\"unknown\"`), `torch_cuda`. The loader searches them before "
               "the pip `nvidia-*` wheels' folders. Empty without a CUDA torch; unknown when `torch/version.py` "
               "is unreadable", ("path", "toolkit", "torch_cuda"),
               of_facts(older_toolkits_on_ld_library_path)),
    Derivation("cuda.home-toolkit-other-major",
               "the toolkit that `torch.utils.cpp_extension` compiles with, as `CUDA_HOME`, else `CUDA_PATH` "
               "names it (an empty `CUDA_HOME` falls through, as in torch), when the version in its path has "
               "another CUDA major than torch's: one item `variable`, `path`, `toolkit`, `torch_cuda`, or none. "
               "The version is the toolkit's files' where the toolchain facts read that folder, else the one "
               "its path names; a path without a version (`/usr/local/cuda`) and `nvcc` found on `PATH` are "
               "`toolchain.toolkit-other-major`'s",
               ("variable", "path", "toolkit", "torch_cuda"), of_facts(cuda_home_other_major)),
]

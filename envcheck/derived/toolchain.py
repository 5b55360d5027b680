"""The CUDA toolkit that builds extensions, judged against torch's CUDA, the GPUs, TORCH_CUDA_ARCH_LIST and the host
compiler: pure functions of Facts, exported as derived facts (`DERIVATIONS`).

They read the `toolchain` facts (envcheck/facts/toolchain.py): the toolkit's version comes from its own files.
Which GPU architectures each toolkit's nvcc can compile for is the table below, from NVIDIA's release notes.
"""

from __future__ import annotations

from envcheck.derived.common import Derivation, Item, of_facts, without_cuda_torch
from envcheck.derived.system_libs import toolkit_version as toolkit_version_in_path
from envcheck.facts.snapshot import Facts, canonical_name
from envcheck.facts.toolchain import CudaToolkit
from envcheck.support.patterns import lazy
from envcheck.support.versions import major_minor, marker_env, marker_holds, parse_requirement

# sm_XY -> (first CUDA release whose nvcc compiles for it, first release that no longer does). CUDA 11.0 removed
# sm_30/32, 12.0 removed Kepler (sm_35/37), 13.0 removed Maxwell, Pascal and Volta (sm_50 to sm_72) and renamed
# Thor's sm_101 to sm_110 (CUDA 13.0 release notes, "Deprecated Architectures").
_NEVER = (999, 0)
ARCH_SUPPORT: dict[tuple[int, int], tuple[tuple[int, int], tuple[int, int]]] = {
    (3, 5): ((5, 0), (12, 0)), (3, 7): ((5, 0), (12, 0)),
    (5, 0): ((6, 0), (13, 0)), (5, 2): ((7, 0), (13, 0)), (5, 3): ((7, 0), (13, 0)),
    (6, 0): ((8, 0), (13, 0)), (6, 1): ((8, 0), (13, 0)), (6, 2): ((8, 0), (13, 0)),
    (7, 0): ((9, 0), (13, 0)), (7, 2): ((9, 2), (13, 0)),
    (7, 5): ((10, 0), _NEVER),
    (8, 0): ((11, 0), _NEVER), (8, 6): ((11, 1), _NEVER), (8, 7): ((11, 4), _NEVER),
    (8, 9): ((11, 8), _NEVER), (9, 0): ((11, 8), _NEVER),
    (10, 0): ((12, 8), _NEVER), (10, 1): ((12, 8), (13, 0)), (10, 3): ((12, 9), _NEVER),
    (11, 0): ((13, 0), _NEVER), (12, 0): ((12, 8), _NEVER), (12, 1): ((12, 9), _NEVER),
}
# The newest GCC major each CUDA release accepts, for toolkits whose host_config.h was not read (torch's
# CUDA_GCC_VERSIONS bounds, exclusive upper bound minus one; 11.4.0 alone accepted only 10).
GCC_MAX: dict[tuple[int, int], int] = {
    (11, 0): 9, (11, 1): 10, (11, 2): 10, (11, 3): 10, (11, 4): 11, (11, 5): 11, (11, 6): 11, (11, 7): 11,
    (11, 8): 11, (12, 0): 12, (12, 1): 12, (12, 2): 12, (12, 3): 13, (12, 4): 13, (12, 5): 13, (12, 6): 13,
    (12, 8): 14, (12, 9): 14, (13, 0): 15,
}
# torch.utils.cpp_extension's named architectures in TORCH_CUDA_ARCH_LIST.
_NAMED = {"Kepler+Tesla": "3.7", "Kepler": "3.5+PTX", "Maxwell+Tegra": "5.3", "Maxwell": "5.0;5.2+PTX",
          "Pascal": "6.0;6.1+PTX", "Volta+Tegra": "7.2", "Volta": "7.0+PTX", "Turing": "7.5+PTX",
          "Ampere+Tegra": "8.7", "Ampere": "8.0;8.6+PTX", "Ada": "8.9+PTX", "Hopper": "9.0+PTX",
          "Blackwell+Tegra": "11.0", "Blackwell": "10.0;10.3;12.0;12.1+PTX"}
_ARCH = lazy(r"^(\d+)\.(\d+)[af]?(?:\+PTX)?$")


def _version(text: str | None) -> tuple[int, int] | None:
    return None if text is None else major_minor(text)


def _label(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def why_not(toolkit: tuple[int, int], arch: tuple[int, int]) -> str | None:
    """Why CUDA `toolkit`'s nvcc cannot compile for `arch`, in words; None when it can or the arch is unknown."""
    support = ARCH_SUPPORT.get(arch)
    if support is None:
        return None
    first, gone = support
    if toolkit < first:
        return f"sm_{arch[0]}{arch[1]} needs CUDA {_label(first)} or later"
    if toolkit >= gone:
        return f"CUDA {_label(gone)} removed sm_{arch[0]}{arch[1]}"
    return None


def _known_home(facts: Facts) -> tuple[CudaToolkit, tuple[int, int]] | None:
    """The toolkit torch would build with and its version, when both are known."""
    if facts.toolchain is None or facts.toolchain.cuda_home is None:
        return None
    home = facts.toolchain.cuda_home
    version = _version(home.version)
    return None if version is None else (home, version)


def build_toolkits(facts: Facts) -> list[CudaToolkit]:
    """The toolkits a build would use: torch's (CUDA_HOME, CUDA_PATH, nvcc on PATH, the default folder), and the
    `nvcc` on PATH when it is another one (CMake-based builds call it unless CUDACXX says otherwise); a folder
    without bin/nvcc compiles nothing and is left out."""
    if facts.toolchain is None:
        return []
    out = [t for t in (facts.toolchain.cuda_home,) if t is not None and t.exists and t.nvcc]
    other = facts.toolchain.nvcc_on_path
    if other is not None and other.exists and other.nvcc and all(other.path != t.path for t in out):
        out.append(other)
    return out


def _base(home: CudaToolkit, version: tuple[int, int]) -> Item:
    return {"source": home.source, "path": home.path, "toolkit": _label(version),
            "version_file": home.version_file or "unknown"}


def toolkit_other_major(facts: Facts) -> list[Item] | None:
    """Build toolkits whose CUDA major differs from torch's: `torch_cuda` and the toolkit's fields. A CUDA_HOME or
    CUDA_PATH whose folder name states a version is left to `cuda.home-toolkit-other-major` (EC0805), which uses
    these same files' version. Unknown when a toolkit's files tell no version."""
    if without_cuda_torch(facts):
        return []
    if facts.toolchain is None:
        return None
    runtime = None if facts.torch is None else _version(facts.torch.cuda)
    if runtime is None:
        return None
    out: list[Item] = []
    for toolkit in build_toolkits(facts):
        if toolkit.source in ("CUDA_HOME", "CUDA_PATH") and toolkit_version_in_path(toolkit.path) is not None:
            continue
        version = _version(toolkit.version)
        if version is None:
            return None  # a toolkit whose files tell no version: unknown, not clean
        if version[0] != runtime[0]:
            out.append({**_base(toolkit, version), "torch_cuda": _label(runtime)})
    return out


def nvcc_differs_from_home(facts: Facts) -> list[Item] | None:
    """The `nvcc` on PATH when it belongs to another toolkit release than the one torch builds with (CUDA_HOME or
    CUDA_PATH): one item `home_path`, `home_version`, `nvcc_path`, `nvcc_version`; or none. Unknown when either
    version is."""
    if without_cuda_torch(facts):
        return []
    if facts.toolchain is None:
        return None
    home, other = facts.toolchain.cuda_home, facts.toolchain.nvcc_on_path
    if home is None or other is None or not (home.nvcc and other.nvcc) or home.path == other.path:
        return []
    home_version, other_version = _version(home.version), _version(other.version)
    if home_version is None or other_version is None:
        return None
    if home_version == other_version:
        return []
    return [{"home_path": home.path, "home_version": _label(home_version), "nvcc_path": other.path,
             "nvcc_version": _label(other_version)}]


def arch_list_beyond_toolkit(facts: Facts) -> list[Item] | None:
    """The TORCH_CUDA_ARCH_LIST entries the toolkit's nvcc cannot compile for: `arch`, `reason` and the toolkit's
    `source`, `path`, `toolkit`, `version_file`. Empty without the variable; unknown without the toolkit's version."""
    value = facts.env.get("TORCH_CUDA_ARCH_LIST", "").strip()
    if not value or value == "native" or without_cuda_torch(facts):
        return []
    known = _known_home(facts)
    if known is None:
        return None if facts.toolchain is None or facts.toolchain.cuda_home is not None else []
    home, version = known
    for name, archs in _NAMED.items():
        value = value.replace(name, archs)
    out: list[Item] = []
    for entry in value.replace(" ", ";").split(";"):
        match = _ARCH.match(entry.strip())
        if not match:
            continue
        reason = why_not(version, (int(match.group(1)), int(match.group(2))))
        if reason is not None:
            out.append({**_base(home, version), "arch": entry.strip(), "reason": reason})
    return out


def gpus_toolkit_cannot_target(facts: Facts, newer: bool) -> list[Item] | None:
    """GPUs whose architecture a build toolkit's nvcc cannot compile for: too new for it (`newer`) or removed from
    it. Items: `index`, `name`, `compute_capability`, `reason`, and the toolkit's `source`, `path`, `toolkit`,
    `version_file`. Unknown without NVML's GPUs or a toolkit's version."""
    if without_cuda_torch(facts):
        return []
    if facts.toolchain is None:
        return None
    toolkits = build_toolkits(facts)
    if not toolkits:
        return []
    if facts.nvml is None or facts.nvml.status != "ok":
        return None
    out: list[Item] = []
    for toolkit in toolkits:
        version = _version(toolkit.version)
        if version is None:
            return None
        for device in facts.nvml.devices:
            capability = _version(device.compute_capability)
            if capability is None:
                return None
            reason = why_not(version, capability)
            if reason is None or (version < ARCH_SUPPORT[capability][0]) != newer:
                continue
            out.append({**_base(toolkit, version), "index": str(device.index), "name": device.name or "?",
                        "compute_capability": _label(capability), "sm": f"{capability[0]}{capability[1]}",
                        "reason": reason})
    return out


def gcc_newer_than_toolkit(facts: Facts) -> list[Item] | None:
    """The host GCC when its major is newer than the toolkit accepts: one item `gcc`, `gcc_path`, `gcc_max` and the
    toolkit's `source`, `path`, `toolkit`, `version_file`; or none. Unknown when either version is."""
    if without_cuda_torch(facts):
        return []
    if facts.toolchain is None:
        return None
    gcc, home = facts.toolchain.gcc, facts.toolchain.cuda_home
    if gcc is None or home is None or not home.exists:
        return []
    version = _version(home.version)
    limit = home.gcc_max if home.gcc_max is not None else (None if version is None else GCC_MAX.get(version))
    if gcc.version is None or not gcc.version.isdigit() or limit is None or version is None:
        return None
    if int(gcc.version) <= limit:
        return []
    return [{**_base(home, version), "gcc": gcc.version, "gcc_path": gcc.path, "gcc_max": str(limit)}]


def cuda_toolkit_state(facts: Facts) -> str | None:
    """"found" (a toolkit with nvcc), "none" (torch finds no toolkit), "no-nvcc" (CUDA_HOME or CUDA_PATH names a
    folder without bin/nvcc), "runtime-only" (the default folder, /usr/local/cuda, has no bin/nvcc: a runtime
    container image), or "n/a" (no CUDA torch); None when not collected."""
    if without_cuda_torch(facts):
        return "n/a"
    if facts.toolchain is None:
        return None
    home = facts.toolchain.cuda_home
    if home is None:
        return "none"
    if home.nvcc:
        return "found"
    return "no-nvcc" if home.source in ("CUDA_HOME", "CUDA_PATH") else "runtime-only"


# Distributions whose pip install compiles CUDA code with torch.utils.cpp_extension and fails without a toolkit
# (`OSError: CUDA_HOME environment variable is not set`), even where a prebuilt wheel would then be downloaded.
SOURCE_BUILT = frozenset({"flash-attn", "causal-conv1d", "mamba-ssm", "flash-attn-3", "natten", "grouped-gemm"})


def _build_problem(facts: Facts) -> str | None:
    """Why torch.utils.cpp_extension cannot build CUDA code here, in words; "" when it can; None when unknown."""
    state = cuda_toolkit_state(facts)
    if state is None:
        return None
    if state == "none":
        return "torch finds no CUDA toolkit (CUDA_HOME and CUDA_PATH unset, no nvcc on PATH, no /usr/local/cuda)"
    home = None if facts.toolchain is None else facts.toolchain.cuda_home
    if state in ("no-nvcc", "runtime-only") and home is not None:
        return f"the toolkit folder torch takes ({home.path}) has no bin/nvcc"
    runtime = None if facts.torch is None else _version(facts.torch.cuda)
    version = None if home is None else _version(home.version)
    if home is not None and runtime is not None and version is not None and version[0] != runtime[0]:
        return f"the toolkit torch takes ({home.path}) is CUDA {_label(version)}, torch's CUDA is {_label(runtime)}"
    return ""


def source_builds_without_toolkit(facts: Facts) -> list[Item] | None:
    """Requirements of the checked project that are not installed yet and compile CUDA code at install time, when
    torch's extension builder cannot: `name`, `requirement`, `source`, `problem`. Empty without a project."""
    problem = _build_problem(facts)
    if problem is None:
        return None
    if not problem or facts.project is None:
        return []
    out: list[Item] = []
    for declared in facts.project.requirements:
        req = parse_requirement(declared.requirement)
        if req is None or declared.kind == "constraint":
            continue
        if req.marker is not None and marker_holds(req.marker, marker_env(facts)) is not True:
            continue
        name = canonical_name(req.name)
        if name in SOURCE_BUILT and facts.active(name) is None and facts.absence_known(name):
            out.append({"name": name, "requirement": declared.requirement, "source": declared.source,
                        "problem": problem})
    return sorted(out, key=lambda i: i["name"])


_TOOLKIT_FIELDS = ("source", "path", "toolkit", "version_file")
_TOOLKIT_DOC = ("`source` (`CUDA_HOME`, `CUDA_PATH`, `PATH`: the folder above the `nvcc` PATH finds, or `default`: "
                "/usr/local/cuda), `path`, `toolkit` (its nvcc release, read from the toolkit's version.json, "
                "version.txt or cuda.h), `version_file`")

DERIVATIONS: list[Derivation] = [
    Derivation("toolchain.cuda-toolkit",
               "`\"found\"` (torch.utils.cpp_extension finds a CUDA toolkit with nvcc), `\"none\"` (it finds "
               "none: CUDA_HOME and CUDA_PATH unset, no nvcc on PATH, no /usr/local/cuda), `\"no-nvcc\"` "
               "(CUDA_HOME or CUDA_PATH names a folder without bin/nvcc), `\"runtime-only\"` (the default "
               "folder has no bin/nvcc: a runtime container image), `\"n/a\"` (no CUDA torch). Unknown when "
               "the toolchain facts were not collected", (), of_facts(cuda_toolkit_state)),
    Derivation("toolchain.toolkit-other-major",
               "the build toolkits (the one torch.utils.cpp_extension takes, and the `nvcc` on PATH when it is "
               f"another) whose CUDA major differs from torch's: {_TOOLKIT_DOC}, `torch_cuda`. A CUDA_HOME or "
               "CUDA_PATH whose folder name states a version is `cuda.home-toolkit-other-major`'s. Unknown when "
               "a toolkit's files tell no version",
               (*_TOOLKIT_FIELDS, "torch_cuda"), of_facts(toolkit_other_major)),
    Derivation("toolchain.nvcc-differs-from-cuda-home",
               "the toolkit of the `nvcc` on PATH when it is another release than the one CUDA_HOME or CUDA_PATH "
               "names (which torch builds with): one item `home_path`, `home_version`, `nvcc_path`, "
               "`nvcc_version`. Unknown when either version is",
               ("home_path", "home_version", "nvcc_path", "nvcc_version"),
               of_facts(nvcc_differs_from_home)),
    Derivation("toolchain.arch-list-beyond-toolkit",
               "entries of `TORCH_CUDA_ARCH_LIST` (named ones expanded as torch does) that the toolkit's nvcc "
               f"cannot compile for: `arch`, `reason`, {_TOOLKIT_DOC}. Unknown when the toolkit's version is",
               (*_TOOLKIT_FIELDS, "arch", "reason"), of_facts(arch_list_beyond_toolkit)),
    Derivation("toolchain.gpus-newer-than-toolkit",
               "GPUs whose architecture is newer than the toolkit's nvcc can compile for (sm_89 and sm_90 need "
               "CUDA 11.8, sm_100 and sm_120 12.8, sm_103 and sm_121 12.9), for each build toolkit: `index`, "
               f"`name`, `compute_capability`, `sm` (\"120\"), `reason`, {_TOOLKIT_DOC}. Unknown without "
               "NVML's GPUs", (*_TOOLKIT_FIELDS, "index", "name", "compute_capability", "sm", "reason"),
               of_facts(lambda f: gpus_toolkit_cannot_target(f, True))),
    Derivation("toolchain.gpus-dropped-by-toolkit",
               "GPUs whose architecture the toolkit's nvcc no longer compiles for (CUDA 12 dropped sm_35/37, "
               f"CUDA 13 sm_50 to sm_72): `index`, `name`, `compute_capability`, `sm`, `reason`, {_TOOLKIT_DOC}",
               (*_TOOLKIT_FIELDS, "index", "name", "compute_capability", "sm", "reason"),
               of_facts(lambda f: gpus_toolkit_cannot_target(f, False))),
    Derivation("toolchain.gcc-newer-than-toolkit",
               "the host GCC nvcc would call (`$CC`, else `gcc`) when its major is newer than the toolkit "
               "accepts (its include/crt/host_config.h, else torch's table): one item `gcc`, `gcc_path`, "
               f"`gcc_max`, {_TOOLKIT_DOC}. Unknown when either version is",
               (*_TOOLKIT_FIELDS, "gcc", "gcc_path", "gcc_max"),
               of_facts(gcc_newer_than_toolkit)),
    Derivation("toolchain.source-builds-without-toolkit",
               "requirements of the checked project, not installed yet, whose install compiles CUDA code "
               "(flash-attn, causal-conv1d, mamba-ssm, ...) while torch's extension builder cannot: no "
               "toolkit found, no nvcc in it, or a toolkit of another CUDA major: `name`, `requirement`, "
               "`source`, `problem` (which, in words)", ("name", "requirement", "source", "problem"),
               of_facts(source_builds_without_toolkit)),
]

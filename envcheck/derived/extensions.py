"""Compiled extensions of torch and NumPy: built for the installed torch, CUDA, C++ ABI and NumPy?

Three sources, all pure functions of Facts exported as derived facts (`DERIVATIONS`):
- the `extension-imports` probe, which imported every installed distribution that ships native code and builds on
  torch or NumPy (docs/probes.md): its failures, sorted into the kinds that have one cause and one fix each
  (`undefined symbol` = built against another torch; `operator ... does not exist` = its operators did not
  register; `compiled using NumPy 1.x`; a shared library that cannot be found);
- local version tags that name the torch, CUDA and C++ ABI a wheel was built for, read statically: PyG's
  `torch_scatter 2.1.2+pt23cu121` and the flash-attn wheels' `2.5.8+cu122torch2.3cxx11abiFALSE`;
- the release table rules/data/extension-releases.toml (envcheck/derived/extension_releases.py): which torch (and
  CUDA) each release of torchao, vllm, flash-attn, DeepSpeed, detectron2's wheels and bitsandbytes was built for,
  and the mmcv / mmengine ranges OpenMMLab packages assert at import, so that a finding names the release made for
  what is installed (`unmet_release_needs`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from packaging.version import Version

from envcheck.derived import layers
from envcheck.derived.common import Derivation, Item, Values, of_facts
from envcheck.derived.companions import installed_torch
from envcheck.derived.extension_releases import EXTENSION_RELEASES, ExtensionTable, Library
from envcheck.facts.snapshot import Facts, canonical_name
from envcheck.support.patterns import LazyPattern, lazy
from envcheck.support.versions import parse_version

PROBE = "extension-imports"

# Each kind: the patterns of the error text (message and captured stderr) that identify it, first match wins.
# `numpy` first: NumPy 2 prints its "compiled using NumPy 1.x" explanation and then raises an ImportError whose
# own text is `numpy.core.multiarray failed to import`, which can also surface as an undefined-symbol-free
# AttributeError `_ARRAY_API not found`.
_KINDS: tuple[tuple[str, LazyPattern], ...] = (
    ("numpy-abi", lazy(r"compiled using NumPy 1\.x|_ARRAY_API not found|numpy\.core\.multiarray failed to "
                        r"import|numpy\.dtype size changed, may indicate binary incompatibility", re.I)),
    ("undefined-symbol", lazy(r"undefined symbol: |Symbol not found: |The specified procedure could not "
                               r"be found", re.I)),
    ("missing-operator", lazy(r"operator \S+ does not exist|No such operator \S+|Could not find any "
                               r"(?:implementation|op)", re.I)),
    ("missing-library", lazy(r"DLL load failed|cannot open shared object file|Library not loaded|"
                              r"image not found", re.I)),
)
_SYMBOL = lazy(r"(?:undefined symbol|Symbol not found):\s*(\S+)")
_FAILED = ("error", "crashed", "timeout")
# Failures that are about the module the probe chose, not about the distribution (earlier probes recorded them,
# and saved snapshots keep them; envcheck/sources/probes/_child.py `_ext_modules` no longer chooses such modules):
# - a compiled file with a module suffix that is a library, not a module (torchaudio's lib/_torchaudio.abi3.so,
#   which torch.ops.load_library loads): CPython refuses it whatever the environment;
# - a per-CUDA-major variant folder of the package (cuda-core's cuda/core/cu12 on a CUDA 13 stack): the package
#   imports the variant for the CUDA it finds and takes over its namespace, so another major's folder is no module.
_NOT_A_MODULE = "dynamic module does not define module export function"
_NO_MODULE_NAMED = lazy(r"No module named '([\w.]+)'")
_CUDA_VARIANT = lazy(r"(?:.+_)?cu(\d+)")

# PyG's wheels: `+pt23cu121`, `+pt113cpu`, `+pt20cu118` (torch major, then minor; cpu or cuXY[Z]).
_PYG_TAG = lazy(r"pt(\d)(\d+)(cpu|cu\d+)")
# flash-attn's GitHub wheels: `+cu122torch2.3cxx11abiFALSE`, `+cu12torch2.6cxx11abiTRUE`.
_FA_TAG = lazy(r"cu(\d+)torch(\d+\.\d+)cxx11abi(TRUE|FALSE)", re.I)
# The variant tags of wheels built per CUDA (or CPU / ROCm) only: `+cu113`, `+cpu`, `+rocm6.2`.
_VARIANT_TAG = lazy(r"cpu|cu\d+|rocm\d+(?:\.\d+)*")


def _probe_cases(facts: Facts) -> dict[str, dict[str, Any]] | None:
    probe = facts.probes.get(PROBE)
    if probe is None or probe.status != "ok":
        return None
    return probe.cases


def _kind(case: dict[str, Any]) -> str:
    if case.get("status") in ("crashed", "timeout"):
        return "crash"
    text = f"{case.get('message') or ''}\n{case.get('stderr') or ''}"
    return next((kind for kind, pattern in _KINDS if pattern.search(text)), "other")


def _installed(facts: Facts, name: str) -> str:
    dist = facts.active(name)
    return dist.version if dist is not None else "not installed"


def _cuda_major(facts: Facts) -> str | None:
    """The CUDA major of the installed torch build ("13"), None for a CPU or ROCm build or without torch."""
    cuda = facts.torch.cuda if facts.torch is not None else None
    return cuda.split(".")[0] if cuda else None


def _about_the_module_chosen(facts: Facts, case: dict[str, Any]) -> bool:
    """Whether a recorded failure says only that the probe's module is no module (see _NOT_A_MODULE): a file that
    exports no init function, or `No module named 'PKG.cuXY'` for a package's variant folder of a CUDA major other
    than the stack's (the module the probe tried lies inside it)."""
    if case.get("status") != "error":
        return False
    message = str(case.get("message") or "").strip()
    if message.startswith(_NOT_A_MODULE):
        return True
    missing = _NO_MODULE_NAMED.fullmatch(message)
    if case.get("error_class") != "ModuleNotFoundError" or missing is None or "." not in missing.group(1):
        return False
    if not str(case.get("module") or "").startswith(missing.group(1) + "."):
        return False  # a dependency that is missing, not a folder of the module's own path
    variant = _CUDA_VARIANT.fullmatch(missing.group(1).rsplit(".", 1)[1])
    return variant is not None and _cuda_of_tag(variant.group(1)).split(".")[0] != _cuda_major(facts)


def _failed(facts: Facts, case: dict[str, Any]) -> bool:
    return case.get("status") in _FAILED and not _about_the_module_chosen(facts, case)


def import_failures(facts: Facts, kind: str) -> list[Item] | None:
    """The distributions whose import failed with an error of `kind` (see _KINDS; "crash"; "other"); None when
    the probe did not run to completion."""
    cases = _probe_cases(facts)
    if cases is None:
        return None
    out = []
    for name, case in sorted(cases.items()):
        if not _failed(facts, case) or _kind(case) != kind:
            continue
        message = str(case.get("message") or "").strip().splitlines()
        error = f"{case.get('error_class') or 'error'}: {message[0] if message else ''}".strip()
        symbol = _SYMBOL.search(f"{case.get('message') or ''}")
        version = str(case.get("version") or _installed(facts, name))
        out.append({
            "name": name, "version": version, "release": version.split("+", 1)[0],
            "module": str(case.get("module") or name), "error": error[:400],
            "symbol": symbol.group(1) if symbol else "", "torch": _installed(facts, "torch"),
            "numpy": _installed(facts, "numpy"),
        })
    return out


def _cuda_of_tag(digits: str) -> str:
    """"121" -> "12.1", "118" -> "11.8", "12" -> "12" (flash-attn's later wheels name the major only)."""
    return digits if len(digits) <= 2 else f"{digits[:-1]}.{digits[-1]}"


def _torch_series(facts: Facts) -> tuple[str, str | None] | None:
    """(installed torch "X.Y", its CUDA "12.4" or None for a CPU/ROCm build), or None without a readable torch."""
    torch = facts.torch
    if torch is None or torch.version is None:
        return None
    version = parse_version(torch.version)
    if version is None:
        return None
    return f"{version.major}.{version.minor}", torch.cuda


def torch_cxx11_abi(facts: Facts) -> bool | None:
    """torch's `_GLIBCXX_USE_CXX11_ABI`: the torch-build probe's answer, else what the official Linux wheels are
    known to use (pre-C++11 ABI up to 2.5, and in 2.6 except its CUDA 12.6 builds; the C++11 ABI from 2.7:
    pytorch/pytorch#143962, #149550); None where it cannot be known (conda and source builds, pre-releases, no
    torch, not Linux)."""
    build = facts.probes.get("torch-build")
    if build is not None and isinstance(build.details.get("cxx11_abi"), bool):
        return bool(build.details["cxx11_abi"])
    torch = facts.torch
    if torch is None or torch.version is None or facts.python.marker_environment.get("sys_platform") != "linux":
        return None
    dist = facts.active("torch")
    if dist is None or dist.installer not in ("pip", "uv"):
        return None
    version = parse_version(torch.version)
    if version is None or version.is_devrelease or version.is_prerelease:
        return None
    if version.release[:2] == (2, 6):
        # NOTE: 2.6 switched only its CUDA 12.6 wheels (pytorch/pytorch#143962; Dao-AILab/flash-attention#1644:
        # `2.6.0+cu126` lacks the pre-C++11 symbols that `2.6.0+cu124` has); PyPI's 2.6.0 is the CUDA 12.4 build.
        return torch.cuda == "12.6"
    return version.release[:2] >= (2, 7)


def tag_mismatches(facts: Facts, aspect: str) -> list[Item] | None:
    """Installed distributions whose local version tag names another torch minor (`aspect` "torch"), another CUDA
    major or a CUDA build next to a CPU torch ("cuda"), or another C++ ABI ("abi") than the installed torch's;
    None when torch's side is unknown."""
    torch = facts.torch
    if torch is None:
        return []
    series = _torch_series(facts)
    if series is None:
        return None
    torch_minor, torch_cuda = series
    abi = torch_cxx11_abi(facts) if aspect == "abi" else None
    if aspect == "abi" and abi is None:
        return None
    out = []
    seen: set[str] = set()
    for dist in facts.distributions:
        if dist.canonical_name in seen or "+" not in dist.version:
            continue
        seen.add(dist.canonical_name)
        local = dist.version.split("+", 1)[1]
        pyg, fa = _PYG_TAG.fullmatch(local), _FA_TAG.fullmatch(local)
        if pyg is not None:
            built_torch, tag_cuda, built_abi = f"{pyg.group(1)}.{pyg.group(2)}", pyg.group(3), None
        elif fa is not None:
            built_torch, tag_cuda, built_abi = fa.group(2), f"cu{fa.group(1)}", fa.group(3).upper() == "TRUE"
        else:
            continue
        built_cuda = None if tag_cuda == "cpu" else _cuda_of_tag(tag_cuda[2:])
        item = {"name": dist.name, "version": dist.version, "release": dist.version.split("+", 1)[0], "tag": local,
                "built_torch": built_torch, "built_cuda": built_cuda or "none (CPU)", "torch": torch.version or "",
                "torch_cuda": torch_cuda or "none (CPU or ROCm)", "built_abi": "", "torch_abi": ""}
        other_cuda = built_cuda is not None and (torch_cuda is None or
                                                 built_cuda.split(".")[0] != torch_cuda.split(".")[0])
        if (aspect == "torch" and built_torch != torch_minor) or (aspect == "cuda" and other_cuda):
            out.append(item)
        elif aspect == "abi" and built_abi is not None and built_abi != abi and built_torch == torch_minor:
            item.update(built_abi=str(built_abi).upper(), torch_abi=str(abi).upper())
            out.append(item)
    return sorted(out, key=lambda i: i["name"])


def of_kind(kind: str) -> Callable[[Facts], list[Item] | None]:
    return lambda facts: import_failures(facts, kind)


def of_aspect(aspect: str) -> Callable[[Facts], list[Item] | None]:
    return lambda facts: tag_mismatches(facts, aspect)


# --- the release table (rules/data/extension-releases.toml) -----------------------------------------------------

RELEASE_FIELDS = ("name", "version", "release", "dependency", "installed", "needs", "torch_cuda", "requirement",
                  "expected", "install", "symptom")
# `import mmcv` finds the module of mmcv 2.x or of mmcv-full 1.x: OpenMMLab's version asserts read either.
_DEPENDENCY_DISTRIBUTIONS = {"mmcv": ("mmcv", "mmcv-full")}


def _dependency(facts: Facts, name: str) -> tuple[str, Version] | None:
    """The installed distribution that provides `name` and its version, if it is installed with a valid one."""
    for candidate in _DEPENDENCY_DISTRIBUTIONS.get(name, (name,)):
        dist = facts.active(candidate)
        version = parse_version(dist.version) if dist is not None else None
        if dist is not None and version is not None:
            return dist.name, version
    return None


def _table_release(facts: Facts, library: Library) -> tuple[str, Version] | None:
    """The installed release of `library`, when the table's rows describe that kind of install: a variant tag
    (`+cu113`, `+cpu`) for "tagged" rows, no tag for "untagged"; any other local tag (`+git1234`, PyG's and
    flash-attn's torch tags) is a build the table does not describe."""
    dist = facts.active(library.name)
    version = parse_version(dist.version) if dist is not None else None
    if dist is None or version is None or dist.installer == "conda":
        return None  # conda's builds follow conda's own pins
    local = version.local
    if local is not None and not _VARIANT_TAG.fullmatch(local):
        return None
    if (library.applies_to == "tagged" and local is None) or (library.applies_to == "untagged" and local is not None):
        return None
    return dist.version, version


def _imports_fine(facts: Facts, name: str) -> bool:
    """The `extension-imports` probe imported `name` without error in this environment."""
    cases = _probe_cases(facts)
    case = cases.get(canonical_name(name)) if cases is not None else None
    return case is not None and (case.get("status") == "ok" or _about_the_module_chosen(facts, case))


def unmet_release_needs(facts: Facts, table: ExtensionTable, dependency: str, libraries: tuple[str, ...] | None = None,
                        *, with_release_only: bool = False) -> list[Item] | None:
    """Installed extensions (of `libraries`, else every library of the table) whose release, by the table, does not
    work with the installed `dependency`: each with the release made for what is installed (`expected`, `install`;
    empty when the table knows none, and then left out with `with_release_only`: where no release has a wheel for
    this torch, a build from source is the only way to have it, and the import probe judges that). None when torch
    is the dependency and its release cannot be read (a nightly, a custom build)."""
    torch = installed_torch(facts) if dependency == "torch" else None
    if dependency == "torch" and torch is None:
        return None if facts.active("torch") is not None else []
    cuda = torch.build.version if torch and torch.build and torch.build.kind == "cuda" and torch.build.version \
        else None
    out = []
    for name, library in sorted(table.libraries.items()):
        if libraries is not None and name not in libraries:
            continue
        installed = _table_release(facts, library)
        if installed is None:
            continue
        text, version = installed
        row = library.row_of(version)
        if row is None:
            continue
        if torch is not None:
            dep: tuple[str, Version] | None = ("torch", torch.version)
        else:
            dep = _dependency(facts, dependency)
        if dep is None or row.admits(dependency, dep[1], cuda) is not False:
            continue
        if library.import_decides and _imports_fine(facts, name):
            continue  # built from source against this torch: it loads, whatever the release's wheels were for
        wanted = library.release_for(dependency, dep[1], cuda)
        if wanted is None and with_release_only:
            continue
        out.append({
            "name": name, "version": text, "release": text.split("+", 1)[0], "dependency": dep[0],
            "installed": torch.text if torch is not None else str(dep[1]), "needs": row.describe(dependency),
            "torch_cuda": cuda or "", "requirement": f"{dependency}{row.written.get(dependency, '')}",
            "expected": wanted.key if wanted is not None else "",
            "install": wanted.install(name) if wanted is not None else "", "symptom": library.symptom,
        })
    return out


_IMPORT_FIELDS = ("name", "version", "release", "module", "error", "symbol", "torch", "numpy")
_IMPORT_DOC = ("`name`, `version`, `release` (the version without its local tag), `module` (the module whose "
               "import failed), `error` (class and first line), `symbol` (the undefined symbol, else empty), "
               "`torch`, `numpy` (installed versions, or \"not installed\"). Unknown when the `extension-imports` "
               "probe did not run to completion")
_TAG_FIELDS = ("name", "version", "release", "tag", "built_torch", "built_cuda", "torch", "torch_cuda", "built_abi",
               "torch_abi")
_TAG_DOC = ("`name`, `version`, `release`, `tag` (the local version tag), `built_torch` (\"2.3\"), `built_cuda` "
            "(\"12.1\", \"12\", or \"none (CPU)\"), `torch`, `torch_cuda`, `built_abi` / `torch_abi` "
            "(\"TRUE\" / \"FALSE\", for the ABI fact only). Tags read: PyG's `+pt23cu121`, "
            "flash-attn's `+cu122torch2.3cxx11abiFALSE`")


# The companion facts whose rules already explain a companion's failed import, with the exact release to install.
_COMPANION_FAULTS = ("companions.torch-mismatch", "companions.pinned-to-other-torch",
                     "companions.torchvision-build-mismatch", "companions.torchaudio-build-mismatch")


def _import_failures(kind: str) -> Callable[[Values], Any]:
    """The `extension-imports` probe's failures of one kind, less the torch companions that a companion rule
    reports: a CUDA torchvision next to a CPU torch fails to import (`operator torchvision::nms does not exist`),
    and EC0703 already names the build to install, so a second, generic finding would only say it again."""
    failures = of_kind(kind)

    def compute(derived: Values) -> Any:
        items = failures(derived.facts)
        if not items:
            return items
        reported = {canonical_name(str(c["name"])) for fact in _COMPANION_FAULTS for c in derived.get(fact) or ()}
        return [item for item in items if canonical_name(str(item["name"])) not in reported]

    return compute


def _numpy_abi(newer: bool) -> Callable[[Values], Any]:
    """The NumPy ABI failures under a NumPy 2 (`newer` False: built for NumPy 1.x, EC1103's) or under a NumPy 1.x
    (`newer` True: built for a newer NumPy, envcheck/derived/layers.py says what that needs)."""
    failures = _import_failures("numpy-abi")

    def compute(derived: Values) -> Any:
        items = failures(derived)
        if not items:
            return items
        old = (layers.numpy_major(derived.facts) or 2) < 2
        if not newer:
            return [] if old else items
        return layers.numpy_too_old(derived.facts, items) if old else []

    return compute


def _extension_derivations() -> list[Derivation]:
    """Compiled extensions against torch and NumPy (envcheck/derived/extensions.py)."""
    kinds = {
        "undefined-symbol": "raised `undefined symbol: ...` (Linux), `Symbol not found` (macOS) or `The specified "
                            "procedure could not be found` (Windows): built against another torch (or library)",
        "missing-operator": "raised `operator NS::op does not exist` / `No such operator`: its compiled operators "
                            "did not register with this torch",
        "numpy-abi": "failed, with a NumPy 2 (or no readable NumPy) installed, with NumPy 2's `compiled using "
                     "NumPy 1.x` (or `_ARRAY_API not found`, "
                     "`numpy.core.multiarray failed to import`, `numpy.dtype size changed`)",
        "missing-library": "could not load a shared library it links (`DLL load failed`, `cannot open shared object "
                           "file`, `Library not loaded`)",
        "crash": "killed the importing process (a signal) or hung",
        "other": "raised an error of no kind above",
    }
    out = [Derivation(f"extensions.import-{kind}",
                      f"installed distributions with native extensions on torch or NumPy whose import {doc}: "
                      f"{_IMPORT_DOC}. A torch companion that a `companions.*` fact already reports (built for "
                      "another torch, or of another build) is left to it", _IMPORT_FIELDS,
                      _numpy_abi(newer=False) if kind == "numpy-abi" else _import_failures(kind))
           for kind, doc in kinds.items()]
    out.append(Derivation(
        "extensions.import-numpy-too-old",
        "the same NumPy ABI failures under a NumPy 1.x: the extension was compiled against a newer NumPy (a module "
        f"built for NumPy 1.x runs with every later 1.x): {_IMPORT_DOC}; and `built_for` (\"NumPy 2\", or \"a "
        "newer NumPy than 1.26.4\"), `needs` (the NumPy requirement to meet: the extension's own where this NumPy "
        "fails it, else `numpy>=2` where a NumPy 2 lies underneath in a base layer, else any newer one), `remove` "
        "(`numpy` when this environment's own layer holds the old NumPy over a copy that meets `needs`: removing it "
        "is the fix, the base is left as it is; else empty), `install` (`needs` when nothing is removed, else "
        "empty), `evidence` (what decided `needs`)", (*_IMPORT_FIELDS, *layers.NUMPY_FIELDS), _numpy_abi(newer=True)))
    out += [
        Derivation("extensions.tag-other-torch",
                   f"installed distributions whose local version tag names another torch minor: {_TAG_DOC}. "
                   "Unknown when torch/version.py is unreadable", _TAG_FIELDS,
                   of_facts(of_aspect("torch"))),
        Derivation("extensions.tag-other-cuda",
                   "installed distributions whose local version tag names a CUDA build of another CUDA major than "
                   f"torch's, or a CUDA build next to a CPU or ROCm torch: {_TAG_DOC}", _TAG_FIELDS,
                   of_facts(of_aspect("cuda"))),
        Derivation("extensions.tag-other-abi",
                   "installed distributions whose local version tag names the installed torch minor but the other "
                   f"C++ ABI (`cxx11abiTRUE` / `FALSE`) than torch's: {_TAG_DOC}. Unknown when torch's ABI is: "
                   "see `torch.cxx11-abi`", _TAG_FIELDS, of_facts(of_aspect("abi"))),
        Derivation("torch.cxx11-abi",
                   "true or false: torch was built with `_GLIBCXX_USE_CXX11_ABI=1`. The `torch-build` probe's "
                   "answer, else, for a pip or uv install on Linux, what the official wheels use (false up to 2.5 and "
                   "for 2.6 except its CUDA 12.6 builds, true from 2.7); unknown otherwise (conda, source builds, "
                   "pre-releases)", (),
                   of_facts(torch_cxx11_abi)),
    ]
    return out


def _release_needs(dependency: str, libraries: tuple[str, ...] | None,
                   with_release_only: bool = False) -> Callable[[Values], Any]:
    def compute(derived: Values) -> Any:
        return unmet_release_needs(derived.facts, derived.tables[EXTENSION_RELEASES], dependency,
                                              libraries, with_release_only=with_release_only)

    return compute


_RELEASE_DOC = ("`name`, `version`, `release`, `dependency` (the distribution it needs in other versions), "
                "`installed` (its installed version), `needs` (the versions the release works with: \"2.8.0\", "
                "\">=2.4,<2.9 (CUDA 12)\", \"CUDA 11.8, 12.1\"), `torch_cuda` (the installed torch's CUDA, or "
                "empty), `requirement` (`torch==2.9.0`), `expected` (the newest release made for the installed "
                "dependency, empty when the table knows none), `install` (`torchao==0.14.1`, or empty), "
                "`symptom`. The releases are data: `rules/data/extension-releases.toml`")


def _extension_release_derivations() -> list[Derivation]:
    """Extension releases against the torch (or mmcv / mmengine) they were built for or accept
    (envcheck/derived/extensions.py, rules/data/extension-releases.toml)."""
    torch_built = {
        "torchao": "whose compiled kernels were built for another torch release than the installed one "
                   "(torchao 0.13 to 0.16 load them only with exactly that torch)",
        "vllm": "whose exact torch pin is not the installed torch (installed with `--no-deps`, a uv override, or "
                "torch changed afterwards); `requirements.conflicting` leaves such a pin to this fact",
        "flash-attn": "installed without a local tag whose release published no wheel for the installed torch "
                      "minor and CUDA major (so it is a source build, or was built for another torch) while another "
                      "release did, unless the `extension-imports` probe imported it without error",
        "deepspeed": "releases that cannot run with the installed torch (before 0.8.2: torch 2.0 removed "
                     "`torch._six`)",
        "detectron2": "pre-built wheels (`+cu113`, `+cpu`) made for another torch minor",
        "bitsandbytes": "from PyPI, whose release ships no library for the CUDA version of the installed torch "
                        "(up to 0.49 one per CUDA minor, loaded by exact version; from 0.50 the nearest of the same "
                        "major); `torch_cuda` is torch's CUDA",
    }
    out = [Derivation(f"extensions.{name}-for-other-torch", f"the installed {name}, {what}: {_RELEASE_DOC}",
                      RELEASE_FIELDS, _release_needs("torch", (name,), name == "flash-attn"))
           for name, what in torch_built.items()]
    out += [Derivation(f"extensions.openmmlab-rejects-{dependency}",
                       f"installed OpenMMLab packages (mmdet, mmsegmentation, mmpose) whose release asserts at "
                       f"import a {dependency} range the installed {dependency} is outside of: {_RELEASE_DOC}",
                       RELEASE_FIELDS, _release_needs(dependency, ("mmdet", "mmsegmentation", "mmpose")))
            for dependency in ("mmcv", "mmengine")]
    return out


DERIVATIONS: list[Derivation] = [*_extension_derivations(), *_extension_release_derivations()]

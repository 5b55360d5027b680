"""Static decisions from the torch build matrix (rules/data/torch-builds.toml): pure functions of Facts and the matrix.

- `arch_coverage`: how torch's compiled architectures cover each GPU. The `torch-build` probe's arch list decides
  when the probe ran (it is what the installed binary says of itself); otherwise the matrix's list for the installed
  release and variant (`2.5.1+cu124` on linux-x86_64) decides, so `--static`, pre-commit and `check --facts` catch
  a GPU too new or too old for the build. Each item names the evidence that decided.
- `recommend`: the torch-family install that runs this machine (`torch_builds.best_build`): every visible GPU
  covered, a CUDA that the driver runs, wheels for this Python and platform. It keeps the installed release and
  changes only the variant when that suffices; the installed companions (torchvision, torchaudio, ...) move with
  torch in the same install, each pinned to the release made for the chosen torch.

This module exports them as derived facts (`DERIVATIONS`); `envcheck recommend` prints the same, also for a
described machine (`--gpu`, `--driver`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.derived import build_matrix as tb
from envcheck.derived import companions, conda_builds, conda_recommend, gpu_compat
from envcheck.derived.build_matrix import platform_key
from envcheck.derived.common import TORCH_BUILDS, Derivation, Item, Values, without_cuda_torch
from envcheck.derived.gpu_compat import CUDA_DRIVER
from envcheck.facts.snapshot import Facts
from envcheck.support.patterns import lazy
from envcheck.support.versions import major_minor, parse_version

if TYPE_CHECKING:
    from envcheck.derived.conda_forge_table import CondaForgeTable

# The companions that are installed beside torch and must be the release made for the chosen torch. triton is left
# to torch's own Requires-Dist pin, which pip and uv resolve from the same index.
MOVES_WITH_TORCH = ("torchvision", "torchaudio", "xformers", "torchcodec")
# Companions whose PyTorch-index wheels carry the variant's local tag (torchvision-0.22.1+cu128); the others are
# pinned by release only, which any local tag satisfies.
_TAGGED = frozenset({"torchvision", "torchaudio"})
_INDEX_TAG = lazy(r"cpu|cu\d+|rocm\d+(?:\.\d+)+")  # the local tags of PyTorch's wheel indexes
RECOMMENDATION_FIELDS = ("install", "index_url", "recommended", "because", "evidence")
COVERAGE_FIELDS = ("index", "name", "compute_capability", "coverage", "build_archs", *RECOMMENDATION_FIELDS)


@dataclass(frozen=True)
class Machine:
    """What the recommendation depends on: the platform, Python, GPUs and driver, and what is installed."""

    platform: str  # a key of torch_builds.PLATFORMS: "linux-x86_64"
    python: str  # "3.12"
    gpus: tuple[tuple[str, tb.Capability], ...]  # (name, compute capability) of every visible NVIDIA GPU
    driver: Version | None  # the NVIDIA driver; None when there is none or it is unknown
    driver_text: str = ""  # the driver as NVML wrote it ("580.65.06"; Version drops the zero)
    torch: str | None = None  # the installed torch version ("2.5.1+cu124"); None: not installed
    companions: tuple[str, ...] = ()  # installed companions among MOVES_WITH_TORCH
    # (name, distribution version) of torch and of each installed companion: "2.11.0" for torch from PyPI, whose
    # torch/version.py says "2.11.0+cu130"
    installed: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Recommendation:
    """The install `recommend` chose, or why there is none (`choice` None)."""

    choice: tb.Choice | None
    requirements: tuple[str, ...]  # "torch==2.7.1+cu128", "torchvision==0.22.1+cu128"
    index_url: str
    because: tuple[str, ...]  # sentences: what constrained the choice
    evidence: str = ""  # the facts it was computed from, in words

    @property
    def described(self) -> str:
        """"torch 2.7.1+cu128", or "no torch build" when nothing fits."""
        if self.choice is None:
            return "no torch build"
        return f"torch {self.choice.release.version}+{self.choice.variant.name}"

    @property
    def nothing_to_change(self) -> bool:
        """The installed torch and companions are already the recommended ones: there is nothing to install."""
        return self.choice is not None and not self.requirements

    def item(self) -> Item:
        """The recommendation as the fields of a derived item (RECOMMENDATION_FIELDS)."""
        if self.choice is None:
            recommended = "no published torch build fits"
        elif self.nothing_to_change:
            recommended = f"the installed {self.described}, which is already the right build"
        else:
            recommended = f"{self.described} from {self.index_url}, with the installed companions made for it"
        return {"install": " ".join(self.requirements), "index_url": self.index_url,
                "recommended": recommended, "because": " ".join(self.because), "evidence": self.evidence}


def machine_of(facts: Facts) -> Machine | None:
    """The Machine a snapshot describes; None when NVML could not tell the GPUs, the platform is not in the matrix,
    or the Python version is not stated (a report): a build chosen for no Python would be no answer."""
    platform = platform_key(facts)
    python = ".".join(facts.python.version.split(".")[:2])
    nvml = facts.nvml
    if platform is None or nvml is None or not python:
        return None
    gpus: list[tuple[str, tb.Capability]] = []
    if nvml.status not in ("no-driver", "driver-not-loaded"):
        if not nvml.devices_known:
            return None
        for device in nvml.devices:
            capability = major_minor(device.compute_capability)
            if capability is None:
                return None
            gpus.append((device.name or f"GPU {device.index}", capability))
    driver = parse_version(nvml.driver_version) if gpus else None
    if gpus and driver is None:
        return None
    torch = facts.torch.version if facts.torch is not None else None
    installed = tuple(name for name in MOVES_WITH_TORCH if facts.active(name) is not None)
    return Machine(platform, python, tuple(gpus), driver, nvml.driver_version or "", torch, installed,
                   installed_versions(facts))


def installed_versions(facts: Facts) -> tuple[tuple[str, str], ...]:
    """(name, distribution version) of torch and of each installed companion among MOVES_WITH_TORCH."""
    out = []
    for name in ("torch", *MOVES_WITH_TORCH):
        dist = facts.active(name)
        if dist is not None:
            out.append((name, dist.version))
    return tuple(out)


def _requirement(name: str, version: str, variant: tb.Variant, platform: str) -> str:
    # PyTorch's macOS wheels carry no local tag on any index; CUDA and ROCm wheels always do.
    if variant.kind == "cpu" and platform.startswith("macos"):
        return f"{name}=={version}"
    return f"{name}=={version}+{variant.name}"


def _installed_release(version: str | None) -> Version | None:
    try:
        return None if version is None else Version(Version(version).public)
    except InvalidVersion:
        return None


def recommend(matrix: tb.BuildMatrix, machine: Machine, within: SpecifierSet | None = None) -> Recommendation:
    """The newest build that runs every GPU of `machine` with its driver, for its Python and platform: the
    installed release's own variant when one fits, else the newest release; full driver compatibility first, then
    CUDA minor-version compatibility (a 470 driver runs cu118 builds that way). `within`: only releases it admits
    (a requirement on torch that the install must meet)."""
    capabilities = [cap for _, cap in machine.gpus]
    keep = _installed_release(machine.torch)
    attempts: list[tuple[SpecifierSet | None, bool]] = []
    for minor_compat in (False, True):
        if keep is not None and (within is None or within.contains(keep, prereleases=True)):
            attempts.append((SpecifierSet(f"=={keep}"), minor_compat))
        attempts.append((within, minor_compat))
    choice = None
    minor = False
    for releases, minor in attempts:
        choice = tb.best_build(matrix, platform=machine.platform, python=machine.python, capabilities=capabilities,
                               driver=machine.driver, releases=releases, minor_compat=minor)
        if choice is not None:
            break
    if choice is None:
        return Recommendation(None, (), "", (_nothing_fits(matrix, machine),))
    version = str(choice.release.version)
    made_for = tb.companions(matrix, version)
    torch = _requirement("torch", version, choice.variant, machine.platform)
    pins = [_requirement(name, made_for[name], choice.variant, machine.platform) if name in _TAGGED
            else f"{name}=={made_for[name]}" for name in machine.companions if name in made_for]
    in_place = machine.torch is not None and torch == f"torch=={machine.torch}"
    # torch already the chosen build: only the companions that are not yet the releases made for it are installed
    # (their own torch pins keep torch where it is), and nothing at all when they are.
    requirements = [p for p in pins if not _installed_as(machine, p)] if in_place else [torch, *pins]
    # The same index function as every other torch-family command, so ENVCHECK_TORCH_INDEX_BASE (a mirror) applies.
    return Recommendation(choice, tuple(requirements), companions.pytorch_index(choice.variant.name),
                          _because(matrix, machine, choice, keep, minor, [n for n in machine.companions
                                                                          if n not in made_for],
                                   requirements if in_place else None))


def _installed_as(machine: Machine, requirement: str) -> bool:
    """Whether `name==version` is what is installed: the same release, and the same local tag, or none beside a
    torch distribution without one either (both from PyPI, whose companion wheels are built like its torch)."""
    name, _, pinned = requirement.partition("==")
    installed = dict(machine.installed)
    try:
        have, want = Version(installed.get(name, "")), Version(pinned)
        torch_local = Version(installed.get("torch", "")).local
    except InvalidVersion:
        return False
    return have.public == want.public and (have.local == want.local or (have.local is None and torch_local is None))


def _because(matrix: tb.BuildMatrix, machine: Machine, choice: tb.Choice, keep: Version | None, minor: bool,
             unmatched: Sequence[str], in_place: Sequence[str] | None = None) -> tuple[str, ...]:
    """Why this choice, in sentences. `in_place`: the installed torch is the chosen build, and these are the
    companion requirements still to install (none: nothing changes)."""
    variant = choice.variant
    out = []
    installed = f"torch {choice.release.version}+{variant.name}"
    if in_place is not None and not in_place:
        out.append(f"{installed} is already the right build for this machine: nothing to change.")
    elif in_place is not None:
        names = ", ".join(r.partition("==")[0] for r in in_place)
        out.append(f"{installed} is already the right build for this machine; {names} "
                   f"{'moves' if len(in_place) == 1 else 'move'} to the release made for it.")
    elif keep is not None and choice.release.version == keep:
        out.append(f"It keeps torch {keep} and changes only its build.")
    elif keep is not None:
        out.append(f"No build of torch {keep} fits, so it is the newest release that does.")
    for (name, cap), runs in dict.fromkeys(zip(machine.gpus, choice.coverage, strict=True)):
        how = "native code" if runs == "native" else "PTX compiled at first use"
        out.append(f"{name[0].upper()}{name[1:]} (compute capability {cap[0]}.{cap[1]}) runs it with {how}.")
    if variant.cuda is not None and machine.driver is not None:
        needed = tb.minimum_driver(matrix, variant, machine.platform, minor_compat=minor)
        how = "through CUDA minor version compatibility" if minor else "fully"
        floor = f" (at least {driver_text(needed)})" if needed is not None else ""
        cuda = f"{variant.cuda[0]}.{variant.cuda[1]}"
        out.append(f"Driver {machine.driver_text or machine.driver} runs CUDA {cuda} {how}{floor}.")
    elif not machine.gpus:
        out.append("No NVIDIA GPU is usable here, so it is the CPU build.")
    out.append(f"It has wheels for Python {machine.python} on {machine.platform}.")
    if unmatched:
        out.append(f"The matrix names no {', '.join(unmatched)} release for it: install those by hand.")
    return tuple(out)


def _no_wheel_here(matrix: tb.BuildMatrix, machine: Machine) -> str | None:
    """Why no build can fit whatever the GPUs and driver: no release has a wheel for this Python on this platform
    (Python 3.13 before torch 2.5, macOS x86_64 after 2.2.2 with a Python newer than 3.12); None when some does."""
    platform, python = machine.platform, machine.python
    releases = [r for r in matrix.releases if platform in r.platforms]
    if any(python in r.platforms[platform].python for r in releases):
        return None
    if not releases:
        return f"PyTorch published no torch wheel for {platform}."
    pythons = sorted({p for r in releases for p in r.platforms[platform].python if not p.endswith("t")},
                     key=lambda p: tuple(int(x) for x in p.split(".")))
    last = max(r.version for r in releases)
    return (f"PyTorch published no torch wheel for Python {python} on {platform}: its wheels there are for Python "
            f"{pythons[0]} to {pythons[-1]}, the newest release with any is torch {last}. Use one of those Pythons.")


def _nothing_fits(matrix: tb.BuildMatrix, machine: Machine) -> str:
    no_wheel = _no_wheel_here(matrix, machine)
    if no_wheel is not None:
        return no_wheel
    gpus = ", ".join(f"{name} ({cap[0]}.{cap[1]})" for name, cap in machine.gpus) or "no GPU"
    driver = f"driver {machine.driver_text or machine.driver}" if machine.driver is not None else "no driver"
    head = (f"No torch release in the build matrix has a build for Python {machine.python} on {machine.platform} "
            f"that runs {gpus} with {driver}")
    # Would a newer driver do? The smallest upgrade that would: each toolkit's minimum driver, oldest first.
    os_name = "windows" if machine.platform.startswith("windows") else "linux"
    drivers = sorted({row[os_name] for row in matrix.drivers.toolkit.values() if os_name in row})
    capabilities = [cap for _, cap in machine.gpus]
    for candidate in drivers if capabilities else []:
        if machine.driver is not None and candidate <= machine.driver:
            continue
        other = tb.best_build(matrix, platform=machine.platform, python=machine.python, capabilities=capabilities,
                              driver=candidate)
        if other is not None:
            return (f"{head}: upgrade the NVIDIA driver (to {driver_text(candidate)} or later, which runs torch "
                    f"{other.release.version}+{other.variant.name}).")
    return f"{head}, whatever the driver: no single build covers these GPUs; try another Python."


def driver_text(version: Version) -> str:
    """A driver version as NVIDIA writes it: 560.28.03, not packaging's 560.28.3."""
    first, *rest = version.release
    return ".".join([str(first), *(f"{part:02d}" for part in rest)])


def recommended_build(facts: Facts, matrix: tb.BuildMatrix) -> list[Item] | None:
    """One item, the recommended torch-family install for this machine (RECOMMENDATION_FIELDS); [] without torch;
    None when the machine cannot be told (no NVML facts, a GPU of unknown capability, an unknown driver)."""
    if facts.torch is None:
        return []
    machine = machine_of(facts)
    if machine is None:
        return None
    gpus = len(machine.gpus)
    evidence = (f"torch/version.py (torch {machine.torch}, CUDA {facts.torch.cuda or 'none'}) and NVML (driver "
                f"{machine.driver_text or 'none'}, {gpus} GPU{'' if gpus == 1 else 's'})")
    return [{**recommend(matrix, machine).item(), "evidence": evidence}]


def _matrix_archs(facts: Facts, matrix: tb.BuildMatrix, conda: CondaForgeTable | None = None,
                  ) -> tuple[tuple[str, ...], str] | None:
    """The installed build's architectures from the tables, and the evidence sentence; None when unrecorded.

    A torch that conda installed is none of PyPI's wheels: conda-forge's builds are read from conda-forge's table
    (by the build string of conda's record), the old pytorch channel's from the matrix's variant of their CUDA
    (PyTorch built both with the same lists); without conda's record nothing is said rather than PyPI's wheel."""
    platform = platform_key(facts)
    version = facts.torch.version if facts.torch is not None else None
    if version is None:
        return None
    declared = wheel_variant_archs(facts.torch.variant if facts.torch is not None else None)
    if declared is not None:
        label = (facts.torch.variant or {}).get("label", "") if facts.torch is not None else ""
        return declared, (f"the properties of torch's variant wheel `{label}` (nvidia :: sm_arch in its "
                         "variant.json, PEP 825 draft), as the torch-build probe did not run")
    recorded = conda_builds.installed(facts, platform)
    dist = facts.active("torch")
    if recorded is not None and recorded.conda_forge:
        found = None if conda is None else conda_builds.archs_of(conda, recorded)
        if found is None:
            return None
        archs, entry = found
        return archs, (f"the architectures conda-forge compiled pytorch {recorded.package.version} "
                       f"{recorded.package.build} for ({entry.source}), as the torch-build probe did not run")
    if recorded is not None and recorded.build.cuda is not None and recorded.package.channel.startswith("pytorch"):
        cuda = recorded.build.cuda.replace(".", "")
        variants = tb.variants(matrix, recorded.package.version, platform or "linux-x86_64")
        variant = next((v for v in variants if v.name == f"cu{cuda}"), None)
        if variant is None or variant.archs is None:
            return None
        return variant.archs, (f"the build matrix's architectures for cu{cuda}, the CUDA of the pytorch channel's "
                               f"{recorded.package.build} build, as the torch-build probe did not run")
    if recorded is not None or (dist is not None and dist.installer == "conda") or platform is None:
        return None  # conda's own build, unrecorded: PyPI's wheel says nothing of it
    try:
        variant = tb.installed_variant(matrix, version, platform)
    except InvalidVersion:
        return None
    if variant is None or variant.archs is None:
        return None
    return variant.archs, (f"the build matrix's architectures for torch {version} ({variant.name}) on {platform}, "
                           "as the torch-build probe did not run")


def wheel_variant_archs(variant: dict[str, Any] | None) -> tuple[str, ...] | None:
    """The compiled targets a variant wheel declares: NVIDIA's variant provider names them as `nvidia :: sm_arch`
    properties, `120_real` (a cubin, sm_120) and `90_virtual` (PTX, compute_90). None without such properties, or
    for a variant.json that could not be read (envcheck/sources/live/_collector.py reads only the draft's format)."""
    if not variant or variant.get("problem"):
        return None
    properties = variant.get("properties")
    values = properties.get("nvidia", {}).get("sm_arch") if isinstance(properties, dict) else None
    if not isinstance(values, list) or not values:
        return None
    out = []
    for value in values:
        number, _, kind = str(value).partition("_")
        if not number.isdigit() or kind not in ("real", "virtual"):
            return None
        out.append(f"{'sm' if kind == 'real' else 'compute'}_{number}")
    return tuple(dict.fromkeys(out))


def arch_coverage(facts: Facts, matrix: tb.BuildMatrix, recommendation: list[Item] | None,
                  driver_table: gpu_compat.CudaDriverTable | None = None,
                  conda: CondaForgeTable | None = None) -> list[Item] | None:
    """Each GPU and how the installed torch's architectures cover it (COVERAGE_FIELDS), from the probe when it ran,
    else from the matrix; the recommendation's fields ride along for the rule's command. None when unknown. With
    the driver table, the probe's PTX counts only where the driver can compile it (gpu_compat.arch_coverage)."""
    if without_cuda_torch(facts):
        return []
    rec = recommendation[0] if recommendation else dict.fromkeys(RECOMMENDATION_FIELDS, "")
    probed = gpu_compat.arch_coverage(facts, driver_table)
    if probed is not None:
        return [{**item, **rec, "evidence": "the torch-build probe's arch list"} for item in probed]
    nvml = facts.nvml
    found = _matrix_archs(facts, matrix, conda)
    if nvml is None or not nvml.devices_known or found is None:
        return None
    archs, evidence = found
    out = []
    for device in nvml.devices:
        capability = major_minor(device.compute_capability)
        out.append({"index": str(device.index), "name": device.name or "?",
                    "compute_capability": device.compute_capability or "",
                    "coverage": "unknown" if capability is None else tb.coverage(archs, capability),
                    "build_archs": " ".join(archs), **rec, "evidence": evidence})
    return sorted(out, key=lambda i: int(i["index"]))


def with_coverage(items: list[Item] | None, wanted: str) -> list[Item] | None:
    """The coverage items whose coverage is `wanted`; None when a GPU of unknown coverage might be one."""
    if items is None:
        return None
    out = [i for i in items if i["coverage"] == wanted]
    return None if not out and any(i["coverage"] == "unknown" for i in items) else out


UNPUBLISHED_FIELDS = ("torch", "python", "platform", "reason", *RECOMMENDATION_FIELDS)


def unpublished_build(facts: Facts, matrix: tb.BuildMatrix, recommendation: list[Item] | None) -> list[Item] | None:
    """One item when the installed torch is a release the matrix knows but no wheel PyPI or PyTorch's indexes
    publish for this platform and Python: its variant tag was not built for the platform, or the release has no
    wheel for this Python or platform at all. Nothing is judged for releases the matrix does not know (source
    builds, nightlies, releases newer than the table), tags that are no index variant (`+cpu.cxx11.abi`), or a
    torch that conda installed (conda builds its own). None where what decides is not stated (a report): torch's
    version, the platform, or the Python version when the release has wheels for this platform."""
    if facts.torch is None:
        return []
    if facts.torch.problem is not None or not facts.python.platform or not facts.python.machine:
        return None
    torch = facts.torch.version
    platform = platform_key(facts)
    dist = facts.active("torch")
    if torch is None or platform is None or (dist is not None and dist.installer == "conda"):
        return []
    try:
        local = Version(torch).local
    except InvalidVersion:
        return []
    found = tb.release(matrix, torch)
    if found is None or (local is not None and _INDEX_TAG.fullmatch(local) is None):
        return []
    python = ".".join(facts.python.version.split(".")[:2])
    builds = found.platforms.get(platform)
    if builds is None or (local is None and builds.pypi is None):
        reason = f"PyTorch published no torch {found.version} wheel for {platform}"
    elif not python:
        return None
    elif python not in builds.python:
        reason = (f"torch {found.version} has wheels for Python {', '.join(builds.python)} on {platform}, "
                  f"not {python}")
    elif local is not None and all(v.name != local for v in builds.variants):
        reason = (f"torch {found.version} was built for {platform} as {', '.join(v.name for v in builds.variants)}, "
                  f"not {local}")
    else:
        return []
    rec = recommendation[0] if recommendation else dict.fromkeys(RECOMMENDATION_FIELDS, "")
    return [{"torch": torch, "python": python, "platform": platform, "reason": reason, **rec,
             "evidence": f"the build matrix's builds of torch {found.version}"}]


def _conda_forge(derived: Values) -> CondaForgeTable | None:
    """conda-forge's builds where conda installed torch; None elsewhere, where no derivation reads them (the table is
    then never decoded from the cached pack, nor its classes defined)."""
    return derived.tables[conda_builds.CONDA_FORGE] if conda_builds.installed(derived.facts) is not None else None


def _recommended_build(derived: Values) -> Any:
    table = _conda_forge(derived)
    conda = (None if table is None
             else conda_recommend.conda_recommendation(derived.facts, table, derived.tables[CUDA_DRIVER]))
    return conda if conda is not None else recommended_build(derived.facts, derived.tables[TORCH_BUILDS])


def _arch_coverage(derived: Values) -> Any:
    return arch_coverage(derived.facts, derived.tables[TORCH_BUILDS], derived.get("torch.recommended-build"),
                         derived.tables[CUDA_DRIVER], _conda_forge(derived))


def _unpublished_build(derived: Values) -> Any:
    recommendation = derived.get("torch.recommended-build")
    return unpublished_build(derived.facts, derived.tables[TORCH_BUILDS], recommendation)


def _coverage(wanted: str) -> Callable[[Values], Any]:
    def compute(derived: Values) -> Any:
        return with_coverage(derived.get("gpu.arch-coverage"), wanted)

    return compute


_COVERAGE_DOC = ("`index`, `name`, `compute_capability`, `coverage`, `build_archs`, `evidence`, and the "
                 "`torch.recommended-build` fields `install`, `index_url`, `recommended`, `because`")

DERIVATIONS: list[Derivation] = [
    Derivation("torch.recommended-build",
               "one item, the torch-family install that runs this machine (`envcheck recommend` prints the same): "
               "`install` (space-separated requirements: torch pinned to release and variant, "
               "`torch==2.7.1+cu128`, and each installed torchvision, torchaudio, xformers, torchcodec pinned "
               "to the release made for it; when the installed torch is that build, only the companions that "
               "are not yet; empty when nothing fits or nothing needs to change), `index_url` (the variant's "
               "index URL), `recommended` (in words: `torch 2.7.1+cu128 from INDEX, with ...`, `the installed "
               "torch 2.11.0+cu130, which is already the right build`, or `no published torch build fits`), "
               "`because` (what constrained the "
               "choice), `evidence` (the facts it read). The installed release is kept when one of its "
               "builds covers every GPU with this driver; else the newest release that does; full driver "
               "compatibility before minor-version compatibility. Empty without torch; unknown without NVML's "
               "GPUs and driver",
               RECOMMENDATION_FIELDS, _recommended_build),
    Derivation("torch.unpublished-build",
               "one item when the installed torch is a release the build matrix knows but a build nobody "
               "published for this platform and Python: `torch`, `python`, `platform`, `reason` (no wheel "
               "for this platform, this Python, or this variant tag), `evidence`, and the "
               "`torch.recommended-build` fields `install`, `index_url`, `recommended`, `because`. Empty for "
               "releases the matrix does not know (source builds, nightlies), tags that are no index variant, "
               "and a torch conda installed", UNPUBLISHED_FIELDS, _unpublished_build),
    Derivation("gpu.arch-coverage",
               "every GPU and how torch's compiled architectures cover it: `index`, `name`, "
               "`compute_capability`, `coverage` (`native`: a cubin of the same major and a minor at most the "
               "GPU's, `sm_XYa` only on exactly X.Y; `ptx-jit`: only PTX `compute_XY` with X.Y at most the "
               "GPU's, compiled at first launch, and a driver that can compile it (not one that runs torch's "
               "CUDA only through minor version compatibility: then `none`); `none`; `unknown` when NVML could "
               "not read the capability), "
               "`build_archs` (space-separated), `evidence` (the `torch-build` probe's arch list when the probe "
               "ran, else the build matrix's list for the installed release and variant, "
               "`rules/data/torch-builds.toml`), and the `torch.recommended-build` fields (`install`, `index_url`, "
               "`recommended`, `because`) for the rules' command. Empty for no torch "
               "or a CPU/ROCm build; unknown without NVML's GPUs, or without the probe when the matrix does not "
               "know the installed build", COVERAGE_FIELDS, _arch_coverage),
    Derivation("gpu.devices-not-in-build",
               "the `gpu.arch-coverage` items whose coverage is `none` (`no kernel image is available`): "
               f"{_COVERAGE_DOC}; unknown when a GPU of unknown capability could be among them",
               COVERAGE_FIELDS, _coverage("none")),
    Derivation("gpu.devices-needing-ptx-jit",
               "the `gpu.arch-coverage` items whose coverage is `ptx-jit`, JIT-compiled at first use: "
               f"{_COVERAGE_DOC}; unknown when a GPU of unknown capability could be among them",
               COVERAGE_FIELDS, _coverage("ptx-jit")),
]

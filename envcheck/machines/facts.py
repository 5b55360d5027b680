"""The Facts snapshot a declared machine would have once the project's pins are installed on it, built without it.

Like a snapshot read from a pasted report (envcheck/sources/reports/build.py), it states only what the declaration and
the pins say and marks the rest unknown. The interpreter is the declared Python on the declared platform. The
distributions are the pins of one version, and the project itself with its Requires-Python where pyproject.toml
states it and a static version; with a lock the list is complete (what the lock does not install is not
installed), without one it is partial (`distributions_complete` false: what a requirement pulls in is not in the
files, and a range is no version). torch is the exact release and build the pin names: by its local version
(`2.5.1+cu124`), else by the PyTorch index it comes from, else PyPI's build for the platform (torch-builds.toml).
The GPUs and driver are those declared, the newest CUDA the driver supports read from rules/data/cuda-driver.toml (as
nvidia-smi would print it). A pinned torch without a wheel for the machine's platform and Python is not installed
there (its requirement is what the wheel rules EC1601-EC1603 judge), nor are the companions built for it.
`provenance` names the pin's file and line and the declaration's key for every fact taken from them.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from envcheck.derived import build_matrix as tb
from envcheck.derived.gpu_compat import CudaDriverTable
from envcheck.facts.amd_gpu import AmdGpu
from envcheck.facts.conda import CondaFacts, parse_build
from envcheck.facts.gpu_device import GpuDevice
from envcheck.facts.gpus import NvmlFacts
from envcheck.facts.installer import InstallerFacts
from envcheck.facts.project import Declared, ProjectFacts
from envcheck.facts.rocm import RocmFacts, gfx_version
from envcheck.facts.snapshot import Distribution, Facts, PythonFacts, TorchBuild
from envcheck.machines.declared import DeclaredMachine
from envcheck.machines.pins import PLATFORM_MARKERS, Pin, Pins, index_variant, marker_environment
from envcheck.support.versions import parse_version
from envcheck.version import __version__

__all__ = ["UNKNOWN", "facts_for", "torch_variant"]

# What a declaration and the pins never state: the environment's variables, its leftovers, probe results, and the
# kind of environment the project will be installed into.
UNKNOWN = ("env", "partial_installs", "probes", "python.virtualenv", "python.conda", "python.externally_managed")
# Companions published in the same variants as torch (torchvision-0.20.1+cu124): they go where torch's build goes.
_TAGGED = frozenset({"torchvision", "torchaudio"})


def _python(machine: DeclaredMachine) -> PythonFacts:
    sys_platform, arch, system, _ = PLATFORM_MARKERS[machine.platform]
    return PythonFacts(
        version=machine.python.rstrip("t"), implementation="cpython", executable="python", prefix="",
        base_prefix="", virtualenv=False, conda=False, externally_managed=False, platform=sys_platform,
        machine=arch, system=system, release="", libc=None, user_site=None, cwd="", path=(),
        marker_environment=marker_environment(machine))


def torch_variant(matrix: tb.BuildMatrix, pin: Pin, platform: str) -> str | None:
    """The build the pin installs on `platform`: its local tag, else the PyTorch index it comes from, else PyPI's
    build there; None when none of those says (a release the matrix does not know, from PyPI)."""
    if pin.version is None:
        return None
    try:
        local = Version(pin.version).local
    except InvalidVersion:
        return None
    if local:
        return local
    named = index_variant(pin.index)
    if named is not None:
        return named
    found = tb.release(matrix, pin.version)
    builds = None if found is None else found.platforms.get(platform)
    return None if builds is None else builds.pypi


def _published(matrix: tb.BuildMatrix, version: str, variant: str | None, machine: DeclaredMachine) -> bool | None:
    """Whether PyTorch published torch `version` as `variant` for the machine's platform and Python; None when the
    matrix does not know the release (a newer one, a nightly): nothing can be said."""
    found = tb.release(matrix, version)
    if found is None:
        return None
    builds = found.platforms.get(machine.platform)
    if builds is None or machine.python not in builds.python:
        return False
    return variant is None or any(v.name == variant for v in builds.variants)


def _torch(pins: Pins, machine: DeclaredMachine, matrix: tb.BuildMatrix,
           prov: dict[str, str]) -> tuple[TorchBuild | None, str | None, bool]:
    """(torch's build, its installed version string, whether it can be installed on the machine)."""
    pin = pins.get("torch")
    if pin is None:
        if pins.lock is not None:
            return None, None, True  # the lock installs no torch here
        return (TorchBuild(location="", version=None, cuda=None, hip=None, git_version=None, debug=None, fields={},
                           problem="the project pins no torch: whether a dependency installs one, and which, is not "
                                   "in its files"), None, True)
    prov["torch.version"] = pin.where
    if pin.conda is not None:  # conda's build (pixi.lock): its build string says its CUDA; PyPI's tables do not apply
        said = parse_build(pin.conda.build)
        prov["torch.cuda"] = f"{pin.where}, conda build {pin.conda.build} from {pin.conda.channel or 'its channel'}"
        return (TorchBuild(location="", version=pin.version, cuda=said.cuda, hip=None, git_version=None, debug=None,
                           fields={}, problem=None if said.known else
                           f"the build string {pin.conda.build!r} ({pin.where}) does not say torch's CUDA"),
                pin.version, True)
    if pin.version is None:
        return (TorchBuild(location="", version=None, cuda=None, hip=None, git_version=None, debug=None, fields={},
                           problem=f"{pin.written} ({pin.where}) pins no one torch version: which build a resolver "
                                   "installs is not in the files"), None, True)
    variant = torch_variant(matrix, pin, machine.platform)
    if _published(matrix, pin.version, variant, machine) is False:
        return None, None, False
    dist = _distribution_version(pin)
    build = dist
    if variant is not None and _valid(dist) and not Version(dist).local and not machine.platform.startswith("macos"):
        build = f"{dist}+{variant}"  # PyPI's wheel: its torch/version.py names the build its files do not
    cuda = hip = None
    problem = None
    if variant is None:
        problem = f"the pins do not say which build of torch {pin.version} ({pin.where}) is installed"
    elif variant.startswith("cu"):
        cuda = f"{variant[2:-1]}.{variant[-1]}"
    elif variant.startswith("rocm"):
        hip = variant[4:]
    if variant is not None:
        prov["torch.cuda"] = f"{pin.where}, build {variant}" + (f" from {pin.index}" if pin.index else "")
    return (TorchBuild(location="", version=build, cuda=cuda, hip=hip, git_version=None, debug=None, fields={},
                       problem=problem), dist, True)


def _distribution_version(pin: Pin) -> str:
    """The version the pin installs as its distribution says it: `2.5.1` from the cu124 index is `2.5.1+cu124`."""
    version = pin.version or ""
    variant = index_variant(pin.index)
    if variant is None or not _valid(version) or Version(version).local:
        return version
    return f"{version}+{variant}"


def _valid(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def _distributions(pins: Pins, torch_version: str | None, torch_ok: bool) -> tuple[Distribution, ...]:
    out = []
    for pin in pins.pins:
        if pin.version is None or (pin.name == "torch" and torch_version is None):
            continue
        if pin.name in _TAGGED and not torch_ok:
            continue  # made for a torch that cannot be installed there: the install fails as a whole
        version = torch_version if pin.name == "torch" and torch_version else _distribution_version(pin)
        out.append(Distribution(name=pin.name, canonical_name=pin.name, version=version, location="",
                                metadata_dir="", requires=(), requires_python=None,
                                installer="conda" if pin.conda is not None else None, editable=False,
                                problems=(), requires_known=False))
    own = pins.requires_python
    if own is not None and own.version is not None and all(d.canonical_name != own.name for d in out):
        # The project itself, installed with its dependencies: its Requires-Python is judged like any
        # distribution's (EC0106); its dependencies are the pins above, so it declares none of its own here.
        out.append(Distribution(name=own.name, canonical_name=own.name, version=own.version, location="",
                                metadata_dir="", requires=(), requires_python=own.written.split(" ", 1)[-1],
                                installer=None,
                                editable=True, problems=()))
    return tuple(out)


def driver_cuda(table: CudaDriverTable | None, machine: DeclaredMachine) -> str | None:
    """The newest CUDA the declared driver supports (what nvidia-smi prints as "CUDA Version"): the newest toolkit
    whose minimum driver it meets (rules/data/cuda-driver.toml); None without a driver or the table."""
    driver = parse_version(machine.driver)
    if table is None or driver is None:
        return None
    minimums = table.toolkit_minimum["windows" if machine.platform.startswith("windows") else "linux"]
    met = [cuda for cuda, minimum in minimums.items() if driver >= minimum]
    return f"{max(met)[0]}.{max(met)[1]}" if met else None


def _gpus(machine: DeclaredMachine, prov: dict[str, str],
          table: CudaDriverTable | None) -> tuple[NvmlFacts, RocmFacts | None]:
    where = f"{machine.file}: {machine.key}"
    linux = machine.platform.startswith("linux")
    if machine.rocm is not None:
        prov["rocm.devices"] = f"{where}.gpu"
        devices = tuple(AmdGpu(index=i, node=None, gfx_target=t, gfx_target_version=gfx_version(t) or 0,
                               device_id=None, simd_count=None, pci_bus_id=None)
                        for i, t in enumerate(machine.amd_gpus))
        return (NvmlFacts(status="no-driver", reason="declared with ROCm, without an NVIDIA driver",
                          driver_version=None, cuda_driver_version=None, devices=()),
                RocmFacts(status="ok", reason=None, devices=devices, kfd_access=None,
                          rocm_version=machine.rocm))
    rocm = (RocmFacts(status="no-kfd", reason="declared without an AMD GPU", devices=(), kfd_access=None) if linux
            else RocmFacts(status="unavailable", reason=f"{machine.platform}: ROCm runs on Linux only", devices=(),
                           kfd_access=None))
    if not machine.gpus:
        return (NvmlFacts(status="no-driver", reason="declared without an NVIDIA GPU", driver_version=None,
                          cuda_driver_version=None, devices=()), rocm)
    prov["nvml.devices"] = f"{where}.gpu"
    cuda = driver_cuda(table, machine)
    if machine.driver:
        prov["nvml.driver_version"] = f"{where}.driver"
    if cuda is not None:
        prov["nvml.cuda_driver_version"] = f"rules/data/cuda-driver.toml, for the driver of {where}"
    nvidia = tuple(GpuDevice(index=i, name=name, uuid=None, pci_bus_id=None, compute_capability=f"{cap[0]}.{cap[1]}",
                              memory_total_mib=None, mig_mode=None) for i, (name, cap) in enumerate(machine.gpus))
    return (NvmlFacts(status="ok", reason=None, driver_version=machine.driver, cuda_driver_version=cuda,
                      devices=nvidia), rocm)


def facts_for(machine: DeclaredMachine, pins: Pins, matrix: tb.BuildMatrix,
              driver_table: CudaDriverTable | None = None) -> Facts:
    """The snapshot `machine` would have with the project's `pins` installed (see the module docstring); the
    driver's CUDA version is read from `driver_table` (rules/data/cuda-driver.toml)."""
    prov = {"python.version": f"{machine.file}: {machine.key}.python",
            "python.platform": f"{machine.file}: {machine.key}.platform"}
    torch, torch_version, torch_ok = _torch(pins, machine, matrix, prov)
    nvml, rocm = _gpus(machine, prov, driver_table)
    if pins.pins:
        prov["distributions"] = pins.source
    # The pins are what the project requires there: the wheel rules (EC1601-EC1604) judge them, each by its line.
    requirements = tuple(Declared(pin.requirement if pin.version is None
                                  else f"{pin.name}=={_distribution_version(pin)}", pin.where, "requirements")
                         for pin in pins.pins)
    index = [*pins.index_options]
    for pin in pins.pins:
        if pins.lock is not None and pin.index and index_variant(pin.index) and pin.index not in index:
            index += ["--index-url", pin.index]
    project = ProjectFacts(root=str(pins.root), name=pins.name, files=pins.files, requirements=requirements,
                           index_options=tuple(index), locks=())
    conda, installer = _conda(pins, machine, nvml, prov)
    return Facts(python=_python(machine), distributions=_distributions(pins, torch_version, torch_ok), torch=torch,
                 modules={}, sources={}, env={}, problems=(), nvml=nvml, rocm=rocm, probes={},
                 envcheck_version=__version__, host=machine.name, origin=f"machine:{machine.name}",
                 project=project, distributions_complete=pins.lock is not None, unknown=UNKNOWN,
                 provenance=prov, conda=conda, installer=installer)


def _conda(pins: Pins, machine: DeclaredMachine, nvml: NvmlFacts,
           prov: dict[str, str]) -> tuple[CondaFacts | None, InstallerFacts | None]:
    """For a pixi project: conda's records of the locked torch stack, the machine's conda virtual packages
    (`__cuda`: the newest CUDA its declared driver runs; `__cuda_arch`: its GPUs' lowest compute capability) and
    the environment's system requirements; and the installer facts that make torch-family fixes `pixi add`."""
    records = tuple(p.conda for p in pins.pins if p.conda is not None)
    if not pins.manifest:
        return None, None
    virtual: dict[str, str] = {}
    if nvml.cuda_driver_version:
        virtual["__cuda"] = nvml.cuda_driver_version
        prov["conda.virtual_packages.__cuda"] = prov.get("nvml.cuda_driver_version", "")
    capabilities = sorted(cap for _, cap in machine.gpus)
    if capabilities:
        virtual["__cuda_arch"] = f"{capabilities[0][0]}.{capabilities[0][1]}"
        prov["conda.virtual_packages.__cuda_arch"] = f"{machine.file}: {machine.key}.gpu"
    if pins.system_requirements:
        prov["conda.system_requirements"] = f"{pins.manifest} ([system-requirements], environment {pins.environment})"
    manifest = str(pins.root / pins.manifest)
    owned = {p.name: p.conda.name for p in pins.pins if p.conda is not None and p.name in ("torch", "torchvision",
                                                                                          "torchaudio")}
    return (CondaFacts(records, virtual_packages=virtual, system_requirements=dict(pins.system_requirements)),
            InstallerFacts(pip=True, ensurepip=True, uv_venv=None, uv=None, conda=None, conda_owned=owned,
                           pixi=manifest))

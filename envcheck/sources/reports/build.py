"""One Facts snapshot from what the recognised outputs state, with where each fact came from and nothing more.

What no output states stays unknown: text fields are "", the marker environment holds only stated variables, the
distribution list is marked partial unless some output listed everything, every distribution's Requires-Dist is
unknown, and a torch whose presence or CUDA build is not stated carries a `problem` that makes torch predicates
unknown. Compute capabilities come from the GPU-name table; the driver's CUDA, when no output states it, is left to
the derivation that reads rules/data/cuda-driver.toml.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from envcheck.derived import nvidia_gpus
from envcheck.facts.amd_gpu import AmdGpu
from envcheck.facts.conda import CondaFacts
from envcheck.facts.gpu_device import GpuDevice
from envcheck.facts.gpus import NvmlFacts
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.rocm import RocmFacts, gfx_version
from envcheck.facts.snapshot import Distribution, Facts, PythonFacts, TorchBuild, canonical_name
from envcheck.sources.reports.found import Found, Gpu, cuda_of_local_version
from envcheck.sources.reports.gpu_names import capability_of
from envcheck.version import __version__

__all__ = ["MAX_GPUS", "NOTHING_READ", "facts_of"]

T = TypeVar("T")
# More GPUs than any one machine has: a report claiming more is not believed, and its GPU list is unknown.
MAX_GPUS = 256
_SYSTEM = {"linux": "Linux", "win32": "Windows", "darwin": "Darwin"}
_OS_NAME = {"linux": "posix", "win32": "nt", "darwin": "posix"}
# What no output read here states: environment variables, site-packages leftovers, the kind of environment.
_NOT_STATED = ("env", "partial_installs", "probes", "python.virtualenv", "python.externally_managed")


def _first(founds: Iterable[Found], attr: str, provenance: dict[str, str], key: str) -> T | None:
    for found in founds:
        value = getattr(found, attr)
        if value is not None:
            provenance[key] = found.where_of(attr)
            return value  # type: ignore[no-any-return]
    return None


NOTHING_READ = "no output envcheck reads was recognised in the report"


def facts_of(founds: list[Found], file: str, gpu_names: nvidia_gpus.GpuNames | None = None) -> Facts:
    """The snapshot that `founds` (in input order) state; `file` names the report in `origin`; GPU names are read
    through `gpu_names` (the shipped rules/data/gpus.toml by default)."""
    founds = [*(f for f in founds if f.fmt != "prose"), *(f for f in founds if f.fmt == "prose")]
    prov: dict[str, str] = {}
    problems: list[str] = [f"{f.where}: {p}" for f in founds for p in f.problems]
    distributions = _distributions(founds, prov)
    complete = any(f.packages_complete for f in founds)
    python = _python(founds, prov)
    torch, distributions = _torch(founds, distributions, complete, prov)
    nvml = _nvml(founds, prov, problems, nvidia_gpus.shipped() if gpu_names is None else gpu_names)
    probes: dict[str, ProbeResult] = {}
    archs: tuple[str, ...] | None = _first(founds, "arch_list", prov, "probes.torch-build.arch_list")
    if archs is not None:
        probes["torch-build"] = ProbeResult(
            status="ok", message="not run: the compiled architectures as torch's own warning in the report lists them",
            details={"arch_list": list(archs)})
    if not founds:
        problems.append(NOTHING_READ)
    conda_stated = any(f.conda for f in founds)
    listing = next((f for f in founds if f.conda_packages), None)
    conda = None if listing is None else CondaFacts(listing.conda_packages)
    if listing is not None:
        prov["conda.packages"] = listing.where
    return Facts(python=python, distributions=distributions, torch=torch, modules={}, sources={}, env={},
                 problems=tuple(problems), nvml=nvml, probes=probes, envcheck_version=__version__,
                 rocm=_rocm(founds, prov),
                 origin=f"report:{file}", distributions_complete=complete, provenance=prov,
                 unknown=_NOT_STATED if conda_stated else (*_NOT_STATED, "python.conda"), conda=conda)


def _distributions(founds: list[Found], prov: dict[str, str]) -> tuple[Distribution, ...]:
    seen: dict[str, Distribution] = {}
    sources: list[str] = []
    for found in founds:
        if found.packages:
            sources.append(found.where if found.fmt != "prose" else "prose")
        for package in found.packages:
            key = canonical_name(package.name)
            if key in seen and (seen[key].version or not package.version):
                continue  # the first listing with a version wins
            seen[key] = Distribution(
                name=package.name, canonical_name=key, version=package.version, location="", metadata_dir="",
                requires=(), requires_python=None, installer=package.installer, editable=False, problems=(),
                requires_known=False)
            if key == "torch":
                prov["distributions.torch"] = found.where_of(f"package:{package.name}")
    if sources:
        prov["distributions"] = "; ".join(sources)  # one entry: a list of thousands repeats few blocks
    return tuple(seen.values())


def _python(founds: list[Found], prov: dict[str, str]) -> PythonFacts:
    version: str = _first(founds, "python_version", prov, "python.version") or ""
    platform: str = _first(founds, "sys_platform", prov, "python.platform") or ""
    machine: str = _first(founds, "machine", prov, "python.machine") or ""
    libc: tuple[str, str] | None = _first(founds, "libc", prov, "python.libc")
    markers: dict[str, str] = {}
    if version:
        markers["python_version"] = ".".join(version.split(".")[:2])
        if version.count(".") >= 2:
            markers["python_full_version"] = version
    if platform:
        markers.update(sys_platform=platform, platform_system=_SYSTEM[platform], os_name=_OS_NAME[platform])
    if machine:
        markers["platform_machine"] = machine
    return PythonFacts(
        version=version, implementation="", executable="python", prefix="", base_prefix="", virtualenv=False,
        conda=any(f.conda for f in founds), externally_managed=False, platform=platform, machine=machine,
        system=_SYSTEM.get(platform, ""), release="",
        libc=None if libc is None else {"name": libc[0], "version": libc[1]},
        user_site=None, cwd="", path=(), marker_environment=markers)


def _torch(founds: list[Found], distributions: tuple[Distribution, ...], complete: bool,
           prov: dict[str, str]) -> tuple[TorchBuild | None, tuple[Distribution, ...]]:
    """torch's build, and the distributions with torch added when only collect_env's first line names it."""
    version: str | None = _first(founds, "torch_version", prov, "torch.version")
    listed = next((d for d in distributions if d.canonical_name == "torch"), None)
    if version is None and listed is not None:
        version = listed.version or None
        prov["torch.version"] = prov["distributions.torch"]
    elif version is not None and listed is None:
        # The report states torch's version (collect_env's first line): torch is installed, in that version.
        distributions += (Distribution(
            name="torch", canonical_name="torch", version=version, location="", metadata_dir="", requires=(),
            requires_python=None, installer=None, editable=False, problems=(), requires_known=False),)
        prov["distributions.torch"] = prov["torch.version"]
    if version is None:
        if complete:
            return None, distributions  # a complete package list without torch: not installed
        return TorchBuild(location="", version=None, cuda=None, hip=None, git_version=None, debug=None, fields={},
                          problem="the report does not say whether torch is installed"), distributions
    tools = [f for f in founds if f.fmt != "prose"]
    cuda: str | None = _first(tools, "torch_cuda", prov, "torch.cuda")
    hip: str | None = _first(tools, "torch_hip", prov, "torch.hip")
    if cuda is None and hip is None:
        named = cuda_of_local_version(version)
        if named is not None:
            cuda, hip = named[0] or "", named[1]
            prov["torch.cuda"] = prov["torch.version"] + ", its local version"
    if cuda is None and hip is None:
        # What the text says of torch's build counts for this torch only: not for a text about another version.
        public = version.split("+")[0]
        text = [f for f in founds if f.fmt == "prose" and (f.torch_version or version).split("+")[0] == public]
        cuda = _first(text, "torch_cuda", prov, "torch.cuda")
        hip = _first(text, "torch_hip", prov, "torch.hip")
    problem = None
    if cuda is None and hip is None:
        problem = f"the report does not state torch {version}'s CUDA build"
    return TorchBuild(location="", version=version, cuda=cuda or None, hip=hip, git_version=None, debug=None,
                      fields={}, problem=problem), distributions


def _nvml(founds: list[Found], prov: dict[str, str], problems: list[str],
          table: nvidia_gpus.GpuNames) -> NvmlFacts | None:
    driver: str | None = _first(founds, "driver_version", prov, "nvml.driver_version")
    cuda: str | None = _first(founds, "cuda_driver_version", prov, "nvml.cuda_driver_version")
    # nvidia-smi lists every GPU in bus order; collect_env lists those torch sees. The first listing wins.
    listing = next((f for f in sorted(founds, key=lambda f: not f.fmt.startswith("nvidia-smi"))
                    if f.gpus is not None), None)
    if driver is None and cuda is None and listing is None:
        return None
    if listing is None or listing.gpus is None:
        return NvmlFacts(status="unavailable", reason="the report states the driver but lists no GPUs",
                         driver_version=driver, cuda_driver_version=cuda, devices=())
    if len(listing.gpus) > MAX_GPUS:
        problems.append(f"{listing.where}: lists {len(listing.gpus)} GPUs, more than {MAX_GPUS}; GPUs not read")
        return NvmlFacts(status="unavailable", reason=f"the report lists an implausible {len(listing.gpus)} GPUs",
                         driver_version=driver, cuda_driver_version=cuda, devices=())
    where = listing.where_of("gpus")
    prov["nvml.devices"] = where
    devices = tuple(_device(index, gpu, where, prov, table) for index, gpu in enumerate(listing.gpus))
    return NvmlFacts(status="ok", reason=None, driver_version=driver, cuda_driver_version=cuda, devices=devices)


def _device(index: int, gpu: Gpu, where: str, prov: dict[str, str], table: nvidia_gpus.GpuNames) -> GpuDevice:
    capability = gpu.compute_capability
    if capability is None and gpu.name:
        capability = capability_of(gpu.name, table)
        if capability is not None:
            prov[f"nvml.devices.{index}.compute_capability"] = (f"GPU-name table (rules/data/gpus.toml), for "
                                                                f"{gpu.name!r} named in {where}")
    return GpuDevice(index=index, name=gpu.name, uuid=gpu.uuid, pci_bus_id=gpu.pci_bus_id,
                     compute_capability=capability, memory_total_mib=gpu.memory_total_mib, mig_mode=None)


def _rocm(founds: list[Found], prov: dict[str, str]) -> RocmFacts | None:
    """The AMD GPUs a ROCm torch's collect_env lists, by gfx target; None when no output lists them. What the
    report cannot say (device access, a system ROCm) stays unknown."""
    targets: tuple[str, ...] | None = _first(founds, "amd_gpus", prov, "rocm.devices")
    if targets is None or len(targets) > MAX_GPUS:
        return None
    devices = tuple(AmdGpu(index=i, node=None, gfx_target=t, gfx_target_version=gfx_version(t) or 0, device_id=None,
                           simd_count=None, pci_bus_id=None) for i, t in enumerate(targets))
    return RocmFacts(status="ok", reason=None, devices=devices, kfd_access=None)

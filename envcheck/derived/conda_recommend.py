"""The torch-family install for a torch that conda installed: the conda-forge build with native code for every GPU.

Said in conda-forge's terms (`recommended`, `because`) and in PyPI's (`install`, `index_url`: `torch==2.7.1+cu128`
and the cu128 index), which remedy/commands/installers.py (through remedy/commands/conda.py) writes as the environment's
conda, mamba or pixi command. Pure: facts and the tables in, one item out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envcheck.derived.build_matrix import platform_key
from envcheck.derived.companions import pytorch_index
from envcheck.derived.conda_builds import installed
from envcheck.derived.gpu_compat import CudaDriverTable
from envcheck.facts.snapshot import Facts
from envcheck.support.versions import major_minor, parse_version

if TYPE_CHECKING:
    from envcheck.derived.conda_forge_table import CondaForgeTable

__all__ = ["conda_recommendation"]


def _driver_cuda(facts: Facts, drivers: CudaDriverTable | None) -> tuple[int, int] | None:
    """The newest CUDA the driver runs: as NVML (or nvidia-smi) states it, else the newest toolkit whose minimum
    driver it meets (rules/data/cuda-driver.toml); None when unknown."""
    nvml = facts.nvml
    if nvml is None:
        return None
    stated = major_minor(nvml.cuda_driver_version)
    driver = parse_version(nvml.driver_version)
    if stated is not None or drivers is None or driver is None:
        return stated
    minimums = drivers.toolkit_minimum["windows" if facts.python.platform == "win32" else "linux"]
    met = [cuda for cuda, minimum in minimums.items() if driver >= minimum]
    return max(met) if met else None


def conda_recommendation(facts: Facts, table: CondaForgeTable,
                         drivers: CudaDriverTable | None = None) -> list[dict[str, str]] | None:
    """For a torch that conda installed: one item of the `torch.recommended-build` fields naming the conda-forge
    build with native code for every GPU (the installed release's when one of its builds has it, for a CUDA the
    driver runs). `install` and `index_url` say it in PyPI's terms (`torch==2.7.1+cu128` and the cu128 index), which
    remedy/commands/installers.py writes as the environment's conda, mamba or pixi command (`pytorch-gpu=2.7.1
    cuda-version=12.8` from conda-forge); `recommended` and `because` say it in conda's. None for a torch conda did
    not install (the build matrix decides), and where the GPUs are not known."""
    platform = platform_key(facts)
    torch = installed(facts, platform)
    nvml = facts.nvml
    if torch is None or nvml is None or not nvml.devices_known:
        return None
    gpus = [(d.name or f"GPU {d.index}", major_minor(d.compute_capability)) for d in nvml.devices if d.accessible]
    if any(cap is None for _, cap in gpus):
        return None
    capabilities = [cap for _, cap in gpus if cap is not None]
    subdir = torch.subdir or "linux-64"
    driver = _driver_cuda(facts, drivers)
    from envcheck.derived.conda_native import native_build  # only for a torch conda installed

    chosen = native_build(table, subdir, capabilities, driver, keep=torch.package.version) if capabilities else None
    evidence = f"conda's record of {torch.described} and NVML ({len(gpus)} GPU{'' if len(gpus) == 1 else 's'})"
    if chosen is None:
        names = ", ".join(f"{name} ({cap[0]}.{cap[1]})" for name, cap in gpus if cap is not None) or "no GPU"
        return [{"install": "", "index_url": "", "recommended": "no conda-forge build fits",
                 "because": f"No conda-forge pytorch build recorded for {subdir} has native code for {names}"
                            + (f" with a CUDA the driver runs (CUDA {driver[0]}.{driver[1]} at most)"
                               if driver is not None else "") + ".",
                 "evidence": evidence}]
    tag = f"cu{chosen.cuda[0]}{chosen.cuda[1]}"
    because = [f"conda-forge builds its own torch; that build was compiled for {' '.join(chosen.archs)} "
               f"({chosen.release.source})."]
    for name, cap in dict.fromkeys(gpus):
        if cap is not None:
            because.append(f"{name[0].upper()}{name[1:]} (compute capability {cap[0]}.{cap[1]}) runs it with native "
                           "code.")
    if driver is not None and chosen.cuda <= driver:
        because.append(f"The driver runs CUDA {driver[0]}.{driver[1]}, so the newest CUDA build it runs is chosen.")
    elif driver is not None:
        because.append(f"The driver runs CUDA {driver[0]}.{driver[1]}: conda-forge has no such build of it, and the "
                       f"CUDA {chosen.cuda_text} build runs through CUDA minor version compatibility (its native code "
                       "does; a newer driver runs it in full).")
    if not torch.conda_forge:
        because.append(f"The installed torch came from the {torch.package.channel or 'unnamed'} channel; "
                       "PyTorch no longer publishes conda packages, so the build comes from conda-forge.")
    return [{"install": f"torch=={chosen.release.version}+{tag}", "index_url": pytorch_index(tag),
             "recommended": f"conda-forge's {chosen.described}: `pytorch-gpu={chosen.release.version}` with "
                            f"`cuda-version={chosen.cuda_text}`",
             "because": " ".join(because), "evidence": evidence}]

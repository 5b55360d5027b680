"""conda's own records of the torch stack: the packages conda installed, their build strings and channels.

A conda-installed torch is described twice: torch/version.py (its CUDA runtime, as every torch says) and conda's
record of the package that put it there (conda-meta/NAME-VERSION-BUILD.json in a live environment, a `conda list`
row in a report, a URL in pixi.lock). Only the second says which *build* it is: conda-forge's
`cuda126_mkl_py312_h30b5a27_300` (CUDA 12.6, MKL, Python 3.12, build number 300), the old pytorch channel's
`py3.10_cuda11.8_cudnn8.7.0_0`, CPU builds (`cpu_mkl_...`, `cpu_generic_...`, `py3.12_cpu_0`), and which channel
served it. conda-forge compiles torch itself, for other GPU architectures than PyPI's wheels
(rules/data/conda-forge-builds.toml), so the build string is what the GPU rules need.

conda-forge's build number carries two offsets (recipe/meta.yaml of conda-forge/pytorch-cpu-feedstock: `build + 200`
for a CUDA build, `+ 100` for an MKL one), so the feedstock's own build number is the build string's number modulo
100 (`_300` is build 0 of its version).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envcheck.facts._reader import Reader
from envcheck.support.patterns import lazy

__all__ = ["TORCH_STACK", "CondaBuild", "CondaFacts", "CondaPackage", "channel_name", "parse_build"]

# The conda packages whose records describe torch's build and what it runs with: the package itself (pytorch), the
# conda-forge meta-packages that choose its flavour (pytorch-gpu, pytorch-cpu), the CUDA pin (cuda-version, the old
# cudatoolkit, the pytorch channel's pytorch-cuda), and the companions.
TORCH_STACK = ("pytorch", "pytorch-gpu", "pytorch-cpu", "libtorch", "cuda-version", "cudatoolkit", "pytorch-cuda",
               "torchvision", "torchaudio", "python")

# conda-forge and defaults: "cuda126_mkl_py312_h30b5a27_300", "cuda126_py313hae2543e_306", "gpu_cuda118py310h..._0".
_CUDA_PACKED = lazy(r"(?:^|_)cuda(\d{2,3})(?=_|py|$)")
# the pytorch channel: "py3.10_cuda11.8_cudnn8.7.0_0", "py3.7_cuda10.1.243_cudnn7.6.3_0"
_CUDA_DOTTED = lazy(r"(?:^|_)cuda(\d{1,2})\.(\d{1,2})(?:\.\d+)?(?=_|$)")
_CPU = lazy(r"(?:^|_)cpu(?=_|py|$)")
_PYTHON = lazy(r"(?:^|_|(?<=\d))py(\d)\.?(\d{1,2})(?=_|h|$)")
_BLAS = lazy(r"_(mkl|generic|openblas)_")
_NUMBER = lazy(r"_(\d{1,6})$")
_CHANNEL_URL = lazy(r"^[a-z][a-z0-9+.-]*://[^/]+/(.+?)/?$")
_SUBDIRS = ("linux-64", "linux-aarch64", "linux-ppc64le", "osx-64", "osx-arm64", "win-64", "noarch")


@dataclass(frozen=True)
class CondaBuild:
    """What a build string says; a field is None where it says nothing of it."""

    cuda: str | None  # "12.6" for a CUDA build; None for a CPU build or where it does not say
    cpu: bool  # a CPU build, as the string says (`cpu_...`, `py3.12_cpu_0`)
    python: str | None  # "3.12"
    blas: str | None  # "mkl", "generic" (conda-forge, 2.6 on)
    number: int | None  # the trailing build number (300)

    @property
    def known(self) -> bool:
        """The string names a CUDA or a CPU build."""
        return self.cuda is not None or self.cpu


def parse_build(build: str) -> CondaBuild:
    """The build string of a pytorch package, read (see the module docstring)."""
    dotted = _CUDA_DOTTED.search(build)
    packed = None if dotted is not None else _CUDA_PACKED.search(build)
    cuda = None
    if dotted is not None:
        cuda = f"{int(dotted.group(1))}.{int(dotted.group(2))}"
    elif packed is not None:
        digits = packed.group(1)
        cuda = f"{int(digits[:-1])}.{digits[-1]}"
    python = _PYTHON.search(build)
    blas = _BLAS.search(f"_{build}_")
    number = _NUMBER.search(build)
    return CondaBuild(cuda=cuda, cpu=cuda is None and _CPU.search(build) is not None,
                      python=None if python is None else f"{python.group(1)}.{python.group(2)}",
                      blas=None if blas is None else blas.group(1),
                      number=None if number is None else int(number.group(1)))


def channel_name(channel: str) -> str:
    """A channel as conda names it: "conda-forge" from "https://conda.anaconda.org/conda-forge/linux-64" or from
    "conda-forge"; "pkgs/main" from a defaults URL; "" when it says nothing."""
    text = channel.strip()
    match = _CHANNEL_URL.match(text)
    if match is not None:
        text = match.group(1)
    parts = [p for p in text.split("/") if p]
    if parts and parts[-1] in _SUBDIRS:
        parts = parts[:-1]
    return "/".join(parts)


@dataclass(frozen=True)
class CondaPackage:
    """One conda package of the torch stack, as conda recorded it."""

    name: str  # the conda name: "pytorch", "cuda-version"
    version: str
    build: str  # "cuda126_mkl_py312_h30b5a27_300"; "" where not stated
    channel: str  # "conda-forge", "pytorch", "pkgs/main"; "" where not stated (channel_name of the record's)
    subdir: str = ""  # "linux-64"; "" where not stated
    source: str = ""  # where it was read: "conda-meta/pytorch-2.7.1-cuda126_..._300.json", "conda list"

    @classmethod
    def from_reader(cls, r: Reader) -> CondaPackage:
        return cls(name=r.text("name"), version=r.text("version"), build=r.opt_text("build") or "",
                   channel=r.opt_text("channel") or "", subdir=r.opt_text("subdir") or "",
                   source=r.opt_text("source") or "")


@dataclass(frozen=True)
class CondaFacts:
    """conda's records of the torch stack in the checked environment (TORCH_STACK's names that it has)."""

    packages: tuple[CondaPackage, ...]
    problems: tuple[str, ...] = ()  # records that could not be read, in words
    # conda's virtual packages of the machine, where known: "__cuda" (the newest CUDA the driver runs, as conda
    # detects it or CONDA_OVERRIDE_CUDA sets it), "__cuda_arch" (the lowest compute capability of its GPUs, as
    # NVIDIA's nvidia-virtual-packages plugin defines it); empty: not known
    virtual_packages: dict[str, str] = field(default_factory=dict)
    # the virtual packages the environment requires (pixi's [system-requirements]: "cuda" -> "12.0"); empty: none
    system_requirements: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> CondaPackage | None:
        return next((p for p in self.packages if p.name == name), None)

    @classmethod
    def from_reader(cls, r: Reader) -> CondaFacts:
        return cls(packages=r.list_of("packages", CondaPackage.from_reader), problems=r.texts("problems"),
                   virtual_packages=r.text_map("virtual_packages"),
                   system_requirements=r.text_map("system_requirements"))

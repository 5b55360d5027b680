"""Derived facts: the rule-side computations over a facts snapshot that a declarative rule cannot express.

Each computing module exports its own derived facts as `DERIVATIONS` (a list of `common.Derivation`); a new one
goes in the module whose computation it reads, or a new module listed in derive.py.

- derive.py: the registry (`DERIVATIONS`, every module's, in the docs' order) and `Derived`, the lazy values of
  one snapshot;
- common.py: what they share: `Derivation`, `Values` (what a computation is given), `Table` / `Tables`, the item
  type, small tests of the facts;
- tables.py: the data tables of rules/data/, read and validated with the rule pack (`REGISTRY`, `load`);
- build_matrix.py: rules/data/torch-builds.toml, the torch build matrix (which builds of each release exist, what
  they run on and what goes with them), and its queries;
- nvidia_gpus.py: rules/data/gpus.toml, NVIDIA GPU names -> compute capability, and the name lookup the AMD table
  shares;
- amd_gpus.py: rules/data/amd-gpus.toml, AMD GPU names -> gfx target;
- requirements.py: the requirement walk (every Requires-Dist, as `pip check`) and `requirements.*`;
- walk_memo.py: the walk's result remembered between runs, and its key;
- distributions.py: the distributions' metadata and the interpreter (`distributions.*` but duplicates, `python.*`);
- layers.py: duplicated distributions across folders and layers, and the NumPy under an extension;
- project.py: the checked project's requirements and lock against the environment (`project.*`);
- gpu_compat.py: the NVIDIA driver against torch's CUDA, bf16 support, and rules/data/cuda-driver.toml;
- builds.py: the torch build that runs this machine, and how a build's architectures cover each GPU;
- conda_builds.py: conda's torch builds (rules/data/conda-forge-builds.toml, the installed conda build) and pixi's
  system requirements against the machine's virtual packages;
- companions.py: torchvision, torchaudio, torchcodec, xformers against the installed torch (`companions.*`);
- extensions.py: compiled extensions against torch and NumPy: failed imports, version tags, release tables;
- extension_releases.py: rules/data/extension-releases.toml, parsed (what the extension releases need);
- wheels.py: torch requirements and wheel indexes no published wheel can satisfy here;
- multigpu.py: NCCL, CUDA_VISIBLE_DEVICES, mixed GPU models, socket interfaces, bitsandbytes' CUDA override;
- toolchain.py: the CUDA toolkit and host compiler that build extensions (`toolchain.*`);
- system_libs.py: CUDA toolkits on LD_LIBRARY_PATH and the toolkit CUDA_HOME names (`cuda.*`);
- native_libs.py: native libraries: older copies on the loader path, libstdc++ and glibc, Windows DLLs;
- attention.py: the sdpa probe's flash attention failures;
- rocm.py: AMD GPUs against a ROCm torch, and rules/data/rocm-archs.toml.

Nothing here opens a file while a snapshot is evaluated: the tables arrive already parsed, with the rule pack.
"""

from __future__ import annotations

"""Where the facts come from: each source fills the one `Facts` snapshot (envcheck/facts/) that the rules read.

- live/: this machine, read without running third-party code: the checked interpreter's distributions and modules
  (a collector that runs inside it), NVML, the CUDA libraries and toolchain on disk, the network interfaces;
- probes/: tiny programs that import torch in child processes of their own, for what only running shows;
- reports/: text people paste (`pip list`, `collect_env`, `nvidia-smi`, `conda list`, prose), read into a snapshot;
- logs/: error output (`envcheck explain`): what the rules' signatures recognise, and whose environment it came from;
- project/: what the project declares and locks (pyproject.toml, requirements files, locks, pixi) and its
  `[tool.envcheck]` configuration.

Importing this package imports none of them.
"""

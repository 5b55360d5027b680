"""Compute capability from a GPU's marketing name, for reports that name GPUs without it (collect_env, nvidia-smi,
free text).

There is one GPU table: rules/data/gpus.toml (NVIDIA's "CUDA GPUs - Compute Capability" list), read through
envcheck/derived/nvidia_gpus.py, which `envcheck recommend --gpu` reads too. A name answers by its longest listed prefix
of whole words ("NVIDIA GeForce RTX 4090 D" is "RTX 4090"); a name nvidia-smi cut short ("GeForce GTX 108...") answers
when every listed name it could begin agrees; anything else ("TITAN X": Maxwell or Pascal) answers None.
"""

from __future__ import annotations

from envcheck.derived import nvidia_gpus

__all__ = ["capability_of"]


def capability_of(name: str, table: nvidia_gpus.GpuNames | None = None) -> str | None:
    """The compute capability ("8.9") of the GPU called `name`, from `table` (the shipped rules/data/gpus.toml by
    default); None when the table does not list it unambiguously."""
    names = nvidia_gpus.shipped() if table is None else table
    return nvidia_gpus.capability_text(nvidia_gpus.capability_of_name(names, name))

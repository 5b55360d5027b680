"""What several derivations share: the item type and the test for a torch without CUDA."""

from __future__ import annotations

from envcheck.facts.snapshot import Facts

__all__ = ["Item", "without_cuda_torch"]

Item = dict[str, str]  # one element of a list-valued derived fact; templates read it as {item.KEY}


def without_cuda_torch(facts: Facts) -> bool:
    """No torch, or a CPU or ROCm build: nothing that needs an NVIDIA driver, CUDA kernels or a CUDA toolkit.

    A torch whose version.py could not be read (`problem`) may well be a CUDA build, so it does not count.
    """
    torch = facts.torch
    return torch is None or (torch.cuda is None and torch.problem is None)

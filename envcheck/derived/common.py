"""What several derivations share: the item type, the test for a torch without CUDA, and the head of a
per-library release table (rules/data/torch-companions.toml, xformers.toml, extension-releases.toml)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from envcheck.errors import RuleError
from envcheck.facts.snapshot import Facts

__all__ = ["Item", "release_table", "without_cuda_torch"]

Item = dict[str, str]  # one element of a list-valued derived fact; templates read it as {item.KEY}


def without_cuda_torch(facts: Facts) -> bool:
    """No torch, or a CPU or ROCm build: nothing that needs an NVIDIA driver, CUDA kernels or a CUDA toolkit.

    A torch whose version.py could not be read (`problem`) may well be a CUDA build, so it does not count.
    """
    torch = facts.torch
    return torch is None or (torch.cuda is None and torch.problem is None)


def release_table(file: str, name: str, table: object, keys: Collection[str],
                  symptom_is: str) -> tuple[dict[str, Any], str]:
    """`[NAME]` of a release table checked: a table with a non-empty `[NAME.releases]`, no key outside `keys`, and
    a `symptom` string (what `symptom_is`, in the error). The table and its stripped symptom; else one RuleError
    naming `file` and the key."""
    if not isinstance(table, dict) or not isinstance(table.get("releases"), dict) or not table["releases"]:
        raise RuleError(file, "expected a table with a non-empty [NAME.releases] table", key=name)
    unknown = set(table) - set(keys)
    if unknown:
        raise RuleError(file, f"unknown key (expected {', '.join(sorted(keys))})", key=f"{name}.{sorted(unknown)[0]}")
    symptom = table.get("symptom")
    if not isinstance(symptom, str) or not symptom.strip():
        raise RuleError(file, f"expected {symptom_is}, as a string", key=f"{name}.symptom")
    return table, symptom.strip()

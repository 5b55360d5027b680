"""One statement the text makes (envcheck/sources/reports/prose/): what it states, the value, its line and its
weight."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["GpuSaid", "Said"]


class GpuSaid(NamedTuple):
    name: str  # as rules/data/gpus.toml lists it
    many: int  # how many the text says ("2x RTX 4090"); 1 when it does not say


class Said(NamedTuple):
    """One statement: `fact` ("torch", "torch_cuda", "torch_hip", "python", "driver", "driver_cuda", "gpu",
    "platform", "machine", "libc", "package", "note"), its value, the input line and the statement's weight."""

    fact: str
    value: Any
    line: int
    tier: int

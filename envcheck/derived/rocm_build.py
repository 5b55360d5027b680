"""The installed ROCm torch's build as envcheck/derived/rocm.py reads it (`installed_build`). Imported only where a
ROCm torch is installed: other checks never define the class."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Build:
    """The installed ROCm torch's gfx targets and where they were read."""

    archs: tuple[str, ...]
    evidence: str

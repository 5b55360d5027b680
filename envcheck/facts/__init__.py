"""Facts: what envcheck knows about an environment. Collected without running third-party code."""

from __future__ import annotations

from envcheck.facts.snapshot import Distribution, Facts, ModuleFact, PythonFacts, SourceFact, TorchBuild

__all__ = ["Distribution", "Facts", "ModuleFact", "PythonFacts", "SourceFact", "TorchBuild"]

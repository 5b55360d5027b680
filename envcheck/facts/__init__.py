"""Facts: what envcheck knows about an environment. Collected without running third-party code.

Importing the package imports none of its modules: the fact collector (`_collector`, standard library only) and the
light readers must be importable without the snapshot model, whose dataclasses cost a large share of a static check
(envcheck/pipeline/replay.py answers a repeated check from them alone). The model's names resolve on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing would cost more than this package does
if TYPE_CHECKING:
    from envcheck.facts.snapshot import Distribution, Facts, ModuleFact, PythonFacts, SourceFact, TorchBuild

__all__ = ["Distribution", "Facts", "ModuleFact", "PythonFacts", "SourceFact", "TorchBuild"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from envcheck.facts import snapshot

        value = getattr(snapshot, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'envcheck.facts' has no attribute {name!r}")

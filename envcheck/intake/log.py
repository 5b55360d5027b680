"""Error output given to `envcheck explain`, read as a pasted report is: the failures the rules' signatures
recognise in it, the facts the log itself states (versions, GPUs, a driver, an OS, in its own words), and the
site-packages folders its paths name, which envcheck/evidence/origin.py compares with the checked environment."""

from __future__ import annotations

from collections.abc import Iterable

from envcheck.derived.nvidia_gpus import GpuNames
from envcheck.evidence.origin import Log, site_dirs
from envcheck.evidence.signatures import Signature
from envcheck.intake import read_text

__all__ = ["read_log"]


def read_log(text: str, source: str, signatures: Iterable[Signature],
             gpu_names: GpuNames | None = None) -> Log:
    """The log `text` (read from `source`) with what it shows and states."""
    facts, _ = read_text(text, source, signatures, gpu_names)
    lines = text.count("\n") + (not text.endswith("\n"))
    return Log(source=source, lines=lines, observations=facts.observed, facts=facts, sites=site_dirs(text))

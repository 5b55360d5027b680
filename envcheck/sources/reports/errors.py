"""Error output in a report: what the rules' error signatures recognise in it (envcheck/rules/signatures.py), and
what those lines state about their environment, as one `Found`, so that a traceback pasted with (or without) a
`pip list` feeds the same snapshot builder as every other output."""

from __future__ import annotations

from collections.abc import Sequence

from envcheck.facts.observed import Observation
from envcheck.sources.reports.found import Found, Gpu

__all__ = ["found_of"]


def _first(observations: Sequence[Observation], fact: str) -> tuple[str, str] | None:
    """(value, where) of the first observation that states `fact`."""
    for observation in observations:
        value = observation.facts.get(fact)
        if value is not None:
            return value, observation.where()
    return None


def found_of(observations: Sequence[Observation]) -> Found | None:
    """The facts the observations state, first statement of each winning; None when they state none."""
    stated = {fact: _first(observations, fact) for fact in
              ("gpu.name", "gpu.capability", "torch.arch_list", "torch.version", "torch.cuda", "driver.version",
               "driver.cuda", "python.version", "platform")}
    if not any(stated.values()):
        return None

    def value(fact: str) -> str | None:
        entry = stated[fact]
        return None if entry is None else entry[0]

    where = next(entry[1] for entry in stated.values() if entry is not None)
    gpus = None
    if value("gpu.name") is not None or value("gpu.capability") is not None:
        gpus = (Gpu(name=value("gpu.name"), compute_capability=value("gpu.capability")),)
    archs = value("torch.arch_list")
    return Found(fmt="error output", where=f"error output ({where})", torch_version=value("torch.version"),
                 torch_cuda=value("torch.cuda"), python_version=value("python.version"),
                 sys_platform=value("platform"), driver_version=value("driver.version"),
                 cuda_driver_version=value("driver.cuda"), gpus=gpus,
                 arch_list=None if archs is None else tuple(archs.split()))

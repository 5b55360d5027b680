"""Error output given to `envcheck explain`, read as a pasted report is: the failures the rules' signatures
recognise in it, the facts the log itself states (versions, GPUs, a driver, an OS, in its own words), and the
site-packages folders its paths name, which envcheck/sources/logs/origin.py compares with the checked environment."""

from __future__ import annotations

from collections.abc import Iterable

from envcheck.derived.nvidia_gpus import GpuNames
from envcheck.rules.signatures import Signature
from envcheck.sources.logs.origin import Log, python_of, site_dirs
from envcheck.sources.reports import read_text
from envcheck.sources.reports.found import Found

__all__ = ["read_log"]


def read_log(text: str, source: str, signatures: Iterable[Signature],
             gpu_names: GpuNames | None = None) -> Log:
    """The log `text` (read from `source`) with what it shows and states: the Python its site-packages paths name
    is the log's Python where they name one and nothing else states it."""
    sites = site_dirs(text)
    pythons: dict[str, str] = {}
    for site in sites:
        version = python_of(site)
        if version is not None:
            pythons.setdefault(version, site)
    beside: tuple[Found, ...] = ()
    if len(pythons) == 1:
        (version, site), = pythons.items()
        beside = (Found(fmt="paths", where=f"the paths it names ({site})", python_version=version),)
    facts, _ = read_text(text, source, signatures, gpu_names, beside)
    # Lines as a reader counts them: a last line without its newline is a line, an empty text has none.
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return Log(source=source, lines=lines, observations=facts.observed, facts=facts, sites=sites)

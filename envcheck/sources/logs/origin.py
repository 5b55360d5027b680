"""Where error output came from: the environment being checked, another one, or one it cannot be tied to.

A log carries evidence of the environment that printed it: the site-packages folders in its traceback (and the
Python version in their path), the package versions and build tags it quotes, the GPU and driver it names. `tie`
compares that evidence with the facts of the checked environment. Any conflict makes the log foreign (a traceback
from `/opt/conda/lib/python3.10/site-packages` is not this venv's); agreement without conflict ties it; no evidence
either way leaves it untied. Only a tied log is joined with the live facts (envcheck/sources/logs/join.py): a foreign or
untied one is judged on its own facts, and no command for this environment is printed under what it shows.
"""

from __future__ import annotations

from typing import NamedTuple

from envcheck.facts.gpu_device import GpuDevice
from envcheck.facts.observed import Observation
from envcheck.facts.snapshot import Facts
from envcheck.support.patterns import lazy

__all__ = ["FOREIGN", "TIED", "UNTIED", "Foreign", "Log", "Tie", "python_of", "site_dirs", "tie"]

TIED, FOREIGN, UNTIED = "tied", "foreign", "untied"
_SITES = ("site-packages", "dist-packages")
MAX_SITES = 20  # distinct folders kept: a log quoting more is no clearer about where it ran
_PY_IN_PATH = lazy(r"(?i)(?:[/\\]lib[/\\]python(\d)\.(\d{1,2})[/\\]|[/\\]python(\d)(\d{1,2})[/\\])")
MAX_PATH = 400  # characters of a path read back from its site-packages
# What ends a path in running text: whitespace, quotes, brackets and the separators tracebacks put around one.
_PATH_STOP = tuple(" \t\r\n\"'`()[]<>,;|=")


class Log(NamedTuple):
    """Error output as read for `envcheck explain`: what was read, the failures recognised in it, the facts the log
    itself states (the snapshot `check --report` would make of it, the observations included), and the
    site-packages folders its paths name."""

    source: str
    lines: int
    observations: tuple[Observation, ...]
    facts: Facts
    sites: tuple[str, ...] = ()


class Tie(NamedTuple):
    """Whether a log came from the checked environment (`TIED`, `FOREIGN`, `UNTIED`), and why, in words."""

    status: str
    reason: str


class Foreign(NamedTuple):
    """A log not tied to the checked environment: its own facts (its observations among them), and why, in words.
    The engine judges the rules it shows on these facts alone and writes no command for the checked environment."""

    facts: Facts
    reason: str


def site_dirs(text: str) -> tuple[str, ...]:
    """The site-packages and dist-packages folders that paths in `text` name, in order of first mention (a folder
    as written, up to and including `site-packages`). Linear: each mention is found with `str.find` and the path
    before it read back over at most MAX_PATH characters."""
    found: dict[str, None] = {}
    for name in _SITES:
        at = text.find(name)
        while at >= 0 and len(found) < MAX_SITES:
            end = at + len(name)
            if not any(_names(text, known, end) for known in found):  # a traceback names one folder on every frame
                start = max(0, at - MAX_PATH)
                window = text[start:at]
                path = text[start + max(window.rfind(c) for c in _PATH_STOP) + 1:end]
                if path[:1] in ("/", "\\", "~") or path[1:3] in (":\\", ":/"):
                    found.setdefault(path, None)
            at = text.find(name, end)
    return tuple(found)


def _names(text: str, path: str, end: int) -> bool:
    """Whether `text` names exactly `path` just before `end`."""
    begin = end - len(path)
    return begin >= 0 and text.startswith(path, begin) and (begin == 0 or text[begin - 1] in _PATH_STOP)


def _folder(path: str) -> str:
    """A folder compared across the ways it is written: separators, a trailing one, and case on Windows."""
    norm = path.replace("\\", "/").rstrip("/")
    return norm.lower() if norm[1:3] == ":/" else norm


def python_of(path: str) -> str | None:
    """The Python version a site-packages path names ("lib/python3.10/", "Python310\\"), or None."""
    match = _PY_IN_PATH.search(path.replace("\\", "/") + "/")
    if match is None:
        return None
    major, minor = (match[1], match[2]) if match[1] else (match[3], match[4])
    return f"{major}.{int(minor)}"


def _live_sites(facts: Facts) -> set[str]:
    places = [*facts.python.path, *(d.location for d in facts.distributions)]
    if facts.python.user_site:
        places.append(facts.python.user_site)
    return {_folder(p) for p in places if p.replace("\\", "/").rstrip("/").endswith(_SITES)}


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _same_version(said: str, installed: str) -> bool:
    """Whether a quoted version is the installed one: the release must be equal, and a build tag (+cu121) too
    where both state one."""
    said_release, _, said_local = said.partition("+")
    release, _, local = installed.partition("+")
    return said_release == release and (not said_local or not local or said_local == local)


def _evidence(log: Log, facts: Facts) -> tuple[list[str], list[str]]:
    """(what in the log agrees with the facts, what conflicts with them), each in words."""
    agree: list[str] = []
    conflict: list[str] = []
    live = _live_sites(facts)
    python = _minor(facts.python.version) if facts.python.version else ""
    for site in log.sites:
        if _folder(site) in live:
            agree.append(f"its paths are this environment's ({site})")
        elif live:
            conflict.append(f"its paths name {site}, not this environment's site-packages")
        said = python_of(site)
        if said is not None and python and said != python:
            conflict.append(f"its paths are Python {said}'s, this environment runs Python {python}")
    said_python = log.facts.python.version
    if said_python and python and _minor(said_python) != python:
        conflict.append(f"it states Python {said_python}, this environment runs Python {facts.python.version}")
    for dist in log.facts.distributions:
        installed = facts.active(dist.name)
        if installed is None or not dist.version:
            if installed is None and facts.distributions_complete and facts.distributions and dist.version:
                conflict.append(f"it quotes {dist.name} {dist.version}, which this environment does not have")
            continue
        if _same_version(dist.version, installed.version):
            agree.append(f"it quotes {dist.name} {dist.version}, as installed here")
        else:
            conflict.append(f"it quotes {dist.name} {dist.version}, this environment has {installed.version}")
    said_torch = log.facts.torch.version if log.facts.torch is not None else None
    if said_torch and facts.torch is not None and facts.torch.version and \
            not any(d.canonical_name == "torch" for d in log.facts.distributions):
        if _same_version(said_torch, facts.torch.version):
            agree.append(f"it names torch {said_torch}, as installed here")
        else:
            conflict.append(f"it names torch {said_torch}, this environment has {facts.torch.version}")
    conflict.extend(_gpu_conflicts(log.facts, facts, agree))
    return agree, conflict


def _gpu_conflicts(said: Facts, facts: Facts, agree: list[str]) -> list[str]:
    """What the log's GPUs and driver say against the checked machine's (known only where NVML was asked)."""
    if said.nvml is None or facts.nvml is None:
        return []
    out: list[str] = []
    names = [d.name or f"a GPU of compute capability {d.compute_capability}" for d in said.nvml.devices
             if d.name or d.compute_capability]
    if names and facts.nvml.status != "ok":
        out.append(f"it names {names[0]}, this machine has no NVIDIA GPU that the driver answers for "
                   f"({facts.nvml.status})")
    elif names:
        for device in said.nvml.devices:
            shown = device.name or f"compute capability {device.compute_capability}"
            if any(_same_gpu(device, d) for d in facts.nvml.devices):
                agree.append(f"it names {shown}, a GPU of this machine")
            elif device.name or device.compute_capability:
                out.append(f"it names {shown}, not a GPU of this machine")
    driver = said.nvml.driver_version
    if driver and facts.nvml.driver_version:
        if driver == facts.nvml.driver_version:
            agree.append(f"it names driver {driver}, this machine's")
        else:
            out.append(f"it names driver {driver}, this machine has {facts.nvml.driver_version}")
    cuda = said.nvml.cuda_driver_version
    if cuda and facts.nvml.cuda_driver_version and cuda != facts.nvml.cuda_driver_version:
        out.append(f"its driver supports CUDA {cuda}, this machine's CUDA {facts.nvml.cuda_driver_version}")
    return out


def _same_gpu(said: GpuDevice, live: GpuDevice) -> bool:
    """Whether a GPU a log names may be this one: the same compute capability where both are known, else one name
    inside the other ("RTX 5090" in "NVIDIA GeForce RTX 5090")."""
    if said.compute_capability and live.compute_capability:
        if said.compute_capability != live.compute_capability:
            return False
        if not said.name or not live.name:
            return True
    a, b = (said.name or "").lower(), (live.name or "").lower()
    return bool(a and b) and (a in b or b in a)


def tie(log: Log, facts: Facts) -> Tie:
    """Whether `log` came from the environment `facts` describe: any conflicting evidence makes it foreign (the
    first conflict is the reason), agreement without conflict ties it, and no evidence leaves it untied."""
    agree, conflict = _evidence(log, facts)
    if conflict:
        return Tie(FOREIGN, f"the error output is not from the checked environment: {conflict[0]}")
    if agree:
        return Tie(TIED, f"the error output is from the checked environment: {agree[0]}")
    return Tie(UNTIED, "the error output cannot be tied to the checked environment: it names no path, version, "
                       "GPU or driver of it")

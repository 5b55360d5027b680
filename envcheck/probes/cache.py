"""Probe results cached by an environment fingerprint, so an unchanged environment re-checks at static speed.

The fingerprint covers everything that can change a probe's outcome: the interpreter, every installed
distribution (name, version, location), the driver and GPU UUIDs, AMD GPUs (PCI address, gfx target, access), the
relevant environment variables, envcheck's version and the probe code itself. Any change means a fresh run. A
cache file that cannot be read or parsed is ignored and rewritten; timeouts are never cached (a slow first CUDA
start may not repeat).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from envcheck import __version__
from envcheck.cache import cache_dir
from envcheck.facts._reader import Reader
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.snapshot import Facts

_FORMAT = 1


def fingerprint(facts: Facts, names: Sequence[str], probe_source: str) -> str:
    """A digest of everything a probe result depends on."""
    nvml = facts.nvml
    material = {
        "envcheck": __version__,
        "python": [facts.python.executable, facts.python.version, facts.python.prefix],
        "distributions": sorted((d.canonical_name, d.version, d.location, _installed_at(d.metadata_dir))
                                for d in facts.distributions),
        "torch": None if facts.torch is None else [facts.torch.location, facts.torch.version, facts.torch.git_version],
        "driver": None if nvml is None else [nvml.status, nvml.driver_version, nvml.cuda_driver_version,
                                             sorted(d.uuid or str(d.index) for d in nvml.devices)],
        # AMD GPUs: a ROCm torch's probes run on them, and swapping one (or gaining access to /dev/kfd) changes
        # what the probes see.
        "amd": None if facts.rocm is None else [
            facts.rocm.status, facts.rocm.kfd_access, facts.rocm.driver_version, facts.rocm.rocm_version,
            sorted((g.pci_bus_id or str(g.index), g.gfx_target, g.render_access or "") for g in facts.rocm.devices)],
        "env": sorted((k, v) for k, v in facts.env.items() if k != "PATH"),
        "probes": sorted(names),
        "code": hashlib.sha256(probe_source.encode("utf-8")).hexdigest(),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def _installed_at(metadata_dir: str) -> int | None:
    """When the .dist-info folder was (re)written: `pip install --force-reinstall` of the same version (the fix
    for an extension built against another torch) changes nothing else the fingerprint covers, and a cached
    import failure must not outlive it. None when it cannot be read (a snapshot from another machine)."""
    if not metadata_dir:
        return None
    try:
        return Path(metadata_dir).stat().st_mtime_ns
    except OSError:
        return None


def _path(key: str) -> Path:
    return cache_dir() / f"probes-{key}.json"


def load(key: str) -> dict[str, ProbeResult] | None:
    """Cached results for `key`, or None (absent, unreadable, or written by another format)."""
    try:
        data = json.loads(_path(key).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("results"), dict):
            return None
        return {name: ProbeResult.from_reader(Reader(raw, str(_path(key)), name))
                for name, raw in data["results"].items()}
    except Exception:  # noqa: BLE001 - a corrupt cache (bad JSON, bad shape, unreadable) is a miss, never an error
        return None


def store(key: str, results: Mapping[str, ProbeResult]) -> None:
    """Write results atomically; skip it when any probe timed out. Failing to write is not an error."""
    if any(r.status == "timeout" for r in results.values()):
        return
    payload = json.dumps({"format": _FORMAT, "results": {k: asdict(v) for k, v in results.items()}})
    try:
        directory = cache_dir()
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, suffix=".tmp", encoding="utf-8") as fh:
            fh.write(payload)
        Path(fh.name).replace(_path(key))
    except OSError:
        pass

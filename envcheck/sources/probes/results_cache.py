"""Probe results cached by an environment fingerprint, so an unchanged environment re-checks at static speed.

The fingerprint covers everything that can change a probe's outcome: the interpreter, every installed
distribution (name, version, location), the driver and GPU UUIDs, AMD GPUs (PCI address, gfx target, access), the
relevant environment variables, envcheck's version and the probe code itself, and the files of torch that importing
it runs and loads, by their stat (size, modification time, inode: no file is read, so the cost is a few dozen system
calls, not hashing gigabytes of libraries): `torch/__init__.py` edited in an editable install, `torch/_C*.so` or a
library under `torch/lib/` rebuilt, a conda transaction in a conda environment (its `conda-meta` folder changes: conda
installs torch's libraries beside the environment's other libraries, not in torch/lib). Any change means a fresh run.

Timeouts are never cached (a slow first CUDA start may not repeat), nor a child killed by a signal that came from
outside it (SIGKILL, most often the kernel's out-of-memory killer under a passing load, SIGTERM, SIGINT, SIGHUP):
that is what happened to the process, not what torch does. A crash of torch's own (SIGSEGV, SIGABRT, SIGBUS, SIGILL)
is a verdict, kept until what it ran changes.

An entry is believed only when its signature verifies (envcheck.cache.signed: HMAC with the user's key, in a folder that
is the user's alone and outside every Python environment): a cached result turns a segfaulting torch into a pass, so an
entry edited by hand or by another account, or copied from another machine, is ignored (and the reason is a
collection problem of the check) and rewritten. One that cannot be parsed is ignored and rewritten the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from envcheck.cache.signed import load_signed, store_signed
from envcheck.facts._reader import Reader
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.snapshot import Facts
from envcheck.version import __version__

_FORMAT = 2  # 2: signed entries (envcheck.cache.signed); format 1's plain JSON files are never read
# Signals sent to a probe child from outside it: its result says nothing about torch (see the module's docstring).
_FROM_OUTSIDE = frozenset({"SIGKILL", "SIGTERM", "SIGINT", "SIGHUP"})
# Extensions of the native files importing torch loads from torch/ and torch/lib/ (Linux, macOS, Windows).
_NATIVE = (".so", ".dylib", ".dll", ".pyd")


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
        "torch_files": _torch_files(facts),
        "env": sorted((k, v) for k, v in facts.env.items() if k != "PATH"),
        "probes": sorted(names),
        "code": hashlib.sha256(probe_source.encode("utf-8")).hexdigest(),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def _torch_files(facts: Facts) -> list[list[object]]:
    """[name, size, mtime_ns, inode] of what importing torch runs and loads: torch/__init__.py, version.py, the
    extension modules beside them (`_C.cpython-311-x86_64-linux-gnu.so`), every native library in torch/lib, and the
    conda-meta folder of a conda environment. A file that cannot be read is listed without its stat."""
    paths: list[Path] = []
    if facts.torch is not None and facts.torch.location:
        root = Path(facts.torch.location)
        paths += [root / "__init__.py", root / "version.py"]
        for folder, wanted in ((root, lambda n: n.startswith("_C")), (root / "lib", lambda n: True)):
            try:
                names = sorted(e.name for e in os.scandir(folder))
            except OSError:
                continue
            paths += [folder / n for n in names if wanted(n) and (n.endswith(_NATIVE) or ".so." in n)]
    if facts.python.prefix:
        paths.append(Path(facts.python.prefix) / "conda-meta")
    out: list[list[object]] = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            out.append([str(path)])
            continue
        out.append([str(path), st.st_size, st.st_mtime_ns, st.st_ino])
    return out


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


def _name(key: str) -> str:
    return f"probes-{key}"


def load(key: str, avoid: Iterable[str] = (), problems: list[str] | None = None) -> dict[str, ProbeResult] | None:
    """Cached results for `key`, or None (absent, unsigned, edited, unreadable, or written by another format).
    `avoid`: the checked environment's prefix, where no cache is read; `problems` is told why an entry that is
    there was not believed."""
    payload = load_signed(_name(key), key, avoid, problems)
    if payload is None:
        return None
    try:
        data = json.loads(payload)
        if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("results"), dict):
            raise ValueError("not a probe-results entry")
        return {name: ProbeResult.from_reader(Reader(raw, _name(key), name)) for name, raw in data["results"].items()}
    except Exception:  # noqa: BLE001 - a corrupt entry (bad JSON, bad shape) is a miss, never an error
        if problems is not None:
            problems.append(f"the cached probe results {_name(key)} are signed but unreadable: ignored, and rewritten")
        return None


def store(key: str, results: Mapping[str, ProbeResult], avoid: Iterable[str] = ()) -> None:
    """Write results signed and atomically, never under `avoid`; skip it when any probe timed out or its child was
    killed from outside (see the module's docstring). Failing to write is not an error."""
    if any(r.status == "timeout" or (r.status == "crashed" and r.error_class in _FROM_OUTSIDE)
           for r in results.values()):
        return
    payload = json.dumps({"format": _FORMAT, "results": {k: asdict(v) for k, v in results.items()}})
    store_signed(_name(key), key, payload.encode("utf-8"), avoid)

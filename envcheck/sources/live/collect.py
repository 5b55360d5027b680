"""Getting a Facts snapshot: from this interpreter, from another one (`--python`), or from a saved file."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from envcheck.errors import FactsError
from envcheck.facts.gpus import NvmlFacts
from envcheck.facts.network import NetworkFacts
from envcheck.facts.rocm import collect_rocm
from envcheck.facts.snapshot import Facts
from envcheck.sources.live.native_scan import collect_native
from envcheck.sources.live.nvml import collect_nvml
from envcheck.sources.live.raw import DEFAULT_TIMEOUT_S, collect_raw, interface_names
from envcheck.sources.live.toolchain_scan import collect_toolchain
from envcheck.support import input_files


def collect_network() -> NetworkFacts | None:
    """This machine's interfaces; None where the platform cannot list them (a sandbox without netlink)."""
    names = interface_names()
    return None if names is None else NetworkFacts(interfaces=names)


class Recorder(Protocol):
    """What a collection tells the recording of a check that may be replayed (envcheck/pipeline/replay.py's `Recording`,
    which sits above the facts: this layer names only what it calls)."""

    def paused(self) -> AbstractContextManager[object]: ...

    def collected(self, python: str | None, request: dict[str, Any], raw: dict[str, Any], nvml: NvmlFacts,
                  network: NetworkFacts | None) -> None: ...


def request_for(modules: set[str], sources: dict[str, set[str]]) -> dict[str, Any]:
    """The collector's request: which modules to locate and which source files to grep for which patterns."""
    return {
        "modules": sorted(modules),
        "sources": [{"file": f, "patterns": sorted(p)} for f, p in sorted(sources.items())],
    }


def collect(request: dict[str, Any], python: str | None = None, *, use_cache: bool = True,
            recording: Recorder | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Facts:
    """Static facts of this interpreter, or of the interpreter at `python` (which need not have envcheck).

    NVML facts are machine-wide and always come from envcheck's own process: the checked interpreter need not
    have the bindings. They are read in a thread while the distributions are scanned, because NVML's
    initialisation can take a noticeable time on a GPU machine (the GPUs wake up without a persistence daemon).

    `recording` (a static check that may be replayed, envcheck/pipeline/replay.py) is told the collector's answer and
    the NVML and network facts: a replay collects those again and compares. What the other readers read (the KFD
    topology, the toolchain's and native libraries' files) it witnesses file by file.

    `timeout_s` bounds the other interpreter (the user's --probe-timeout): see envcheck.sources.live.raw.collect_raw.
    """
    with nullcontext() if recording is None else recording.paused():
        nvml = _Background(collect_nvml)
        # each distribution's parsed metadata, reused while its files are unchanged (envcheck.cache.signed)
        if use_cache:
            from envcheck.cache.signed import usable_dir

            directory = usable_dir()
            if directory is not None:
                request = {**request, "cache_dir": str(directory)}
        raw = collect_raw(request, python, timeout_s=timeout_s)
        machine = (nvml.result(), collect_network())
        if recording is not None:
            recording.collected(python, request, raw, *machine)
    origin = "local" if python is None else f"python:{python}"
    facts = Facts.from_dict(raw, file=origin, origin=origin)
    # The KFD topology is a few small sysfs files (milliseconds): read in line, unlike NVML. The toolchain and
    # native libraries are read from files here too, in envcheck's process: the checked interpreter runs on this
    # machine, and these readers need envcheck's modules (the collector is stdlib-only).
    return dataclasses.replace(facts, nvml=machine[0], rocm=collect_rocm(), network=machine[1],
                               toolchain=collect_toolchain(), native=collect_native(facts, use_cache=use_cache))


class _Background:
    """collect_nvml() in a daemon thread (ctypes releases the GIL during NVML calls, so the two overlap).

    collect_nvml's `warnings.catch_warnings()` swaps the process-wide filter list while it imports pynvml; the
    collector running meanwhile never touches warning filters, so nothing is lost when it is restored.
    """

    def __init__(self, fn: Callable[[], NvmlFacts]) -> None:
        self._fn = fn
        self._value: NvmlFacts | None = None
        self._thread = threading.Thread(target=self._run, name="envcheck-nvml", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._value = self._fn()

    def result(self) -> NvmlFacts:
        self._thread.join()
        if self._value is None:  # collect_nvml never raises; this guards against a bug in it
            return NvmlFacts(status="error", reason="collecting NVML facts failed", driver_version=None,
                             cuda_driver_version=None, devices=())
        return self._value


def load(file: str) -> Facts:
    """A snapshot saved by `envcheck facts -o FILE` ("-" reads standard input via the caller)."""
    return loads(input_files.read_text(file, error=FactsError), file)


def loads(text: str, file: str) -> Facts:
    data = input_files.loads_json(text, file, error=FactsError)
    return Facts.from_dict(data, file=file, origin=f"file:{file}")

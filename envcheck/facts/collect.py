"""Getting a Facts snapshot: from this interpreter, from another one (`--python`), or from a saved file."""

from __future__ import annotations

import dataclasses
import json
import socket
import subprocess
import sysconfig
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envcheck import __version__, _files
from envcheck.errors import CollectError, FactsError
from envcheck.facts import _collector
from envcheck.facts.gpus import NvmlFacts
from envcheck.facts.native_scan import collect_native
from envcheck.facts.network import collect_network
from envcheck.facts.nvml import collect_nvml
from envcheck.facts.rocm import collect_rocm
from envcheck.facts.snapshot import Facts
from envcheck.facts.toolchain_scan import collect_toolchain

# Running the collector in another interpreter costs one interpreter start (~20-50 ms); a minute means it is stuck.
_FOREIGN_TIMEOUT_S = 60.0


def request_for(modules: set[str], sources: dict[str, set[str]]) -> dict[str, Any]:
    """The collector's request: which modules to locate and which source files to grep for which patterns."""
    return {
        "modules": sorted(modules),
        "sources": [{"file": f, "patterns": sorted(p)} for f, p in sorted(sources.items())],
    }


def collect(request: dict[str, Any], python: str | None = None, *, use_cache: bool = True) -> Facts:
    """Static facts of this interpreter, or of the interpreter at `python` (which need not have envcheck).

    NVML facts are machine-wide and always come from envcheck's own process: the checked interpreter need not
    have the bindings. They are read in a thread while the distributions are scanned, because NVML's
    initialisation can take a noticeable time on a GPU machine (the GPUs wake up without a persistence daemon).
    """
    nvml = _Background(collect_nvml)
    if use_cache:  # each distribution's parsed metadata, reused while its files are unchanged (envcheck.cache)
        from envcheck.cache import usable_dir

        directory = usable_dir()
        if directory is not None:
            request = {**request, "cache_dir": str(directory)}
    if python is None:
        raw = _collector.collect(request)
        origin = "local"
    else:
        raw = _collect_foreign(python, request)
        origin = f"python:{python}"
    _installer_beside_envcheck(raw)
    raw["envcheck_version"] = __version__
    raw["host"] = socket.gethostname()  # the machine, also with --python: the interpreter runs here
    facts = Facts.from_dict(raw, file=origin, origin=origin)
    # The KFD topology is a few small sysfs files (milliseconds): read in line, unlike NVML. The toolchain and
    # native libraries are read from files here too, in envcheck's process: the checked interpreter runs on this
    # machine, and these readers need envcheck's modules (the collector is stdlib-only).
    return dataclasses.replace(facts, nvml=nvml.result(), rocm=collect_rocm(), network=collect_network(),
                               toolchain=collect_toolchain(), native=collect_native(facts, use_cache=use_cache))


def _installer_beside_envcheck(raw: dict[str, Any]) -> None:
    """A uv that envcheck's own environment has (`pipx install envcheck-ml`, uv in envcheck's venv) can install
    into the checked one too (`uv pip --python PATH`): use it where the checked interpreter found none."""
    installer = raw.get("installer")
    if isinstance(installer, dict) and installer.get("uv") is None:
        installer["uv"] = _collector.tool_command("uv", sysconfig.get_path("scripts"))


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


def _collect_foreign(python: str, request: dict[str, Any]) -> dict[str, Any]:
    source = Path(_collector.__file__).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="envcheck-") as tmp:
        out = Path(tmp) / "facts.json"
        # `python -` reads the program from stdin, so sys.path[0] is the working directory, as for `python -m`.
        # The facts come back through a file: a .pth hook that prints must not corrupt them.
        try:
            # errors="replace": what the interpreter prints to stderr is shown, whatever its encoding.
            proc = subprocess.run(
                [python, "-", json.dumps(request), str(out)],
                input=source, capture_output=True, encoding="utf-8", errors="replace", timeout=_FOREIGN_TIMEOUT_S,
                check=False,
            )
        except FileNotFoundError:
            raise CollectError(f"--python {python}: no such file") from None
        except PermissionError:
            raise CollectError(f"--python {python}: not executable") from None
        except OSError as exc:
            raise CollectError(f"--python {python}: cannot run it ({exc.strerror or exc})") from None
        except subprocess.TimeoutExpired:
            raise CollectError(f"--python {python}: no answer within {_FOREIGN_TIMEOUT_S:.0f} s") from None
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            if tail.startswith("SyntaxError"):
                # The collector needs Python 3.8 (`from __future__ import annotations`, importlib.metadata).
                raise CollectError(f"--python {python}: this interpreter is too old for envcheck's fact collector "
                                   f"(Python 3.8 or later is needed): {tail}")
            raise CollectError(f"--python {python}: the fact collector failed (exit {proc.returncode}): {tail}")
        def unusable(_file: str, why: str) -> CollectError:
            return CollectError(f"--python {python}: the fact collector's output cannot be used: {why}")

        # The interpreter may be anything that answers to `python -`: its output is read like any input file.
        data = _files.load_json(out, error=unusable)
        info = data.get("python") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(info, dict):
            raise unusable(str(out), "not a facts object with a 'python' table")
        version = str(info.get("version", ""))[:64]
        if tuple(int(p) for p in version.split(".")[:2] if p.isascii() and p.isdigit()) < (3, 8):
            # Without importlib.metadata no distribution can be listed, and every package rule would pass
            # vacuously: refuse rather than report a clean environment that was never looked at.
            raise CollectError(f"--python {python}: Python {version} cannot be checked (Python 3.8 or later is "
                               "needed to list installed distributions)")
        return data


def load(file: str) -> Facts:
    """A snapshot saved by `envcheck facts -o FILE` ("-" reads standard input via the caller)."""
    return loads(_files.read_text(file, error=FactsError), file)


def loads(text: str, file: str) -> Facts:
    data = _files.loads_json(text, file, error=FactsError)
    return Facts.from_dict(data, file=file, origin=f"file:{file}")

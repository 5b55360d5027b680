"""Facts as read, before they become the snapshot model: the collector's answer for the checked interpreter (the
JSON-ready dict it writes) and the machine's network interfaces.

Kept apart from envcheck/sources/live/collect.py (which builds the model from them, and adds the machine's other facts)
so that this imports nothing but the standard library and the collector: envcheck/pipeline/replay.py reads these again
to tell whether a remembered check still holds, without the cost of the model's dataclasses.
"""

from __future__ import annotations

import json
import socket
import sysconfig

from envcheck.errors import CollectError
from envcheck.sources.live import _collector
from envcheck.version import __version__

TYPE_CHECKING = False  # not typing's: see the module's docstring
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# Running the collector in another interpreter costs one interpreter start (~20-50 ms) and a scan of the
# distributions (a second for thousands, cold): the user's bound (--probe-timeout, 120 s unless told) is generous.
DEFAULT_TIMEOUT_S = 120.0


def collect_raw(request: dict[str, Any], python: str | None = None, *,
                timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """The collector's facts of this interpreter (`python` None) or of the one at `python`, with what envcheck's
    own process adds: a uv beside envcheck, envcheck's version and the host name. `request` may name a
    `cache_dir` for the distributions' parsed metadata. `timeout_s`: the bound on the other interpreter, counted
    from its start (the user's --probe-timeout); past it, it and all it started are killed and CollectError says so."""
    raw = _collector.collect(request) if python is None else _collect_foreign(python, request, timeout_s)
    _installer_beside_envcheck(raw)
    raw["envcheck_version"] = __version__
    raw["host"] = socket.gethostname()  # the machine, also with --python: the interpreter runs here
    return raw


def interface_names() -> tuple[str, ...] | None:
    """The names of this machine's network interfaces, sorted (`socket.if_nameindex()`: one system call, no
    subprocess, no address lookups); None where the platform cannot list them (a sandbox without netlink)."""
    try:
        names = socket.if_nameindex()
    except (OSError, AttributeError):
        return None
    return tuple(sorted({name for _, name in names}))


def _installer_beside_envcheck(raw: dict[str, Any]) -> None:
    """A uv that envcheck's own environment has (`pipx install envcheck-ml`, uv in envcheck's venv) can install
    into the checked one too (`uv pip --python PATH`): use it where the checked interpreter found none."""
    installer = raw.get("installer")
    if isinstance(installer, dict) and installer.get("uv") is None:
        installer["uv"] = _collector.tool_command("uv", sysconfig.get_path("scripts"))


def _collect_foreign(python: str, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    import tempfile
    import time
    from pathlib import Path

    from envcheck.sources.probes.children import Spawned
    from envcheck.support.names import inline

    source = inline(Path(_collector.__file__).read_text(encoding="utf-8"))
    folder = tempfile.TemporaryDirectory(prefix="envcheck-")
    try:
        tmp = Path(folder.name)
        # The collector runs as a file of this folder of envcheck's own, so sys.path[0] is this folder: neither the
        # working folder (which `python -` and `python -m` put there, and where a project's platform.py would then
        # replace the standard library's) nor anything written into a pipe before the bound runs (an interpreter
        # whose start-up stalls never reads it). The working directory stays the user's: the collector reports it
        # and the import path a program started there sees. The facts come back through a file: a .pth hook that
        # prints must not corrupt them.
        program = tmp / "envcheck_collector.py"
        program.write_text(source, encoding="utf-8")
        deadline = time.monotonic() + timeout_s
        try:
            with (tmp / "stderr.txt").open("wb") as err:
                # The folder goes with the child, however envcheck ends (a signal: envcheck/sources/probes/guard.py).
                child = Spawned([python, str(program), json.dumps(request), str(tmp / "facts.json")], stderr=err,
                                after=folder.cleanup)
        except FileNotFoundError:
            raise CollectError(f"--python {python}: no such file") from None
        except PermissionError:
            raise CollectError(f"--python {python}: not executable") from None
        except OSError as exc:
            raise CollectError(f"--python {python}: cannot run it ({exc.strerror or exc})") from None
        try:
            code = child.wait(deadline)
            if code is None:
                raise CollectError(f"--python {python}: no answer within {timeout_s:g} s (the bound, --probe-timeout): "
                                   "its start-up or the fact collector hangs (a .pth file or sitecustomize that "
                                   "blocks, a wrapper script that waits, a network filesystem); it and everything it "
                                   "started were killed")
            return _answer(python, tmp, code)
        finally:
            child.close()
    finally:
        folder.cleanup()


def _answer(python: str, tmp: Path, code: int) -> dict[str, Any]:
    """The facts the collector wrote into the folder `tmp`, having exited with `code`."""
    out = tmp / "facts.json"
    if code != 0 or not out.exists():
        stderr = (tmp / "stderr.txt").read_bytes()[-4000:].decode("utf-8", errors="replace")
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        if tail.startswith("SyntaxError"):
            # The collector needs Python 3.8 (`from __future__ import annotations`, importlib.metadata).
            raise CollectError(f"--python {python}: this interpreter is too old for envcheck's fact collector "
                               f"(Python 3.8 or later is needed): {tail}")
        raise CollectError(f"--python {python}: the fact collector failed (exit {code}): {tail}")
    from envcheck.support import input_files

    def unusable(_file: str, why: str) -> CollectError:
        return CollectError(f"--python {python}: the fact collector's output cannot be used: {why}")

    # The interpreter may be anything that runs `python FILE`: its output is read like any input file.
    data = input_files.load_json(out, error=unusable)
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

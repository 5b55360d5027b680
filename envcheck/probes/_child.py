"""The probe child: runs inside the checked interpreter, in a process of its own, and imports torch there.

envcheck pipes this file to `PYTHON -X faulthandler - REQUEST OUT` (envcheck need not be installed in that
interpreter, so this module imports nothing from envcheck and keeps to the standard library outside the probes).
REQUEST is JSON: {"probes": [{"name": ..., "needs_torch": bool}, ...]}. For each probe the child appends two JSON
lines to OUT: {"event": "start", "probe": NAME} before it runs and {"event": "result", "probe": NAME, "result":
{...}} after. The parent reads OUT while the child runs: a probe that crashes or hangs the child is the one that
started and never finished, and the parent restarts a child for the rest. Results never travel through stdout,
which libraries print to.

A probe is a function `probe_<name with - as _>(ctx) -> dict` returning {"status": "ok" | "error" | "skipped",
"error_class", "message", "details", "cases"}. Probes guard on what torch offers (hasattr), not on version strings:
they must work from torch 2.0 to today.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import warnings
from typing import Any


class Context:
    """What probes share: torch once imported, and why it could not be, if so."""

    def __init__(self) -> None:
        self.torch: Any = None
        self.torch_error: dict[str, Any] | None = None
        self._import_record: dict[str, Any] = {}

    def import_torch(self) -> dict[str, Any]:
        """Import torch once; the record of how that went (time, warnings, exception) is the torch-import probe."""
        if self.torch is not None or self.torch_error is not None:
            return self._import_record
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                import torch
            except BaseException as exc:  # noqa: BLE001 - SystemExit from a broken build is a finding too
                absent = isinstance(exc, ModuleNotFoundError) and exc.name == "torch"
                self.torch_error = {"error_class": type(exc).__name__, "message": _first_line(exc),
                                    "absent": absent}
                torch = None
        elapsed = time.perf_counter() - start
        self.torch = torch
        record: dict[str, Any] = {
            "import_s": round(elapsed, 4),
            "warnings": [f"{w.category.__name__}: {_first_line(w.message)}" for w in caught][:20],
        }
        if torch is not None:
            record["version"] = str(getattr(torch, "__version__", ""))
            record["file"] = str(getattr(torch, "__file__", ""))
        self._import_record = record
        return record


def _first_line(exc: object) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def error_of(exc: BaseException) -> dict[str, Any]:
    """An exception as a case outcome: class and first line."""
    return {"status": "error", "error_class": type(exc).__name__, "message": _first_line(exc)}


def probe_torch_import(ctx: Context) -> dict[str, Any]:
    record = ctx.import_torch()
    if ctx.torch_error is not None:
        if ctx.torch_error["absent"]:
            return {"status": "skipped", "message": "torch is not installed", "details": record}
        return {"status": "error", "error_class": ctx.torch_error["error_class"],
                "message": ctx.torch_error["message"], "details": record}
    return {"status": "ok", "details": record}


def probe_torch_build(ctx: Context) -> dict[str, Any]:
    torch = ctx.torch
    details: dict[str, Any] = {
        "version": str(torch.__version__),
        "cuda": getattr(torch.version, "cuda", None),
        "hip": getattr(torch.version, "hip", None),
        "debug": bool(getattr(torch.version, "debug", False)),
        "cxx11_abi": _call(lambda: bool(torch._C._GLIBCXX_USE_CXX11_ABI)),
        # _cuda_getArchFlags gives the compiled list even with no GPU; get_arch_list() is [] without one (<2.13).
        "arch_list": _call(lambda: torch._C._cuda_getArchFlags().split()) if hasattr(torch._C, "_cuda_getArchFlags")
        else None,
        "cuda_compiled_version": _call(lambda: torch._C._cuda_getCompiledVersion())
        if hasattr(torch._C, "_cuda_getCompiledVersion") else None,
        "cudnn_version": _call(lambda: torch.backends.cudnn.version()),
        "mps_available": _call(lambda: bool(torch.backends.mps.is_available()))
        if hasattr(torch.backends, "mps") else None,
    }
    available = _call(lambda: bool(torch.cuda.is_available()))
    details["cuda_available"] = available
    devices = []
    if available:
        details["nccl_version"] = _call(lambda: ".".join(str(p) for p in torch.cuda.nccl.version())
                                        if isinstance(torch.cuda.nccl.version(), tuple)
                                        else str(torch.cuda.nccl.version()))
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            uuid = getattr(props, "uuid", None)  # from torch 2.5; matched to NVML's "GPU-..." by the parent
            devices.append({
                "index": i,
                "name": props.name,
                "capability": f"{props.major}.{props.minor}",
                "memory_mib": int(props.total_memory // (1024 * 1024)),
                "uuid": f"GPU-{uuid}" if uuid is not None and not str(uuid).startswith(("GPU-", "MIG-")) else
                (str(uuid) if uuid is not None else None),
            })
    details["devices"] = devices
    return {"status": "ok", "details": details}


def _call(fn: Any) -> Any:
    """fn() or None: build queries differ between torch versions and builds, and none of them is the finding."""
    try:
        return fn()
    except Exception:  # noqa: BLE001
        return None


def _torch_missing(ctx: Context) -> bool:
    ctx.import_torch()
    return ctx.torch is None


PROBE_FUNCTIONS_PREFIX = "probe_"


def _function_for(name: str) -> Any:
    return globals().get(PROBE_FUNCTIONS_PREFIX + name.replace("-", "_"))


def _write(out: Any, record: dict[str, Any]) -> None:
    out.write(json.dumps(record, default=str) + "\n")
    out.flush()


def main(argv: list[str]) -> None:
    request = json.loads(argv[1])
    ctx = Context()
    # Line-buffered append: every line reaches the file (and so the parent) before the next probe starts.
    with open(argv[2], "a", encoding="utf-8", buffering=1) as out:
        for item in request["probes"]:
            name = item["name"]
            _write(out, {"event": "start", "probe": name})
            start = time.perf_counter()
            fn = _function_for(name)
            result: dict[str, Any]
            if item.get("needs_torch", True) and _torch_missing(ctx):
                error = ctx.torch_error or {}
                result = {"status": "skipped", "message": "torch is not installed" if error.get("absent") else
                          f"torch failed to import ({error.get('error_class')}: {error.get('message')})"}
            elif fn is None:
                result = {"status": "skipped", "message": f"this child has no probe {name!r}"}
            else:
                try:
                    result = fn(ctx)
                except BaseException as exc:  # noqa: BLE001 - a probe's exception is its result, whatever it is
                    result = error_of(exc)
                    result["details"] = {"traceback": traceback.format_exc()[-2000:]}
            result["wall_s"] = round(time.perf_counter() - start, 4)
            _write(out, {"event": "result", "probe": name, "result": result})
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: CUDA and some extensions can hang or crash in their atexit handlers, and every
    # result is already written.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)

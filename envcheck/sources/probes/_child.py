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
they must work from torch 2.0 to today. Each probe, its case names (stable: rules match them) and its details keys
are documented in docs/probes.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import warnings
from typing import Any

# Spliced in where envcheck is not installed (envcheck/support/names.py says how).
from envcheck.support.names import canonical_name


class Context:
    """What probes share: torch once imported, and why it could not be, if so."""

    def __init__(self) -> None:
        self.torch: Any = None
        self.torch_error: dict[str, Any] | None = None
        self._import_record: dict[str, Any] = {}
        self.cache: dict[str, Any] = {}  # what several probes ask once per child (CUDA devices)
        # Set by a case that left a sticky CUDA error: every later CUDA call of this process would raise it again,
        # so the child stops after the current probe and the runner starts a fresh one for the rest.
        self.poisoned: str | None = None
        # The extension-imports probe: what it will import, looked for by a copy of this process while this one
        # imports torch (scan_extensions), then its imports, started right after torch is imported so that they run
        # while this process runs the other probes (begin_extension_imports); collected in the probe's turn, last.
        self.ext_scanner: _Forked | None = None
        self.ext_begun: _ExtBegun | None = None
        self.scratch: str | None = None  # the runner's folder for this child, removed by the runner whatever happens

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
        for i in range(_call(lambda: int(torch.cuda.device_count())) or 0):
            devices.append(_describe_device(torch, i))
    details["devices"] = devices
    return {"status": "ok", "details": details}


def _describe_device(torch: Any, index: int) -> dict[str, Any]:
    """One CUDA device as torch numbers it; a device torch cannot describe (a MIG parent without instances, a
    broken NVML-based check) keeps its index and the error, and the other devices and the arch list survive it."""
    try:
        props = torch.cuda.get_device_properties(index)
    except Exception as exc:  # noqa: BLE001
        return {"index": index, "name": None, "capability": None, "memory_mib": None, "uuid": None,
                "error": "%s: %s" % (type(exc).__name__, _first_line(exc))}
    uuid = getattr(props, "uuid", None)  # torch >= 2.5
    return {
        "index": index,
        "name": str(props.name),
        "capability": "%d.%d" % (props.major, props.minor),
        "memory_mib": int(props.total_memory // (1024 * 1024)),
        # torch's string as it is: the bare UUID of a GPU, or of a MIG instance, whose NVML name is "MIG-<uuid>";
        # the parent matches it to NVML ignoring the "GPU-" / "MIG-" prefix, which only NVML writes.
        "uuid": str(uuid) if uuid is not None else None,
    }


def _call(fn: Any) -> Any:
    """fn() or None: build queries differ between torch versions and builds, and none of them is the finding."""
    try:
        return fn()
    except Exception:  # noqa: BLE001
        return None


# --- shared helpers for the probes below ------------------------------------------------------------------------
# A case outcome is {"status": "ok" | "error" | "skipped", "error_class", "message", ...probe-specific keys,
# "warnings"}: the errors of individual cases are the data the rules read, so a probe whose cases fail still has
# status "ok". Case names are documented in docs/probes.md and addressed by rules: never rename one.

# SDPA dtype matrix: (query dtype, key/value dtype). Same-dtype baselines first, then the mixes seen in the wild
# (Dia / metavoice: fp32 query, fp16 or bf16 KV cache).
SDPA_DTYPE_PAIRS = (
    ("float32", "float32"),
    ("float16", "float16"),
    ("bfloat16", "bfloat16"),
    ("float32", "float16"),
    ("float32", "bfloat16"),
)
# Autocast modes tried per device type; "eager" is no autocast. Autocast only casts tensors on its own device type.
AUTOCAST_MODES = {
    "cpu": ("eager", "autocast-bfloat16", "autocast-float16"),
    "cuda": ("eager", "autocast-float16", "autocast-bfloat16"),
}
# SDPA backend matrix on CUDA: short name -> (SDPBackend member, torch.backends.cuda.sdp_kernel flag, can_use_* fn).
SDPA_BACKENDS = (
    ("flash", "FLASH_ATTENTION", "enable_flash", "can_use_flash_attention"),
    ("efficient", "EFFICIENT_ATTENTION", "enable_mem_efficient", "can_use_efficient_attention"),
    ("cudnn", "CUDNN_ATTENTION", "enable_cudnn", "can_use_cudnn_attention"),
    ("math", "MATH", "enable_math", None),
)
SDPA_BACKEND_DTYPES = ("float16", "bfloat16", "float32")
SDPA_SHAPE = (1, 2, 4, 8)  # batch, heads, sequence, head dim: tiny, and a head dim every fused kernel accepts
_MAX_WARNINGS = 20


def _warning_texts(caught: Any) -> list[str]:
    texts = []
    for w in caught[:_MAX_WARNINGS]:
        texts.append("%s: %s" % (w.category.__name__, str(w.message).strip()[:500]))
    return texts


def _attempt(fn: Any) -> dict[str, Any]:
    """Run fn() (which returns extra keys for an ok outcome) and return the case outcome, warnings included."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            extra = fn()
        except Exception as exc:  # noqa: BLE001 - a case's exception is its outcome
            outcome = error_of(exc)
        else:
            outcome = {"status": "ok", "error_class": None, "message": None}
            outcome.update(extra or {})
    outcome["warnings"] = _warning_texts(caught)
    return outcome


def _skipped_case(message: str, **extra: Any) -> dict[str, Any]:
    outcome: dict[str, Any] = {"status": "skipped", "error_class": None, "message": message, "warnings": []}
    outcome.update(extra)
    return outcome


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def _torch_version(ctx: Context) -> str:
    return str(getattr(ctx.torch, "__version__", ""))


def _cuda(ctx: Context) -> dict[str, Any]:
    """Whether CUDA is usable and the devices ("cuda:0", ...), asked once per child; warnings kept (an old driver
    makes torch.cuda.is_available() warn and return False)."""
    if "cuda" in ctx.cache:
        return dict(ctx.cache["cuda"])
    torch = ctx.torch
    info: dict[str, Any] = {"available": False, "devices": [], "build": getattr(torch.version, "cuda", None),
                            "hip": getattr(torch.version, "hip", None), "error": None}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if bool(torch.cuda.is_available()):
                info["available"] = True
                info["devices"] = ["cuda:%d" % i for i in range(int(torch.cuda.device_count()))]
        except Exception as exc:  # noqa: BLE001 - a broken CUDA setup is a finding, not a probe failure
            info["error"] = "%s: %s" % (type(exc).__name__, _first_line(exc))
    info["warnings"] = _warning_texts(caught)
    ctx.cache["cuda"] = info
    return dict(info)


def _device_groups(ctx: Context) -> dict[str, str]:
    """"cuda:N" -> the device whose cases stand for it: the first of the same name and capability. Identical GPUs
    answer identically (8x H100: one device's cases, not eight), and each copy says which device ran it."""
    if "groups" in ctx.cache:
        return dict(ctx.cache["groups"])
    torch = ctx.torch
    groups: dict[str, str] = {}
    first: dict[tuple[str, str], str] = {}
    for device in _cuda(ctx)["devices"]:
        props = _call(lambda device=device: torch.cuda.get_device_properties(device))
        key = (str(props.name), "%d.%d" % (props.major, props.minor)) if props is not None else (device, "")
        groups[device] = first.setdefault(key, device)
    ctx.cache["groups"] = groups
    return dict(groups)


def _copy_twins(cases: dict[str, dict[str, Any]], groups: dict[str, str]) -> None:
    """Give each device that was not probed its representative's cases, marked `probed_on`."""
    for device, representative in groups.items():
        if device == representative:
            continue
        prefix = representative + "/"
        for name in [n for n in cases if n.startswith(prefix)]:
            cases[device + "/" + name[len(prefix):]] = dict(cases[name], probed_on=representative)


# The CUDA errors after which the context is unusable: every later CUDA call of the process fails the same way
# (CUDA runtime API, "sticky" errors; torch >= 2.8 raises them as torch.AcceleratorError).
_STICKY = ("illegal memory access", "illegal address", "unspecified launch failure", "device-side assert",
           "misaligned address", "illegal instruction", "uncorrectable ecc error", "launch timed out",
           "hardware stack error", "invalid program counter")


def _sticky(outcome: dict[str, Any]) -> bool:
    message = str(outcome.get("message") or "").lower()
    return outcome.get("status") == "error" and any(text in message for text in _STICKY)


def _device_context(torch: Any, device: str) -> Any:
    """`with torch.cuda.device(N)` for a CUDA device: torch's kernel choice (sdp_utils' hardware checks, can_use_*)
    and autocast's bf16 check read the *current* device's properties, not the tensors' device."""
    import contextlib

    if device.startswith("cuda:"):
        return torch.cuda.device(int(device.split(":")[1]))
    return contextlib.nullcontext()


class _DeviceRun:
    """Runs one device's cases with that device current; after a sticky CUDA error the rest of the device's cases
    are skipped (they would only repeat it) and the context is marked poisoned."""

    def __init__(self, ctx: Context, device: str) -> None:
        self.ctx = ctx
        self.device = device
        self.sticky_case: str | None = None

    def case(self, name: str, fn: Any, **skipped_extra: Any) -> dict[str, Any]:
        if self.sticky_case is not None:
            return _skipped_case("not run: case %s left a sticky CUDA error on %s; the next probe runs in a fresh "
                                 "process" % (self.sticky_case, self.device), **skipped_extra)
        try:
            with _device_context(self.ctx.torch, self.device):
                outcome = dict(fn())
        except Exception as exc:  # noqa: BLE001 - making the device current can itself fail (a lost GPU)
            outcome = error_of(exc)
            outcome["warnings"] = []
            outcome.update({k: v for k, v in skipped_extra.items() if k not in outcome})
        if self.device != "cpu" and _sticky(outcome):
            self.sticky_case = name
            self.ctx.poisoned = "%s: %s" % (name, outcome.get("message"))
        return outcome


def _sync(torch: Any, device: str) -> None:
    """Wait for the device, so an asynchronous kernel failure is raised by the case that caused it."""
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _autocast_active(torch: Any, device_type: str) -> bool | None:
    """Whether autocast is on for device_type right now (torch silently disables an unsupported autocast dtype:
    fp16 on CPU before 2.3 or so, with a UserWarning)."""
    try:
        return bool(torch.is_autocast_enabled(device_type))  # torch >= 2.4 takes the device type
    except TypeError:
        pass
    except Exception:  # noqa: BLE001
        return None
    if device_type == "cpu" and hasattr(torch, "is_autocast_cpu_enabled"):
        return bool(torch.is_autocast_cpu_enabled())
    if device_type == "cuda":
        return bool(torch.is_autocast_enabled())
    return None


def _under_mode(torch: Any, device: str, mode: str, fn: Any) -> dict[str, Any]:
    """fn() as a case, outside autocast ("eager") or inside `torch.autocast(device type, dtype)`."""
    if mode == "eager":
        return _attempt(fn)
    device_type = device.split(":")[0]
    dtype = getattr(torch, mode.split("-", 1)[1])

    def body() -> dict[str, Any]:
        with torch.autocast(device_type, dtype=dtype):
            if _autocast_active(torch, device_type) is False:
                return {"_autocast_off": True}
            return dict(fn() or {})

    outcome = _attempt(body)
    if outcome.get("status") == "error" and "does not support bfloat16" in str(outcome.get("message")):
        # torch 2.0-2.2 refuse bf16 autocast where the current device lacks bf16 (torch.cuda.is_bf16_supported):
        # the device's limit, reported by the bf16 probe, not a failure of this case.
        return _skipped_case("torch %s refuses bfloat16 autocast on this device (%s)" % (torch.__version__,
                                                                                        outcome["message"]),
                             warnings=outcome["warnings"])
    if outcome.pop("_autocast_off", False):
        why = "; ".join(outcome["warnings"]) or "no warning"
        return _skipped_case("torch %s disabled %s autocast on %s (%s)" % (torch.__version__, mode.split("-", 1)[1],
                                                                           device_type, why),
                             warnings=outcome["warnings"])
    return outcome


# --- sdpa ---------------------------------------------------------------------------------------------------------


def _sdpa_apis(torch: Any) -> dict[str, Any]:
    backends_cuda = getattr(torch.backends, "cuda", None)
    try:
        import torch.nn.attention as attention
    except Exception:  # noqa: BLE001 - absent before torch 2.2
        attention = None
    sdp_backend = getattr(attention, "SDPBackend", None) or getattr(backends_cuda, "SDPBackend", None)
    return {
        "scaled_dot_product_attention": hasattr(torch.nn.functional, "scaled_dot_product_attention"),
        "torch.nn.attention.sdpa_kernel": hasattr(attention, "sdpa_kernel"),
        "torch.backends.cuda.sdp_kernel": hasattr(backends_cuda, "sdp_kernel"),
        "SDPBackend": sorted(getattr(sdp_backend, "__members__", {})) if sdp_backend is not None else None,
        "SDPAParams": hasattr(backends_cuda, "SDPAParams") or hasattr(torch._C, "_SDPAParams"),
        "can_use_flash_attention": hasattr(backends_cuda, "can_use_flash_attention"),
        "can_use_efficient_attention": hasattr(backends_cuda, "can_use_efficient_attention"),
        "can_use_cudnn_attention": hasattr(backends_cuda, "can_use_cudnn_attention"),
        "is_flash_attention_available": hasattr(backends_cuda, "is_flash_attention_available"),
    }


def _sdpa_tensor(torch: Any, dtype_name: str, device: str) -> Any:
    return torch.randn(*SDPA_SHAPE, dtype=getattr(torch, dtype_name), device=device)


def _sdpa_dtype_case(torch: Any, device: str, q_dtype: str, kv_dtype: str, mode: str) -> dict[str, Any]:
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def run() -> dict[str, Any]:
        q = _sdpa_tensor(torch, q_dtype, device)
        k = _sdpa_tensor(torch, kv_dtype, device)
        v = _sdpa_tensor(torch, kv_dtype, device)
        out = sdpa(q, k, v)
        _sync(torch, device)
        return {"out_dtype": _dtype_name(out.dtype)}

    outcome = _under_mode(torch, device, mode, run)
    outcome.setdefault("out_dtype", None)
    return outcome


def _sdpa_params(torch: Any, q: Any) -> tuple[Any, int | None]:
    """torch's SDPAParams for q = k = v (7 arguments from torch 2.5 with enable_gqa, 6 in 2.2-2.4), or None."""
    cls = getattr(torch.backends.cuda, "SDPAParams", None) or getattr(torch._C, "_SDPAParams", None)
    if cls is None:
        return None, None
    for args in ((q, q, q, None, 0.0, False, False), (q, q, q, None, 0.0, False)):
        try:
            return cls(*args), len(args)
        except TypeError:
            continue
    return None, None


def _backend_context(torch: Any, member: str, flag: str) -> tuple[Any, str]:
    """A context manager that allows only this backend, and the API that made it; raises if torch has none."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # torch >= 2.3
    except Exception:  # noqa: BLE001
        sdpa_kernel = None
    if sdpa_kernel is not None:
        backend = getattr(SDPBackend, member, None)
        if backend is None:
            raise LookupError("torch %s has no SDPBackend.%s" % (torch.__version__, member))
        return sdpa_kernel(backend), "torch.nn.attention.sdpa_kernel"
    sdp_kernel = getattr(torch.backends.cuda, "sdp_kernel", None)  # torch 2.0 - 2.2
    if sdp_kernel is None:
        raise LookupError("torch %s has neither sdpa_kernel nor sdp_kernel" % torch.__version__)
    flags = {"enable_flash": False, "enable_math": False, "enable_mem_efficient": False, "enable_cudnn": False}
    if flag == "enable_cudnn":
        try:
            return sdp_kernel(**dict(flags, enable_cudnn=True)), "torch.backends.cuda.sdp_kernel"
        except TypeError:
            raise LookupError("torch %s has no cuDNN attention backend" % torch.__version__) from None
    flags[flag] = True
    try:
        return sdp_kernel(**flags), "torch.backends.cuda.sdp_kernel"
    except TypeError:  # before enable_cudnn existed
        del flags["enable_cudnn"]
        return sdp_kernel(**flags), "torch.backends.cuda.sdp_kernel"


def _sdpa_backend_case(torch: Any, device: str, backend: tuple[str, str, str, str | None],
                       dtype_name: str, apis_used: dict[str, Any]) -> dict[str, Any]:
    _short, member, flag, can_use_name = backend
    try:
        context, api = _backend_context(torch, member, flag)
    except LookupError as exc:
        return _skipped_case(str(exc), out_dtype=None, can_use=None, reasons=[])
    apis_used["backend_api"] = api
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def run() -> dict[str, Any]:
        q = _sdpa_tensor(torch, dtype_name, device)
        with context:
            out = sdpa(q, q, q)
        _sync(torch, device)
        return {"out_dtype": _dtype_name(out.dtype)}

    outcome = _attempt(run)
    outcome.setdefault("out_dtype", None)
    outcome["can_use"], outcome["reasons"] = _sdpa_can_use(torch, device, dtype_name, can_use_name, apis_used)
    return outcome


def _sdpa_can_use(torch: Any, device: str, dtype_name: str, can_use_name: str | None,
                  apis_used: dict[str, Any]) -> tuple[bool | None, list[str]]:
    """torch's own verdict and reasons from `can_use_*(params, debug=True)`, where the API exists.

    With debug, torch TORCH_WARNs each reason. These functions are bare pybind bindings, so a reason may arrive as
    a Python UserWarning or only as a C++ log line on file descriptor 2: both are captured.
    """
    fn = getattr(torch.backends.cuda, can_use_name, None) if can_use_name else None
    if fn is None:
        return None, []
    verdict: bool | None = None
    reasons: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            q = _sdpa_tensor(torch, dtype_name, device)
            params, nargs = _sdpa_params(torch, q)
            if params is None:
                return None, []
            apis_used["SDPAParams_args"] = nargs
            verdict, logged = _with_fd2_captured(lambda: bool(fn(params, True)))
            reasons += _cpp_warnings(logged)
        except Exception as exc:  # noqa: BLE001 - 2.2.2 raised here without a driver; the reason is the finding
            reasons.append("%s: %s" % (type(exc).__name__, _first_line(exc)))
    return verdict, [str(w.message).strip()[:500] for w in caught[:_MAX_WARNINGS]] + reasons[:_MAX_WARNINGS]


def _with_fd2_captured(fn: Any) -> tuple[Any, str]:
    """(fn(), what native code wrote to file descriptor 2 meanwhile)."""
    import faulthandler
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    # A segfault inside fn() would write its faulthandler traceback into the sink, which dies with the process:
    # point faulthandler at the real stderr meanwhile, so the runner's stderr tail keeps it.
    handler = faulthandler.is_enabled()
    try:
        with tempfile.TemporaryFile() as sink:
            if handler:
                faulthandler.enable(file=saved)  # a file descriptor is accepted (CPython's faulthandler_get_fileno)
            os.dup2(sink.fileno(), 2)
            try:
                value = fn()
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                if handler:
                    faulthandler.enable(file=sys.stderr)
            sink.seek(0)
            text = sink.read(64 * 1024).decode("utf-8", errors="replace")
    finally:
        os.close(saved)
    return value, text


def _cpp_warnings(text: str) -> list[str]:
    """The messages of c10 log lines: `[W... file.cpp:123] Warning: MESSAGE (function NAME)`."""
    messages = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        head, sep, rest = line.partition("] Warning: ")
        message = rest if sep and head.startswith("[W") else line
        if message.endswith(")") and " (function " in message:
            message = message[:message.rindex(" (function ")]
        messages.append(message[:500])
    return messages


def probe_sdpa(ctx: Context) -> dict[str, Any]:
    torch = ctx.torch
    apis = _sdpa_apis(torch)
    cuda = _cuda(ctx)
    details: dict[str, Any] = {"torch": _torch_version(ctx), "apis": apis, "devices": ["cpu", *cuda["devices"]],
                               "cuda": cuda, "shape": list(SDPA_SHAPE)}
    if not apis["scaled_dot_product_attention"]:
        return {"status": "skipped", "details": details, "message": "torch %s has no "
                "torch.nn.functional.scaled_dot_product_attention (added in torch 2.0)" % _torch_version(ctx)}
    backends_cuda = torch.backends.cuda
    details["sdp_enabled"] = {
        name: _call(lambda fn=fn: bool(getattr(backends_cuda, fn)())) if hasattr(backends_cuda, fn) else None
        for name, fn in (("flash", "flash_sdp_enabled"), ("efficient", "mem_efficient_sdp_enabled"),
                         ("math", "math_sdp_enabled"), ("cudnn", "cudnn_sdp_enabled"))
    }
    details["flash_attention_available"] = (_call(lambda: bool(backends_cuda.is_flash_attention_available()))
                                            if apis["is_flash_attention_available"] else None)
    cases: dict[str, dict[str, Any]] = {}
    groups = _device_groups(ctx)
    details["probed_devices"] = sorted(set(groups.values()))
    apis_used: dict[str, Any] = {"backend_api": None, "SDPAParams_args": None}
    for device in ["cpu", *details["probed_devices"]]:
        run = _DeviceRun(ctx, device)
        for q_dtype, kv_dtype in SDPA_DTYPE_PAIRS:
            for mode in AUTOCAST_MODES[device.split(":")[0]]:
                name = "%s/q=%s,kv=%s/%s" % (device, q_dtype, kv_dtype, mode)
                cases[name] = run.case(name, lambda d=device, q=q_dtype, kv=kv_dtype, m=mode: _sdpa_dtype_case(
                    torch, d, q, kv, m), out_dtype=None)
        if device == "cpu":
            continue
        for backend in SDPA_BACKENDS:
            for dtype_name in SDPA_BACKEND_DTYPES:
                name = "%s/backend=%s,dtype=%s" % (device, backend[0], dtype_name)
                cases[name] = run.case(name, lambda d=device, b=backend, t=dtype_name: _sdpa_backend_case(
                    torch, d, b, t, apis_used), out_dtype=None, can_use=None, reasons=[])
    _copy_twins(cases, groups)
    details.update(apis_used)
    return {"status": "ok", "details": details, "cases": cases}


# --- transformer-fastpath -------------------------------------------------------------------------------------


def _no_grad(torch: Any) -> Any:
    return torch.inference_mode() if hasattr(torch, "inference_mode") else torch.no_grad()


def probe_transformer_fastpath(ctx: Context) -> dict[str, Any]:
    torch = ctx.torch
    cuda = _cuda(ctx)
    mha: Any = getattr(torch.backends, "mha", None)
    details: dict[str, Any] = {
        "torch": _torch_version(ctx),
        "mha_fastpath_enabled": _call(lambda: bool(mha.get_fastpath_enabled()))
        if hasattr(mha, "get_fastpath_enabled") else None,  # torch >= 2.3
        "grad_mode": "inference_mode" if hasattr(torch, "inference_mode") else "no_grad",
        "fastpath_detectable": hasattr(torch, "_transformer_encoder_layer_fwd"),
        "devices": ["cpu", *cuda["devices"]],
    }
    modes = {"cpu": ("eager", "autocast-bfloat16"), "cuda": ("eager", "autocast-bfloat16", "autocast-float16")}
    original = getattr(torch, "_transformer_encoder_layer_fwd", None)
    trace: list[str] = []  # "forward" when the layer was called, "fastpath" when torch took the fast path

    def counting(*args: Any, **kwargs: Any) -> Any:
        trace.append("fastpath")
        return original(*args, **kwargs)  # type: ignore[misc]

    cases: dict[str, dict[str, Any]] = {}
    if original is not None:
        torch._transformer_encoder_layer_fwd = counting
    groups = _device_groups(ctx)
    try:
        for device in ["cpu", *sorted(set(groups.values()))]:
            device_run = _DeviceRun(ctx, device)
            for mode in modes[device.split(":")[0]]:
                def run(device: str = device) -> dict[str, Any]:
                    torch.manual_seed(0)
                    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                                             batch_first=True).to(device).eval()
                    src = torch.randn(2, 5, 16, device=device)
                    with _no_grad(torch):
                        trace.append("forward")
                        out = layer(src)
                    _sync(torch, device)
                    return {"out_dtype": _dtype_name(out.dtype)}

                del trace[:]
                name = "%s/%s" % (device, mode)
                outcome = device_run.case(name, lambda run=run, device=device, mode=mode: _under_mode(
                    torch, device, mode, run), out_dtype=None)
                outcome.setdefault("out_dtype", None)
                # True when torch entered the fast path, even if it then raised (the 2.2-2.5 CPU failure is inside
                # it); None when unknown: the layer was never called, or this torch has no fast-path function.
                outcome["fastpath"] = ("fastpath" in trace if original is not None and "forward" in trace
                                       else None)
                cases[name] = outcome
        _copy_twins(cases, groups)
    finally:
        if original is not None:
            torch._transformer_encoder_layer_fwd = original
    return {"status": "ok", "details": details, "cases": cases}


# --- bf16 ---------------------------------------------------------------------------------------------------------


def _bf16_matmul(torch: Any, device: str) -> dict[str, Any]:
    a = torch.randn(8, 8, device=device).to(torch.bfloat16)
    out = a @ a
    _sync(torch, device)
    return {"out_dtype": _dtype_name(out.dtype)}


def _is_bf16_supported(torch: Any, index: int) -> dict[str, Any]:
    """torch's answer for device `index`, native only where torch can say so (including_emulation, 2.4+)."""
    answer: dict[str, Any] = {"is_bf16_supported": None, "including_emulation_kwarg": None,
                              "is_bf16_supported_error": None}
    fn = getattr(torch.cuda, "is_bf16_supported", None)
    if fn is None:
        return answer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with torch.cuda.device(index):
                try:
                    answer["is_bf16_supported"] = bool(fn(including_emulation=False))
                    answer["including_emulation_kwarg"] = True
                except TypeError:  # torch < 2.4: the answer may include emulation (2.3 does)
                    answer["is_bf16_supported"] = bool(fn())
                    answer["including_emulation_kwarg"] = False
        except Exception as exc:  # noqa: BLE001 - 2.4.1 raised without a driver
            answer["is_bf16_supported_error"] = "%s: %s" % (type(exc).__name__, _first_line(exc))
    return answer


def probe_bf16(ctx: Context) -> dict[str, Any]:
    torch = ctx.torch
    cuda = _cuda(ctx)
    details: dict[str, Any] = {"torch": _torch_version(ctx), "cuda": cuda}
    cases: dict[str, dict[str, Any]] = {"cpu": _attempt(lambda: _bf16_matmul(torch, "cpu"))}
    cases["cpu"].setdefault("out_dtype", None)
    groups = _device_groups(ctx)
    for device in sorted(set(groups.values())):
        index = int(device.split(":")[1])
        outcome = _DeviceRun(ctx, device).case(device, lambda device=device: _attempt(
            lambda: _bf16_matmul(torch, device)), out_dtype=None)
        outcome.setdefault("out_dtype", None)
        props = _call(lambda index=index: torch.cuda.get_device_properties(index))
        outcome["name"] = str(props.name) if props is not None else None
        outcome["capability"] = "%d.%d" % (props.major, props.minor) if props is not None else None
        outcome["native"] = props.major >= 8 if props is not None else None  # bf16 tensor cores: sm80 (Ampere)
        outcome.update(_is_bf16_supported(torch, index))
        cases[device] = outcome
    for device, representative in groups.items():
        if device != representative:
            cases[device] = dict(cases[representative], probed_on=representative)
    if not cuda["devices"]:
        return {"status": "skipped", "message": "no CUDA device", "details": details, "cases": cases}
    return {"status": "ok", "details": details, "cases": cases}


# --- apex-fused-norm ------------------------------------------------------------------------------------------

APEX_NORMS = ("FusedRMSNorm", "FusedLayerNorm")
APEX_DTYPE_PAIRS = (("float32", "float32"), ("float16", "float16"), ("float32", "float16"))  # (input, weight)


def probe_apex_fused_norm(ctx: Context) -> dict[str, Any]:
    import importlib.util

    details: dict[str, Any] = {}
    spec = importlib.util.find_spec("apex")
    if spec is None:
        return {"status": "skipped", "message": "NVIDIA apex is not installed"}
    locations = list(spec.submodule_search_locations or [])
    details["apex_location"] = locations[0] if locations else spec.origin
    if not any(os.path.isdir(os.path.join(loc, "normalization")) for loc in locations):
        return {"status": "skipped", "details": details,
                "message": "the installed apex is not NVIDIA apex (no apex.normalization)"}
    extension = importlib.util.find_spec("fused_layer_norm_cuda")
    if extension is None:
        return {"status": "skipped", "details": details,
                "message": "apex has no CUDA extensions (fused_layer_norm_cuda missing)"}
    details["fused_layer_norm_cuda"] = extension.origin
    ctx.import_torch()  # the probe reaches torch only now, so it need not be imported for an absent apex
    torch = ctx.torch
    if torch is None:
        error = ctx.torch_error or {}
        return {"status": "skipped", "details": details, "message": "torch is not installed" if error.get("absent")
                else "torch failed to import (%s: %s)" % (error.get("error_class"), error.get("message"))}
    cuda = _cuda(ctx)
    details["cuda"] = cuda
    if not cuda["devices"]:
        return {"status": "skipped", "message": "no CUDA device", "details": details}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            import apex.normalization as normalization
        except Exception as exc:  # noqa: BLE001 - apex built against another torch: the import error is the finding
            result = error_of(exc)
            result["details"] = dict(details, stage="import apex.normalization", warnings=_warning_texts(caught))
            return result
    details["import_warnings"] = _warning_texts(caught)
    device = cuda["devices"][0]
    cases: dict[str, dict[str, Any]] = {}
    for norm in APEX_NORMS:
        cls = getattr(normalization, norm, None)
        for input_dtype, weight_dtype in APEX_DTYPE_PAIRS:
            name = "%s/%s/input=%s,weight=%s" % (device, norm, input_dtype, weight_dtype)
            if cls is None:
                cases[name] = _skipped_case("this apex has no apex.normalization.%s" % norm, out_dtype=None)
                continue

            def run(cls: Any = cls, input_dtype: str = input_dtype, weight_dtype: str = weight_dtype) -> Any:
                module = cls(16).to(device=device, dtype=getattr(torch, weight_dtype))
                x = torch.randn(2, 16, device=device, dtype=getattr(torch, input_dtype))
                out = module(x)
                _sync(torch, device)
                return {"out_dtype": _dtype_name(out.dtype)}

            cases[name] = _attempt(run)
            cases[name].setdefault("out_dtype", None)
    return {"status": "ok", "details": details, "cases": cases}


# --- safetensors ----------------------------------------------------------------------------------------------


def probe_safetensors(ctx: Context) -> dict[str, Any]:
    import importlib.util
    import tempfile

    if importlib.util.find_spec("safetensors") is None:
        return {"status": "skipped", "message": "safetensors is not installed"}
    torch = ctx.torch
    details: dict[str, Any] = {"torch": _torch_version(ctx), "safetensors": None}
    try:
        import safetensors
        from safetensors.torch import load_file, save_file

        details["safetensors"] = str(getattr(safetensors, "__version__", "")) or None
        tensors = {"weight": torch.arange(12, dtype=torch.float32).reshape(3, 4),
                   "half": torch.arange(6).to(torch.float16), "bf16": torch.arange(6).to(torch.bfloat16)}
        with tempfile.TemporaryDirectory(prefix="envcheck-safetensors-") as tmp:
            path = os.path.join(tmp, "probe.safetensors")
            save_file(tensors, path)
            loaded = load_file(path)
    except Exception as exc:  # noqa: BLE001 - the round trip failing is the finding
        result = error_of(exc)
        result["details"] = details
        return result
    for key, tensor in tensors.items():
        back = loaded.get(key)
        if back is None or back.dtype != tensor.dtype or not bool(torch.equal(back, tensor)):
            return {"status": "error", "error_class": "RoundTripMismatch", "details": details,
                    "message": "tensor %r (%s) differs after save_file/load_file" % (key, _dtype_name(tensor.dtype))}
    details["tensors"] = {key: _dtype_name(t.dtype) for key, t in tensors.items()}
    return {"status": "ok", "details": details}


# --- extension-imports ----------------------------------------------------------------------------------------
# Every installed distribution that ships native code and builds on torch or NumPy is imported in a process of its
# own, so that an extension built for another torch, CUDA or NumPy (`undefined symbol`, `operator ... does not
# exist`, `compiled using NumPy 1.x`, `DLL load failed`) becomes a case naming the distribution. Where torch is
# imported in this process, each distribution gets an importer, several at once (_ext_lanes), so the probe costs
# about its slowest import, not their sum; else one importer takes them all in turn, importing torch once. A crash
# or hang costs the module being imported, and a new importer takes the rest of that distribution. The
# importer's code is _EXT_IMPORTER below: it runs in the checked interpreter too, so it keeps to the standard library.
# On Linux the importers are forked, so torch is not imported again in each: in a full check from a supervisor
# forked from this child right after it imported torch (before any probe touches CUDA or starts a thread), which
# stays clean for the importers after a crash; where forking is not safe (another thread, CUDA initialised, not
# Linux) each importer is a fresh interpreter.

_EXT_BASES = frozenset({"torch", "numpy"})
# Native torch extensions whose wheels declare no torch requirement (PyG's wheels, detectron2 and mmcv built from
# source, apex): known by name, since nothing in their metadata says that they build on torch.
_EXT_KNOWN = frozenset({"torch-scatter", "torch-sparse", "torch-cluster", "torch-spline-conv", "pyg-lib",
                        "detectron2", "mmcv", "mmcv-full", "apex", "flash-attn", "xformers", "deepspeed",
                        "torchvision", "torchaudio", "torchcodec", "vllm", "bitsandbytes", "auto-gptq",
                        "causal-conv1d", "mamba-ssm", "natten", "pytorch3d", "torch-tensorrt", "spconv"})
_EXT_SKIP_DIRS = ("tests", "test", "testing", "_tests")
_EXT_NESTED_MAX = 4  # nested extension modules imported per distribution, besides its top-level modules
# NumPy's C API is the table that `import_array()` fetches from NumPy's `_multiarray_umath`: the headers of NumPy 2
# name it `numpy._core._multiarray_umath` (and fall back to the old name on NumPy 1.x), those of NumPy 1.x only
# `numpy.core._multiarray_umath`. A module built against NumPy 2's headers runs with NumPy 2 (the ABI break was
# 1.x -> 2), so with NumPy 2 installed a distribution that builds only on NumPy and whose compiled modules name the
# new location is not imported: pandas, SciPy, scikit-learn, matplotlib would cost seconds and cannot hit the break.
_NUMPY2_HEADERS = b"numpy._core._multiarray_umath"
_NUMPY1_HEADERS = b"numpy.core._multiarray_umath"
_EXT_SCANNED_FILES = 64  # compiled modules read per distribution, until one uses NumPy's C API
_EXT_MODULE_TIMEOUT_S = 60.0  # one import; importing torch the first time counts against the first module
_EXT_BUDGET_S = 100.0  # the whole probe, under the runner's default per-probe timeout of 120 s
_EXT_LANES_MAX = 8  # importers at once, at most


def _requires_bases(requires: list[str]) -> set[str]:
    """Which of torch and numpy the unconditional Requires-Dist lines (no `extra ==` marker) name."""
    import re

    found = set()
    for line in requires:
        requirement, _, marker = line.partition(";")
        if "extra" in marker:
            continue
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        if match and canonical_name(match.group(1)) in _EXT_BASES:
            found.add(canonical_name(match.group(1)))
    return found


def _cuda_variant(folder: str) -> bool:
    """Whether a package folder is one per-CUDA-major variant of its parent: `cu12`, `cu13`, `foo_cu118`."""
    tail = folder.rsplit("_", 1)[-1]
    return tail[:2] == "cu" and tail[2:].isdigit()


def _defines_module(path: str, name: str) -> bool:
    """Whether a compiled file can be the Python module `name`: CPython imports it only if it exports
    `PyInit_<name>` (else `dynamic module does not define module export function`). A file with a module suffix
    that exports none is a library its package loads another way: torchaudio's `lib/_torchaudio.abi3.so` goes to
    `torch.ops.load_library`. Searched in the file's symbol names, memory-mapped, never loaded; unreadable: True,
    the import decides."""
    import mmap

    if not name.isascii():
        return True  # such a module exports PyInitU_ and a punycode name
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(b"PyInit_" + name.encode("ascii") + b"\0") >= 0
    except (OSError, ValueError):
        return True


def _ext_modules(dist: Any) -> tuple[list[str], int, list[str]]:
    """(modules to import, native files, the first compiled modules' paths) of a distribution, from its RECORD: its
    top-level packages and extension modules, then up to _EXT_NESTED_MAX nested Python extension modules (a file
    named with a CPython extension suffix: `_C.cpython-311-x86_64-linux-gnu.so`, `_C.abi3.so`, `_C.pyd`, and that
    exports the module's init function; a bare `lib.so`, or a suffixed file without one, is a shared library that
    its package loads itself, not a module).
    Per-CUDA-major variants of a package side by side (cuda-core's `cuda/core/cu12/` and `cu13/`) are not imported
    by name: the package imports the variant for the CUDA it finds and takes over its namespace (cuda.core copies
    cu13's `__path__` over its own, so `cuda.core.cu12` is no module on a healthy CUDA 13 stack), and a variant
    for another CUDA cannot load there anyway. The package above them is imported instead, which loads the one the
    stack uses."""
    import importlib.machinery

    tagged = tuple(s for s in importlib.machinery.EXTENSION_SUFFIXES if s != ".so")
    native = 0
    top: dict[str, str | None] = {}  # top-level module -> its compiled file (None: a package)
    nested: dict[str, str | None] = {}
    files: list[str] = []
    for entry in dist.files or []:
        path = str(entry).replace("\\", "/")
        if path.startswith(("..", "/")) or ".dist-info/" in path or ".data/" in path:
            continue
        parts = path.split("/")
        base = parts[-1]
        is_native = base.endswith((".so", ".pyd")) or ".so." in base
        native += is_native
        module_suffix = next((s for s in tagged if base.endswith(s)), None)
        if module_suffix is not None and len(files) < _EXT_SCANNED_FILES:
            files.append(str(dist.locate_file(entry)))
        if len(parts) == 2 and base == "__init__.py":
            top[parts[0]] = None
        elif len(parts) == 1 and module_suffix is not None:
            top.setdefault(base[: -len(module_suffix)], str(dist.locate_file(entry)))
        elif module_suffix is not None and not any(p in _EXT_SKIP_DIRS for p in parts[:-1]) and \
                all(p.isidentifier() for p in parts[:-1]):
            variant = next((i for i, p in enumerate(parts[:-1]) if i and _cuda_variant(p)), None)
            if variant is not None:
                nested.setdefault(".".join(parts[:variant]), None)
            else:
                nested.setdefault(".".join([*parts[:-1], base[: -len(module_suffix)]]), str(dist.locate_file(entry)))

    def importable(module: str, path: str | None) -> bool:
        return path is None or _defines_module(path, module.rsplit(".", 1)[-1])

    names = sorted((m for m, p in top.items() if m.isidentifier() and importable(m, p)),
                   key=lambda m: (m.startswith("_"), m))
    chosen: list[str] = []
    for module in sorted(nested, key=lambda m: (m.count("."), m)):
        if len(chosen) == _EXT_NESTED_MAX:
            break
        if module not in top and importable(module, nested[module]):
            chosen.append(module)
    return names + chosen, native, files


def _built_for_numpy2(files: list[str]) -> bool:
    """Whether the first of `files` that uses NumPy's C API was compiled against NumPy 2's headers (read, not
    loaded; memory-mapped, so a large module costs a page-cache scan)."""
    import mmap

    for path in files:
        try:
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if data.find(_NUMPY2_HEADERS) >= 0:
                    return True
                if data.find(_NUMPY1_HEADERS) >= 0:
                    return False
        except (OSError, ValueError):  # unreadable or empty: import it, as before
            return False
    return False


def _numpy_major() -> int | None:
    import importlib.metadata

    try:
        return int(importlib.metadata.version("numpy").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def _ext_targets(numpy2_built: list[str] | None = None) -> list[dict[str, Any]]:
    """The distributions to import: native files in RECORD, and torch or NumPy underneath (declared, or known).
    With NumPy 2 installed, those on NumPy alone whose compiled modules were built against NumPy 2 are left out and
    named in `numpy2_built`."""
    import importlib.metadata

    numpy2 = (_numpy_major() or 0) >= 2
    targets, seen = [], set()
    for dist in importlib.metadata.distributions():
        try:
            canonical = canonical_name(dist.metadata["Name"] or "")
        except Exception:  # noqa: BLE001, S112 - unreadable metadata is another rule's finding
            continue
        if not canonical or canonical in seen:
            continue  # a shadowed copy further down the path is never imported
        seen.add(canonical)
        if canonical in _EXT_BASES:
            continue
        try:
            bases = _requires_bases(dist.requires or [])
            if canonical not in _EXT_KNOWN and not bases:
                continue
            modules, native, files = _ext_modules(dist)
        except Exception:  # noqa: BLE001, S112 - corrupt metadata is another rule's finding
            continue
        if native and modules:
            on_torch = canonical in _EXT_KNOWN or "torch" in bases
            if numpy2 and not on_torch and _built_for_numpy2(files):
                if numpy2_built is not None:
                    numpy2_built.append(canonical)
                continue
            targets.append({"name": canonical, "version": str(dist.version), "modules": modules,
                            "torch": on_torch})
    return sorted(targets, key=lambda t: t["name"])


_EXT_IMPORTER = r"""
import importlib, json, os, sys, time, warnings
items, out_path = json.loads(sys.argv[1]), sys.argv[2]
out = open(out_path, "a", encoding="utf-8", buffering=1)
err_fd = sys.stderr.fileno()
for item in items:
    out.write(json.dumps({"event": "start", "key": item["key"]}) + "\n")
    capture = os.open(item["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    saved = os.dup(err_fd)
    sys.stderr.flush()
    os.dup2(capture, err_fd)
    start = time.perf_counter()
    result = {"status": "ok"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            importlib.import_module(item["module"])
        except BaseException as exc:
            text = str(exc).strip() or type(exc).__name__
            result = {"status": "error", "error_class": type(exc).__name__, "message": text[:2000]}
    sys.stderr.flush()
    os.dup2(saved, err_fd)
    os.close(saved)
    os.close(capture)
    result["import_s"] = round(time.perf_counter() - start, 4)
    result["warnings"] = [w.category.__name__ + ": " + str(w.message)[:300] for w in caught][:5]
    out.write(json.dumps({"event": "result", "key": item["key"], "result": result}) + "\n")
out.close()
os._exit(0)
"""


def _ext_stderr(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read()[-1500:].decode("utf-8", errors="replace").strip()
    except OSError:
        return ""


class _Forked:
    """A forked process, with the part of subprocess.Popen's interface that the importers' scheduler uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def _reap(self, flags: int) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:  # reaped elsewhere: it ended, how is not known
                self.returncode = 70
                return self.returncode
            if pid:
                # As Popen reports it: minus the signal that killed it, else the exit status.
                self.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return self.returncode

    def poll(self) -> int | None:
        return self._reap(os.WNOHANG)

    def wait(self) -> int | None:
        return self._reap(0)

    def kill(self) -> None:
        import contextlib
        import signal

        with contextlib.suppress(ProcessLookupError):  # it already ended
            os.kill(self.pid, signal.SIGKILL)

    def finish(self, limit: float) -> bool:
        """Wait for it to end until `limit` (time.monotonic), else kill it; whether it ended by itself."""
        while self.poll() is None and time.monotonic() < limit:
            time.sleep(0.005)
        if self.returncode is None:
            self.kill()
            self.wait()
            return False
        return True


def _can_fork() -> bool:
    """Whether this process may fork a copy that runs Python: Linux, and no other Python thread (a lock it held
    would stay held in the copy)."""
    import threading

    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


def _ext_can_fork(ctx: Context) -> bool:
    """Whether the importers may be forked from this process: `_can_fork`, and CUDA not initialised (a forked child
    cannot use the parent's CUDA context). Native pools started at import (OpenBLAS's, under NumPy) re-create
    themselves after a fork, as they do in every DataLoader worker; torch's own intra-op pool does not exist yet, no
    probe having run. Without torch imported here each importer imports what it needs itself."""
    if not _can_fork():
        return False
    try:
        return ctx.torch is None or not ctx.torch.cuda.is_initialized()
    except Exception:  # noqa: BLE001 - an odd torch build: start fresh interpreters instead
        return False


def _fork_running(body: Any) -> _Forked:
    """Run `body()` in a forked copy of this process, which ends with os._exit (its status: 0 when `body` returned)
    and never returns into the caller's code."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            body()
            code = 0
        finally:
            os._exit(code)
    return _Forked(pid)


def _ext_start(pending: list[dict[str, Any]], out_path: str, fork: bool) -> Any:
    """One importer for `pending`: forked from this process, or a fresh interpreter of the checked environment."""
    import subprocess

    if fork:
        def body() -> None:
            sys.argv = ["-c", json.dumps(pending), out_path]
            exec(compile(_EXT_IMPORTER, "<extension-importer>", "exec"), {"__name__": "__main__"})  # noqa: S102

        return _fork_running(body)
    return subprocess.Popen([sys.executable, "-X", "faulthandler", "-c", _EXT_IMPORTER, json.dumps(pending), out_path],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _ext_lanes() -> int:
    """How many importers run at once: one per CPU this process may use, at least two (an import waits on the disk
    too) and at most _EXT_LANES_MAX (each holds its own copy of what it imports: hundreds of MB for an extension
    that pulls in torch._dynamo)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(2, min(_EXT_LANES_MAX, cpus))


class _Lane:
    """One importer at work on one distribution's modules, and what it has written so far."""

    def __init__(self, items: list[dict[str, Any]], out_path: str, proc: Any) -> None:
        self.items, self.out_path, self.proc = items, out_path, proc
        self.offset, self.buffer = 0, ""
        self.current: str | None = None
        self.started = time.monotonic()  # of the module being imported

    def read(self, outcomes: dict[str, dict[str, Any]]) -> None:
        with open(self.out_path, encoding="utf-8", errors="replace") as fh:
            fh.seek(self.offset)
            self.buffer += fh.read()
            self.offset = fh.tell()
        *lines, self.buffer = self.buffer.split("\n")
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "start":
                self.current, self.started = event["key"], time.monotonic()
            elif event.get("event") == "result":
                outcomes[event["key"]] = event["result"]
                self.current = None

    def victim(self, outcomes: dict[str, dict[str, Any]], hung: bool) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """(item, outcome) for the module an importer that ended or hung was on: the one it started and never
        finished; after an exit with work left and no module started, the next one (a partial last line is what a
        crash cut short)."""
        left = [i for i in self.items if i["key"] not in outcomes]
        if not left:
            return None
        key = self.current if self.current is not None and self.current not in outcomes else left[0]["key"]
        item = next(i for i in self.items if i["key"] == key)
        if hung:
            return item, {"status": "timeout", "error_class": "Timeout",
                          "message": "importing %s did not finish" % item["module"]}
        import signal

        code = self.proc.returncode or 0
        try:
            how = signal.Signals(-code).name if code < 0 else "exit code %d" % code
        except ValueError:
            how = "signal %d" % -code
        return item, {"status": "crashed", "error_class": how,
                      "message": "importing %s killed the process (%s)" % (item["module"], how)}


def _ext_run(groups: list[list[dict[str, Any]]], tmp: str, deadline: float, fork: bool = False,
             lanes: int = 1) -> dict[str, dict[str, Any]]:
    """Import each group (one distribution's modules) in an importer of its own, `lanes` at a time, forked from
    this process when `fork`; every item gets an outcome. A crash or hang costs the module it hit: a new importer
    takes the rest of that distribution. After `deadline` no importer starts, and the importers still running are
    ended: what they had not imported is `timeout` (the module they were on) or `skipped`."""
    outcomes: dict[str, dict[str, Any]] = {}
    queue = [list(g) for g in groups if g]
    running: list[_Lane] = []
    count = 0
    while queue or running:
        while queue and len(running) < lanes and time.monotonic() < deadline:
            items = queue.pop(0)
            count += 1
            out_path = os.path.join(tmp, "imports-%d.jsonl" % count)
            open(out_path, "w").close()
            running.append(_Lane(items, out_path, _ext_start(items, out_path, fork)))
        if not running:
            break  # out of time with work queued
        for lane in list(running):
            exited = lane.proc.poll() is not None  # before the read, so that the read sees everything it wrote
            lane.read(outcomes)
            now = time.monotonic()
            hung = not exited and (now - lane.started > _EXT_MODULE_TIMEOUT_S or now > deadline)
            if not exited and not hung:
                continue
            if hung:
                lane.proc.kill()
                lane.proc.wait()
            running.remove(lane)
            found = lane.victim(outcomes, hung)
            if found is not None:
                outcomes[found[0]["key"]] = found[1]
            rest = [i for i in lane.items if i["key"] not in outcomes]
            if rest:
                queue.insert(0, rest)
        time.sleep(0.01)
    for group in queue:
        for item in group:
            outcomes[item["key"]] = {"status": "skipped", "message": "the probe ran out of time before it"}
    for group in groups:
        for item in group:
            if item["key"] in outcomes:
                outcomes[item["key"]]["stderr"] = _ext_stderr(item["stderr"])
    return outcomes


class _ExtBegun:
    """The extension-imports probe, begun: what it imports, and, once started, the supervisor importing it."""

    def __init__(self, start: float, targets: list[dict[str, Any]], numpy2_built: list[str], fork: bool,
                 scratch: str | None = None, lanes: int = 1) -> None:
        import tempfile

        self.start, self.targets, self.numpy2_built, self.fork = start, targets, numpy2_built, fork
        self.lanes = lanes
        # Inside the runner's folder for this child when there is one: removed with it even if this child crashes.
        self.tmp = tempfile.TemporaryDirectory(prefix="envcheck-imports-", dir=scratch)
        self.groups: list[list[dict[str, str]]] = []
        n = 0
        # Distributions that build on torch first: their imports are the long ones (torchvision's pulls in
        # torch._dynamo), so with fewer lanes than distributions they start at once.
        for t in sorted(targets, key=lambda t: not t["torch"]):
            group = []
            for module in t["modules"]:
                group.append({"key": "%s:%s" % (t["name"], module), "module": module,
                              "stderr": os.path.join(self.tmp.name, "%d.err" % n)})
                n += 1
            self.groups.append(group)
        if lanes == 1:
            # One importer for them all, in turn: each importer would otherwise import torch (or NumPy) again.
            self.groups = [[item for group in self.groups for item in group]]
        self.supervisor: _Forked | None = None

    @property
    def items(self) -> list[dict[str, str]]:
        return [item for group in self.groups for item in group]

    def launch(self) -> None:
        """Fork the supervisor: a copy of this process taken now (no other thread, CUDA untouched) that forks the
        importers from itself, `lanes` at a time, and writes their outcomes to outcomes.json. Forked from it,
        a later importer (after a crash) is as clean as the first, whatever this process runs meanwhile."""
        self.start = time.monotonic()  # planned perhaps before torch was imported: the budget starts now
        groups, tmp, deadline, lanes = self.groups, self.tmp.name, self.start + _EXT_BUDGET_S, self.lanes

        def supervise() -> None:
            outcomes = _ext_run(groups, tmp, deadline, fork=True, lanes=lanes)
            path = os.path.join(tmp, "outcomes.json")
            with open(path + ".part", "w", encoding="utf-8") as fh:
                json.dump(outcomes, fh)
            os.replace(path + ".part", path)

        self.supervisor = _fork_running(supervise)

    def collect(self) -> dict[str, dict[str, Any]]:
        """The supervisor's outcomes, once it has ended (it stops starting imports at the budget's end and ends
        those still running: a margin after that, it is ended here)."""
        supervisor = self.supervisor
        assert supervisor is not None
        supervisor.finish(self.start + _EXT_BUDGET_S + _EXT_MODULE_TIMEOUT_S / 10)
        try:
            with open(os.path.join(self.tmp.name, "outcomes.json"), encoding="utf-8") as fh:
                outcomes = json.load(fh)
        except (OSError, ValueError):
            outcomes = {}
        if isinstance(outcomes, dict) and outcomes:
            return outcomes
        how = "exit code %s" % supervisor.returncode
        return {item["key"]: {"status": "crashed", "error_class": "NoResult",
                              "message": "the process running the imports ended without their outcomes (%s)" % how}
                for item in self.items}


def _ext_begin(ctx: Context, scanned: dict[str, Any] | None = None) -> _ExtBegun:
    """Find what to import (or take what the scanner found) and decide how: forked when this process may fork, else
    fresh interpreters; side by side only when torch is imported here, so that each importer starts with it (one
    importer per distribution that had to import torch itself would hold a copy of torch each)."""
    start = time.monotonic()
    if scanned is None:
        numpy2_built: list[str] = []
        targets = _ext_targets(numpy2_built)
    else:
        targets, numpy2_built = scanned["targets"], scanned["numpy2_built"]
    fork = _ext_can_fork(ctx)
    lanes = _ext_lanes() if fork and ctx.torch is not None else 1
    return _ExtBegun(start, targets, numpy2_built, fork, ctx.scratch, lanes)


def _ext_scan_path(ctx: Context) -> str:
    return os.path.join(ctx.scratch or "/nonexistent", "extension-targets.json")


def scan_extensions(ctx: Context) -> None:
    """Start looking for what extension-imports will import, in a copy of this process forked before torch is
    imported, so that reading RECORDs and scanning compiled modules (a second on a large stack) runs while this
    process imports torch. Where forking is not possible the scan runs in the probe's turn."""
    if ctx.scratch is None or not _can_fork():
        return
    path = _ext_scan_path(ctx)

    def scan() -> None:
        numpy2_built: list[str] = []
        targets = _ext_targets(numpy2_built)
        with open(path + ".part", "w", encoding="utf-8") as fh:
            json.dump({"targets": targets, "numpy2_built": numpy2_built}, fh)
        os.replace(path + ".part", path)

    try:
        ctx.ext_scanner = _fork_running(scan)
    except OSError:
        ctx.ext_scanner = None


def _ext_scanned(ctx: Context) -> dict[str, Any] | None:
    """What the scanner found, once it has ended; None when it was not started or failed (the probe scans itself)."""
    scanner, ctx.ext_scanner = ctx.ext_scanner, None
    if scanner is None:
        return None
    if not scanner.finish(time.monotonic() + _EXT_MODULE_TIMEOUT_S):
        return None
    try:
        with open(_ext_scan_path(ctx), encoding="utf-8") as fh:
            found = json.load(fh)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and "targets" in found else None


def begin_extension_imports(ctx: Context) -> None:
    """Start the imports now, in the background (forked: see _ExtBegun.launch), so that they run while this process
    runs the other probes; the probe's own turn then only collects them. Called once torch is imported (or failed
    to import), before any other probe. Anything that goes wrong here leaves the probe to run in its turn."""
    begun = None
    try:
        begun = _ext_begin(ctx, _ext_scanned(ctx))
        if begun.targets and begun.fork:
            begun.launch()
        ctx.ext_begun = begun
    except Exception:  # noqa: BLE001 - the probe runs from the start in its turn, and reports what fails then
        if begun is not None:
            begun.tmp.cleanup()  # this process ends with os._exit: no finaliser would remove the folder
        ctx.ext_begun = None


def _ext_outcome(module: str, outcome: dict[str, Any]) -> dict[str, Any]:
    """An import's outcome, where CPython's refusal of a file that is no module (one _defines_module could not rule
    out) is no failure: the package does not import that file as a module either."""
    if outcome.get("status") == "error" and str(outcome.get("message") or "").startswith(
            "dynamic module does not define module export function"):
        return {"status": "skipped", "message": "%s is a shared library, not a Python module: %s"
                % (module, outcome.get("message"))}
    return outcome


def probe_extension_imports(ctx: Context) -> dict[str, Any]:
    begun, ctx.ext_begun = ctx.ext_begun, None
    if begun is None:
        begun = _ext_begin(ctx, _ext_scanned(ctx))
    early = begun.supervisor is not None
    try:
        if not begun.targets:
            return {"status": "ok", "details": {"distributions": 0, "modules": 0,
                                                "numpy2_built": sorted(begun.numpy2_built)}}
        if early:
            outcomes = begun.collect()
        else:
            outcomes = _ext_run(begun.groups, begun.tmp.name, begun.start + _EXT_BUDGET_S, fork=begun.fork,
                                lanes=begun.lanes)
    finally:
        begun.tmp.cleanup()
    cases: dict[str, dict[str, Any]] = {}
    for t in begun.targets:
        # The case is the distribution: its first failing module's outcome (what a user's import hits first),
        # else the first module's; import_s is what importing all its modules took.
        tried = [(m, _ext_outcome(m, outcomes.get("%s:%s" % (t["name"], m), {"status": "skipped"})))
                 for m in t["modules"]]
        module, outcome = next(((m, o) for m, o in tried if o.get("status") not in ("ok", "skipped")), tried[0])
        case = {k: v for k, v in outcome.items() if k in ("status", "error_class", "message", "warnings", "stderr")
                and v not in (None, "", [])}
        case.update(version=t["version"], module=module, modules=[m for m, _ in tried])
        spent = [o["import_s"] for _, o in tried if isinstance(o.get("import_s"), (int, float))]
        if spent:
            case["import_s"] = round(sum(spent), 3)
        cases[t["name"]] = case
    details = {"distributions": len(begun.targets), "modules": len(begun.items),
               "wall_s": round(time.monotonic() - begun.start, 3), "importer": "fork" if begun.fork else "spawn",
               "lanes": begun.lanes, "background": early, "numpy2_built": sorted(begun.numpy2_built)}
    return {"status": "ok", "details": details, "cases": cases}


_MAPS_LIMIT = 16 * 1024 * 1024  # a process maps a few thousand regions: some hundred KB of text


def shared_objects_in_maps(text: str) -> list[str]:
    """The shared objects a /proc/PID/maps text shows mapped, each once, in first-mapped order."""
    seen: dict[str, None] = {}
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in parts[5].rsplit("/", 1)[-1]:
            path = parts[5].strip()
            if path.endswith(" (deleted)"):
                path = path[: -len(" (deleted)")]
            seen.setdefault(path, None)
    return list(seen)


def probe_loaded_libraries(ctx: Context) -> dict[str, Any]:
    """The shared objects this process has mapped after `import torch` (Linux: /proc/self/maps)."""
    if not sys.platform.startswith("linux"):
        return {"status": "skipped", "message": "no /proc/self/maps on %s: only Linux lists mapped libraries"
                % sys.platform}
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            text = fh.read(_MAPS_LIMIT)
    except OSError as exc:
        return {"status": "skipped", "message": "cannot read /proc/self/maps: %s" % (exc.strerror or exc)}
    return {"status": "ok", "details": {"libraries": shared_objects_in_maps(text)}}


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
    ctx.scratch = os.path.dirname(os.path.abspath(argv[2]))
    # Line-buffered append: every line reaches the file (and so the parent) before the next probe starts.
    with open(argv[2], "a", encoding="utf-8", buffering=1) as out:
        probes = list(request["probes"])
        ext = next((item for item in probes if item["name"] == "extension-imports"), None)
        if ext is not None and len(probes) > 1 and not ext.get("needs_torch", True):
            scan_extensions(ctx)  # in a copy of this process, while this one imports torch
        if any(item.get("needs_torch", True) for item in request["probes"]):
            # Before the first start event, under the runner's import bound: an import that is slow (a cold
            # network filesystem) is not charged to the first probe of a fresh child.
            ctx.import_torch()
        if ext is not None and len(probes) > 1 and not (ext.get("needs_torch", True) and ctx.torch is None):
            # The imports run in copies of this process while the other probes run here; collected last.
            begin_extension_imports(ctx)
            probes = [item for item in probes if item is not ext] + [ext]
        for item in probes:
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
            if ctx.poisoned is not None:
                result.setdefault("details", {})["sticky_cuda_error"] = ctx.poisoned
            _write(out, {"event": "result", "probe": name, "result": result})
            if ctx.poisoned is not None:
                break  # the CUDA context is unusable: the runner gives the remaining probes a fresh process
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: CUDA and some extensions can hang or crash in their atexit handlers, and every
    # result is already written.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)

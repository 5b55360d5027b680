"""The live probes run for real: the real torch CPU build, in a virtual environment of its own, through the runner.

A module-scoped fixture makes a venv and installs torch 2.13.0+cpu, numpy and safetensors into it (about a minute
where the wheel is local). ENVCHECK_TORCH_PYTHON names an interpreter that already has them, to skip that step
(for example `ENVCHECK_TORCH_PYTHON=$HOME/venvs/torch/bin/python`). If the install fails the tests are skipped with
the reason, except under CI=true, where they fail: CI must really run the probes.

The expected outcomes below are what torch 2.13.0+cpu was observed to do; docs/probes.md documents the cases.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest
from _fakes import build_facts, facts_dict, write_tree
from _torch import clean_env

from envcheck.derived.attention import nvml_device_of
from envcheck.facts.gpus import NvmlFacts
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.snapshot import Facts
from envcheck.rules.conditions import Context, parse
from envcheck.rules.conditions.where import Where
from envcheck.sources.live.nvml import collect_nvml
from envcheck.sources.probes import runner
from envcheck.sources.probes.catalog import PROBE_NAMES, ProbeSpec
from envcheck.sources.probes.runner import CHILD_SOURCE_FILE, Program, RunOptions, run

EXPECTED_TORCH = "2.13.0+cpu"
_PROBE_TIMEOUT_S = 300.0

# The SDPA message torch raises for a float32 query with a float16 KV cache (Dia TTS, metavoice), and the pattern
# that classifies it (research/probes-nvml-torch.md section 1).
DIA_MESSAGE = ("Expected query, key, and value to have the same dtype, but got query.dtype: float "
               "key.dtype: c10::Half and value.dtype: c10::Half instead.")
SDPA_DTYPE_PATTERN = re.compile(r"Expected query, key, and value to have the same dtype, but got "
                                r"query\.dtype: (?:struct )?([\w:.]+),? key\.dtype: (?:struct )?([\w:.]+)")

# (status, out_dtype) of every sdpa case torch 2.13.0+cpu produces on a machine without CUDA. Outside autocast,
# mixed dtypes raise; CPU autocast (bf16, and fp16 which 2.13 supports) casts all three to its dtype.
SDPA_CPU_2_13: dict[str, tuple[str, str | None]] = {
    "cpu/q=float32,kv=float32/eager": ("ok", "float32"),
    "cpu/q=float32,kv=float32/autocast-bfloat16": ("ok", "bfloat16"),
    "cpu/q=float32,kv=float32/autocast-float16": ("ok", "float16"),
    "cpu/q=float16,kv=float16/eager": ("ok", "float16"),
    "cpu/q=float16,kv=float16/autocast-bfloat16": ("ok", "bfloat16"),
    "cpu/q=float16,kv=float16/autocast-float16": ("ok", "float16"),
    "cpu/q=bfloat16,kv=bfloat16/eager": ("ok", "bfloat16"),
    "cpu/q=bfloat16,kv=bfloat16/autocast-bfloat16": ("ok", "bfloat16"),
    "cpu/q=bfloat16,kv=bfloat16/autocast-float16": ("ok", "float16"),
    "cpu/q=float32,kv=float16/eager": ("error", None),
    "cpu/q=float32,kv=float16/autocast-bfloat16": ("ok", "bfloat16"),
    "cpu/q=float32,kv=float16/autocast-float16": ("ok", "float16"),
    "cpu/q=float32,kv=bfloat16/eager": ("error", None),
    "cpu/q=float32,kv=bfloat16/autocast-bfloat16": ("ok", "bfloat16"),
    "cpu/q=float32,kv=bfloat16/autocast-float16": ("ok", "float16"),
}
SDPA_BACKEND_CASES = [f"backend={b},dtype={d}" for b in ("flash", "efficient", "cudnn", "math")
                      for d in ("float16", "bfloat16", "float32")]
SDPA_DTYPE_CASES = [f"q={q},kv={kv}/{mode}" for q, kv in (("float32", "float32"), ("float16", "float16"),
                                                         ("bfloat16", "bfloat16"), ("float32", "float16"),
                                                         ("float32", "bfloat16"))
                    for mode in ("eager", "autocast-float16", "autocast-bfloat16")]


def _run(python: str, names: tuple[str, ...] | list[str] = PROBE_NAMES, extra_source: str = "",
         extra_specs: Mapping[str, ProbeSpec] | None = None, **options: object) -> dict[str, ProbeResult]:
    """Run `names` in real children of `python`; `extra_source` defines more probes (or replaces catalogue ones)."""
    base: dict[str, object] = {"python": python, "timeout_s": _PROBE_TIMEOUT_S, "env": clean_env()}
    base.update(options)
    runner.PROGRAM = Program(extra_source, extra_specs or {})
    try:
        return run(list(names), RunOptions(**base))  # type: ignore[arg-type]
    finally:
        runner.PROGRAM = Program()


@pytest.fixture(scope="module")
def results(torch_python: str) -> dict[str, ProbeResult]:
    """Every probe, run once in the real torch environment."""
    return _run(torch_python)


def _case(results: dict[str, ProbeResult], probe: str, case: str) -> dict[str, object]:
    result = results[probe]
    assert case in result.cases, f"{probe} has no case {case!r}: {sorted(result.cases)}"
    return result.cases[case]


# --- the child stays runnable by old interpreters ------------------------------------------------------------------


def test_child_parses_as_python_3_8() -> None:
    """The child runs in the checked interpreter, which may be Python 3.8."""
    ast.parse(CHILD_SOURCE_FILE.read_text(encoding="utf-8"), feature_version=(3, 8))


# --- the real CPU outcomes -------------------------------------------------------------------------------------------


@pytest.mark.torch
@pytest.mark.slow
def test_every_probe_has_a_result(results: dict[str, ProbeResult]) -> None:
    assert set(results) == set(PROBE_NAMES)
    for name, result in results.items():
        assert result.status in ("ok", "skipped"), f"{name}: {result}"
        assert result.wall_s is not None


@pytest.mark.torch
@pytest.mark.slow
def test_torch_import_and_build(results: dict[str, ProbeResult]) -> None:
    imported = results["torch-import"]
    assert imported.status == "ok"
    assert imported.details["version"] == EXPECTED_TORCH
    build = results["torch-build"]
    assert build.status == "ok"
    assert build.details["cuda"] is None
    assert build.details["cuda_available"] is False


@pytest.mark.torch
@pytest.mark.slow
def test_sdpa_fp32_query_fp16_kv_reproduces_the_dia_error(results: dict[str, ProbeResult]) -> None:
    case = _case(results, "sdpa", "cpu/q=float32,kv=float16/eager")
    assert case["status"] == "error"
    assert case["error_class"] == "RuntimeError"
    assert case["message"] == DIA_MESSAGE
    match = SDPA_DTYPE_PATTERN.search(str(case["message"]))
    assert match is not None and match.groups() == ("float", "c10::Half")


@pytest.mark.torch
@pytest.mark.slow
def test_sdpa_fp32_query_bf16_kv_raises_with_bfloat16_names(results: dict[str, ProbeResult]) -> None:
    case = _case(results, "sdpa", "cpu/q=float32,kv=bfloat16/eager")
    assert case["status"] == "error" and case["error_class"] == "RuntimeError"
    match = SDPA_DTYPE_PATTERN.search(str(case["message"]))
    assert match is not None and match.groups() == ("float", "c10::BFloat16")


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize(("case_name", "expected"), sorted(SDPA_CPU_2_13.items()), ids=sorted(SDPA_CPU_2_13))
def test_sdpa_cpu_case(results: dict[str, ProbeResult], case_name: str, expected: tuple[str, str | None]) -> None:
    case = _case(results, "sdpa", case_name)
    status, out_dtype = expected
    assert (case["status"], case["out_dtype"]) == (status, out_dtype), case
    if status == "ok":
        assert case["error_class"] is None and case["message"] is None


@pytest.mark.torch
@pytest.mark.slow
def test_sdpa_probe_shape_without_cuda(results: dict[str, ProbeResult]) -> None:
    sdpa = results["sdpa"]
    assert sdpa.status == "ok"  # its cases' errors are data, not a failure of the probe
    assert set(sdpa.cases) == set(SDPA_CPU_2_13)  # no cuda:N case on a machine without CUDA
    assert sdpa.details["devices"] == ["cpu"]
    assert sdpa.details["torch"] == EXPECTED_TORCH
    apis = sdpa.details["apis"]
    assert apis["scaled_dot_product_attention"] and apis["torch.nn.attention.sdpa_kernel"]
    assert apis["can_use_flash_attention"] and apis["can_use_cudnn_attention"]
    assert "CUDNN_ATTENTION" in apis["SDPBackend"]


@pytest.mark.torch
@pytest.mark.slow
def test_a_rule_matches_the_recorded_sdpa_error(results: dict[str, ProbeResult]) -> None:
    """The probe predicate rules use reads these cases as they are recorded."""
    facts = dataclasses.replace(build_facts(), probes=results)
    where = Where("<test>", None, "when")
    fires = parse({"probe": {"name": "sdpa", "case": "cpu/q=float32,kv=float16/eager", "error": "RuntimeError",
                             "message": r"Expected query, key, and value to have the same dtype"}}, where)
    assert fires.evaluate(Context(facts)).value is True
    quiet = parse({"probe": {"name": "transformer-fastpath", "case": "cpu/autocast-bfloat16",
                             "message": "mat1 and mat2 must have the same dtype"}}, where)
    assert quiet.evaluate(Context(facts)).value is False
    untried = parse({"probe": {"name": "sdpa", "case": "cuda:0/backend=flash,dtype=float16", "status": "ok"}},
                    where)
    assert untried.evaluate(Context(facts)).value is None


@pytest.mark.torch
@pytest.mark.slow
def test_transformer_fastpath_cpu_autocast_passes_on_2_13(results: dict[str, ProbeResult]) -> None:
    """torch 2.2-2.5 raise `mat1 and mat2 must have the same dtype, but got BFloat16 and Float` here; 2.6 fixed it."""
    probe = results["transformer-fastpath"]
    assert probe.status == "ok"
    assert set(probe.cases) == {"cpu/eager", "cpu/autocast-bfloat16"}
    autocast = probe.cases["cpu/autocast-bfloat16"]
    assert (autocast["status"], autocast["out_dtype"], autocast["fastpath"]) == ("ok", "bfloat16", True), autocast
    eager = probe.cases["cpu/eager"]
    assert (eager["status"], eager["out_dtype"], eager["fastpath"]) == ("ok", "float32", True), eager
    assert probe.details["mha_fastpath_enabled"] is True
    assert probe.details["fastpath_detectable"] is True


@pytest.mark.torch
@pytest.mark.slow
def test_bf16_is_skipped_without_cuda(results: dict[str, ProbeResult]) -> None:
    bf16 = results["bf16"]
    assert (bf16.status, bf16.message) == ("skipped", "no CUDA device")
    assert set(bf16.cases) == {"cpu"}
    assert (bf16.cases["cpu"]["status"], bf16.cases["cpu"]["out_dtype"]) == ("ok", "bfloat16")


@pytest.mark.torch
@pytest.mark.slow
def test_apex_is_skipped_when_not_installed(results: dict[str, ProbeResult]) -> None:
    apex = results["apex-fused-norm"]
    assert (apex.status, apex.message) == ("skipped", "NVIDIA apex is not installed")
    assert apex.cases == {}


@pytest.mark.torch
@pytest.mark.slow
def test_safetensors_round_trip(results: dict[str, ProbeResult]) -> None:
    probe = results["safetensors"]
    assert probe.status == "ok", probe
    assert probe.details["torch"] == EXPECTED_TORCH
    assert probe.details["safetensors"]
    assert probe.details["tensors"] == {"weight": "float32", "half": "float16", "bf16": "bfloat16"}


# --- what the probes do in situations this machine does not have, made real -------------------------------------


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize(("files", "message"), [
    pytest.param({"apex/__init__.py": ""}, "the installed apex is not NVIDIA apex (no apex.normalization)",
                 id="pyramid-apex"),
    pytest.param({"apex/__init__.py": "", "apex/normalization/__init__.py": ""},
                 "apex has no CUDA extensions (fused_layer_norm_cuda missing)", id="python-only-apex"),
    pytest.param({"apex/__init__.py": "", "apex/normalization/__init__.py": "", "fused_layer_norm_cuda.py": ""},
                 "no CUDA device", id="apex-without-gpu"),
])
def test_apex_skip_reasons(torch_python: str, tmp_path: Path, files: dict[str, str], message: str) -> None:
    write_tree(tmp_path, files)
    result = _run(torch_python, ["apex-fused-norm"], env=clean_env({"PYTHONPATH": str(tmp_path)}))
    apex = result["apex-fused-norm"]
    assert (apex.status, apex.message) == ("skipped", message), apex
    assert apex.details["apex_location"] == str(tmp_path / "apex")


# Pretends there is one CUDA device: on the CPU build every CUDA case then fails or is skipped, which runs every
# CUDA code path of the probes (backend contexts, SDPAParams, can_use_*, is_bf16_supported) without a GPU.
FAKE_CUDA = '''
def _cuda(ctx):
    import contextlib

    # The CPU build cannot make a device current (torch.cuda.device raises); a no-op lets the cases run further.
    ctx.torch.cuda.device = lambda index: contextlib.nullcontext()
    return {"available": True, "devices": ["cuda:0"], "build": "12.4", "hip": None, "error": None,
            "warnings": []}
'''


@pytest.mark.torch
@pytest.mark.slow
def test_cuda_code_paths_survive_a_cuda_device_torch_cannot_use(torch_python: str) -> None:
    results = _run(torch_python, ["sdpa", "transformer-fastpath", "bf16"], extra_source=FAKE_CUDA)
    sdpa = results["sdpa"]
    assert sdpa.status == "ok", sdpa
    cuda_cases = {name for name in sdpa.cases if name.startswith("cuda:0/")}
    assert cuda_cases == {f"cuda:0/{c}" for c in SDPA_DTYPE_CASES + SDPA_BACKEND_CASES}
    for name in cuda_cases:
        assert sdpa.cases[name]["status"] in ("error", "skipped"), (name, sdpa.cases[name])
    for case in SDPA_BACKEND_CASES:
        outcome = sdpa.cases[f"cuda:0/{case}"]
        assert outcome["error_class"] == "AssertionError"  # "Torch not compiled with CUDA enabled"
        assert {"can_use", "reasons", "out_dtype", "warnings"} <= set(outcome)
    assert sdpa.details["backend_api"] == "torch.nn.attention.sdpa_kernel"
    fastpath = results["transformer-fastpath"]
    assert fastpath.status == "ok"
    assert set(fastpath.cases) == {"cpu/eager", "cpu/autocast-bfloat16", "cuda:0/eager", "cuda:0/autocast-bfloat16",
                                   "cuda:0/autocast-float16"}
    assert fastpath.cases["cuda:0/eager"]["fastpath"] is None  # the layer never ran: unknown, not False
    bf16 = results["bf16"]
    assert bf16.status == "ok"
    assert bf16.cases["cuda:0"]["status"] == "error"
    # torch's own answer was asked for cuda:0 (with it current): an answer or the error it raised
    assert (bf16.cases["cuda:0"]["is_bf16_supported"] is not None) or bf16.cases["cuda:0"]["is_bf16_supported_error"]


# Runs after transformer-fastpath in the same child: the wrapped torch function must be torch's own again.
AFTER_FASTPATH = '''
def probe_after_fastpath(ctx):
    fn = ctx.torch._transformer_encoder_layer_fwd
    return {"status": "ok", "details": {"type": type(fn).__name__, "name": getattr(fn, "__name__", None)}}
'''


@pytest.mark.torch
@pytest.mark.slow
def test_transformer_fastpath_restores_torch(torch_python: str) -> None:
    spec = ProbeSpec("after-fastpath", "checks the fast-path function after the probe")
    results = _run(torch_python, ["transformer-fastpath", "after-fastpath"], extra_source=AFTER_FASTPATH,
                   extra_specs={"after-fastpath": spec})
    after = results["after-fastpath"]
    assert after.status == "ok", after
    assert after.details == {"type": "builtin_function_or_method", "name": "_transformer_encoder_layer_fwd"}


# --- on a GPU ---------------------------------------------------------------------------------------------------


def _nvidia_gpu_present() -> bool:
    return shutil.which("nvidia-smi") is not None or Path("/dev/nvidiactl").exists()


GPU_RUNS = Path(__file__).parents[1] / "fixtures" / "gpu-runs"


def _record_gpu_run(nvml_facts: NvmlFacts, results: dict[str, ProbeResult]) -> Path:
    """Writes what NVML and the probes saw on this GPU machine to ENVCHECK_GPU_RECORD_DIR (default
    tests/fixtures/gpu-runs/), one JSON file per GPU model set, as evidence to commit."""
    folder = Path(os.environ.get("ENVCHECK_GPU_RECORD_DIR") or GPU_RUNS)
    folder.mkdir(parents=True, exist_ok=True)
    models = sorted({d.name or "unknown" for d in nvml_facts.devices}) or [nvml_facts.status]
    stem = re.sub(r"[^A-Za-z0-9.]+", "-", "+".join(models)).strip("-")
    path = folder / f"{stem}.json"
    record = {"nvml": dataclasses.asdict(nvml_facts),
              "probes": {name: dataclasses.asdict(result) for name, result in sorted(results.items())}}
    path.write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return path


@pytest.mark.gpu
@pytest.mark.torch
@pytest.mark.slow
def test_cuda_probes_on_a_real_gpu(request: pytest.FixtureRequest) -> None:
    """With a CUDA torch (conftest's `cuda_torch_python`) on an NVIDIA GPU: every device gets the full matrix."""
    if not _nvidia_gpu_present():
        pytest.skip("no NVIDIA GPU on this machine (no nvidia-smi, no /dev/nvidiactl)")
    python = request.getfixturevalue("cuda_torch_python")
    nvml_facts = collect_nvml()
    results = _run(python)
    _record_gpu_run(nvml_facts, results)  # first: a run that fails below still leaves its evidence
    if not results["torch-build"].details.get("cuda_available"):
        # A GPU host where torch sees no device is a broken setup, not a reason to pass.
        pytest.fail(f"torch at {python} sees no CUDA device on this GPU host (build cuda="
                    f"{results['torch-build'].details.get('cuda')}, NVML: {nvml_facts.status}); set "
                    "ENVCHECK_CUDA_TORCH_PYTHON to an interpreter with a CUDA torch that can use this driver")
    _assert_gpu_run(nvml_facts, results)


def _assert_gpu_run(nvml_facts: NvmlFacts, results: dict[str, ProbeResult]) -> None:
    """What a run of every probe on a real NVIDIA GPU must show: every device torch sees is one NVML lists, and
    every device gets the full SDPA, bf16 and fast-path matrix with the outcomes a working CUDA torch gives."""
    build = results["torch-build"]
    assert build.details.get("cuda_available"), build
    devices = [f"cuda:{d['index']}" for d in build.details["devices"]]
    assert devices
    # Every device torch sees is one NVML lists (by UUID: CUDA's numbering need not be NVML's), MIG included.
    facts = dataclasses.replace(build_facts(), nvml=nvml_facts)
    for device in build.details["devices"]:
        if device.get("uuid") is not None and nvml_facts.status == "ok":
            assert nvml_device_of(facts, device["uuid"]) is not None, (device, nvml_facts.devices)
    sdpa = results["sdpa"]
    assert sdpa.status == "ok", sdpa
    assert sdpa.details["devices"] == ["cpu", *devices]
    for device in devices:
        for case in SDPA_DTYPE_CASES + SDPA_BACKEND_CASES:
            outcome = sdpa.cases[f"{device}/{case}"]
            assert outcome["status"] in ("ok", "error", "skipped"), (device, case, outcome)
        mixed = sdpa.cases[f"{device}/q=float32,kv=float16/eager"]
        assert (mixed["status"], mixed["error_class"]) == ("error", "RuntimeError")
        assert SDPA_DTYPE_PATTERN.search(str(mixed["message"])) is not None
        assert sdpa.cases[f"{device}/q=float32,kv=float16/autocast-float16"]["status"] == "ok"
        math = sdpa.cases[f"{device}/backend=math,dtype=float32"]
        assert math["status"] == "ok" and math["can_use"] is None
        for case in SDPA_BACKEND_CASES:
            outcome = sdpa.cases[f"{device}/{case}"]
            assert isinstance(outcome["reasons"], list)
            if outcome["can_use"] is False:
                assert outcome["reasons"], (device, case, outcome)  # torch says why
        assert results["bf16"].cases[device]["capability"]
        fastpath = results["transformer-fastpath"].cases
        assert {f"{device}/eager", f"{device}/autocast-bfloat16", f"{device}/autocast-float16"} <= set(fastpath)
        assert fastpath[f"{device}/autocast-float16"]["fastpath"] is False  # CUDA autocast disables the fast path
    assert results["bf16"].status == "ok"


def _recorded(path: Path) -> tuple[NvmlFacts, dict[str, ProbeResult]]:
    """A run _record_gpu_run wrote, read back through the snapshot's own readers."""
    record = json.loads(path.read_text(encoding="utf-8"))
    facts = Facts.from_dict({**facts_dict(), "nvml": record["nvml"], "probes": record["probes"]})
    return facts.nvml, dict(facts.probes)


@pytest.mark.parametrize("path", sorted(GPU_RUNS.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_gpu_runs_still_pass(path: Path) -> None:
    """Every run recorded on a real GPU (tests/fixtures/gpu-runs/, written by the test above) still reads as that
    test requires: the evidence of those machines keeps checking the snapshot's readers without a GPU."""
    nvml_facts, results = _recorded(path)
    _assert_gpu_run(nvml_facts, results)


def test_the_recorded_run_check_can_fail() -> None:
    """A record whose mixed-dtype SDPA case passed (a torch that no longer refuses fp32 queries with fp16 keys, or a
    probe that no longer tries them) is refused."""
    path = next(iter(sorted(GPU_RUNS.glob("*.json"))))
    record = json.loads(path.read_text(encoding="utf-8"))
    device = record["probes"]["torch-build"]["details"]["devices"][0]["index"]
    record["probes"]["sdpa"]["cases"][f"cuda:{device}/q=float32,kv=float16/eager"] = {
        "status": "ok", "error_class": None, "message": None}
    facts = Facts.from_dict({**facts_dict(), "nvml": record["nvml"], "probes": record["probes"]})
    with pytest.raises(AssertionError):
        _assert_gpu_run(facts.nvml, dict(facts.probes))


# Three fake CUDA devices on the CPU build: cuda:0 a T4, cuda:1 and cuda:2 identical A100s. torch.cuda.device records
# which device is current, and every CUDA tensor the sdpa and bf16 probes make raises with the device it was made
# for and the device current at that moment, so the cases show whether each device ran with itself current.
MIXED_GPUS = '''
_FAKE = {"current": 0, "props": {0: ("Tesla T4", 7, 5), 1: ("NVIDIA A100-SXM4-40GB", 8, 0),
                                 2: ("NVIDIA A100-SXM4-40GB", 8, 0)}}


class _FakeDevice:
    def __init__(self, index):
        self.index, self.saved = int(str(index).rsplit(":", 1)[-1]), None

    def __enter__(self):
        self.saved, _FAKE["current"] = _FAKE["current"], self.index

    def __exit__(self, *exc):
        _FAKE["current"] = self.saved


class _FakeProps:
    def __init__(self, index):
        self.name, self.major, self.minor = _FAKE["props"][index]
        self.total_memory = 16 * 1024 ** 3


def _cuda(ctx):
    torch = ctx.torch
    torch.cuda.device = _FakeDevice
    torch.cuda.get_device_properties = lambda d: _FakeProps(int(str(d).rsplit(":", 1)[-1]))
    return {"available": True, "devices": ["cuda:0", "cuda:1", "cuda:2"], "build": "12.4", "hip": None,
            "error": None, "warnings": []}


def _sdpa_tensor(torch, dtype_name, device):
    raise RuntimeError("made for %s with cuda:%d current" % (device, _FAKE["current"]))


def _bf16_matmul(torch, device):
    raise RuntimeError("made for %s with cuda:%d current" % (device, _FAKE["current"]))
'''


@pytest.mark.torch
@pytest.mark.slow
def test_each_device_runs_with_itself_current_and_twins_once(torch_python: str) -> None:
    """Mixed GPUs: every case of cuda:N runs with cuda:N current (torch's kernel checks read the current device),
    and the second of two identical A100s is not probed again but gets the first one's cases, marked probed_on."""
    results = _run(torch_python, ["sdpa", "bf16"], extra_source=MIXED_GPUS)
    sdpa, bf16 = results["sdpa"], results["bf16"]
    assert sdpa.status == "ok", sdpa
    assert sdpa.details["probed_devices"] == ["cuda:0", "cuda:1"]
    for device in ("cuda:0", "cuda:1"):
        for case in SDPA_DTYPE_CASES + SDPA_BACKEND_CASES:
            outcome = sdpa.cases[f"{device}/{case}"]
            if outcome["status"] == "skipped":
                continue  # a backend this torch lacks
            assert outcome["message"] == f"made for {device} with {device} current", (device, case, outcome)
            assert "probed_on" not in outcome
        assert bf16.cases[device]["message"] == f"made for {device} with {device} current"
    for case in SDPA_DTYPE_CASES + SDPA_BACKEND_CASES:
        twin = sdpa.cases[f"cuda:2/{case}"]
        assert twin["probed_on"] == "cuda:1"
        assert twin["status"] == sdpa.cases[f"cuda:1/{case}"]["status"]
    assert bf16.cases["cuda:2"]["probed_on"] == "cuda:1"
    assert [bf16.cases[d]["capability"] for d in ("cuda:0", "cuda:1", "cuda:2")] == ["7.5", "8.0", "8.0"]


# cuda:0's third backend case hits an illegal memory access, which makes the CUDA context unusable; cuda:1 is fine.
STICKY = MIXED_GPUS.replace("2: (\"NVIDIA A100-SXM4-40GB\", 8, 0)", "2: (\"NVIDIA H100\", 9, 0)") + '''
_CALLS = {"cuda:0": 0}


def _sdpa_backend_case(torch, device, backend, dtype_name, apis_used):
    if device == "cuda:0":
        _CALLS[device] += 1
        if _CALLS[device] == 3:
            return {"status": "error", "error_class": "AcceleratorError", "warnings": [], "can_use": None,
                    "reasons": [], "out_dtype": None,
                    "message": "CUDA error: an illegal memory access was encountered"}
    return {"status": "ok", "error_class": None, "message": None, "warnings": [], "can_use": True, "reasons": [],
            "out_dtype": dtype_name}


def probe_pid(ctx):
    return {"status": "ok", "details": {"pid": os.getpid()}}


def probe_pid_after(ctx):
    return {"status": "ok", "details": {"pid": os.getpid()}}
'''


@pytest.mark.torch
@pytest.mark.slow
def test_sticky_cuda_error_skips_the_device_and_ends_the_child(torch_python: str) -> None:
    """After a sticky CUDA error, that device's later cases are skipped (not recorded as their own errors), other
    devices go on, and the next probe runs in a fresh process."""
    specs = {n: ProbeSpec(n, "reports the process id") for n in ("pid", "pid-after")}
    results = _run(torch_python, ["pid", "sdpa", "pid-after"], extra_source=STICKY, extra_specs=specs)
    sdpa = results["sdpa"]
    assert sdpa.status == "ok", sdpa
    order = [f"backend={b},dtype={d}" for b in ("flash", "efficient", "cudnn", "math")
             for d in ("float16", "bfloat16", "float32")]
    assert sdpa.cases[f"cuda:0/{order[2]}"]["error_class"] == "AcceleratorError"
    for case in order[3:]:
        later = sdpa.cases[f"cuda:0/{case}"]
        assert later["status"] == "skipped" and "sticky CUDA error" in later["message"], later
    assert all(sdpa.cases[f"cuda:1/{case}"]["status"] == "ok" for case in order)
    assert "illegal memory access" in sdpa.details["sticky_cuda_error"]
    assert results["pid"].details["pid"] != results["pid-after"].details["pid"]

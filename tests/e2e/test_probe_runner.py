"""Probe isolation with real child processes that really crash, hang, print garbage or run out of memory."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from envcheck.sources.probes import runner
from envcheck.sources.probes.catalog import ProbeSpec
from envcheck.sources.probes.runner import Program, RunOptions, run

# Isolation is built on POSIX process groups and signals (a crash is classified by its signal).
pytestmark = pytest.mark.posix

# Probes injected into the child for these tests; none needs torch, so no torch is imported.
FAULTS = '''
def probe_fine(ctx):
    return {"status": "ok", "details": {"answer": 42}}

def probe_segfault(ctx):
    import ctypes
    ctypes.string_at(0)

def probe_abort(ctx):
    import os
    os.abort()

def probe_hang(ctx):
    import time
    time.sleep(3600)

def probe_garbage(ctx):
    import sys
    sys.stdout.write("\\x00\\xff not json {{{ " * 10000)
    sys.stderr.write("noise on stderr\\n" * 1000)
    print(object())
    return {"status": "ok", "details": {"printed": True}}

def probe_exit(ctx):
    import os
    os._exit(3)

def probe_raises(ctx):
    raise ValueError("bad input shape")

def probe_memory(ctx):
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (512 * 1024 * 1024, 512 * 1024 * 1024))
    hoard = []
    while True:
        hoard.append(bytearray(64 * 1024 * 1024))

def probe_orphan(ctx):
    import subprocess, sys
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    import time
    time.sleep(3600)
'''
NAMES = ["fine", "segfault", "abort", "hang", "garbage", "exit", "raises", "memory", "orphan"]
SPECS = {n: ProbeSpec(n, f"test probe {n}", needs_torch=False) for n in NAMES}


@pytest.fixture(autouse=True)
def _catalogue_back() -> Iterator[None]:
    """Each test runs its own probes (_opts swaps them in); the catalogue's come back after it."""
    yield
    runner.PROGRAM = Program()


def _opts(extra_source: str = FAULTS, extra_specs: Mapping[str, ProbeSpec] = SPECS, **changes: object) -> RunOptions:
    """Options for a run of the test probes `extra_source` defines (with `extra_specs`), in real children."""
    runner.PROGRAM = Program(extra_source, extra_specs)
    base: dict[str, object] = {"python": sys.executable, "timeout_s": 3.0}
    base.update(changes)
    return RunOptions(**base)  # type: ignore[arg-type]


def _only(results: dict[str, object], names: list[str]) -> dict[str, object]:
    return {k: v for k, v in results.items() if k in names}


@pytest.mark.parametrize(
    ("name", "status", "error_class"),
    [
        pytest.param("fine", "ok", None, id="ok"),
        pytest.param("raises", "error", "ValueError", id="exception"),
        pytest.param("segfault", "crashed", "SIGSEGV", id="segfault"),
        pytest.param("abort", "crashed", "SIGABRT", id="abort"),
        pytest.param("exit", "crashed", "ExitCode", id="exit-non-zero"),
        pytest.param("garbage", "ok", None, id="garbage-on-stdout"),
    ],
)
def test_each_fault_becomes_a_result(name: str, status: str, error_class: str | None) -> None:
    """A probe's crash, exception or garbage output becomes its result; envcheck itself never fails."""
    result = run([name], _opts())[name]
    assert (result.status, result.error_class) == (status, error_class)


def test_crash_reports_stderr_tail_and_faulthandler_trace() -> None:
    """A segfault keeps the child's last stderr lines, including faulthandler's Python traceback."""
    result = run(["segfault"], _opts())["segfault"]
    assert result.stderr_tail is not None and "Segmentation fault" in result.stderr_tail
    assert "probe_segfault" in result.stderr_tail


def test_hang_is_killed_at_the_timeout_and_reported() -> None:
    """A probe that hangs is killed with its process group after --probe-timeout and reported as timeout."""
    start = time.monotonic()
    result = run(["hang"], _opts(timeout_s=1.5))["hang"]
    elapsed = time.monotonic() - start
    assert result.status == "timeout"
    assert elapsed < 1.5 + 2.0


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    """Grandchildren a hanging probe started die with it: nothing is left running."""
    marker = "import time; time.sleep(3600)"
    run(["orphan"], _opts(timeout_s=1.5))
    time.sleep(0.2)
    leftovers = []
    for pid in os.listdir("/proc") if Path("/proc").is_dir() else []:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            leftovers.append(pid)
    assert leftovers == []


def test_a_crash_costs_only_the_probe_that_crashed() -> None:
    """After one probe kills the child, the probes after it still run in a fresh child and report."""
    results = run(["fine", "segfault", "raises", "abort", "garbage"], _opts())
    assert {k: v.status for k, v in results.items()} == {
        "fine": "ok", "segfault": "crashed", "raises": "error", "abort": "crashed", "garbage": "ok"}


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux only (macOS ignores it)")
def test_memory_exhaustion_is_a_result() -> None:
    """A probe that exhausts its memory limit ends as an error (MemoryError) or a crash, never a hang."""
    result = run(["memory", "fine"], _opts(timeout_s=20.0))
    assert result["memory"].status in ("error", "crashed")
    if result["memory"].status == "error":
        assert result["memory"].error_class == "MemoryError"
    assert result["fine"].status == "ok"


def test_missing_interpreter_is_skipped_with_the_reason(tmp_path: Path) -> None:
    """A checked interpreter that cannot be started makes every probe skipped, naming why."""
    result = run(["fine"], _opts(python=str(tmp_path / "no-python")))["fine"]
    assert result.status == "skipped"
    assert "cannot start" in (result.message or "")


# --- a broken torch -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("init", "status", "error_class"),
    [
        pytest.param("raise ImportError('libcudnn.so.9: cannot open shared object file')", "error", "ImportError",
                     id="import-raises"),
        pytest.param("import ctypes\nctypes.string_at(0)", "crashed", "SIGSEGV", id="import-segfaults"),
        pytest.param("import time\ntime.sleep(3600)", "timeout", "Timeout", id="import-hangs"),
        pytest.param("import sys\nsys.exit(1)", "error", "SystemExit", id="import-exits"),
    ],
)
def test_broken_torch_import(tmp_path: Path, init: str, status: str, error_class: str) -> None:
    """A torch whose import raises, segfaults, hangs or exits is a torch-import verdict; probes needing torch skip."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(init + "\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    start = time.monotonic()
    results = run(["torch-build", "sdpa"], RunOptions(python=sys.executable, timeout_s=2.0, import_timeout_s=2.0,
                                                      env=env))
    elapsed = time.monotonic() - start
    assert (results["torch-import"].status, results["torch-import"].error_class) == (status, error_class)
    assert results["torch-build"].status == "skipped"
    assert results["sdpa"].status == "skipped"
    assert "torch" in (results["sdpa"].message or "")
    assert elapsed < 2.0 + 2.0 + 1.0  # a hanging import is reported within the timeout plus 2 s (+ slack)


def test_torch_not_installed_is_skipped_not_failed(tmp_path: Path) -> None:
    """Without torch, torch-import is skipped ("torch is not installed"), not an error."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    results = run(["torch-build"], RunOptions(python=sys.executable, timeout_s=10.0, env=env))
    if results["torch-import"].status == "ok":
        pytest.skip("this interpreter has torch installed")
    assert results["torch-import"].status == "skipped"
    assert results["torch-import"].message == "torch is not installed"
    assert results["torch-build"].message == "torch is not installed"


# --- GPU-shaped limits: device order, the import bound, one timeout per hung GPU -------------------------------

ENV_PROBE = '''
def probe_cuda_env(ctx):
    import os
    return {"status": "ok", "details": {k: os.environ.get(k) for k in ("CUDA_DEVICE_ORDER", "CUDA_VISIBLE_DEVICES")}}
'''


@pytest.mark.parametrize("visible", [None, "1"], ids=["unset", "user-set"])
def test_child_keeps_the_users_device_order(visible: str | None) -> None:
    """The child sees CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES exactly as the user set them: forcing PCI bus order
    would make cuda:0 (and CUDA_VISIBLE_DEVICES=1) another GPU than in the user's own programs."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_DEVICE_ORDER", "CUDA_VISIBLE_DEVICES")}
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    spec = {"cuda-env": ProbeSpec("cuda-env", "reports the CUDA variables", needs_torch=False)}
    result = run(["cuda-env"], _opts(extra_source=ENV_PROBE, extra_specs=spec, env=env))["cuda-env"]
    assert result.details == {"CUDA_DEVICE_ORDER": None, "CUDA_VISIBLE_DEVICES": visible}


def _slow_torch(tmp_path: Path, seconds: float) -> dict[str, str]:
    """An environment whose `import torch` takes `seconds` (a cold import from a network filesystem)."""
    (tmp_path / "torch.py").write_text(f"import time\ntime.sleep({seconds})\n__version__ = '0+slow'\n",
                                       encoding="utf-8")
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


TORCH_PROBE = {"after-import": ProbeSpec("after-import", "needs torch", needs_torch=True)}
AFTER_IMPORT = '''
def probe_after_import(ctx):
    return {"status": "ok", "details": {"torch": ctx.torch.__version__}}
'''


def test_slow_import_is_not_charged_to_the_first_probe(tmp_path: Path) -> None:
    """An import slower than one probe's bound but within the import bound succeeds, and so do the probes."""
    results = run(["after-import"], _opts(env=_slow_torch(tmp_path, 1.5), timeout_s=1.0, import_timeout_s=30.0,
                                          extra_source=AFTER_IMPORT, extra_specs=TORCH_PROBE))
    assert results["torch-import"].status == "ok", results["torch-import"]
    assert results["after-import"].details == {"torch": "0+slow"}


def test_hung_import_is_an_import_timeout(tmp_path: Path) -> None:
    """An import that outlasts the import bound is torch-import's timeout, saying so, and the probes that need
    torch are skipped with that reason instead of hanging again."""
    results = run(["after-import"], _opts(env=_slow_torch(tmp_path, 3600), timeout_s=30.0, import_timeout_s=1.0,
                                          extra_source=AFTER_IMPORT, extra_specs=TORCH_PROBE))
    imported = results["torch-import"]
    assert (imported.status, imported.error_class) == ("timeout", "Timeout")
    assert imported.message is not None and "importing torch did not finish within 1 s" in imported.message
    assert results["after-import"].status == "skipped"
    assert "importing torch timeout" in str(results["after-import"].message)


def test_the_probe_timeout_bounds_the_import_too(tmp_path: Path) -> None:
    """Without an import bound of its own, a hung import is killed after the user's probe timeout, not later."""
    begun = time.monotonic()
    results = run(["after-import"], _opts(env=_slow_torch(tmp_path, 3600), timeout_s=2.0,
                                          extra_source=AFTER_IMPORT, extra_specs=TORCH_PROBE))
    assert results["torch-import"].status == "timeout"
    assert "within 2 s" in str(results["torch-import"].message)
    assert time.monotonic() - begun < 20  # a generous bound: the default import bound was 600 s


def test_the_import_is_shown_while_it_runs(tmp_path: Path) -> None:
    """While the child imports torch, progress is told each second how long it has waited and the bound."""
    told: list[tuple[str, int, int, tuple[float, float] | None]] = []

    def progress(name: str, index: int, total: int, waited: tuple[float, float] | None = None) -> None:
        told.append((name, index, total, waited))

    results = run(["after-import"], _opts(env=_slow_torch(tmp_path, 2.5), timeout_s=30.0, progress=progress,
                                          extra_source=AFTER_IMPORT, extra_specs=TORCH_PROBE))
    assert results["after-import"].status == "ok"
    ticks = [w for (_, _, _, w) in told if w is not None]
    assert len(ticks) >= 2 and all(limit == 30.0 for _, limit in ticks)
    assert [int(seconds) for seconds, _ in ticks] == sorted(int(seconds) for seconds, _ in ticks)
    assert ("after-import", 2, 2, None) in told  # then each probe as it starts


HUNG_GPU = '''
def probe_sdpa(ctx):
    import time
    time.sleep(3600)

def probe_bf16(ctx):
    return {"status": "ok"}

def probe_transformer_fastpath(ctx):
    return {"status": "ok"}
'''


def test_one_hung_gpu_costs_one_timeout() -> None:
    """After a GPU probe times out, the other GPU probes are skipped with that reason (each would hang again in a
    fresh child), while a probe that does not touch the GPU still runs."""
    specs = {n: ProbeSpec(n, "stand-in", needs_torch=False) for n in ("sdpa", "transformer-fastpath", "bf16")}
    specs["fine"] = SPECS["fine"]
    results = run(["sdpa", "transformer-fastpath", "bf16", "fine"],
                  _opts(timeout_s=1.0, extra_source=FAULTS + HUNG_GPU, extra_specs=specs))
    assert results["sdpa"].status == "timeout"
    for name in ("transformer-fastpath", "bf16"):
        assert results[name].status == "skipped"
        assert "the sdpa probe timed out" in str(results[name].message)
    assert results["fine"].status == "ok"


def test_a_child_started_early_runs_the_probes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`start` begins the shared child (its slow import runs meanwhile); `run` uses it rather than a second one,
    and its results are the same as a child started by `run`."""
    opts = _opts(env=_slow_torch(tmp_path, 1.0), timeout_s=30.0, extra_source=AFTER_IMPORT, extra_specs=TORCH_PROBE)
    started = runner.start(["after-import"], opts)
    assert started is not None and len(started.children) == 1
    (child,) = started.children
    time.sleep(1.0)  # the caller's own work; the child imports meanwhile
    spawned: list[object] = []
    real_spawn = runner.Spawned
    monkeypatch.setattr(runner, "Spawned", lambda *a, **k: spawned.append(a) or real_spawn(*a, **k))
    early = run(["after-import"], opts, started)
    assert spawned == []  # no second child
    assert early["after-import"].details == {"torch": "0+slow"}
    assert {k: v.status for k, v in early.items()} == {k: v.status for k, v in run(["after-import"], opts).items()}
    assert len(spawned) == 1
    assert not Path(child.out_path).parent.exists()  # its folder is gone with it


def test_a_child_started_for_another_interpreter_is_ended(tmp_path: Path) -> None:
    """A child begun for another interpreter (or other probes) is killed, and `run` starts the right one."""
    other = runner.start(["hang"], _opts())
    assert other is not None
    (child,) = other.children
    results = run(["fine"], _opts(), other)
    assert results["fine"].status == "ok"
    assert child.proc.returncode is not None and not Path(child.out_path).parent.exists()


def test_cached_results_end_the_early_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every result in the probe cache, the child begun before collection is killed, not waited for."""
    from _fakes import build_facts

    from envcheck.facts.probe_results import ProbeResult
    from envcheck.sources.probes import results_cache as probe_results
    from envcheck.sources.probes import run_probes, runner
    facts = build_facts()
    monkeypatch.setattr(probe_results, "load", lambda *args, **kwargs: {"hang": ProbeResult(status="ok")})
    started = runner.start(["hang"], _opts())
    assert started is not None
    (child,) = started.children
    begun = time.monotonic()
    probed = run_probes(facts, ["hang"], started=started)
    assert probed.cached and probed.results["hang"].status == "ok"
    assert time.monotonic() - begun < 30
    assert child.proc.returncode is not None and not Path(child.out_path).parent.exists()


ISOLATED = {"alone": ProbeSpec("alone", "isolated", isolated=True, needs_torch=False),
            "fine": SPECS["fine"]}


def test_isolated_probes_children_start_beside_the_shared_one() -> None:
    """`start` begins the isolated probes' children too, each taken by the run of its own probe."""
    opts = _opts(extra_source=FAULTS + "\ndef probe_alone(ctx):\n    return {'status': 'ok'}\n",
                 extra_specs={**SPECS, **ISOLATED})
    started = runner.start(["fine", "alone"], opts)
    assert started is not None and len(started.children) == 2
    children = list(started.children)
    results = run(["fine", "alone"], opts, started)
    assert {k: v.status for k, v in results.items()} == {"fine": "ok", "alone": "ok"}
    assert started.children == [] and all(c.proc.returncode is not None for c in children)

"""Reading a pasted report, writing the findings' commands and merging a fix plan take time linear in their input,
however hostile it is.

Each test times one reader (through `read_report`, the path of `check --report`), the commands of many findings or
the fix planner's merging on a hostile input at one size and at GROWTH times that size, and fails when the larger
took more than RATIO times as long: linear work takes about GROWTH times as long, quadratic GROWTH**2 (16) times,
cubic 64 times. Two sizes are compared, never a wall time: each timing repeats its input until it lasts at least
MIN_S, so that scheduling noise on a shared machine is small against it, and the best of a few such timings counts.
The sizes are chosen so that the code these tests were written against (patterns with a lazy group beside `\\s*`,
a scan of the snapshot per finding, a list searched per merged install) fails within seconds; where SIGALRM exists,
a larger input still running after ABORT_RATIO times the smaller's time is stopped and fails the test at once.
"""

from __future__ import annotations

import gc
import math
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from _fakes import build_facts, dist_dict

from envcheck.remedy import fix as fix_mod
from envcheck.remedy.commands.installers import for_environment
from envcheck.rules.model import Finding, Severity, Status
from envcheck.sources.reports import read_report

# Each test compares the time of two input sizes: run without parallel workers beside it (.ci/run).
pytestmark = pytest.mark.timing

GROWTH = 4
RATIO = 10.0  # between linear (4) and quadratic (16)
ABORT_RATIO = 4 * RATIO
MIN_S = 0.02
TRIALS = 2

Work = Callable[[], object]


class _TooSlow(BaseException):
    """The larger input ran past ABORT_RATIO times the smaller's time (a BaseException: no `except Exception` in
    the code under test swallows it)."""


@contextmanager
def _abort_after(seconds: float) -> Iterator[None]:
    if not hasattr(signal, "setitimer"):  # Windows: no early stop, the ratio still decides
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise _TooSlow

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _timed(work: Work, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        work()
    return time.perf_counter() - start


def growth(make: Callable[[int], Work], size: int) -> float:
    """How many times longer the work `make` builds takes at GROWTH * `size` than at `size` (inf: stopped)."""
    small, large = make(size), make(GROWTH * size)
    enabled = gc.isenabled()
    gc.disable()  # as timeit does: a collection falling in one timing and not the other is noise
    try:
        repeat = 1
        while (first := _timed(small, repeat)) < MIN_S:
            repeat *= 2
        t_small = min(first, *(_timed(small, repeat) for _ in range(TRIALS)))
        t_large = math.inf
        for _ in range(TRIALS):
            try:
                with _abort_after(ABORT_RATIO * t_small):
                    t_large = min(t_large, _timed(large, repeat))
            except _TooSlow:
                break
        return t_large / t_small
    finally:
        if enabled:
            gc.enable()


# --- the readers -----------------------------------------------------------------------------------------------


def _report(text: Callable[[int], str]) -> Callable[[int], Work]:
    def make(size: int) -> Work:
        data = text(size).encode()
        return lambda: read_report(data, "hostile.txt")
    return make


_COLLECT_ENV = "PyTorch version: 2.5.1\nIs debug build: False\n"
_SMI = "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |\n"
_HF = "- `transformers` version: 4.46.0\n"
_DS = "DeepSpeed general environment info:\n"

READERS = [
    pytest.param(_report(lambda n: f"{' ' * n}x\n{_HF}{' ' * n}x\n- {' ' * n}x\n"), 200,
                 id="hf-env-spaces-before-a-key"),
    pytest.param(_report(lambda n: _COLLECT_ENV + _HF + "- key: value\n" * n), 2000,
                 id="collect-env-and-hf-env-many-lines"),
    pytest.param(_report(lambda n: f"{_DS}torch version{'.' * n}x{' ' * n}y\ntorch version{' ' * n}x\n"), 2000,
                 id="ds-report-spaces-and-dots"),
    pytest.param(_report(lambda n: f"{_COLLECT_ENV}GPU models and configuration: GPU 0: a{' ' * n}b\n"
                                   f"GPU 1: a{' ' * n}b\nCUDA used to build PyTorch: {'1' * n}\n"), 2000,
                 id="collect-env-spaces-in-a-gpu-name-and-digits"),
    pytest.param(_report(lambda n: f"{_SMI}|   0  a{chr(9) * n}x\n|   0  A100  On | 00000000:01:00.0 Off |\n"
                                   f"{'1' * n}\n"), 2000, id="nvidia-smi-spaces-in-a-row-and-digits"),
    pytest.param(_report(lambda n: f"==NVSMI LOG==\nDriver Version : 550\na{' ' * n}x\n"), 2000,
                 id="nvidia-smi-q-spaces-after-a-key"),
    pytest.param(_report(lambda n: f"# packages in environment at /a{' ' * n}x\nnumpy 1.26.4 py_0 conda-forge\n"), 2000,
                 id="conda-list-spaces-in-the-prefix"),
    pytest.param(_report(lambda n: f"Package Version\n--- {'-' * n}x\n"), 2000, id="pip-list-a-long-rule"),
    pytest.param(_report(lambda n: "".join(f"pkg-{i}==1.0\n" for i in range(n))), 2000, id="pip-freeze-many-lines"),
    pytest.param(_report(lambda n: "```\na\n```\n" * n), 1000, id="markdown-many-fences"),
]


@pytest.mark.parametrize(("make", "size"), READERS)
def test_reading_a_report_grows_linearly(make: Callable[[int], Work], size: int) -> None:
    """A hostile report four times as large takes well under sixteen times as long to read."""
    assert growth(make, size) < RATIO


# --- the fix plan ----------------------------------------------------------------------------------------------

_FACTS = build_facts(dists=[dist_dict("numpy", "1.26.4")])
_PY = _FACTS.python.executable


def _finding(index: int, command: tuple[str, ...]) -> Finding:
    return Finding(rule_id="EC0102", name="requirement-not-installed", severity=Severity.ERROR, status=Status.FAIL,
                   summary=f"dist-{index} 1.0 requires pkg-{index}>=1, which is not installed", commands=(command,))


def _plan(command: Callable[[int], tuple[str, ...]]) -> Callable[[int], Work]:
    def make(size: int) -> Work:
        findings = [_finding(i, command(i)) for i in range(size)]
        return lambda: fix_mod.plan(findings, _PY, facts=_FACTS)
    return make


PLANS = [
    pytest.param(_plan(lambda i: (_PY, "-m", "pip", "install", f"pkg-{i}>=1")), 1000,
                 id="installs-merged-into-one"),
    pytest.param(_plan(lambda i: (_PY, "-m", "pip", "install", "--upgrade", "pip")), 2000,
                 id="one-command-asked-by-every-finding"),
]


@pytest.mark.parametrize(("make", "size"), PLANS)
def test_planning_a_fix_grows_linearly(make: Callable[[int], Work], size: int) -> None:
    """Four times as many findings take well under sixteen times as long to plan, merged installs included."""
    assert growth(make, size) < RATIO


def _commands_per_finding(size: int) -> Work:
    """The commands of one finding per distribution, written for a snapshot of `size` distributions (the engine
    does this for every finding)."""
    facts = build_facts(dists=[dist_dict(f"dist-{i}", "1.0", f"pkg-{i}>=1") for i in range(size)])
    python = facts.python.executable
    argvs = [[(python, "-m", "pip", "install", f"pkg-{i}>=1")] for i in range(size)]
    return lambda: [for_environment(argv, facts) for argv in argvs]


def test_writing_every_findings_commands_grows_linearly() -> None:
    """Commands for one finding per distribution of a snapshot four times as large take well under sixteen times
    as long: the snapshot is not scanned again for each finding."""
    assert growth(_commands_per_finding, 500) < RATIO


# --- numbers ---------------------------------------------------------------------------------------------------

_DIGITS = "1" * 5000  # int() refuses more than 4,300 digits


@pytest.mark.parametrize("text", [
    pytest.param(f"{_COLLECT_ENV}CUDA used to build PyTorch: {_DIGITS}.1\n", id="collect-env-cuda-build"),
    pytest.param(f"PyTorch version: 2.5.1+cu{_DIGITS}\nIs debug build: False\n", id="collect-env-local-version"),
    pytest.param(f"{_SMI}|   0  A100  On | 00000000:01:00.0 Off |\n| 1MiB / {_DIGITS}MiB |\n", id="nvidia-smi-memory"),
    pytest.param(f"==NVSMI LOG==\nGPU 00000000:01:00.0\n    FB Memory Usage\n        Total : {_DIGITS} MiB\n",
                 id="nvidia-smi-q-memory"),
    pytest.param(f"# packages in environment at /a:\npytorch 2.5.1 py3.12_cuda{_DIGITS}.4_0 pytorch\n",
                 id="conda-list-cuda-build"),
])
def test_a_number_too_long_to_be_one_states_nothing(text: str) -> None:
    """A version part or memory size thousands of digits long is read as unstated, not converted."""
    facts = read_report(text.encode(), "hostile.txt")
    assert facts.torch is None or facts.torch.cuda is None
    assert facts.nvml is None or all(d.memory_total_mib is None for d in facts.nvml.devices)

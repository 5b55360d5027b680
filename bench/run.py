#!/usr/bin/env python3
"""Benchmark `envcheck --static` against `pip check`, `torch.utils.collect_env` and `import torch`.

What it does:
1. creates a virtual environment (default bench/.venv, gitignored) with torch and enough real distributions from
   the package index to make ~100 (numpy, pandas, scipy, transformers, lightning, ...), or reuses the one given
   with --venv as it is;
2. installs envcheck into it from this repository (found from this file's location), unless --no-install-envcheck;
3. times each command N times, alternating (A B C D A B C D ...) after W warm-up rounds, every run a fresh child
   process started in an empty directory with its output discarded:
     envcheck --static, python -m pip check, python -m torch.utils.collect_env, python -c "import torch",
   plus two floors: python -c pass (interpreter start) and envcheck --version (the CLI's imports, no check);
4. prints a markdown table (median, p90, min, CPU, peak RSS) and the ratios to the targets;
5. breaks one check down into phases (imports, rule loading, collection, each rule's evaluation, rendering), in CPU
   ms, by calling envcheck's internal functions in one process (--no-phases skips it);
6. writes every sample to bench/results/run-<timestamp>.json (gitignored) unless --no-json.

Wall time is perf_counter around spawn..reap; CPU time and peak RSS come from os.wait4 on that one child, so no run's
figures mix with another's. Standard library only: run it with any Python >= 3.10 (`python bench/run.py --help`).

Targets (issue: static tier performance), measured here, never asserted in tests:
  envcheck --static median <= 150 ms; <= 0.15 x `pip check` in the same run; peak RSS <= 60 MB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    REPO_ROOT,
    RESULTS_DIR,
    Series,
    check_runs,
    count_distributions,
    envcheck_source,
    fmt,
    install_envcheck,
    machine,
    phases,
    pip_install,
    run_alternating,
    summary_line,
    table,
    wait_quiet,
)

DEFAULT_VENV = REPO_ROOT / "bench" / ".venv"
TORCH = "torch==2.13.0"
# Real distributions typical of a PyTorch project; with their dependencies, torch's and envcheck's this makes ~100.
PACKAGES = [
    "numpy", "pandas", "scipy", "scikit-learn", "matplotlib", "transformers", "accelerate", "datasets",
    "lightning", "tensorboard", "einops", "rich", "pydantic", "requests", "jinja2", "httpx", "jsonschema",
    "sentencepiece", "tabulate", "gitpython", "platformdirs", "six", "pytz", "tomli", "colorama",
    "click", "packaging",  # envcheck's own dependencies (install_envcheck adds any it gains later)
]
TARGET_MS, TARGET_RATIO, TARGET_RSS_MB = 150.0, 0.15, 60.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python bench/run.py",
        description=__doc__.split("\n\n")[0],
        epilog="Example: python bench/run.py --runs 21 --warmup 3   |   python bench/run.py --venv ~/venvs/ml",
    )
    p.add_argument("--venv", type=Path, default=None,
                   help=f"use this existing virtual environment as it is (default: create/reuse {DEFAULT_VENV})")
    p.add_argument("--runs", type=int, default=15, help="timed runs per command (default 15)")
    p.add_argument("--warmup", type=int, default=2, help="warm-up rounds, discarded (default 2)")
    p.add_argument("--torch", default=TORCH, help=f"torch requirement for a new venv (default {TORCH})")
    p.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                   help="first wait up to SECONDS for the 1-minute load average to drop below --quiet-load")
    p.add_argument("--quiet-load", type=float, default=0.6, metavar="LOAD",
                   help="the load average --wait-quiet waits for (default 0.6)")
    p.add_argument("--ref", default=None, metavar="REV",
                   help="install envcheck from this git revision (git archive) instead of the work tree")
    p.add_argument("--no-install-envcheck", action="store_true",
                   help="time the envcheck already installed in the venv instead of reinstalling this checkout")
    p.add_argument("--skip-collect-env", action="store_true", help="leave out torch.utils.collect_env (slowest)")
    p.add_argument("--no-phases", action="store_true",
                   help="skip the per-phase CPU breakdown of one envcheck check (through envcheck's internals)")
    p.add_argument("--no-json", action="store_true", help="do not write bench/results/run-*.json")
    p.add_argument("--json", type=Path, default=None, help="write the JSON results to this file instead")
    return p.parse_args(argv)


def ensure_venv(args: argparse.Namespace) -> Path:
    if args.venv is not None:
        venv = args.venv.expanduser().resolve()
        if not (venv / "bin" / "python").exists():
            sys.exit(f"bench: --venv {venv}: no bin/python there")
        return venv
    venv = DEFAULT_VENV
    python = venv / "bin" / "python"
    marker = venv / ".bench-complete"
    if not marker.exists():
        if not python.exists():
            print(f"bench: creating {venv}", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        # One resolver run for everything: minutes the first time (torch and ~100 wheels), skipped afterwards.
        pip_install(str(python), [args.torch, *PACKAGES])
        marker.write_text("installed: " + " ".join([args.torch, *PACKAGES]) + "\n")
    return venv


def install_from_checkout(python: str, ref: str | None) -> None:
    # A real wheel build, as users get it (the rules inside the wheel), plus whatever envcheck now requires.
    with tempfile.TemporaryDirectory(prefix="envcheck-src-") as scratch:
        install_envcheck(python, str(envcheck_source(ref, Path(scratch))))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    venv = ensure_venv(args)
    python = str(venv / "bin" / "python")
    envcheck = str(venv / "bin" / "envcheck")
    if not args.no_install_envcheck:
        install_from_checkout(python, args.ref)
    if not Path(envcheck).exists():
        sys.exit(f"bench: {envcheck} does not exist (install envcheck there, or drop --no-install-envcheck)")

    n_dists = count_distributions(python)
    torch_version = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
        capture_output=True, text=True, check=False).stdout.strip() or "not installed"
    info = machine(args.ref)
    if args.no_install_envcheck:
        info["envcheck_revision"] = f"the copy installed in the venv (checkout at {info['envcheck_revision']})"

    commands = [
        ("envcheck --static", [envcheck, "--static"]),
        ("python -m pip check", [python, "-m", "pip", "check"]),
        ("python -m torch.utils.collect_env", [python, "-m", "torch.utils.collect_env"]),
        ('python -c "import torch"', [python, "-c", "import torch"]),
        ("python -c pass (floor)", [python, "-c", "pass"]),
        ("envcheck --version (CLI imports)", [envcheck, "--version"]),
    ]
    if args.skip_collect_env:
        commands = [c for c in commands if "collect_env" not in c[0]]

    with tempfile.TemporaryDirectory(prefix="envcheck-bench-") as cwd:
        # Once each with output kept: a command that does not work at all is not worth timing.
        first = check_runs([envcheck, "--static"], cwd)
        verdict = summary_line(first.stdout)
        pip_first = check_runs([python, "-m", "pip", "check"], cwd)
        for _label, cmd in commands[2:]:
            check_runs(cmd, cwd)

        wait_quiet(args.wait_quiet, args.quiet_load)
        series = [Series(label, cmd) for label, cmd in commands]
        print(f"bench: {len(series)} commands x ({args.warmup} warm-up + {args.runs}) runs, alternating",
              file=sys.stderr)
        started = time.time()
        run_alternating(series, args.runs, args.warmup, cwd)
        elapsed = time.time() - started
    load_after = machine()["loadavg"]

    stats = {s.label: s.stats() for s in series}
    rows = []
    for s in series:
        st = stats[s.label]
        rcs = sorted({x.rc for x in s.samples})
        rows.append([s.label, fmt(st["median_ms"]), fmt(st["p90_ms"]), fmt(st["min_ms"]), fmt(st["cpu_median_ms"]),
                     fmt(st["rss_max_mb"], 1), ",".join(map(str, rcs))])

    env_ms = stats["envcheck --static"]["median_ms"]
    env_rss = stats["envcheck --static"]["rss_max_mb"]
    pip_ms = stats["python -m pip check"]["median_ms"]
    ratio_pip = env_ms / pip_ms
    ratio_ce = None
    if "python -m torch.utils.collect_env" in stats:
        ratio_ce = env_ms / stats["python -m torch.utils.collect_env"]["median_ms"]

    print(f"\n### envcheck --static vs. reference commands ({time.strftime('%Y-%m-%d')})\n")
    print(f"envcheck at {info['envcheck_revision']}; venv: {venv} — {n_dists} distributions, torch {torch_version}, "
          f"Python {info['python']}; "
          f"{info['nproc']} CPUs ({info['cpu']}); load average {info['loadavg']} before, {load_after} after; "
          f"{args.runs} runs each after {args.warmup} warm-up rounds, alternating ({elapsed:.0f} s)\n")
    print(table(["command", "median ms", "p90 ms", "min ms", "CPU ms (median)", "peak RSS MB", "exit"], rows))
    print()
    print(f"envcheck first line: {verdict}")
    print(f"pip check first line: {(pip_first.stdout.strip().splitlines() or ['(no output)'])[0]}")
    print()
    env_cpu = stats["envcheck --static"]["cpu_median_ms"]
    pip_cpu = stats["python -m pip check"]["cpu_median_ms"]
    checks = [
        ("median wall <= 150 ms", env_ms <= TARGET_MS, f"{env_ms:.0f} ms"),
        ("(same, CPU time)", env_cpu <= TARGET_MS, f"{env_cpu:.0f} ms"),
        ("<= 0.15 x pip check", ratio_pip <= TARGET_RATIO, f"{ratio_pip:.2f} x ({pip_ms:.0f} ms)"),
        ("(same, CPU time)", env_cpu / pip_cpu <= TARGET_RATIO, f"{env_cpu / pip_cpu:.2f} x ({pip_cpu:.0f} ms)"),
        ("peak RSS <= 60 MB", env_rss <= TARGET_RSS_MB, f"{env_rss:.1f} MB"),
    ]
    print(table(["target", "met", "measured"], [[t, "yes" if ok else "NO", m] for t, ok, m in checks]))
    print("\n(CPU time is user + system of the child: steadier than wall time when other processes compete for "
          "the CPUs.)")
    if ratio_ce is not None:
        print(f"\nenvcheck / collect_env: {ratio_ce:.3f} x")

    ph: dict[str, object] = {}
    if not args.no_phases:
        with tempfile.TemporaryDirectory(prefix="envcheck-bench-") as cwd:
            ph = phases(python, None, cwd)
        print("\n### Where one `envcheck --static` spends its CPU time (one process, ms)\n")
        if "error" in ph:
            print(f"phases failed: {ph['error']}")
        else:
            print(table(["phase", "CPU ms"], [[k, fmt(v * 1000, 1)] for k, v in ph["phases"].items()]))  # type: ignore[union-attr]

    if not args.no_json:
        out = args.json or RESULTS_DIR / f"run-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "machine": info,
            "loadavg_after": load_after,
            "venv": str(venv),
            "distributions": n_dists,
            "torch": torch_version,
            "runs": args.runs,
            "warmup": args.warmup,
            "stats": stats,
            "ratios": {"envcheck/pip_check": ratio_pip, "envcheck/collect_env": ratio_ce,
                       "envcheck/pip_check (CPU)": env_cpu / pip_cpu},
            "targets_met": {t: ok for t, ok, _ in checks},
            "phases": ph,
            "samples": {s.label: [vars(x) for x in s.samples] for s in series},
        }
        out.write_text(json.dumps(data, indent=2) + "\n")
        print(f"\nbench: wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The static tier against its peers and the interpreter's floor, in one alternating run.

Commands, each a fresh child in an empty working directory, output discarded, in rounds A B C ... A B C:
  python -c pass                 the floor: the interpreter's own start
  envcheck --version             the CLI's start (answered before click is imported)
  envcheck --static (cold)       an empty cache directory before every run: the rule pack is loaded and validated,
                                 every distribution's metadata read (the cache is written, as a first run does)
  envcheck --static (replayed)   the cache from the previous run of the same command, nothing changed since: the
                                 last report is written again (envcheck/pipeline/replay.py)
  envcheck --static (re-checked) the same warm cache, but an environment variable differs from the last run's, so
                                 the check runs (its pack, metadata and requirement walk come from the cache)
  envcheck --static --no-cache   no cache read or written
  uv pip check                   the fastest peer for the dependency part (if uv is installed in the venv)
  python -m pip check            pip's own check
  rigsolve check                 if rigsolve is installed in the venv (it checks its own environment)

With --other TREE[=LABEL] (repeatable), each source tree (a checkout, or `git archive REF | tar -x -C TREE`) also
gets a re-checked series in the same rounds, as `python -m envcheck --static` with PYTHONPATH=TREE, beside this
checkout's own run the same way: a before/after pair on one venv, without reinstalling anything. With
--instructions, each tree's re-checked run is also counted once under valgrind's callgrind (instructions executed:
the same on a quiet or a busy machine, so a small change shows where wall time is noise).

Two environments:
  --venv PATH         an existing venv (bench/run.py builds a ~100-distribution one; see the README for ~200),
  --scale N:M         a synthetic venv of N distributions with M extra rules (built by bench/scale.py's code in
                      --workdir, reused when it is already there).
envcheck is used as installed in that venv (install this checkout there first, or let --scale build it).

Every run uses a private ENVCHECK_CACHE_DIR: the cold series' is emptied before each of its runs (not timed), the
warm ones' are warmed in the warm-up rounds. With --scale, the extra rules are copied into the working directory and
named by its envcheck.toml (`rule-dirs`), as a project names its own, so that the command is the plain
`envcheck --static`.
Prints medians, p90, minimums, CPU medians, and ratios against `uv pip check`, `pip check` and the floor; writes
every sample to bench/results/static-<stamp>.json unless --no-json. The issue's targets (never asserted in tests):
`--static` <= 3x `uv pip check` on ~200 distributions, `--version` <= 2.5x the floor, 2,000 distributions x 500
rules < 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, Series, child_env, count_distributions, fmt, machine, run_once, table, wait_quiet


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python bench/static.py", description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--venv", type=Path, help="time the envcheck installed in this venv, on this venv")
    where.add_argument("--scale", metavar="N:M", help="a synthetic venv with N distributions and M extra rules")
    p.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "envcheck-scale",
                   help="where --scale builds (and reuses) its venv (default: $TMPDIR/envcheck-scale)")
    p.add_argument("--ref", default=None, metavar="REF",
                   help="first install envcheck from this commit (git archive) into the venv: a before/after pair "
                        "of runs on one venv (--scale always installs, from the work tree without --ref)")
    p.add_argument("--other", action="append", default=[], metavar="TREE[=LABEL]",
                   help="another envcheck source tree, re-checked in the same rounds (repeatable)")
    p.add_argument("--instructions", action="store_true",
                   help="count each tree's re-checked run's instructions once, under valgrind --tool=callgrind")
    p.add_argument("--uv", type=Path, default=None, metavar="PATH",
                   help="the uv to time (default: the venv's, else the one on PATH)")
    p.add_argument("--runs", type=int, default=15, help="timed rounds (default 15)")
    p.add_argument("--warmup", type=int, default=2, help="warm-up rounds, discarded (default 2)")
    p.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                   help="first wait up to SECONDS for the 1-minute load average to drop below 0.6")
    p.add_argument("--no-pip-check", action="store_true", help="leave out pip check (minutes at 2,000 distributions)")
    p.add_argument("--no-json", action="store_true", help="write nothing under bench/results/")
    return p.parse_args(argv)


def scale_venv(spec: str, workdir: Path, ref: str | None) -> tuple[Path, Path | None]:
    import scale
    from _common import envcheck_source

    n, m = (int(x) for x in spec.split(":"))
    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="envcheck-src-") as scratch:
        wheel = scale.build_wheel(Path(scratch) / "wheel", envcheck_source(ref, Path(scratch)))
        venv, rules = scale.make_case(workdir, wheel, n, m)
    return venv, rules if m else None


def callgrind_instructions(argv: list[str], cwd: str, env: dict[str, str]) -> int | None:
    """Instructions one run executes (valgrind's callgrind, its `Collected` total); None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="envcheck-callgrind-") as out:
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.out", *argv],
                              cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    return int(found.group(1)) if found else None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rules: Path | None = None
    if args.scale:
        venv, rules = scale_venv(args.scale, args.workdir, args.ref)
    else:
        venv = args.venv.expanduser().resolve()
        if args.ref is not None:
            from _common import envcheck_source, install_envcheck

            with tempfile.TemporaryDirectory(prefix="envcheck-src-") as scratch:
                install_envcheck(str(venv / "bin" / "python"), str(envcheck_source(args.ref, Path(scratch))))
    python, envcheck = (str(venv / "bin" / x) for x in ("python", "envcheck"))
    uv = str(args.uv or (venv / "bin" / "uv" if (venv / "bin" / "uv").exists() else shutil.which("uv") or "uv"))
    for tool in (python, envcheck):
        if not Path(tool).exists():
            sys.exit(f"bench: {tool} does not exist")
    scratch = Path(tempfile.mkdtemp(prefix="envcheck-static-"))
    cwd = scratch / "cwd"
    cwd.mkdir()
    if rules:  # a project's rule directories live inside it
        shutil.copytree(rules, cwd / "rules")
        (cwd / "envcheck.toml").write_text('rule-dirs = ["rules"]\n', encoding="utf-8")
    caches = {name: scratch / f"cache-{name}" for name in ("cold", "warm", "changed", "none")}

    def env_for(cache: Path) -> dict[str, str]:
        return {**child_env(), "ENVCHECK_CACHE_DIR": str(cache)}

    def empty(cache: Path) -> Callable[[], None]:
        return lambda: shutil.rmtree(cache, ignore_errors=True)

    changed_env = env_for(caches["changed"])
    runs = iter(range(1_000_000))

    def change(env: dict[str, str]) -> Callable[[], None]:
        """Before each run: a variable no rule reads, but the replay compares every one that is not per-session."""
        return lambda: env.__setitem__("ENVCHECK_BENCH_RUN", str(next(runs)))

    # (series, environment, what to do before each run, untimed)
    plan: list[tuple[Series, dict[str, str], Callable[[], None] | None]] = [
        (Series("python -c pass", [python, "-c", "pass"]), child_env(), None),
        (Series("envcheck --version", [envcheck, "--version"]), child_env(), None),
        (Series("envcheck --static (cold)", [envcheck, "--static"]), env_for(caches["cold"]), empty(caches["cold"])),
        (Series("envcheck --static (replayed)", [envcheck, "--static"]), env_for(caches["warm"]), None),
        (Series("envcheck --static (re-checked)", [envcheck, "--static"]), changed_env, change(changed_env)),
        (Series("envcheck --static --no-cache", [envcheck, "--static", "--no-cache"]), env_for(caches["none"]), None),
    ]
    if not args.no_pip_check:
        plan.append((Series("python -m pip check", [python, "-m", "pip", "check"]), child_env(), None))
    if Path(uv).exists():
        plan.append((Series("uv pip check", [uv, "pip", "check", "--python", python]), child_env(), None))
    rigsolve = venv / "bin" / "rigsolve"
    if rigsolve.exists():  # it checks the environment it is installed in (it has no --python)
        plan.append((Series("rigsolve check", [str(rigsolve), "check"]), child_env(), None))

    # This checkout and each --other tree, the same way: `python -m envcheck --static`, the tree first on the path.
    trees = [("this checkout", str(Path(__file__).resolve().parents[1]))] if args.other else []
    for spec in args.other:
        tree, _, label = spec.partition("=")
        trees.append((label or tree, str(Path(tree).expanduser().resolve())))
    tree_envs: dict[str, dict[str, str]] = {}
    for label, tree in trees:
        env = tree_envs[label] = {**env_for(scratch / f"cache-tree-{len(tree_envs)}"), "PYTHONPATH": tree}
        plan.append((Series(f"re-checked: {label}", [python, "-m", "envcheck", "--static"]), env, change(env)))

    n_dists = count_distributions(python)
    wait_quiet(args.wait_quiet)
    info = machine(args.ref)
    for round_no in range(args.warmup + args.runs):
        for series, env, before in plan:
            if before is not None:
                before()
            sample = run_once(series.argv, str(cwd), env)
            if round_no >= args.warmup:
                series.samples.append(sample)
        print(f"  round {round_no + 1}/{args.warmup + args.runs}", file=sys.stderr, end="\r", flush=True)
    load_after = machine()["loadavg"]
    instructions = {label: callgrind_instructions([python, "-m", "envcheck", "--static"], str(cwd),
                                                  {**env, "ENVCHECK_BENCH_RUN": "counted"})
                    for label, env in tree_envs.items()} if args.instructions else {}
    shutil.rmtree(scratch, ignore_errors=True)

    stats = {s.label: s.stats() for s, _, _ in plan}
    floor = stats["python -c pass"]["median_ms"]
    uv_ms = stats.get("uv pip check", {}).get("median_ms")
    # On a loaded machine wall time mostly measures the wait for a core; CPU time (user + system) is what the
    # command itself costs, so its ratio is given too.
    uv_cpu = stats.get("uv pip check", {}).get("cpu_median_ms")
    pip_ms = stats.get("python -m pip check", {}).get("median_ms")
    rows = []
    for series, _, _ in plan:
        st = stats[series.label]
        codes = sorted({s.rc for s in series.samples})
        rows.append([f"`{series.label}`", fmt(st["median_ms"]), fmt(st["p90_ms"]), fmt(st["min_ms"]),
                     fmt(st["cpu_median_ms"]), fmt(st["median_ms"] / floor, 1),
                     fmt(st["median_ms"] / uv_ms, 2) if uv_ms else "",
                     fmt(st["cpu_median_ms"] / uv_cpu, 2) if uv_cpu else "",
                     fmt(st["median_ms"] / pip_ms, 2) if pip_ms else "", ",".join(map(str, codes))])
    what = f"synthetic {args.scale.replace(':', ' distributions x ')} extra rules" if args.scale else str(venv)
    print(f"\n### static tier, {n_dists} distributions ({what}), {time.strftime('%Y-%m-%d %H:%M')}\n")
    print(f"{info['nproc']} CPUs ({info['cpu']}), Python {info['python']}, envcheck {info['envcheck_revision']}; "
          f"load average {info['loadavg']} before, {load_after} after; {args.runs} rounds after {args.warmup} "
          "warm-up rounds, alternating\n")
    print(table(["command", "median ms", "p90 ms", "min ms", "CPU ms", "x floor", "x uv pip check", "CPU x uv",
                 "x pip check", "exit"], rows))
    if instructions:
        print("\nInstructions executed by one re-checked run (callgrind):\n")
        print(table(["tree", "instructions"], [[label, f"{n:,}" if n else "(no valgrind)"]
                                               for label, n in instructions.items()]))
    if not args.no_json:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        out = RESULTS_DIR / f"static-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps({
            "machine": info, "loadavg_after": load_after, "distributions": n_dists, "environment": what,
            "instructions": instructions,
            "series": {s.label: {"argv": s.argv, "stats": stats[s.label],
                                 "samples": [vars(x) for x in s.samples]} for s, _, _ in plan},
        }, indent=1))
        print(f"\nbench: samples in {out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.pop("ENVCHECK_CACHE_DIR", None)  # each series sets its own
    sys.exit(main())

#!/usr/bin/env python3
"""Fleet benchmark: what `envcheck fleet` adds over a single-node check, and `envcheck fleet merge` at scale.

1. Two ranks under torchrun (`python -m torch.distributed.run --standalone --nproc-per-node 2`), static tier, in an
   interpreter that has torch and envcheck (--python, default: the one running this script). Timed, alternating:
     check   `python -m envcheck --static`                                    the single-node check
     floor   torchrun starting 2 workers that only `import torch.distributed`   what any torchrun job pays to start
     checks  torchrun, 2 workers: `import torch.distributed`, then the check    a single-node check on each rank
     fleet   torchrun ... `envcheck fleet --static`                             the fleet check of 2 ranks
   fleet - check is the whole price over a single-node check, mostly the launcher's start and torch's import;
   fleet - checks is what the fleet machinery adds over a check on each rank under the same launcher (the
   rendezvous, posting, gathering, one merged report). Then one in-process breakdown with a one-rank world (rank
   0 hosting the store): importing torch.distributed, the rendezvous/post/gather, merge, render.
2. Merge of N snapshots (default 1,000): a real `envcheck facts` snapshot of --python's environment (probes
   included), padded with synthetic distributions to --dists (default 300, a large ML environment), written N times
   with a host each, a few percent of them with another torch / driver / numpy, so there are several groups, a
   differences table and fleet findings. Timed: the whole command as a subprocess (`fleet merge DIR/*.json --format
   json`), and in one process its phases (load + view per file, build, render).

Targets (issue: fleet check): overhead for 2 ranks <= 1 s; merge of 1,000 snapshots < 2 s. Standard library only;
writes bench/results/fleet-<stamp>.json. `python bench/fleet.py --help`.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO_ROOT, RESULTS_DIR, Series, check_runs, child_env, fmt, machine, run_alternating, table

TARGET_OVERHEAD_S = 1.0
TARGET_MERGE_S = 2.0
# Each rank doing what a fleet rank does, minus the fleet: import torch.distributed, then a single-node check.
CHECK_WITH_TORCH = ("import sys, torch.distributed; from envcheck.cli.click_cli import main; "
                    "sys.argv[0] = 'envcheck'; main(sys.argv[1:])")
# `envcheck fleet` through its click group: works whether or not envcheck/cli/click_cli.py has registered it yet.
FLEET_ENTRY = ("import sys; from envcheck.cli.fleet_cli import fleet; "
               "fleet.main(sys.argv[1:], prog_name='envcheck fleet')")

PHASES = r'''
import json, os, socket, sys, time
t0 = time.perf_counter()
import torch.distributed
t_import = time.perf_counter() - t0
from envcheck.rules import rule_pack
from envcheck.pipeline.stages import ProbeOptions
from envcheck.fleet import distributed, local, merge, report
rules = rule_pack.load()
t0 = time.perf_counter(); local.collect(rules, ProbeOptions(run=False), 0); t_collect = time.perf_counter() - t0
with socket.socket() as s:
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
os.environ.update(env)  # torch's env:// rendezvous reads the process environment
t0 = time.perf_counter(); g = distributed.run(lambda: rules, ProbeOptions(run=False), 60)
t_run = time.perf_counter() - t0
t0 = time.perf_counter(); r = merge.build(g.members, g.facts, rules, expected=1); t_build = time.perf_counter() - t0
t0 = time.perf_counter(); report.render_text(r); t_render = time.perf_counter() - t0
print(json.dumps({"import torch.distributed": t_import, "collect (static, alone)": t_collect,
                  "distributed.run (1 rank: collect + rendezvous + post + gather)": t_run,
                  "merge.build": t_build, "render text": t_render}))
'''

MERGE_PHASES = r'''
import glob, json, os, sys, time
from envcheck.rules import rule_pack
from envcheck.fleet import merge, report
files = sorted(glob.glob(sys.argv[1] + "/*.json"))
rules = rule_pack.load()
def floor():  # reading and parsing the JSON, which any merge must do
    for f in files:
        with open(f, encoding="utf-8") as fh:
            json.loads(fh.read())
t_floor = t_load = float("inf")
for _ in range(3):  # alternating, the best of three: this machine's noise is larger than the difference
    t0 = time.perf_counter(); floor(); t_floor = min(t_floor, time.perf_counter() - t0)
    t0 = time.perf_counter(); members, facts = merge.load_members(files); t_load = min(t_load, time.perf_counter() - t0)
t0 = time.perf_counter(); r = merge.build(members, facts, rules, expected=len(files))
t_build = time.perf_counter() - t0
t0 = time.perf_counter(); report.render_json(r); t_json = time.perf_counter() - t0
t0 = time.perf_counter(); report.render_text(r); t_text = time.perf_counter() - t0
print(json.dumps({"files": len(files), "groups": len(r.groups), "differences": len(r.differences),
                  "findings": len(r.findings),
                  "json_mb_per_s": sum(os.path.getsize(f) for f in files) / 1e6 / t_floor,
                  "phases": {"floor: read + json.loads of every file (best of 3)": t_floor,
                             "load_members: read + parse + view + fingerprint (best of 3)": t_load,
                             "build": t_build,
                             "render json": t_json, "render text": t_text}}))
'''


def _registered(python: str) -> bool:
    proc = subprocess.run([python, "-m", "envcheck", "fleet", "--help"], capture_output=True, env=child_env(),
                          check=False)
    return proc.returncode == 0


def _fleet_argv(python: str, args: list[str], registered: bool) -> list[str]:
    return [python, "-m", "envcheck", "fleet", *args] if registered else [python, "-c", FLEET_ENTRY, *args]


def overhead(python: str, runs: int, warmup: int, cwd: str) -> dict[str, object]:
    registered = _registered(python)
    launch = [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "--no-python"]
    series = [
        Series("check: envcheck --static", [python, "-m", "envcheck", "--static"]),
        Series("floor: torchrun, 2 x import torch.distributed", [*launch, python, "-c", "import torch.distributed"]),
        Series("checks: torchrun, 2 x (import torch.distributed; envcheck --static)",
               [*launch, python, "-c", CHECK_WITH_TORCH, "--static"]),
        Series("fleet: torchrun, 2 ranks, envcheck fleet --static",
               [*launch, *_fleet_argv(python, ["--static"], registered)]),
    ]
    for s in series:
        check_runs(s.argv, cwd)
    out = check_runs(series[3].argv, cwd).stdout
    if out.count("envcheck fleet: ") != 1 or "(ranks 0-1)" not in out:
        sys.exit(f"bench: the fleet run did not print one report of one node:\n{out}")
    run_alternating(series, runs, warmup, cwd)
    med = {s.label.split(":")[0]: s.stats()["median_ms"] for s in series}
    phases = subprocess.run([python, "-c", PHASES], capture_output=True, text=True, cwd=cwd, env=child_env(),
                            check=False)
    return {
        "series": {s.label: {"argv": s.argv, **s.stats()} for s in series},
        "fleet_minus_check_ms": med["fleet"] - med["check"],
        "fleet_minus_floor_minus_check_ms": med["fleet"] - med["floor"] - med["check"],
        "fleet_minus_checks_ms": med["fleet"] - med["checks"],
        "phases_s": json.loads(phases.stdout) if phases.returncode == 0 else {"error": phases.stderr[-2000:]},
        "registered": registered,
    }


def write_snapshots(python: str, directory: Path, count: int, dists: int, cwd: str) -> dict[str, object]:
    base_file = directory.parent / "base.json"
    check_runs([python, "-m", "envcheck", "facts", "-o", str(base_file)], cwd, ok_codes=(0,))
    base = json.loads(base_file.read_text(encoding="utf-8"))
    real = len(base["distributions"])
    template = copy.deepcopy(base["distributions"][0])
    for i in range(max(0, dists - real)):
        d = copy.deepcopy(template)
        name = f"synthetic-package-{i:04d}"
        d.update(name=name, canonical_name=name, version=f"1.{i % 7}.{i % 13}", requires=[f"numpy>=1.{i % 20}"],
                 metadata_dir=d["metadata_dir"].rsplit("/", 1)[0] + f"/{name.replace('-', '_')}-1.0.dist-info")
        base["distributions"].append(d)
    base.pop("derived", None)
    rng = random.Random(20261121)
    directory.mkdir(parents=True, exist_ok=True)
    torch_dist = next((d for d in base["distributions"] if d["canonical_name"] == "torch"), None)
    for n in range(count):
        snap = copy.deepcopy(base)
        snap["host"] = f"node-{n:04d}"
        roll = rng.random()
        if roll < 0.02 and snap.get("torch") and torch_dist is not None:  # another torch on 2% of the nodes
            snap["torch"]["version"] = "2.12.1+cpu"
            for d in snap["distributions"]:
                if d["canonical_name"] == "torch":
                    d["version"] = "2.12.1+cpu"
        elif roll < 0.05:  # another numpy on 3%
            for d in snap["distributions"]:
                if d["canonical_name"] == "numpy":
                    d["version"] = "1.26.4"
        elif roll < 0.08:  # another setting on 3%
            snap["env"]["NCCL_DEBUG"] = "INFO"
        (directory / f"facts-{n:04d}.json").write_text(json.dumps(snap), encoding="utf-8")
    size = sum(p.stat().st_size for p in directory.glob("*.json"))
    return {"snapshots": count, "distributions_each": len(base["distributions"]),
            "probes_each": len(base.get("probes", {})), "total_mb": round(size / 1e6, 1)}


def merge_bench(python: str, count: int, dists: int, runs: int, warmup: int, cwd: str, scratch: Path
                ) -> dict[str, object]:
    directory = scratch / "snapshots"
    shape = write_snapshots(python, directory, count, dists, cwd)
    files = sorted(str(p) for p in directory.glob("*.json"))
    argv = _fleet_argv(python, ["merge", *files, "--format", "json", "-o", str(scratch / "report.json")],
                       _registered(python))
    check_runs(argv, cwd)
    series = [Series(f"fleet merge of {count} snapshots", argv)]
    run_alternating(series, runs, warmup, cwd)
    phases = subprocess.run([python, "-c", MERGE_PHASES, str(directory)], capture_output=True, text=True, cwd=cwd,
                            env=child_env(), check=False)
    return {"shape": shape, "series": {s.label: s.stats() for s in series},
            "in_process": json.loads(phases.stdout) if phases.returncode == 0 else {"error": phases.stderr[-2000:]}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/fleet.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--python", default=sys.executable, help="an interpreter with torch and envcheck")
    p.add_argument("--runs", type=int, default=5, help="timed runs per command (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="warm-up rounds, discarded (default 1)")
    p.add_argument("--snapshots", type=int, default=1000, help="snapshots to merge (default 1000)")
    p.add_argument("--dists", type=int, default=300, help="distributions per snapshot (default 300)")
    p.add_argument("--skip-torchrun", action="store_true", help="only the merge benchmark")
    p.add_argument("--skip-merge", action="store_true", help="only the torchrun benchmark")
    p.add_argument("--no-json", action="store_true", help="do not write bench/results/*")
    args = p.parse_args(argv)
    result: dict[str, object] = {"machine": machine(), "host": socket.gethostname()}
    with tempfile.TemporaryDirectory(prefix="envcheck-bench-fleet-") as tmp:
        cwd = str(Path(tmp) / "cwd")
        Path(cwd).mkdir()
        if not args.skip_torchrun:
            print("bench: torchrun, 2 ranks ...", file=sys.stderr)
            result["overhead"] = o = overhead(args.python, args.runs, args.warmup, cwd)
            rows = [[label, fmt(s["median_ms"]), fmt(s["p90_ms"]), fmt(s["cpu_median_ms"])]  # type: ignore[index]
                    for label, s in o["series"].items()]  # type: ignore[attr-defined]
            print(table(["command", "median ms", "p90 ms", "cpu ms"], rows))
            print(f"fleet - check: {o['fleet_minus_check_ms']:.0f} ms; fleet - floor - check: "
                  f"{o['fleet_minus_floor_minus_check_ms']:.0f} ms; fleet - checks: {o['fleet_minus_checks_ms']:.0f}"
                  f" ms (target <= {TARGET_OVERHEAD_S * 1000:.0f} ms)")
            print("in-process phases (s):", json.dumps(o["phases_s"], indent=1))
        if not args.skip_merge:
            print(f"bench: merge of {args.snapshots} snapshots ...", file=sys.stderr)
            result["merge"] = m = merge_bench(args.python, args.snapshots, args.dists, args.runs, args.warmup, cwd,
                                              Path(tmp))
            stats = next(iter(m["series"].values()))  # type: ignore[attr-defined]
            print(f"merge: {json.dumps(m['shape'])}")
            print(f"merge command: median {stats['median_ms']:.0f} ms, p90 {stats['p90_ms']:.0f} ms "
                  f"(target < {TARGET_MERGE_S * 1000:.0f} ms)")
            print("merge in-process:", json.dumps(m["in_process"], indent=1))
    if not args.no_json:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        out = RESULTS_DIR / f"fleet-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"bench: wrote {out.relative_to(REPO_ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

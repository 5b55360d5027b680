"""Probe cost (issue targets: probes add <= 25% to a bare `import torch`; a cached re-check <= 1.3 x static).

Alternating runs, in the venv bench/run.py builds (torch + ~100 distributions, envcheck installed):

    python bench/probes.py [--venv bench/.venv] [--runs 7] [--warmup 1]

- `envcheck --no-cache`: static facts plus every probe in fresh children (one shares `import torch`; the apex probe
  has its own child and skips before importing torch when apex is absent);
- `python -c "import torch"`: the floor any probe run pays;
- `envcheck` (replayed): the same check run again, nothing changed: its last report (envcheck/pipeline/replay.py);
- `envcheck` (cached probes, re-checked): an environment variable differs from the last run's, so the check runs,
  its probe results from the cache;
- `envcheck --static` (replayed): no probes at all, run again.
The cache lives in a temporary ENVCHECK_CACHE_DIR, warmed before the cached series run; --no-cache has its own.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Series, child_env, machine, run_alternating, run_once, table

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", type=Path, default=HERE / ".venv")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--no-json", action="store_true")
    args = parser.parse_args()
    bin_dir = args.venv / "bin"
    envcheck, python = str(bin_dir / "envcheck"), str(bin_dir / "python")
    cache = tempfile.mkdtemp(prefix="envcheck-bench-cache-")
    env = {**child_env(), "ENVCHECK_CACHE_DIR": cache}
    # --no-cache stores the probe results it gets: in a cache of its own, so that it does not change the one the
    # cached series read (a replay rightly starts afresh when the cached probe results were rewritten).
    fresh = {**child_env(), "ENVCHECK_CACHE_DIR": tempfile.mkdtemp(prefix="envcheck-bench-cache-")}
    # The re-checked series too: its runs would otherwise replace the replayed series' last answer each time.
    changing = {**child_env(), "ENVCHECK_CACHE_DIR": tempfile.mkdtemp(prefix="envcheck-bench-cache-")}
    cwd = tempfile.mkdtemp(prefix="envcheck-bench-cwd-")
    run_once([envcheck], cwd, env)  # fills the caches of the cached series
    run_once([envcheck], cwd, changing)
    runs = iter(range(1_000_000))
    series = [
        Series("envcheck --no-cache (static + probes)", [envcheck, "--no-cache"]),
        Series('python -c "import torch"', [python, "-c", "import torch"]),
        Series("envcheck (replayed)", [envcheck]),
        Series("envcheck (cached probes, re-checked)", [envcheck]),
        Series("envcheck --static (replayed)", [envcheck, "--static"]),
    ]
    envs = {
        series[0].label: lambda: fresh,
        # A variable no rule or probe reads, but which the replay compares: the check runs, its probes from the cache.
        series[3].label: lambda: {**changing, "ENVCHECK_BENCH_RUN": str(next(runs))},
    }
    run_alternating(series, args.runs, args.warmup, cwd, env, envs=envs)
    stats = {s.label: s.stats() for s in series}
    rows = [[label, f"{st['median_ms']:.0f}", f"{st['p90_ms']:.0f}", f"{st['min_ms']:.0f}",
             f"{st['cpu_median_ms']:.0f}", f"{st['rss_max_mb']:.1f}"] for label, st in stats.items()]
    print(table(["command", "median ms", "p90", "min", "CPU ms", "peak RSS MB"], rows))
    probes, torch_import, replayed, cached, static = (stats[s.label]["median_ms"] for s in series)
    ratios = {
        "probes over import torch": (probes - torch_import) / torch_import,
        "cached / static": replayed / static,
        "re-checked / static": cached / static,
    }
    print(f"\nprobe run adds {ratios['probes over import torch']:+.0%} to a bare import torch (target <= +25%); "
          f"a repeated full check = {ratios['cached / static']:.2f} x the repeated static check (target <= 1.3), "
          f"{ratios['re-checked / static']:.2f} x when it re-checks with cached probe results")
    if not args.no_json:
        out = HERE / "results" / f"probes-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({"machine": machine(), "stats": stats, "ratios": ratios}, indent=1))


if __name__ == "__main__":
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    main()

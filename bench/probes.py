"""Probe cost (issue targets: probes add <= 25% to a bare `import torch`; a cached re-check <= 1.3 x static).

Alternating runs, in the venv bench/run.py builds (torch + ~100 distributions, envcheck installed):

    python bench/probes.py [--venv bench/.venv] [--runs 7] [--warmup 1]

- `envcheck --no-cache`: static facts plus every probe in fresh children (one shares `import torch`; the apex probe
  has its own child and skips before importing torch when apex is absent);
- `python -c "import torch"`: the floor any probe run pays;
- `envcheck` (cached): the same check once the cache holds this environment's results;
- `envcheck --static`: no probes at all.
The cache lives in a temporary ENVCHECK_CACHE_DIR, warmed before the cached series runs.
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
    cwd = tempfile.mkdtemp(prefix="envcheck-bench-cwd-")
    run_once([envcheck], cwd, env)  # fills the cache for the cached series
    series = [
        Series("envcheck --no-cache (static + probes)", [envcheck, "--no-cache"]),
        Series('python -c "import torch"', [python, "-c", "import torch"]),
        Series("envcheck (cached probes)", [envcheck]),
        Series("envcheck --static", [envcheck, "--static"]),
    ]
    run_alternating(series, args.runs, args.warmup, cwd, env)
    stats = {s.label: s.stats() for s in series}
    rows = [[label, f"{st['median_ms']:.0f}", f"{st['p90_ms']:.0f}", f"{st['min_ms']:.0f}",
             f"{st['cpu_median_ms']:.0f}", f"{st['rss_max_mb']:.1f}"] for label, st in stats.items()]
    print(table(["command", "median ms", "p90", "min", "CPU ms", "peak RSS MB"], rows))
    probes, torch_import, cached, static = (stats[s.label]["median_ms"] for s in series)
    ratios = {
        "probes over import torch": (probes - torch_import) / torch_import,
        "cached / static": cached / static,
    }
    print(f"\nprobe run adds {ratios['probes over import torch']:+.0%} to a bare import torch (target <= +25%); "
          f"cached re-check = {ratios['cached / static']:.2f} x static (target <= 1.3)")
    if not args.no_json:
        out = HERE / "results" / f"probes-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({"machine": machine(), "stats": stats, "ratios": ratios}, indent=1))


if __name__ == "__main__":
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    main()

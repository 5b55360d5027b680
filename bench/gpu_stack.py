"""The full check on a real GPU stack, against the imports no check can beat there.

Run it on the GPU machine, with the interpreter that holds the stack (nothing is installed into it: envcheck runs
from this checkout, `python -m envcheck` with the checkout on PYTHONPATH, so the stack needs click, packaging and
nvidia-ml-py, which ML stacks have):

    python bench/gpu_stack.py --python /opt/torch/.venv/bin/python3 --runs 5 [--other DIR --other-label LABEL]

`--other DIR` times a second envcheck source tree in the same rounds (`git archive REF | tar -x -C DIR`: the code
before a change). Alternating rounds, after one warm-up round:
- `python -c "import torch"`: what any probe run pays first;
- `python -c "import torch, torchvision"` (when torchvision is installed): what a user's program that imports
  torchvision pays; the extension-imports probe imports torchvision too, and on a stack where that import pulls in
  torch._dynamo it is the longest part of a full check;
- `envcheck check --no-cache` (this checkout, and `--other`): static facts and every probe;
- `envcheck check --static`, re-checked: warm caches, but not a replay of the last answer (a variable the replay
  compares differs each run), as after any change to the environment; and cold, with an empty cache each run;
- `python -m pip check`.
Then `python -m torch.utils.collect_env` once, and one `envcheck facts --no-cache` whose probe timings (each probe's
wall_s, each extension's import_s) are printed; that snapshot and the timings go to bench/results/ (or --out).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Series, child_env, machine, run_alternating, run_once, table

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _has(python: str, module: str) -> bool:
    found = subprocess.run([python, "-c", f"import importlib.util as u; print(u.find_spec({module!r}) is not None)"],
                           capture_output=True, text=True, env=child_env())
    return found.stdout.strip() == "True"


def _probe_timings(facts: dict[str, object]) -> list[list[str]]:
    rows: list[list[str]] = []
    probes = facts.get("probes") or {}
    assert isinstance(probes, dict)
    for name, result in sorted(probes.items()):
        rows.append([name, str(result.get("status")), f"{(result.get('wall_s') or 0) * 1000:.0f}"])
        if name == "extension-imports":
            for dist, case in sorted((result.get("cases") or {}).items()):
                rows.append([f"  {dist}", str(case.get("status")), f"{(case.get('import_s') or 0) * 1000:.0f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the GPU stack")
    parser.add_argument("--other", type=Path, help="another envcheck source tree, timed in the same rounds")
    parser.add_argument("--other-label", default="other")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    python = args.python
    cwd = tempfile.mkdtemp(prefix="envcheck-bench-cwd-")

    def envcheck_env(tree: Path) -> dict[str, str]:
        # A cache of its own per series and run: --no-cache reads none, and the static series must not replay.
        return {**child_env(), "PYTHONPATH": str(tree), "ENVCHECK_CACHE_DIR": str(Path(cwd) / f"cache-{tree.name}")}

    runs = itertools.count()
    series = [Series('python -c "import torch"', [python, "-c", "import torch"])]
    if _has(python, "torchvision"):
        series.append(Series('python -c "import torch, torchvision"', [python, "-c", "import torch, torchvision"]))
    envs = {}
    check = [python, "-m", "envcheck", "check", "--no-cache"]
    series.append(Series("envcheck check --no-cache", check))
    envs[series[-1].label] = lambda: envcheck_env(REPO)
    if args.other is not None:
        other = args.other.resolve()
        series.append(Series(f"envcheck check --no-cache ({args.other_label})", check))
        envs[series[-1].label] = lambda: envcheck_env(other)
    series.append(Series("envcheck check --static (re-checked)", [python, "-m", "envcheck", "check", "--static"]))
    envs[series[-1].label] = lambda: {**envcheck_env(REPO), "ENVCHECK_BENCH_RUN": str(next(runs))}
    series.append(Series("envcheck check --static (cold: no cache)", [python, "-m", "envcheck", "check", "--static"]))
    envs[series[-1].label] = lambda: {**envcheck_env(REPO),
                                      "ENVCHECK_CACHE_DIR": tempfile.mkdtemp(prefix="cache-", dir=cwd)}
    series.append(Series("python -m pip check", [python, "-m", "pip", "check"]))
    if args.other is not None:
        series.append(Series(f"envcheck check --static (re-checked, {args.other_label})",
                             [python, "-m", "envcheck", "check", "--static"]))
        envs[series[-1].label] = lambda: {**envcheck_env(other), "ENVCHECK_BENCH_RUN": str(next(runs))}
    for s in series:
        if "re-checked" in s.label:
            run_once(s.argv, cwd, envs[s.label]())  # fills its caches
    run_alternating(series, args.runs, args.warmup, cwd, child_env(), envs=envs)
    collect_env = run_once([python, "-m", "torch.utils.collect_env"], cwd, child_env())
    stats = {s.label: s.stats() for s in series}
    stats["python -m torch.utils.collect_env (once)"] = {"median_ms": collect_env.wall_ms,
                                                         "min_ms": collect_env.wall_ms}
    rows = [[label, f"{st['median_ms']:,.0f}", f"{st['min_ms']:,.0f}",
             f"{st.get('p90_ms', st['median_ms']):,.0f}"] for label, st in stats.items()]
    print(table(["command", "median ms", "min ms", "p90 ms"], rows))
    floor = stats['python -c "import torch"']["median_ms"]
    full = stats["envcheck check --no-cache"]["median_ms"]
    print(f"\nfull check - import torch = {full - floor:+,.0f} ms (goal: within +2,000 ms)")
    with_tv = stats.get('python -c "import torch, torchvision"')
    if with_tv is not None:
        print(f"full check - import torch, torchvision = {full - with_tv['median_ms']:+,.0f} ms")
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    facts_path = args.out / f"gpu-stack-facts-{stamp}.json"
    subprocess.run([python, "-m", "envcheck", "facts", "--no-cache", "-o", str(facts_path)], cwd=cwd,
                   env=envcheck_env(REPO), capture_output=True, check=False)
    facts = json.loads(facts_path.read_text(encoding="utf-8")) if facts_path.exists() else {}
    print("\none full check's probes (envcheck facts --no-cache):")
    print(table(["probe", "status", "ms"], _probe_timings(facts)))
    out = args.out / f"gpu-stack-{stamp}.json"
    out.write_text(json.dumps({"machine": machine(), "python": python, "stats": stats,
                               "probes": facts.get("probes")}, indent=1, default=str), encoding="utf-8")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    main()

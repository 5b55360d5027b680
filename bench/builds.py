"""What the static decisions from the torch build matrix cost: `envcheck --static` and `check --facts`, before and
after, in alternating runs; and the recommendation itself, in process.

    python bench/builds.py --before REF [--after REF] [--runs 15] [--warmup 2] [--python VENV_PYTHON]

`--before` / `--after` are git refs (git archive; `--after` defaults to the work tree). Both run on this
interpreter, which needs envcheck's dependencies (click, packaging); `--python` is the environment checked by
`--static` (default: this interpreter). The snapshot is
tests/fixtures/torch-builds/machines/rtx5090-torch251-cu124.json: an RTX 5090 beside torch 2.5.1+cu124, where the
new code decides EC0401 from the matrix and computes a command.
Prints a table; writes JSON under bench/results/ unless --no-json. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    REPO_ROOT,
    RESULTS_DIR,
    Series,
    child_env,
    envcheck_source,
    fmt,
    git_revision,
    machine,
    run_alternating,
    table,
)

SNAPSHOT = REPO_ROOT / "tests" / "fixtures" / "torch-builds" / "machines" / "rtx5090-torch251-cu124.json"


def _argv(source: Path, args: list[str]) -> list[str]:
    code = (f"import sys; sys.path.insert(0, {str(source)!r}); sys.argv = ['envcheck', *{args!r}]; "
            "from envcheck._cli import console; console()")
    return [sys.executable, "-c", code]


def _in_process(source: Path, rounds: int) -> dict[str, float]:
    """Milliseconds per evaluation of the GPU rules (EC040x) on the snapshot, and per recommendation."""
    sys.path.insert(0, str(source))
    from envcheck import rules
    from envcheck.derived import builds
    from envcheck.derived.tables import TORCH_BUILDS
    from envcheck.engine import evaluate
    from envcheck.facts import collect

    pack = rules.load()
    gpu = pack.only([r for r in pack if r.id.startswith("EC040")])
    facts = collect.load(str(SNAPSHOT))
    start = time.perf_counter()
    for _ in range(rounds):
        evaluate(gpu, facts)
    per_eval = (time.perf_counter() - start) * 1000 / rounds
    target = builds.machine_of(facts)
    assert target is not None
    start = time.perf_counter()
    for _ in range(rounds):
        builds.recommend(pack.tables[TORCH_BUILDS], target)
    per_rec = (time.perf_counter() - start) * 1000 / rounds
    return {"gpu_rules_eval_ms": per_eval, "recommend_ms": per_rec}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="git ref of the code before the change")
    parser.add_argument("--after", default=None, help="git ref after (default: the work tree)")
    parser.add_argument("--python", default=sys.executable, help="the environment `--static` checks")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=200, help="in-process evaluations to average")
    parser.add_argument("--no-json", action="store_true")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        before = envcheck_source(opts.before, Path(scratch))
        after = envcheck_source(opts.after, Path(scratch))
        common = ["--no-config", "--format", "json"]
        series = [
            Series("before --static", _argv(before, ["check", "--static", "--python", opts.python, *common])),
            Series("after --static", _argv(after, ["check", "--static", "--python", opts.python, *common])),
            Series("before check --facts", _argv(before, ["check", "--facts", str(SNAPSHOT), *common])),
            Series("after check --facts", _argv(after, ["check", "--facts", str(SNAPSHOT), *common])),
        ]
        run_alternating(series, opts.runs, opts.warmup, str(REPO_ROOT), child_env())
        in_process = _in_process(after, opts.rounds)
    rows = [[s.label, fmt(s.stats()["median_ms"]), fmt(s.stats()["p90_ms"]), fmt(s.stats()["min_ms"]),
             fmt(s.stats()["cpu_median_ms"]), str({sample.rc for sample in s.samples})] for s in series]
    print(table(["command", "median ms", "p90 ms", "min ms", "cpu median ms", "exit codes"], rows))
    print(f"in process (after): GPU rules on the snapshot {in_process['gpu_rules_eval_ms']:.2f} ms per evaluation, "
          f"recommend {in_process['recommend_ms']:.3f} ms")
    if not opts.no_json:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        out = RESULTS_DIR / f"builds-{int(time.time())}.json"
        out.write_text(json.dumps({
            "machine": machine(), "before": git_revision(opts.before),
            "after": git_revision(opts.after) if opts.after else "work tree",
            "series": {s.label: {"stats": s.stats(), "walls_ms": s.walls()} for s in series},
            "in_process": in_process,
        }, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {out.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()

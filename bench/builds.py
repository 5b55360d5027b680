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
import statistics
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
            "from envcheck.cli.click_cli import console; console()")
    return [sys.executable, "-c", code]


_IN_PROCESS = """
import json, sys, time
sys.path.insert(0, SOURCE)
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.sources.live import collect
start = time.perf_counter()
for _ in range(10):
    rule_pack.load()
load_ms = (time.perf_counter() - start) * 100
pack = rule_pack.load()
facts = collect.load(SNAPSHOT)
start = time.perf_counter()
for _ in range(ROUNDS):
    evaluate(pack, facts)
print(json.dumps({"rules_load_ms": load_ms, "evaluate_snapshot_ms": (time.perf_counter() - start) * 1000 / ROUNDS}))
"""


def _in_process(source: Path, rounds: int) -> dict[str, float]:
    """In a child running `source`: ms per `rule_pack.load()` (rule files and data tables parsed) and per evaluation
    of the whole pack on the snapshot (which, after the change, decides EC0401 from the matrix with its command)."""
    code = (_IN_PROCESS.replace("SOURCE", repr(str(source))).replace("SNAPSHOT", repr(str(SNAPSHOT)))
            .replace("ROUNDS", str(rounds)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=child_env())
    return dict(json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="git ref of the code before the change")
    parser.add_argument("--after", default=None, help="git ref after (default: the work tree)")
    parser.add_argument("--python", default=sys.executable, help="the environment `--static` checks")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=50, help="in-process evaluations to average per child")
    parser.add_argument("--children", type=int, default=5, help="in-process children per side")
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
        in_process = {"before": [], "after": []}  # alternating children, like the runs above
        for _ in range(opts.children):
            in_process["before"].append(_in_process(before, opts.rounds))
            in_process["after"].append(_in_process(after, opts.rounds))
    rows = [[s.label, fmt(s.stats()["median_ms"]), fmt(s.stats()["p90_ms"]), fmt(s.stats()["min_ms"]),
             fmt(s.stats()["cpu_median_ms"]), str({sample.rc for sample in s.samples})] for s in series]
    print(table(["command", "median ms", "p90 ms", "min ms", "cpu median ms", "exit codes"], rows))
    for label, samples in in_process.items():
        load = statistics.median(x["rules_load_ms"] for x in samples)
        evaluation = statistics.median(x["evaluate_snapshot_ms"] for x in samples)
        print(f"in process, {label}: rule_pack.load() {load:.1f} ms, whole pack on the snapshot {evaluation:.2f} ms "
              f"(medians of {len(samples)} children)")
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

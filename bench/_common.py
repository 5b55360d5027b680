"""Shared helpers for the envcheck benchmarks (standard library only).

Each timed command runs as its own child process; `os.wait4` reaps exactly that child and returns its resource
usage, so the wall time, CPU time and peak RSS of one run are never mixed with another run's (the RUSAGE_CHILDREN
totals of this process would be). Peak RSS (`ru_maxrss`) is the largest of the child and of any descendants it
waited for (collect_env runs a few).
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"


@dataclass
class Sample:
    wall_ms: float
    cpu_ms: float  # user + system of the child (and its waited-for descendants)
    rss_mb: float  # peak resident set size
    rc: int


@dataclass
class Series:
    label: str
    argv: list[str]
    samples: list[Sample] = field(default_factory=list)

    def walls(self) -> list[float]:
        return [s.wall_ms for s in self.samples]

    def stats(self) -> dict[str, float]:
        walls = sorted(self.walls())
        cpus = [s.cpu_ms for s in self.samples]
        rss = [s.rss_mb for s in self.samples]
        return {
            "median_ms": statistics.median(walls),
            "p90_ms": percentile(walls, 90),
            "min_ms": walls[0],
            "max_ms": walls[-1],
            "cpu_median_ms": statistics.median(cpus),
            "rss_median_mb": statistics.median(rss),
            "rss_max_mb": max(rss),
            "runs": len(walls),
        }


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (no interpolation): with 15 samples p90 is the 14th smallest."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def child_env() -> dict[str, str]:
    """This environment less what would make the children unlike a user's shell.

    PYTHONDONTWRITEBYTECODE (set on some CI and sandbox machines) would make every run compile every module it
    imports that has no .pyc yet; PYTHONUNBUFFERED changes how output is written. VIRTUAL_ENV and PYTHONPATH could
    point the children at another environment.
    """
    drop = {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME",
            "PYTHONSTARTUP", "PYTHONPROFILEIMPORTTIME", "PYTHONMALLOC", "PYTHONDEVMODE", "PYTHONWARNINGS"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def run_once(argv: list[str], cwd: str, env: dict[str, str] | None = None) -> Sample:
    """Run `argv` once with its output discarded; wall time, CPU time and peak RSS of exactly that child."""
    env = child_env() if env is None else env
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: keep Popen from waiting again
    return Sample(
        wall_ms=wall * 1000.0,
        cpu_ms=(usage.ru_utime + usage.ru_stime) * 1000.0,
        rss_mb=usage.ru_maxrss / 1024.0,  # Linux reports KiB
        rc=proc.returncode,
    )


def run_alternating(series: list[Series], runs: int, warmup: int, cwd: str,
                    env: dict[str, str] | None = None, progress: bool = True,
                    envs: dict[str, Callable[[], dict[str, str]]] | None = None) -> None:
    """A B C A B C ...: warm-up rounds (discarded), then `runs` rounds, so drift and noise hit every command alike.
    `envs`: a series' own environment (by label), made afresh before each of its runs."""
    for round_no in range(warmup + runs):
        for s in series:
            sample = run_once(s.argv, cwd, envs[s.label]() if envs and s.label in envs else env)
            if round_no >= warmup:
                s.samples.append(sample)
        if progress:
            tag = "warm-up" if round_no < warmup else "round"
            n = round_no + 1 if round_no < warmup else round_no - warmup + 1
            total = warmup if round_no < warmup else runs
            print(f"  {tag} {n}/{total}", file=sys.stderr, end="\r", flush=True)
    if progress:
        print(" " * 40, file=sys.stderr, end="\r", flush=True)


def wait_quiet(max_wait_s: float, below: float = 0.6) -> None:
    """Wait (up to max_wait_s) until the 1-minute load average is below `below`: other jobs inflate every figure."""
    if max_wait_s <= 0:
        return
    deadline = time.time() + max_wait_s
    while time.time() < deadline:
        try:
            load = os.getloadavg()[0]
        except OSError:
            return
        if load < below:
            return
        print(f"bench: load average {load:.2f}, waiting for < {below} ...", file=sys.stderr, end="\r", flush=True)
        time.sleep(10)
    print(f"bench: still busy after {max_wait_s:.0f} s; measuring anyway", file=sys.stderr)


def check_runs(argv: list[str], cwd: str, ok_codes: tuple[int, ...] = (0, 1),
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run once with output captured; stop with the output shown if it does not work at all."""
    env = child_env() if env is None else env
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode not in ok_codes:
        sys.exit(f"bench: {' '.join(argv)} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc


def machine(ref: str | None = None) -> dict[str, object]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg": [round(x, 2) for x in load],
        "envcheck_revision": git_revision(ref),
    }


def envcheck_source(ref: str | None, scratch: Path) -> Path:
    """The directory to install envcheck from: this checkout's work tree, or `git archive REF` unpacked in scratch.

    A ref gives figures that belong to a commit even while the work tree is being edited.
    """
    if ref is None:
        return REPO_ROOT
    out = scratch / f"envcheck-{ref.replace('/', '_')}"
    out.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", "--format=tar", ref], capture_output=True,
                             check=False)
    if archive.returncode != 0:
        sys.exit(f"bench: git archive {ref} failed: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out


def git_revision(ref: str | None = None) -> str:
    """The commit measured: REF's, or the checkout's with "-dirty" when envcheck/ or rules/ have uncommitted changes."""
    try:
        rev = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", ref or "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if ref is not None:
            return rev
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "envcheck", "rules"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("-dirty" if dirty else "")


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    right = [i > 0 for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        out = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)]
        return "| " + " | ".join(out) + " |"

    cells = [("-" * (w + 1) + ":") if r else (":" + "-" * (w + 1)) for w, r in zip(widths, right, strict=True)]
    sep = "|" + "|".join(cells) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


def fmt(value: float, digits: int = 0) -> str:
    return f"{value:.{digits}f}"


def pip_install(python: str, args: list[str], quiet: bool = True) -> None:
    argv = [python, "-m", "pip", "install", *(["-q"] if quiet else []), *args]
    print(f"bench: {' '.join(argv)}", file=sys.stderr)
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench: pip install failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def install_envcheck(python: str, source: str) -> None:
    """(Re)install envcheck from `source` (a directory or wheel) and make sure its own requirements are there.

    --force-reinstall --no-deps replaces envcheck even when the version string is unchanged, without reinstalling
    its dependencies; the second step installs any requirement the new envcheck added.
    """
    pip_install(python, ["--no-deps", "--force-reinstall", source])
    code = ("import importlib.metadata as m\n"
            "from packaging.requirements import Requirement\n"
            "for line in m.requires('envcheck-ml') or []:\n"
            "    r = Requirement(line)\n"
            "    if r.marker is None or r.marker.evaluate({'extra': ''}):\n"
            "        print(line.split(';')[0].strip())")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    wanted = [line for line in out.stdout.splitlines() if line.strip()]
    if out.returncode == 0 and wanted:
        pip_install(python, wanted)


def count_distributions(python: str) -> int:
    code = "import importlib.metadata as m; print(len(list(m.distributions())))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    return int(out.stdout.strip())


def summary_line(stdout: str) -> str:
    """envcheck's closing summary ("envcheck 0.1.0: no problems; ..."), else its first line."""
    lines = stdout.strip().splitlines()
    return next((ln for ln in reversed(lines) if ln.startswith("envcheck ")), lines[0] if lines else "(no output)")


PHASES_SCRIPT = r'''
# Runs inside the case's venv: the CLI's work, step by step, through envcheck's internal functions (which may change;
# a failure here is reported, not fatal). CPU time (process_time) so that other processes' load does not count.
import json, sys, time
from collections import defaultdict
from pathlib import Path
clock = time.process_time
T = {}
def step(label, fn, *a):
    t0 = clock(); out = fn(*a); T[label] = T.get(label, 0.0) + clock() - t0; return out
t0 = clock()
import click, packaging.requirements, packaging.specifiers, packaging.markers
T["import: click + packaging (requirements, specifiers, markers)"] = clock() - t0
t0 = clock()
import envcheck.cli.click_cli
T["import: envcheck.cli.click_cli and the rest it pulls in"] = clock() - t0
import tomllib
import importlib
from envcheck.rules import rule_pack
try:  # collection_request / gather: envcheck.pipeline.stages now, envcheck.api before, envcheck.check earlier
    check_mod = importlib.import_module("envcheck.pipeline.stages")
except ImportError:
    try:
        check_mod = importlib.import_module("envcheck.api")
    except ImportError:
        check_mod = importlib.import_module("envcheck.check")
try:  # data tables and the requirement cache: envcheck.derived / _packaging later, envcheck.facts.derive earlier
    tables_mod = importlib.import_module("envcheck.derived.tables")
    requirement_cache = importlib.import_module("envcheck.support.versions")
except ImportError:
    tables_mod = None
    requirement_cache = importlib.import_module("envcheck.facts.derive")
from envcheck.sources.live import _collector
from envcheck.facts.snapshot import Facts
from envcheck.rules.conditions import Context
from envcheck.rules import engine
from envcheck.report import render
rule_dirs = [Path(p) for p in sys.argv[1:]]
files = sorted(p for d in [rule_pack.builtin_rules_dir(), *rule_dirs] for p in d.glob("*.toml"))
t0 = clock()
for p in files:
    tomllib.loads(p.read_text(encoding="utf-8"))
toml_s = clock() - t0
rules = step("rules.load: total", rule_pack.load, rule_dirs)
T["rules.load: of which tomllib parsing alone"] = toml_s
if tables_mod is not None:
    step("rules.load: of which the data tables (read, parsed, validated)", tables_mod.load,
         [rule_pack.builtin_rules_dir(), *rule_dirs])
request = step("check.collection_request", check_mod.collection_request, rules)
path = _collector.search_path()
found = step("collect: importlib.metadata.distributions() listing",
             lambda: list(_collector._metadata.distributions(path=path)))
for d in found:
    text, _ = step("collect: read METADATA", _collector._read, d, "METADATA")
    step("collect: _headers(METADATA)", _collector._headers, text or "")
    step("collect: _top_level (top_level.txt or RECORD)", _collector._top_level, d)
    step("collect: read INSTALLER + direct_url.json",
         lambda: (_collector._read(d, "INSTALLER"), _collector._read(d, "direct_url.json")))
    step("collect: locate_file + folder guess",
         lambda: (d.locate_file(""), _collector._folder_name_guess(str(d._path))))
raw = step("collect: collect() total (second pass, warm OS cache)", _collector.collect, request)
raw["envcheck_version"] = "bench"
facts = step("Facts.from_dict", Facts.from_dict, raw)
ctx = Context(facts, rules.tables) if hasattr(rules, "tables") else Context(facts)
per_rule = {}
per_kind = defaultdict(float)
t_all = clock()
for rule in sorted(rules, key=lambda r: r.id):
    t0 = clock()
    engine._verdicts(rule, ctx)
    dt = clock() - t0
    if rule.id.startswith("EC9"):
        per_kind["evaluate: synthetic rules, kind %d of 10" % (int(rule.id[2:]) % 10)] += dt
    else:
        each = " (foreach " + rule.foreach + ")" if rule.foreach else ""
        per_rule["evaluate: %s %s%s" % (rule.id, rule.name, each)] = dt
T["evaluate: all rules (engine._verdicts, in id order, fresh derivations)"] = clock() - t_all
T.update(per_rule); T.update(sorted(per_kind.items()))
report = step("engine.evaluate: whole, second time (new Context; lru caches warm)", engine.evaluate, rules, facts)
step("render text", lambda: render(report, "text", color=False, verbose=False))
if hasattr(requirement_cache.parse_requirement, "cache_info"):
    ci = requirement_cache.parse_requirement.cache_info()
    cache = "lru hits %d, misses %d, maxsize %d, size %d" % (ci.hits, ci.misses, ci.maxsize, ci.currsize)
else:
    cache = "%d lines parsed" % len(getattr(requirement_cache, "_REQUIREMENTS", {}))
print(json.dumps({"phases": T, "rules": len(rules), "distributions": len(facts.distributions),
                  "requires": sum(len(d.requires) for d in facts.distributions),
                  "parse_requirement_cache": cache,
                  "modules": len(request.get("modules", [])), "verdicts": len(report.findings)}))
'''


def phases(python: str, rules_dir: Path | None, cwd: str) -> dict[str, object]:
    """Run PHASES_SCRIPT with `python` (a venv with envcheck installed); its JSON result, or {"error": ...}."""
    argv = [python, "-c", PHASES_SCRIPT] + ([str(rules_dir)] if rules_dir else [])
    proc = subprocess.run(argv, cwd=cwd, env=child_env(), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def importtime(python: str, cwd: str, repeat: int = 5) -> list[tuple[int, int, str]]:
    """(self µs, cumulative µs, indented name) per module of `python -X importtime -c "import envcheck.cli.click_cli"`.

    Each figure is the median over `repeat` fresh processes: one importtime run is easily off by 2x on a busy machine.
    """
    runs: list[dict[str, tuple[int, int]]] = []
    order: list[str] = []
    for _ in range(repeat):
        proc = subprocess.run([python, "-X", "importtime", "-c", "import envcheck.cli.click_cli"], cwd=cwd,
                              env=child_env(), capture_output=True, text=True, check=True)
        found: dict[str, tuple[int, int]] = {}
        for line in proc.stderr.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
            if m:
                name = m.group(3) + m.group(4)
                found[name] = (int(m.group(1)), int(m.group(2)))
                if not runs:
                    order.append(name)
        runs.append(found)
    rows = []
    for name in order:
        selfs = [r[name][0] for r in runs if name in r]
        cums = [r[name][1] for r in runs if name in r]
        rows.append((int(statistics.median(selfs)), int(statistics.median(cums)), name))
    return rows

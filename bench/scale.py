#!/usr/bin/env python3
"""Synthetic scaling benchmark: `envcheck --static` with N distributions and M extra rules.

For each case (N, M) it builds a throw-away virtual environment (python -m venv, envcheck installed from a wheel
of this checkout), fills its site-packages with N synthetic distributions and writes M synthetic rules to a rules
directory, then times `<venv>/bin/envcheck --static --rules DIR` in an empty working directory. The cases run
alternating (A B C D A B C D ...) after warm-up rounds, so load from other processes hits every case alike.

Synthetic distributions are shaped like the ~100 real wheels of bench/run.py's venv (see write_distributions for
the measured profile): a .dist-info folder with METADATA (classifiers, a folded License header now and then,
Requires-Python, Provides-Extra, Requires-Dist lines with version ranges, markers and extras, most of them only for
an extra; KBs of description), WHEEL, INSTALLER, RECORD (top_level.txt for half of them; the other half make the
collector fall back to RECORD), and an importable package folder. Unconditional requirements point at other synthetic
distributions and are all satisfied, so the dependency check walks every edge and the report stays short, as in a
healthy environment.

Synthetic rules use the predicates of the real pack (package, missing, module, python, env, fact, marker, torch;
all / any / not), with placeholders in the texts; about 2% of them fire, so the report renders some findings.

Then, for the largest case, it writes to bench/results/ (gitignored):
  scale-<stamp>.json          every sample;
  profile-<stamp>.txt         `python -m cProfile -s cumtime -m envcheck --static --rules DIR`;
  importtime-<stamp>.txt      `python -X importtime -c "import envcheck.cli.click_cli"`, sorted by cumulative time;
  and prints a per-phase breakdown (imports, rule loading, collection, snapshot, derivations, evaluation, render)
  measured in one process through envcheck's internal functions.

Standard library only: `python bench/scale.py --help`.
Target (issue: static tier performance): 2,000 distributions x 500 rules stays under 1 s; cost grows linearly.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    RESULTS_DIR,
    Series,
    check_runs,
    child_env,
    envcheck_source,
    fmt,
    importtime,
    install_envcheck,
    machine,
    phases,
    pip_install,
    run_alternating,
    summary_line,
    table,
    wait_quiet,
)

DEFAULT_CASES = [(100, 20), (500, 100), (1000, 250), (2000, 500)]
RULE_ID_BASE = 9000  # the real pack uses EC01xx-EC0xxx; synthetic rules take EC9000..EC9999
RULES_PER_FILE = 50
TARGET_LARGEST_S = 1.0
LOREM = (
    "This synthetic distribution exists only to measure how envcheck scales. It carries a long description like "
    "real packages do, so that reading METADATA costs what it costs in a real environment. "
)


# --- synthetic distributions -----------------------------------------------------------------------------------


def dist_name(i: int) -> str:
    return f"synth-lib-{i:05d}"


def module_name(i: int) -> str:
    return f"synth_lib_{i:05d}"


def dist_version(i: int) -> str:
    return f"{1 + i % 7}.{(i * 7) % 31}.{(i * 13) % 17}"


EXTRAS = ["test", "dev", "docs", "all", "torch", "vision", "audio", "lint", "typing", "cuda"]
EXTERNAL = ["pytest", "pytest-cov", "sphinx", "sphinx-rtd-theme", "mypy", "ruff", "black", "hypothesis",
            "coverage", "tox", "pre-commit", "furo", "myst-parser", "nbsphinx", "ipython", "matplotlib", "torch"]
# Marker shapes of extra-only lines; in the real venv 89% are the plain `extra == "x"` (1428 of 1605 lines), the
# rest conjunctions such as `python_version < "3.11" and extra == "x"`. Here: 9 plain in 10.
MARKERS = ['extra == "{e}"'] * 6 + ["extra == '{e}'"] * 3 + [
    'python_version < "3.11" and extra == "{e}"', '(platform_system != "Windows") and extra == "{e}"',
    'sys_platform == "linux" and extra == "{e}"']
MARKER_WEIGHTS = [1.0] * 9 + [1 / 3] * 3


def _count(rng: random.Random, spread: list[tuple[float, int, int]]) -> int:
    """A skewed count: pick a (probability, low, high) band, then a number in it."""
    x = rng.random()
    for p, lo, hi in spread:
        if x < p:
            return rng.randint(lo, hi)
        x -= p
    return spread[-1][1]


def write_distributions(site: Path, n: int, seed: int = 1) -> None:
    """N dist-info folders plus their packages, shaped like the ~100 real wheels of bench/run.py's venv.

    Measured there: Requires-Dist lines per distribution mean 17, median 0, max 250, 90% of them conditional on an
    extra (89% of those with the plain `; extra == "x"` marker); unconditional ones mean 1.7; METADATA mean 15 KB
    (headers 3.6 KB); RECORD median 55 lines, mean 460; half without top_level.txt. Unconditional requirements form
    a DAG on lower indices and are all satisfied; an extra that other distributions request ("speedups") requires
    installed synthetic distributions too.
    """
    rng = random.Random(seed)
    for i in range(n):
        name, version, mod = dist_name(i), dist_version(i), module_name(i)
        info = site / f"{mod}-{version}.dist-info"
        info.mkdir()
        pkg = site / mod
        pkg.mkdir()
        (pkg / "__init__.py").write_text(f'"""{name}."""\n__version__ = "{version}"\n')
        (pkg / "core.py").write_text("def f():\n    return 1\n")

        requires = []
        n_deps = _count(rng, [(0.35, 0, 0), (0.45, 1, 3), (0.17, 4, 8), (0.03, 9, 14)])
        deps = rng.sample(range(i), k=min(i, n_deps)) if i else []
        for j, dep in enumerate(deps):
            dep_name, dep_major = dist_name(dep), 1 + dep % 7
            spec = rng.choice([
                f">={dep_major}.0",
                f">={dep_major}.0,<{dep_major + 1}",
                f"~={dep_major}.0",
                f"!=0.1.0,>={dep_major - 1 if dep_major > 1 else 0}.5",
                "",
                f" (>={dep_major}.0)",  # old-style parenthesised specifier, still common
            ])
            line = f"{dep_name}{spec}"
            if j % 3 == 1:
                line += ' ; python_version >= "3.8"'
            elif j % 5 == 4:
                line += ' ; sys_platform == "win32"'  # does not apply here: skipped like a real one
            if dep % 10 == 3 and j % 2 == 0:
                line = f"{dep_name}[speedups]>={dep_major}.0"  # follow an extra of the dependency
            requires.append(line)
        if i % 10 == 3 and i > 0:
            # Provides-Extra: speedups, requested by others; its requirements are installed synthetic distributions.
            requires.append(f'{dist_name(rng.randrange(i))}>=0.1 ; extra == "speedups"')
        n_extra = _count(rng, [(0.70, 0, 3), (0.25, 5, 40), (0.05, 60, 200)])
        extras_used = sorted({rng.choice(EXTRAS) for _ in range(max(1, n_extra // 6))}) if n_extra else []
        for _ in range(n_extra):
            target = rng.choice([rng.choice(EXTERNAL), f"ext-dep-{rng.randrange(20 * max(n, 50))}",
                                 dist_name(rng.randrange(max(n, 1)))])
            spec = rng.choice(["", f">={rng.randint(0, 9)}.{rng.randint(0, 30)}",
                               f">={rng.randint(1, 5)},<{rng.randint(6, 9)}",
                               f"=={rng.randint(0, 3)}.{rng.randint(0, 9)}.*"])
            marker = rng.choices(MARKERS, MARKER_WEIGHTS)[0].format(e=rng.choice(extras_used))
            requires.append(f"{target}{spec} ; {marker}")

        classifiers = "".join(f"Classifier: Topic :: Synthetic :: Area {k}\n" for k in range(rng.randint(5, 25)))
        folded = "".join(f"        line {k} of a license folded into the header\n"
                         for k in range(rng.choice([0, 0, 0, 20, 60])))
        license_text = "License: MIT License\n" + folded
        provides = "".join(f"Provides-Extra: {e}\n" for e in extras_used)
        provides += "Provides-Extra: speedups\n" if i % 10 == 3 else ""
        body = LOREM * _count(rng, [(0.6, 5, 40), (0.35, 40, 120), (0.05, 200, 500)])
        metadata = (
            "Metadata-Version: 2.1\n"
            f"Name: {name}\n"
            f"Version: {version}\n"
            f"Summary: Synthetic distribution {i} for envcheck's scaling benchmark\n"
            f"Home-page: https://example.invalid/{name}\n"
            "Author: Bench Mark\n"
            "Author-email: bench@example.invalid\n"
            f"{license_text}"
            f"{classifiers}"
            "Requires-Python: >=3.8\n"
            f"{provides}"
            + "".join(f"Requires-Dist: {r}\n" for r in requires)
            + "Description-Content-Type: text/markdown\n\n"
            f"# {name}\n\n{body}\n"
        )
        (info / "METADATA").write_text(metadata)
        (info / "WHEEL").write_text("Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        (info / "INSTALLER").write_text("pip\n")
        record = [f"{mod}/__init__.py,sha256=abc,42", f"{mod}/core.py,sha256=def,30"]
        n_record = _count(rng, [(0.6, 5, 60), (0.35, 60, 600), (0.05, 600, 4000)])
        record += [f"{mod}/sub{k % 37}/mod{k}.py,sha256=x,1" for k in range(n_record)]  # listed, not present
        record += [f"{info.name}/{f},," for f in ("METADATA", "WHEEL", "INSTALLER", "RECORD")]
        record += [f"../../../bin/{mod}-cli,sha256=y,10"] if i % 20 == 0 else []
        if i % 2 == 0:
            (info / "top_level.txt").write_text(mod + "\n")
            record.append(f"{info.name}/top_level.txt,,")
        (info / "RECORD").write_text("\n".join(record) + "\n")


# --- synthetic rules -------------------------------------------------------------------------------------------


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string for the characters used here


def rule_body(k: int, n: int, rng: random.Random) -> tuple[str, str, str]:
    """(severity, applies/when TOML lines, extra summary text) for synthetic rule k over n distributions."""
    def some_dist() -> int:
        return rng.randrange(n) if n else 0

    d, e = some_dist(), some_dist()
    dn, mod, major = dist_name(d), module_name(d), 1 + d % 7
    kind = k % 10
    fires = k % 50 == 7  # ~2% find something
    if kind == 0:
        lines = (f'applies = {{ package = "{dn}>={major}.0,<{major + 1}" }}\n'
                 f'when = {{ module = "{mod}.{"core" if fires else "missing_sub"}" }}')
    elif kind == 1:
        lines = (f'applies = {{ package = "{dn}" }}\n'
                 f'when = {{ all = [ {{ python = ">=3.8" }}, '
                 f'{{ missing = "{dist_name(e)}>={"99" if fires else "0"}" }} ] }}')
    elif kind == 2:
        lines = f'when = {{ env = {{ name = "CUDA_VISIBLE_DEVICES", set = {"false" if fires else "true"} }} }}'
    elif kind == 3:
        lines = (f'applies = {{ package = "{dn}" }}\n'
                 'when = { fact = { name = "requirements.missing", nonempty = true } }')
    elif kind == 4:
        lines = (f'when = {{ any = [ {{ package = "not-installed-{k}>=1" }}, {{ module = "absent_module_{k}" }}, '
                 f'{{ module = "{mod}" }} ] }}' if fires else
                 f'when = {{ any = [ {{ package = "not-installed-{k}>=1" }}, {{ module = "absent_module_{k}" }} ] }}')
    elif kind == 5:
        lines = 'applies = { python = "<3.9" }\nwhen = { module = "distutils" }'
    elif kind == 6:
        lines = (f'applies = {{ package = "{dn}" }}\n'
                 f'when = {{ not = {{ package = "{dist_name(e)}{">=0" if fires else ">=999"}" }} }}')
    elif kind == 7:
        lines = ('when = { all = [ { marker = "sys_platform == \'win32\'" }, '
                 f'{{ package = "{dn}; python_version >= \'3.8\'" }} ] }}')
    elif kind == 8:
        lines = (f'applies = {{ package = "{dn}" }}\n'
                 'when = { torch = { version = "<2.6", cuda = "any" } }')
    else:
        lines = (f'applies = {{ any = [ {{ package = "{dn}<{major}" }}, {{ package = "{dist_name(e)}" }} ] }}\n'
                 f'when = {{ all = [ {{ env = {{ name = "OMP_NUM_THREADS", equals = "1" }} }}, '
                 f'{{ not = {{ module = "{module_name(e)}" }} }} ] }}')
    severity = ["error", "warning", "info"][k % 3]
    return severity, lines, f"{dn} {{{dn}.version}}"


def write_rules(directory: Path, m: int, n: int, seed: int = 2) -> None:
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(0, m, RULES_PER_FILE):
        chunks = [f'title = "Synthetic rules {f}"\ndescription = "Generated by bench/scale.py."\n']
        for k in range(f, min(m, f + RULES_PER_FILE)):
            severity, cond, about = rule_body(k, n, rng)
            rule_id = f"EC{RULE_ID_BASE + k:04d}"
            chunks.append(
                "[[rule]]\n"
                f'id = "{rule_id}"\n'
                f'name = "synthetic-hazard-{k:04d}"\n'
                f'severity = "{severity}"\n'
                f"summary = {_toml_str('synthetic hazard ' + str(k) + ' about ' + about)}\n"
                'why = """A synthetic rule that exercises the condition language the way the real pack does: '
                'version ranges, markers, module lookups, environment variables and derived facts."""\n'
                f"fix = {_toml_str('Upgrade ' + dist_name(k % max(n, 1)) + ' with {python} -m pip.')}\n"
                f'commands = [["{{python}}", "-m", "pip", "install", "--upgrade", "{dist_name(k % max(n, 1))}"]]\n'
                f'references = ["https://example.invalid/hazards/{k}"]\n'
                f"{cond}\n"
            )
        (directory / f"synthetic-{f // RULES_PER_FILE:03d}.toml").write_text("\n".join(chunks))


# --- venvs -----------------------------------------------------------------------------------------------------


def build_wheel(out: Path, source: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)], check=True)
    wheels = sorted(out.glob("envcheck*.whl"))
    if not wheels:
        sys.exit("bench: building the envcheck wheel produced no envcheck*.whl")
    return wheels[-1]


def make_case(root: Path, wheel: Path, n: int, m: int) -> tuple[Path, Path]:
    """The case's venv and rules directory; a venv kept from an earlier run gets this checkout's envcheck."""
    venv = root / f"venv-{n}"
    rules = root / f"rules-{n}x{m}"
    if (venv / ".bench-complete").exists():
        install_envcheck(str(venv / "bin" / "python"), str(wheel))
    else:
        if venv.exists():
            shutil.rmtree(venv)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip_install(str(venv / "bin" / "python"), [str(wheel)])
        site = next((venv / "lib").glob("python3*/site-packages"))
        write_distributions(site, n)
        (venv / ".bench-complete").write_text(f"{n} synthetic distributions\n")
    if not rules.exists() and m:
        write_rules(rules, m, n)
    return venv, rules


# --- analysis --------------------------------------------------------------------------------------------------


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares y = a + b x; returns (a, b, r^2)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    b = sxy / sxx if sxx else 0.0
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - (a + b * x)) ** 2 for x, y in zip(xs, ys, strict=True))
    return a, b, (1 - ss_res / ss_tot) if ss_tot else 1.0


# --- main ------------------------------------------------------------------------------------------------------


def parse_cases(text: str) -> list[tuple[int, int]]:
    cases = []
    for part in text.split(","):
        n, _, m = part.strip().partition("x")
        cases.append((int(n), int(m)))
    return cases


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/scale.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=parse_cases, default=DEFAULT_CASES,
                   help="comma-separated NxM list (default 100x20,500x100,1000x250,2000x500)")
    p.add_argument("--baseline", action="store_true",
                   help="also time a 0x0 case (a venv with only pip, setuptools and envcheck; built-in rules)")
    p.add_argument("--runs", type=int, default=11, help="timed runs per case (default 11)")
    p.add_argument("--warmup", type=int, default=2, help="warm-up rounds, discarded (default 2)")
    p.add_argument("--workdir", type=Path, default=None,
                   help="keep the venvs and rules here and reuse them on the next run (default: a temp dir, removed)")
    p.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                   help="first wait up to SECONDS for the 1-minute load average to drop below --quiet-load")
    p.add_argument("--quiet-load", type=float, default=0.6, metavar="LOAD",
                   help="the load average --wait-quiet waits for (default 0.6)")
    p.add_argument("--ref", default=None, metavar="REV",
                   help="build envcheck from this git revision (git archive) instead of the work tree")
    p.add_argument("--no-profile", action="store_true", help="skip cProfile / importtime / phases of the largest case")
    p.add_argument("--no-json", action="store_true", help="do not write bench/results/*")
    args = p.parse_args(argv)
    cases = sorted(set(args.cases + ([(0, 0)] if args.baseline else [])))
    if max(m for _, m in cases) > 1000:
        p.error("at most 1000 synthetic rules (ids EC9000..EC9999)")

    stamp = time.strftime("%Y%m%d-%H%M%S")
    tmp = tempfile.TemporaryDirectory(prefix="envcheck-scale-")
    root = args.workdir.resolve() if args.workdir else Path(tmp.name)
    root.mkdir(parents=True, exist_ok=True)
    cwd = tempfile.mkdtemp(prefix="cwd-", dir=tmp.name)
    try:
        wheel = build_wheel(Path(tmp.name) / "wheel", envcheck_source(args.ref, Path(tmp.name)))
        built = {}
        for n, m in cases:
            t0 = time.time()
            venv, rules = make_case(root, wheel, n, m)
            built[(n, m)] = (venv, rules if m else None)
            print(f"bench: case {n}x{m} ready ({time.time() - t0:.0f} s)", file=sys.stderr)

        series, first_lines = [], {}
        for (n, m), (venv, rules) in built.items():
            argv_ = [str(venv / "bin" / "envcheck"), "--static"] + (["--rules", str(rules)] if rules else [])
            out = check_runs(argv_, cwd)
            first_lines[(n, m)] = summary_line(out.stdout)
            series.append(Series(f"{n}x{m}", argv_))
        wait_quiet(args.wait_quiet, args.quiet_load)
        # The interpreter's own start, timed alongside: how fast the machine is during this run.
        floor = Series("floor", [str(next(iter(built.values()))[0] / "bin" / "python"), "-c", "pass"])
        print(f"bench: {len(series)} cases x ({args.warmup} warm-up + {args.runs}) runs, alternating", file=sys.stderr)
        info = machine(args.ref)
        run_alternating([*series, floor], args.runs, args.warmup, cwd)
        load_after = machine()["loadavg"]
        floor_ms = floor.stats()["median_ms"]

        stats = {s.label: s.stats() for s in series}
        rows = []
        prev = None
        for (n, m), s in zip(built, series, strict=True):
            st = stats[s.label]
            step = ""
            if prev is not None and n != prev[0]:
                step = fmt((st["median_ms"] - prev[1]) / (n - prev[0]) * 1000, 0)
            rows.append([str(n), str(m), fmt(st["median_ms"]), fmt(st["p90_ms"]), fmt(st["min_ms"]),
                         fmt(st["cpu_median_ms"]), fmt(st["rss_max_mb"], 1), step])
            prev = (n, st["median_ms"])
        print(f"\n### envcheck --static, synthetic scaling ({time.strftime('%Y-%m-%d')})\n")
        print(f"envcheck at {info['envcheck_revision']}; {info['nproc']} CPUs ({info['cpu']}), "
              f"Python {info['python']}; "
              f"load average {info['loadavg']} "
              f"before, {load_after} after; {args.runs} runs each after {args.warmup} warm-up rounds, alternating; "
              f"`python -c pass` {floor_ms:.0f} ms median in the same rounds\n")
        print(table(["N dists", "M extra rules", "median ms", "p90 ms", "min ms", "CPU ms (median)", "peak RSS MB",
                     "marginal µs / dist (vs. row above)"], rows))
        nonzero = [(n, stats[f"{n}x{m}"]) for n, m in built if n]
        if len(nonzero) >= 2:
            xs = [float(n) for n, _ in nonzero]
            for key, label in (("median_ms", "wall"), ("cpu_median_ms", "CPU")):
                a, b, r2 = linear_fit(xs, [st[key] for _, st in nonzero])
                print(f"\nlinear fit ({label}, N and M growing together): {a:.0f} ms + {b * 1000:.0f} µs x N "
                      f"(R² = {r2:.4f})", end="")
            print()
        largest = max(built)
        largest_ms = stats[f"{largest[0]}x{largest[1]}"]["median_ms"]
        print(f"\ntarget {largest[0]} x {largest[1]} < {TARGET_LARGEST_S:.0f} s: "
              f"{'met' if largest_ms < TARGET_LARGEST_S * 1000 else 'NOT met'} ({largest_ms:.0f} ms median)")
        for (n, m), line in first_lines.items():
            print(f"  {n}x{m}: {line}")

        extra: dict[str, object] = {}
        if not args.no_profile:
            venv, rules = built[largest]
            python = str(venv / "bin" / "python")
            ph = phases(python, rules, cwd)
            extra["phases"] = ph
            print(f"\n### Phases of the {largest[0]}x{largest[1]} case, one process (CPU ms)\n")
            if "error" in ph:
                print(f"phases failed: {ph['error']}")
            else:
                prow = [[k, fmt(v * 1000, 1)] for k, v in ph["phases"].items()]  # type: ignore[union-attr]
                print(table(["phase", "ms"], prow))
                print(f"\n{ph['rules']} rules, {ph['distributions']} distributions with {ph['requires']} Requires-Dist "
                      f"lines, {ph['modules']} modules looked up, {ph['verdicts']} verdicts; requirement parse cache: "
                      f"{ph['parse_requirement_cache']}")
            it = importtime(python, cwd)
            extra["importtime_top"] = sorted(it, key=lambda r: -r[1])[:40]
            print("\n### -X importtime of envcheck.cli.click_cli: largest self times (µs, median of 5 processes)\n")
            print(table(["module", "self µs", "cumulative µs"],
                        [[name.strip(), str(s), str(c)] for s, c, name in sorted(it, key=lambda r: -r[0])[:15]]))
            argv_prof = [python, "-m", "cProfile", "-s", "cumtime", "-m", "envcheck", "--static", "--rules",
                         str(rules)]
            prof = subprocess.run(argv_prof, cwd=cwd, env=child_env(), capture_output=True, text=True, check=False)
            lines = prof.stdout.splitlines()
            start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
            head = [line for line in lines[max(0, start - 3): start + 45]]
            print("\n### cProfile -s cumtime (top 45)\n")
            print("```\n" + "\n".join(head) + "\n```")
            if not args.no_json:
                RESULTS_DIR.mkdir(parents=True, exist_ok=True)
                (RESULTS_DIR / f"profile-{stamp}.txt").write_text(prof.stdout)
                (RESULTS_DIR / f"importtime-{stamp}.txt").write_text(
                    "\n".join(f"{s:>8} {c:>8} {name}" for s, c, name in sorted(it, key=lambda r: -r[1])) + "\n")

        if not args.no_json:
            RESULTS_DIR.mkdir(parents=True, exist_ok=True)
            out = RESULTS_DIR / f"scale-{stamp}.json"
            out.write_text(json.dumps({
                "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": info, "loadavg_after": load_after,
                "runs": args.runs, "warmup": args.warmup, "stats": stats, "floor": floor.stats(), **extra,
                "first_lines": {f"{n}x{m}": v for (n, m), v in first_lines.items()},
                "samples": {s.label: [vars(x) for x in s.samples] for s in series},
            }, indent=2) + "\n")
            print(f"\nbench: wrote {out}", file=sys.stderr)
    finally:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How long a project's lock adds to the static check: a synthetic uv.lock of N packages (each with an sdist, wheels
and, for a tenth of them, forks under resolution markers, as real locks have), against a venv of N distributions.

Reports milliseconds for reading the lock, choosing the pins for this interpreter, judging drift, and the whole
`envcheck --static` with and without the project (--no-project). Measures only; asserts nothing.

    python bench/lock.py                  # N = 1000, 3000, 6000
    python bench/lock.py --sizes 10000 --runs 5
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_WHEEL = ('    {{ url = "https://files.example.org/{n}-{v}-cp3{m}-cp3{m}-manylinux_2_28_x86_64.whl", '
          'hash = "sha256:{h}", size = 123456, upload-time = "2025-01-01T00:00:00Z" }},\n')


def write_lock(path: Path, n: int) -> None:
    parts = ['version = 1\nrevision = 3\nrequires-python = ">=3.10"\nresolution-markers = [\n'
             "    \"sys_platform == 'linux'\",\n    \"sys_platform != 'linux'\",\n]\n\n"
             '[[package]]\nname = "synthetic-project"\nversion = "0.1.0"\nsource = { editable = "." }\n']
    for i in range(n):
        name, version = f"pkg-{i:05d}", f"1.{i % 7}.0"
        forks = [("sys_platform == 'linux'", version), ("sys_platform != 'linux'", f"0.{i % 7}.0")] if i % 10 == 0 \
            else [(None, version)]
        for marker, v in forks:
            block = [f'\n[[package]]\nname = "{name}"\nversion = "{v}"\n'
                     'source = { registry = "https://pypi.org/simple" }\n']
            if marker:
                block.append(f'resolution-markers = [\n    "{marker}",\n]\n')
            block.append(f'dependencies = [\n    {{ name = "pkg-{(i + 1) % n:05d}" }},\n]\n')
            block.append(f'sdist = {{ url = "https://files.example.org/{name}-{v}.tar.gz", hash = "sha256:{"0" * 64}", '
                         'size = 1000 }\n')
            block.append("wheels = [\n" + "".join(_WHEEL.format(n=name, v=v, m=m, h="1" * 64) for m in (10, 11, 12, 13))
                         + "]\n")
            parts.append("".join(block))
    path.write_text("".join(parts), encoding="utf-8")


def make_venv(prefix: Path, n: int) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    (site,) = prefix.glob("lib/python3*/site-packages")
    for i in range(n):
        # every 50th distribution has drifted from the lock
        version = f"1.{i % 7}.0" if i % 50 else "9.9.9"
        folder = site / f"pkg_{i:05d}-{version}.dist-info"
        folder.mkdir()
        (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: pkg-{i:05d}\nVersion: {version}\n",
                                         encoding="utf-8")
    return prefix / "bin" / "python"


def ms(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,3000,6000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from envcheck.derived.project import lock_drift
    from envcheck.sources.live import collect as collect_mod
    from envcheck.sources.project.discover import discover
    from envcheck.support.versions import marker_env

    print(f"{'N':>6} {'lock KiB':>9} {'read ms':>8} {'pins ms':>8} {'drift ms':>9} {'check ms':>9} "
          f"{'--no-project ms':>16}")
    for n in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "proj"
            root.mkdir()
            write_lock(root / "uv.lock", n)
            python = make_venv(Path(tmp) / "venv", n)
            facts = collect_mod.collect(collect_mod.request_for(set(), {}), python=str(python))
            env = marker_env(facts)
            project = discover(root)
            assert project is not None
            read = ms(lambda r=root: discover(r), args.runs)
            pins = ms(lambda p=project, e=env: p.facts(e), args.runs)
            with_project = dataclasses.replace(facts, project=project.facts(env))
            drift = ms(lambda f=with_project: lock_drift(f), args.runs)
            found = len(lock_drift(with_project))
            cmd = [sys.executable, "-m", "envcheck", "--static", "--no-config", "--python", str(python),
                   "--format", "json", "-o", str(Path(tmp) / "r.json")]
            whole = ms(lambda c=cmd, r=root: subprocess.run(c, cwd=r, check=False, capture_output=True), args.runs)
            bare = ms(lambda c=cmd, r=root: subprocess.run([*c, "--no-project"], cwd=r, check=False,
                                                           capture_output=True), args.runs)
            size = (root / "uv.lock").stat().st_size // 1024
            print(f"{n:>6} {size:>9} {read:>8.0f} {pins:>8.0f} {drift:>9.1f} {whole:>9.0f} {bare:>16.0f}"
                  f"   ({found} drifted)")


if __name__ == "__main__":
    main()

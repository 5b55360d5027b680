"""Time the error-signature scan (`envcheck.rules.signatures.scan`, what `envcheck explain` and `check --report`
run over pasted error output) on large logs of three kinds, and print MB/s and peak memory.

- `noise`: generated log lines (training progress, tracebacks through site-packages, pip output) with every shipped
  signature's near miss among them: each holds its signature's anchor, so the matcher is asked on every near miss,
  and none is recognised.
- `warning`: torch's "The NVIDIA driver on your system is too old" UserWarning as it is printed (one line, after the
  path of torch/cuda/__init__.py), the example of EC0403's signature, repeated: every line is a recognised message.
- `warning3`: torch's three-line "sm_120 is not compatible with the current PyTorch installation" warning (EC0401's
  first example), repeated.
- `corpus`: the quoted text of tests/fixtures/corpus files (real issue bodies), concatenated until the size asked.
- `packed`: hostile lines of 1,300 characters, each packed with 40 of the pack's anchors and a number that makes it
  unlike every other: the most windows per MB, none answered from memory.

`--explain` times the whole command instead, `envcheck explain FILE --static --no-config` in a child (start-up,
the check and the report included), with its peak RSS.

Each case runs in a fresh child process (the scan's caches start empty, and the peak RSS is that case's alone). The
rule pack is loaded before the clock starts; the time is the scan's alone. `--tree DIR` imports envcheck from another
source tree (a checkout of an older commit) for before/after figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "fixtures" / "corpus"
KINDS = ("noise", "warning", "warning3", "corpus", "packed")
MB = 1_000_000


def _filler(rng: random.Random) -> str:
    step = rng.randrange(100_000)
    return rng.choice([
        f"INFO step {step}/500000 loss={rng.random():.4f} lr=3e-05 grad_norm={rng.random() * 3:.2f} tokens/s=18234",
        f'  File "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py", line {step % 2000}, in _call_impl',
        f'  File "/opt/conda/lib/python3.11/site-packages/transformers/utils/import_utils.py", line {step % 900}, '
        "in _get_module",
        f'  File "/home/user/project/src/__init__.py", line {step % 90}, in <module>',
        "    return forward_call(*args, **kwargs)",
        f"Requirement already satisfied: package-{step} in ./venv/lib/python3.12/site-packages (from x==1.{step % 9})",
        f"[rank{step % 8}]:[W{step % 1000:04d} 12:00:00.000000000 ProcessGroupNCCL.cpp:1234] Warning: a message",
        f"{step % 100:3d}%|██████████| {step}/{step + 1} [00:12<00:00, 83.21it/s]",
    ])


def noise(size: int, signatures: list) -> str:  # type: ignore[type-arg]
    rng = random.Random(1)
    misses = [s.near_miss.replace("\n", " ") for s in signatures]
    lines: list[str] = []
    total = 0
    while total < size:
        line = rng.choice(misses) if rng.random() < 0.05 else _filler(rng)
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def _repeated(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


def warning(size: int, signatures: list, which: str = "EC0403:0") -> str:  # type: ignore[type-arg]
    rule_id, index = which.split(":")
    example = next(s.example for s in signatures if s.rule_id == rule_id and s.index == int(index))
    return _repeated(example.rstrip("\n") + "\n", size)


def warning3(size: int, signatures: list) -> str:  # type: ignore[type-arg]
    return warning(size, signatures, "EC0401:0")


def corpus(size: int, signatures: list) -> str:  # type: ignore[type-arg]
    texts = [p.read_text(encoding="utf-8").partition("\n+++\n")[2] for p in sorted(CORPUS.glob("[0-9]*.md"))]
    return _repeated("\n".join(texts), size)


def packed(size: int, signatures: list) -> str:  # type: ignore[type-arg]
    anchors = sorted({s.anchor for s in signatures})
    lines: list[str] = []
    total = 0
    while total < size:
        index = len(lines)
        line = " ".join(anchors[(index + j) % len(anchors)] for j in range(40))[:1300] + f" {index}"
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


_MAKERS = {"noise": noise, "warning": warning, "warning3": warning3, "corpus": corpus, "packed": packed}


def _explain(text: str) -> dict[str, float]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder, "log.txt")
        log.write_text(text, encoding="utf-8")
        begun = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "envcheck", "explain", str(log), "--static", "--no-config",
                                  "-o", os.devnull], cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _pid, status, usage = os.wait4(child.pid, 0)
        took = time.perf_counter() - begun
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"envcheck explain failed: {child.stderr.read().decode() if child.stderr else status}")
    return {"bytes": len(text.encode()), "seconds": took, "observations": -1, "peak_mb": usage.ru_maxrss / 1024}


def _child(kind: str, size: int, explain: bool = False) -> dict[str, float]:
    from envcheck.rules.rule_pack import load
    from envcheck.rules.signatures import scan

    signatures = [s for rule in load(()) for s in rule.signatures]
    text = _MAKERS[kind](size, signatures)
    if explain:
        return _explain(text)
    begun = time.perf_counter()
    seen = scan(text, signatures)
    took = time.perf_counter() - begun
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"bytes": len(text.encode()), "seconds": took, "observations": len(seen), "peak_mb": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated: " + ", ".join(KINDS))
    parser.add_argument("--sizes", default="1,4,8", help="comma-separated sizes in MB (default 1,4,8)")
    parser.add_argument("--tree", type=Path, default=REPO, help="the source tree envcheck is imported from")
    parser.add_argument("--explain", action="store_true", help="time the whole `envcheck explain` command")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "BYTES", "EXPLAIN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child[0], int(args.child[1]), args.child[2] == "1")))
        return
    print(f"envcheck from {args.tree}")
    for kind in args.kinds.split(","):
        for size in (float(s) for s in args.sizes.split(",")):
            code = (f"import sys; sys.path[:0] = [{str(args.tree)!r}, {str(REPO / 'bench')!r}]; "
                    f"sys.argv = ['scan.py', '--child', {kind!r}, '{int(size * MB)}', '{int(args.explain)}']; "
                    "import scan; scan.main()")
            env = {**os.environ, "PYTHONPATH": str(args.tree)}  # the explain child imports the same tree
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                  cwd=args.tree, env=env)
            got = json.loads(done.stdout.splitlines()[-1])
            print(f"{kind:8} {got['bytes'] / MB:5.1f} MB  {got['seconds']:7.2f} s  "
                  f"{got['bytes'] / MB / max(got['seconds'], 1e-9):6.2f} MB/s  {int(got['observations']):7d} seen  "
                  f"peak {got['peak_mb']:.0f} MB", flush=True)


if __name__ == "__main__":
    main()

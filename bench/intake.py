"""Time `envcheck.sources.reports.read_report` on a 1 MB pasted report, and measure extraction over the real fixtures.

The report is the real fixtures under tests/fixtures/reports/ in markdown fences, followed by a `pip list` of
synthetic rows until it reaches the size asked (the shape of a large paste: a few outputs and a long list). It is
parsed in this process; the minimum and median of --runs are printed. The accuracy part reads every fixture and
compares the torch versions, CUDA builds, GPU models, compute capabilities and driver versions with the values
tests/unit/test_intake.py expects (read from its EXPECTED table), and prints the share extracted correctly.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from envcheck.sources.reports import read_report  # noqa: E402

REPORTS = REPO / "tests" / "fixtures" / "reports"


def big_report(size: int) -> bytes:
    parts = [f"### {p.name}\n\n```\n{p.read_text(encoding='utf-8')}```\n\n"
             for p in sorted(REPORTS.iterdir()) if p.suffix in (".txt", ".md") and p.name != "SOURCES.md"]
    text = "".join(parts) + "```\nPackage                  Version\n------------------------ ------------\n"
    rows = []
    index = 0
    while len(text) + sum(len(r) for r in rows) < size:
        rows.append(f"package-{index:06d}           1.{index % 97}.{index % 13}\n")
        index += 1
    return (text + "".join(rows) + "```\n").encode()


def accuracy() -> tuple[int, int, list[str]]:
    from test_intake import EXPECTED  # the ground truth, written by reading each fixture

    right = total = 0
    wrong: list[str] = []
    for param in EXPECTED:
        fixture, torch, cuda, driver, gpus, _python, _platform = param.values
        facts = read_report((REPORTS / fixture).read_bytes(), fixture)
        checks = [("torch version", torch, facts.torch.version if facts.torch else None),
                  ("CUDA build", cuda, facts.torch.cuda if facts.torch else None),
                  ("driver", driver, facts.nvml.driver_version if facts.nvml else None)]
        got = list(facts.nvml.devices) if facts.nvml else []
        for i, (name, capability) in enumerate(gpus or []):
            device = got[i] if i < len(got) else None
            checks += [(f"GPU {i} model", name, device.name if device else None),
                       (f"GPU {i} capability", capability, device.compute_capability if device else None)]
        for label, want, have in checks:
            if want is None:
                continue  # not stated in this report
            total += 1
            if want == have:
                right += 1
            else:
                wrong.append(f"{fixture}: {label}: expected {want!r}, got {have!r}")
    return right, total, wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1_000_000, help="report size in bytes (default 1 MB)")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    data = big_report(args.size)
    times = []
    cpu = []
    for _ in range(args.runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        facts = read_report(data, "big.md")
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    print(f"report: {len(data):,} bytes, {len(facts.distributions):,} distributions read")
    print(f"read_report: wall min {min(times):.1f} ms, median {statistics.median(times):.1f} ms; CPU min "
          f"{min(cpu):.1f} ms, median {statistics.median(cpu):.1f} ms over {args.runs} runs")
    right, total, wrong = accuracy()
    print(f"extraction: {right}/{total} stated values correct ({100 * right / total:.1f}%)")
    for line in wrong:
        print("  " + line)


if __name__ == "__main__":
    main()

"""The held-out measurement (issue 32, item 6): how often `envcheck check --report` names the cause of a real issue
thread it was never shown, against how often it does on the threads its signatures were written from.

- Training set: tests/fixtures/corpus/ (the threads the rule pack cites).
- Test set: tests/fixtures/heldout/ (threads from repositories the project's tree never cites; README.md there says
  how they were gathered and defines the categories), in rounds: round 1 was measured many times while rules were
  written for its failing categories; round 2 was gathered later the same way and measured once when it was complete,
  so its figure is the one on text nothing was tuned to. The figures are given per round and for both together.

A thread's cause is named when a finding (fail, warn or info) is one of the thread's `expect`/`accept` rules, or when
a finding's rule belongs to the thread's category (RULE_CATEGORY, else AREA_CATEGORY below; a training thread's
category is that of its expected rules). The category route lets rules written after the set was gathered count
without editing the set. A code-caused thread is blamed on the environment when any fail or warn finding's rule is
not in the `code` category.

    .venv/bin/python tests/heldout_measure.py             # each thread in a child process, in a bare working folder
    .venv/bin/python tests/heldout_measure.py --misses    # and the threads whose cause was not named

Run it with an interpreter that has envcheck and no torch (the project's .venv): a pasted report describes another
machine, and nothing of this one should enter the figures. tests/unit/test_heldout.py guards the set and the figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from envcheck.support.toml import TOMLDecodeError, loads

HERE = Path(__file__).resolve().parent
HELDOUT = HERE / "fixtures" / "heldout"
CORPUS = HERE / "fixtures" / "corpus"
FOUND = frozenset({"fail", "warn", "info"})  # a finding; pass, n/a and skipped are not
BLAME = frozenset({"fail", "warn"})  # a finding that says the environment is wrong

# The categories of cause (tests/fixtures/heldout/README.md describes each; a test keeps the two lists equal).
CATEGORIES = (
    "gpu-arch", "driver", "gpu-runtime", "cpu-build", "dtype-hardware", "shared-library", "windows-dll",
    "companion-build", "numpy-abi", "version-skew", "installer", "build-toolchain", "rocm", "apex", "multi-gpu",
    "macos-mps", "code",
)

# The category each rule area's findings name, read from the rule catalogue (`envcheck rule --all`: area, name,
# summary), not from the held-out texts. None: the area's rules name no cause of their own. A new area needs a line
# here (tests/unit/test_heldout.py fails until it has one); a new rule in an existing area takes the area's category
# unless RULE_CATEGORY says otherwise: add a line there when it names another cause.
AREA_CATEGORY: dict[str, str | None] = {
    "attention": "dtype-hardware",  # FlashAttention / SDPA kernels the GPU cannot run
    "code-errors": "code",  # failures the user's code causes (issue 32 item 5): never an environment finding
    "companions": "companion-build",  # torchvision, torchaudio, xformers built for another torch
    "dependencies": "installer",  # what pip left: conflicts, duplicates, broken metadata
    "environment": "gpu-runtime",
    "extension-errors": "companion-build",
    "extensions": "companion-build",  # compiled extensions built for another torch, CUDA or ABI
    "framework-errors": "version-skew",
    "frameworks": "version-skew",
    "gpu": "gpu-arch",
    "interop": "version-skew",  # one library's release against another's
    "libraries": "version-skew",
    "multigpu": "multi-gpu",
    "rocm": "rocm",
    "runtime-errors": "gpu-runtime",
    "system": "shared-library",  # native libraries found, shadowed or missing
    "toolchain": "build-toolchain",
    "torch": "version-skew",  # a torch release's own bug
    "wheels": "installer",
}

# Rules whose summary names another cause than their area's. None: the rule restates a symptom (torch does not
# import, CUDA finds no driver, NumPy is unavailable) that several causes share, so it names none of them.
RULE_CATEGORY: dict[str, str | None] = {
    "EC0602": "gpu-arch", "EC0603": "gpu-arch",  # flash-attn builds without the GPU's architecture
    "EC0604": "version-skew", "EC0605": "version-skew",  # Dia needs a newer torch
    "EC0706": "version-skew", "EC0707": "version-skew",  # a companion's API moved between releases
    "EC0101": "version-skew", "EC0102": "version-skew",  # one installed library requires another's release
    "EC0201": "installer", "EC0203": "version-skew",
    "EC1801": None,  # `Numpy is not available`: the symptom of several causes
    "EC1802": "version-skew", "EC1803": "version-skew",  # code against a newer NumPy's removed names
    "EC1805": "version-skew",  # remote code imports a package this environment lacks
    "EC1807": "dtype-hardware",  # xformers has no kernel for these inputs on this GPU
    "EC1808": None, "EC1809": None,  # bitsandbytes finds no CUDA library: a symptom
    "EC1811": "code",  # the code gives flash-attn float32 tensors
    "EC1103": "numpy-abi", "EC1120": "numpy-abi",
    "EC1104": "shared-library",
    "EC1105": None, "EC1106": None,  # an extension does not import: a symptom
    "EC1113": "version-skew",  # deepspeed imports torch._six
    "EC1117": "apex",
    "EC0906": "dtype-hardware",
    "EC0403": "driver", "EC0404": "driver", "EC0406": "driver",
    "EC0405": "cpu-build",
    "EC0407": "dtype-hardware",
    "EC0408": "gpu-runtime", "EC0411": "gpu-runtime",
    "EC0409": None,  # `import torch` timed out
    "EC0410": "installer",
    "EC0412": "companion-build",
    "EC0413": "shared-library",
    "EC0301": "apex", "EC0310": "apex",
    "EC0303": "numpy-abi",
    "EC0307": "companion-build",
    "EC1701": "cpu-build",
    "EC1703": None,  # a CUDA torch finds no NVIDIA driver: no driver, or an AMD machine, or a container
    "EC1711": "version-skew",
    "EC1712": "gpu-arch", "EC1714": "gpu-arch",
    "EC1713": "companion-build",
    "EC1715": "build-toolchain",
    "EC1716": "multi-gpu", "EC1717": "multi-gpu", "EC1718": "multi-gpu", "EC1719": "multi-gpu",
    "EC1720": None, "EC1721": None,  # NCCL failed on a system call / a CUDA call: the symptom, its WARN line the cause
    "EC1722": "shared-library", "EC1727": "shared-library", "EC1728": "shared-library",
    "EC1723": "windows-dll",
    "EC1724": "installer", "EC1725": "installer",
    "EC1726": "code",  # the code uses CUDA in a forked child
    "EC1729": "rocm",  # a ROCm build of torch finds no AMD GPU it can use
    "EC1730": "windows-dll",  # a DLL of another build (OpenMP, VC runtime) shadows the one torch links
    "EC1731": "installer",  # pip refuses a wheel named by file or URL for another Python or platform
    "EC1732": "multi-gpu",  # NCCL over InfiniBand under a low locked-memory limit
    "EC1813": "apex", "EC1814": "apex", "EC1815": "apex",  # apex built for another CUDA or torch, or before torch 2
    "EC0804": "multi-gpu",
    "EC0805": "build-toolchain",
    "EC0806": "macos-mps", "EC0807": "macos-mps", "EC0808": "macos-mps",
    "EC0813": "windows-dll", "EC0814": "windows-dll",
    "EC0817": "installer",
    "EC0501": None,  # `import torch` fails: the symptom
}


@dataclass(frozen=True)
class Thread:
    """One thread file: where it came from, what caused it, and the text its reporter pasted."""

    name: str
    url: str
    kind: str  # held-out: a category of CATEGORIES; training: the corpus's own family name
    expect: tuple[str, ...]
    accept: tuple[str, ...]
    cause: str
    text: str
    heldout: bool
    round: int = 0  # held-out: the round that gathered it (1, 2, ...); training threads have none (0)

    @property
    def repo(self) -> str:
        """`owner/name` of the repository the thread is in."""
        return repo_of(self.url)


_URL = re.compile(r"https://github\.com/([A-Za-z0-9][\w.-]*/[\w.-]+)/(?:issues|pull)/\d+")
_HELDOUT_KEYS = frozenset({"url", "kind", "expect", "accept", "note", "cause", "round"})
_CORPUS_KEYS = frozenset({"url", "kind", "expect", "accept", "note"})


def repo_of(url: str) -> str:
    match = _URL.fullmatch(url)
    if match is None:
        raise ValueError(f"{url!r} is not a GitHub issue or pull request address")
    return match.group(1)


def parse(path: Path, *, heldout: bool) -> Thread:
    """The thread file at `path`: TOML front matter between `+++` lines, then the quoted text. A malformed file raises
    ValueError naming the file and the key."""
    raw = path.read_text(encoding="utf-8")
    head, sep, text = raw.removeprefix("+++\n").partition("\n+++\n")
    if not raw.startswith("+++\n") or not sep:
        raise ValueError(f"{path.name}: no front matter between +++ lines")
    try:
        meta = loads(head)
    except TOMLDecodeError as error:
        raise ValueError(f"{path.name}: front matter is not TOML: {error}") from None
    allowed = _HELDOUT_KEYS if heldout else _CORPUS_KEYS
    required = {"url", "kind", "expect", "cause"} if heldout else {"url", "kind", "expect"}
    for key in sorted(set(meta) - allowed):
        raise ValueError(f"{path.name}: unknown key {key!r}")
    for key in sorted(required - set(meta)):
        raise ValueError(f"{path.name}: key {key!r} missing")
    for key in ("url", "kind", "note", "cause"):
        if not isinstance(meta.get(key, ""), str):
            raise ValueError(f"{path.name}: key {key!r} is not a string")
    for key in ("expect", "accept"):
        value = meta.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(f"{path.name}: key {key!r} is not a list of rule ids")
    if heldout and meta["kind"] not in CATEGORIES:
        raise ValueError(f"{path.name}: key 'kind' is {meta['kind']!r}, not a category of the README")
    # A held-out file without `round` belongs to round 1, gathered before the key existed.
    gathered = meta.get("round", 1) if heldout else 0
    if heldout and (type(gathered) is not int or gathered < 1):  # bool is an int subclass: refused too
        raise ValueError(f"{path.name}: key 'round' is {gathered!r}, not a round number (1, 2, ...)")
    repo_of(meta["url"])  # a ValueError names the address; callers add the file
    return Thread(path.name, meta["url"], meta["kind"], tuple(meta["expect"]), tuple(meta.get("accept", ())),
                  meta.get("cause", meta.get("note", "")), text, heldout, gathered)


def heldout_threads() -> list[Thread]:
    return [parse(path, heldout=True) for path in sorted(HELDOUT.glob("[0-9]*.md"))]


def corpus_threads() -> list[Thread]:
    return [parse(path, heldout=False) for path in sorted(CORPUS.glob("[0-9]*.md"))]


def category_of(rule_id: str, areas: Mapping[str, str]) -> str | None:
    """The category of cause rule `rule_id`'s findings name (None: a symptom, or a rule of an unmapped area)."""
    if rule_id in RULE_CATEGORY:
        return RULE_CATEGORY[rule_id]
    return AREA_CATEGORY.get(areas.get(rule_id, ""))


def thread_categories(thread: Thread, areas: Mapping[str, str]) -> frozenset[str]:
    """The categories whose findings name `thread`'s cause: its own for a held-out thread; for a training thread,
    those of the rules it expects (it has no category of its own)."""
    if thread.heldout:
        return frozenset({thread.kind})
    return frozenset(c for rule in thread.expect if (c := category_of(rule, areas)) is not None)


def names_cause(thread: Thread, found: Mapping[str, str], areas: Mapping[str, str], *, strict: bool = False) -> bool:
    """Whether the findings `found` ({rule id: status}) name `thread`'s cause: one of its expected or accepted rules,
    or (unless `strict`) a rule of its category."""
    ids = {rule for rule, status in found.items() if status in FOUND}
    if ids & {*thread.expect, *thread.accept}:
        return True
    if strict:
        return False
    wanted = thread_categories(thread, areas) - {"code"}
    return any(category_of(rule, areas) in wanted for rule in ids)


def blames_environment(found: Mapping[str, str], areas: Mapping[str, str]) -> list[str]:
    """The fail/warn findings in `found` that blame the environment (every one but a `code` rule's)."""
    return sorted(rule for rule, status in found.items() if status in BLAME and category_of(rule, areas) != "code")


@dataclass(frozen=True)
class Outcome:
    """One thread checked: `check --report`'s exit code and its findings ({rule id: status})."""

    thread: Thread
    code: int
    found: Mapping[str, str]


@dataclass(frozen=True)
class Figures:
    training: tuple[int, int]  # (named, threads with an expected rule)
    training_strict: tuple[int, int]
    test: tuple[int, int]  # (named, environment-caused held-out threads)
    test_strict: tuple[int, int]
    code_blamed: tuple[int, int]  # (blamed on the environment, code-caused held-out threads)
    unrecognised: tuple[int, int]  # (exit 2, held-out environment threads)
    by_category: Mapping[str, tuple[int, int]]
    misses: tuple[str, ...]
    blamed: tuple[str, ...]


def figures(outcomes: Iterable[Outcome], areas: Mapping[str, str], *,
            rounds: Collection[int] | None = None) -> Figures:
    """The figures of `outcomes`: recall on each set, and code-caused threads blamed on the environment. With
    `rounds`, only the held-out threads of those rounds count (the training figures do not change)."""
    counts: Counter[str] = Counter()
    by_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses: list[str] = []
    blamed: list[str] = []
    for outcome in outcomes:
        thread = outcome.thread
        if thread.heldout and rounds is not None and thread.round not in rounds:
            continue
        if not thread.heldout:
            if thread.expect:
                counts["train"] += 1
                counts["train_named"] += names_cause(thread, outcome.found, areas)
                counts["train_strict"] += names_cause(thread, outcome.found, areas, strict=True)
            continue
        if thread.kind == "code":
            counts["code"] += 1
            if blame := blames_environment(outcome.found, areas):
                counts["code_blamed"] += 1
                blamed.append(f"{thread.name}: {', '.join(blame)}")
            continue
        named = names_cause(thread, outcome.found, areas)
        counts["test"] += 1
        counts["test_named"] += named
        counts["test_strict"] += names_cause(thread, outcome.found, areas, strict=True)
        counts["exit2"] += outcome.code == 2
        by_category[thread.kind][0] += named
        by_category[thread.kind][1] += 1
        if not named:
            seen = ", ".join(f"{rule} {status}" for rule, status in sorted(outcome.found.items())
                             if status in FOUND) or "no finding"
            misses.append(f"{thread.name} [{thread.kind}] exit {outcome.code}: {seen}")
    return Figures((counts["train_named"], counts["train"]), (counts["train_strict"], counts["train"]),
                   (counts["test_named"], counts["test"]), (counts["test_strict"], counts["test"]),
                   (counts["code_blamed"], counts["code"]), (counts["exit2"], counts["test"]),
                   {kind: (n[0], n[1]) for kind, n in sorted(by_category.items())}, tuple(misses), tuple(blamed))


# -- running the check ----------------------------------------------------------------------------------------------

Checker = Callable[[Thread], tuple[int, dict[str, str]]]


def _statuses(code: int, output: str) -> tuple[int, dict[str, str]]:
    if code not in (0, 1):  # 2: nothing recognised, no verdict; 3: a crash
        return code, {}
    return code, {finding["id"]: finding["status"] for finding in json.loads(output)["findings"]}


def child_checker(python: str, workdir: Path) -> Checker:
    """A checker that runs `python -m envcheck check --report` in a child process: in an empty working folder (no
    project, no configuration), with a bare environment (its own HOME, so no user configuration or cache, and no
    CUDA_*, LD_LIBRARY_PATH, VIRTUAL_ENV or CONDA_PREFIX of this shell)."""
    home = workdir / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "", "NO_COLOR": "1"}
    env = {key: value for key, value in env.items() if value}

    def check(thread: Thread) -> tuple[int, dict[str, str]]:
        report = workdir / thread.name
        report.write_text(thread.text, encoding="utf-8")
        done = subprocess.run([python, "-m", "envcheck", "check", "--report", str(report), "--format", "json",
                               "--no-config", "--no-cache"], cwd=workdir, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        return _statuses(done.returncode, done.stdout)

    return check


def has_torch(python: str) -> bool:
    """Whether `python` can import torch (then a check it runs could see this machine's torch)."""
    if python == sys.executable:
        return importlib.util.find_spec("torch") is not None
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)"
    return subprocess.run([python, "-c", probe], capture_output=True, timeout=60, check=False).returncode != 0


def catalogue_areas(python: str) -> dict[str, str]:
    """{rule id: area} of the rule pack `python`'s envcheck ships (`envcheck rule --all --format json`)."""
    done = subprocess.run([python, "-m", "envcheck", "rule", "--all", "--format", "json"], capture_output=True,
                          text=True, timeout=300, check=True)
    return {rule["id"]: rule["area"] for rule in json.loads(done.stdout)}


def measure(threads: Iterable[Thread], check: Checker, *, jobs: int = 1) -> list[Outcome]:
    threads = list(threads)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(check, threads))
    return [Outcome(thread, code, found) for thread, (code, found) in zip(threads, results, strict=True)]


def _ratio(pair: tuple[int, int]) -> str:
    named, total = pair
    return f"{named}/{total} = {named / total:.1%}" if total else "0/0"


def _held_out_lines(result: Figures) -> list[str]:
    return [
        f"  test recall (environment-caused):              {_ratio(result.test)}"
        f"   expect/accept only: {_ratio(result.test_strict)}",
        f"  code-caused threads blamed on the environment: {_ratio(result.code_blamed)}",
        f"  environment threads with nothing recognised (exit 2): {_ratio(result.unrecognised)}",
    ]


def render(result: Figures, *, misses: bool, per_round: Mapping[int, Figures] | None = None) -> str:
    """`result` for every held-out thread, preceded by each round's own figures when `per_round` has them."""
    lines = [
        f"training recall (corpus, threads with an expected rule): {_ratio(result.training)}"
        f"   expect/accept only: {_ratio(result.training_strict)}",
    ]
    for number, figures_of_round in (per_round or {}).items():
        lines += ["", f"held-out round {number}:", *_held_out_lines(figures_of_round),
                  "  by category: " + ", ".join(f"{kind} {named}/{total}"
                                                for kind, (named, total) in figures_of_round.by_category.items())]
    lines += [
        "", "held-out, every round:" if per_round else "held-out:", *_held_out_lines(result),
        "",
        "test recall by category:",
        *(f"  {kind:16} {named}/{total}" for kind, (named, total) in result.by_category.items()),
    ]
    if result.blamed:
        lines += ["", "code-caused threads blamed on the environment:", *(f"  {line}" for line in result.blamed)]
    if misses and result.misses:
        lines += ["", "held-out threads whose cause was not named:", *(f"  {line}" for line in result.misses)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose envcheck runs the checks (it must not have torch)")
    parser.add_argument("--jobs", type=int, default=2, help="checks run at once (default 2)")
    parser.add_argument("--misses", action="store_true", help="list the held-out threads whose cause was not named")
    parser.add_argument("--json", metavar="FILE", help="also write every thread's exit code and findings to FILE")
    args = parser.parse_args(argv)
    if has_torch(args.python):
        print(f"{args.python} has torch: run this with an interpreter without it (the project's .venv)",
              file=sys.stderr)
        return 2
    try:
        areas = catalogue_areas(args.python)
    except subprocess.CalledProcessError as error:
        last = (error.stderr or "").strip().splitlines()[-1:] or ["no output"]
        print(f"{args.python} cannot run envcheck (`-m envcheck rule --all`): {last[0]}", file=sys.stderr)
        return 2
    unmapped = sorted({area for area in areas.values() if area not in AREA_CATEGORY})
    if unmapped:
        print(f"rule areas without a category in AREA_CATEGORY: {', '.join(unmapped)}", file=sys.stderr)
        return 2
    threads = [*corpus_threads(), *heldout_threads()]
    with tempfile.TemporaryDirectory(prefix="envcheck-heldout-") as tmp:
        outcomes = measure(threads, child_checker(args.python, Path(tmp)), jobs=args.jobs)
    crashed = [outcome.thread.name for outcome in outcomes if outcome.code not in (0, 1, 2)]
    rounds = sorted({thread.round for thread in threads if thread.heldout})
    per_round = {number: figures(outcomes, areas, rounds={number}) for number in rounds}
    print(render(figures(outcomes, areas), misses=args.misses, per_round=per_round))
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{"thread": o.thread.name, "heldout": o.thread.heldout, "round": o.thread.round, "kind": o.thread.kind,
              "exit": o.code, "findings": dict(o.found)} for o in outcomes], indent=1) + "\n", encoding="utf-8")
    if crashed:
        print(f"\ncheck --report ended with an internal error on: {', '.join(crashed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

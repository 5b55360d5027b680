"""Generated bad input, from a fixed seed and in a bounded count: every run ends in exit 0, 1 or 2 within its
deadline, with no traceback, an exit 2 is one error line of bounded length naming the file, and no input file or
planted environment changes.

The CI profile runs FUZZ_RUNS inputs per class; a longer local run sets ENVCHECK_FUZZ_RUNS (and ENVCHECK_FUZZ_SEED
for other inputs), and ENVCHECK_FUZZ_REPORT=FILE appends the exit codes seen per class to FILE as JSON lines.
"""

from __future__ import annotations

import codecs
import collections
import hashlib
import json
import math
import os
import random
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from _fakes import FIXTURES, write_dist, write_torch
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.cli.output import MAX_MESSAGE
from envcheck.facts.snapshot import Facts
from envcheck.report import render
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.sources.live import _collector

FUZZ_RUNS = int(os.environ.get("ENVCHECK_FUZZ_RUNS", "25"))
SEED = int(os.environ.get("ENVCHECK_FUZZ_SEED", "15"))
DEADLINE_S = 30  # per input; the slowest legitimate one (a snapshot of thousands of keys) takes well under a second
CLEAN = json.loads((FIXTURES / "clean-cuda-venv.json").read_text(encoding="utf-8"))

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="the per-input deadline needs SIGALRM")


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in this thread after `seconds`: a hang fails the input instead of the suite."""
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"no result within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def tree_hash(root: Path) -> str:
    """One digest of every file name, type and content under `root` (FIFOs by name only)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(os.fsencode(path.relative_to(root)))
        if path.is_file():
            digest.update(path.read_bytes())
        elif path.is_dir():
            digest.update(b"/")
    return digest.hexdigest()


# --- generators -----------------------------------------------------------------------------------------------

BIG = "\x00BIG\x00"  # replaced in the JSON text by a number too long for json.dumps to write
DEEP = "\x00DEEP\x00"  # replaced by arrays nested too deep for json.dumps to write


def nasty_string(rng: random.Random) -> str:
    return rng.choice([
        "", " ", "\udcff", "caf\udce9", "✗✓", "x" * rng.choice([100, 100_000]), "9" * rng.choice([65, 5000]),
        "1." + "0" * 5000, "(" * 300 + 'python_version > "3"' + ")" * 300, "torch>=" + "1" * 5000,
        "x[" + ",".join(f"e{i}" for i in range(rng.choice([10, 500]))) + "]", "(a+)+$", "a{4294967296}", "\x00",
        "EC" + "0" * 1000, "../../etc/passwd", "{python}", "{", "}}", "\n\n", "1e309", "nan", "-1",
        "torch<2.6; extra == 'gpu'", "  torch  ", "ŧørçħ",
    ])


def nasty_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(10)
    if kind == 0:
        nest: Any = "x"
        if rng.random() < 0.3:
            return DEEP
        for _ in range(rng.choice([5, 70, 120])):  # deeper ones are DEEP: json.dumps itself would recurse
            nest = [nest] if rng.random() < 0.5 else {"k": nest}
        return nest
    if kind == 1:
        return rng.choice([True, False, None, 0, -1, 2**63, -(2**63), 1.5, math.nan, math.inf, -math.inf])
    if kind == 2:
        return BIG
    if kind == 3 and depth < 3:
        return [nasty_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 4 and depth < 3:
        return {nasty_string(rng)[:50]: nasty_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return nasty_string(rng)


def mutate(rng: random.Random, data: Any, count: int) -> Any:
    """`data` with `count` random nodes replaced by nasty values or removed."""
    for _ in range(count):
        parent, key = None, None
        node = data
        while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
            parent, key = node, rng.choice(list(node) if isinstance(node, dict) else range(len(node)))
            node = node[key]
        if parent is None:
            return nasty_value(rng) if rng.random() < 0.1 else data
        if isinstance(parent, dict) and rng.random() < 0.2:
            del parent[key]
        else:
            parent[key] = nasty_value(rng)
    return data


def to_json(rng: random.Random, data: Any) -> str:
    text = json.dumps(data, ensure_ascii=rng.random() < 0.5)
    deep = rng.choice([1000, 100_000])
    return text.replace(json.dumps(BIG), "9" * rng.choice([20, 4400, 10_000])).replace(
        json.dumps(DEEP), "[" * deep + "]" * deep)


def encode(rng: random.Random, text: str) -> bytes:
    """`text` mostly as UTF-8; sometimes with a BOM, in UTF-16, cut short, or with a byte that is not UTF-8."""
    data = text.encode("utf-8", errors="surrogatepass")
    roll = rng.random()
    if roll < 0.70:
        return data
    if roll < 0.75:
        return codecs.BOM_UTF8 + data
    if roll < 0.82:
        return text.encode("utf-16", errors="surrogatepass")
    if roll < 0.90 and data:
        cut = rng.randrange(len(data))
        return data[:cut]
    at = rng.randrange(len(data) + 1)
    return data[:at] + bytes([rng.choice([0x80, 0xC0, 0xFE, 0xFF, 0x00])]) + data[at:]


def toml_value(rng: random.Random, value: Any) -> str:
    """A TOML rendering of `value` (inline tables and arrays), sometimes broken on purpose by nasty content."""
    if value == BIG:
        return "9" * rng.choice([30, 5000])
    if value == DEEP:
        return "[" * 5000 + "]" * 5000
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {math.nan: "nan", math.inf: "inf", -math.inf: "-inf"}.get(value, repr(value)) \
            if not math.isnan(value) else "nan"
    if isinstance(value, int):
        return str(value)
    if value is None:
        return '""'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(rng, v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(rng, v)}" for k, v in value.items()) + " }"
    return json.dumps(value, ensure_ascii=rng.random() < 0.3)


PREDICATE_KEYS = ["package", "missing", "module", "source", "marker", "python", "env", "fact", "torch", "gpu",
                  "driver", "probe", "cuda_driver"]
VALID_LEAVES = ['{ package = "torch<2.6" }', '{ missing = "torch" }', '{ module = "apex" }', '{ python = ">=3.9" }',
                '{ marker = "sys_platform == \'linux\'" }', '{ env = { name = "CUDA_VISIBLE_DEVICES", set = true } }',
                '{ source = { file = "a/b.py", contains = "x\\\\(" } }']


def condition(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth > 0 and roll < 0.4:
        op = rng.choice(["all", "any", "first"])
        return f"{{ {op} = [" + ", ".join(condition(rng, depth - 1) for _ in range(rng.randint(1, 3))) + "] }"
    if depth > 0 and roll < 0.55:
        return f"{{ not = {condition(rng, depth - 1)} }}"
    if roll < 0.8:
        return rng.choice(VALID_LEAVES)
    return f"{{ {rng.choice(PREDICATE_KEYS)} = {toml_value(rng, nasty_value(rng))} }}"


def rule_file(rng: random.Random) -> str:
    fields = {"id": '"EC9990"', "name": '"fuzzed-rule"', "severity": '"error"', "summary": '"s {torch.version}"',
              "why": '"w"', "fix": '"f"', "references": '["https://example.org/1"]'}
    for _ in range(rng.randrange(3)):
        key = rng.choice([*fields, "commands", "foreach", "applies"])
        fields[key] = toml_value(rng, nasty_value(rng))
    depth = rng.choice([1, 3, 40, 200])
    body = "".join(f"{k} = {v}\n" for k, v in fields.items())
    return f"[[rule]]\n{body}when = {condition(rng, depth)}\n"


CONFIG_KEYS = ["require", "forbid", "gpu-min-capability", "gpu-min-memory-gib", "gpu-count", "gpu-match",
               "probes-must-pass", "ignore", "select", "fail-on", "no-such-key"]


def hostile_toml(rng: random.Random) -> str:
    """TOML nested past every bound in one of its ways (a dotted key, a header, arrays, inline tables), or a key
    holding newlines and workflow commands: refused before tomllib reads it, or quoted on one line."""
    depth = rng.choice([65, 300, 30_000])
    return rng.choice([
        "a" + ".a" * depth + " = 1",
        "[tool.envcheck." + ".".join(["t"] * depth) + "]",
        "deep = " + "[" * depth + "]" * depth,
        "deep = " + "{ a = " * min(depth, 3000) + "1" + " }" * min(depth, 3000),
        json.dumps("x\n::add-mask::secret\n::error title=forged::x") + " = 1",
        '[[tool.envcheck.machines]]\nname = "m"\npython = 3.10\nplatform = "linux-x86_64"',
    ])


def config_file(rng: random.Random) -> str:
    lines = ["[tool.envcheck]"]
    for key in rng.sample(CONFIG_KEYS, rng.randint(1, 4)):
        value = nasty_value(rng)
        if rng.random() < 0.4:
            value = [nasty_string(rng) for _ in range(rng.randint(1, 3))]
        lines.append(f"{key} = {toml_value(rng, value)}")
    if rng.random() < 0.3:
        lines.append(hostile_toml(rng))
    return "\n".join(lines) + "\n"


CLI_OPTIONS = ["--select", "--ignore", "--require", "--forbid", "--probe-timeout", "--fail-on", "--format", "--also",
               "--output"]


def cli_args(rng: random.Random, tmp: Path) -> list[str]:
    args = ["check", "--facts", str(FIXTURES / "clean-cuda-venv.json"), "--no-config"]
    for option in rng.sample(CLI_OPTIONS, rng.randint(1, 3)):
        value = nasty_string(rng).replace("\x00", "")
        if option == "--output":  # only ever under this input's own folder
            value = str(tmp / rng.choice(["out.txt", "missing/dir/out.txt", "", "sub"]))
            (tmp / "sub").mkdir(exist_ok=True)
        elif option == "--also":
            value = f"{rng.choice(['json', 'junit', 'nope'])}={tmp / rng.choice(['a.json', 'sub'])}"
        args += [option, value]
    return args


def planted_site(rng: random.Random, site: Path) -> None:
    """A site-packages of distributions with generated metadata, and sometimes an odd torch/version.py."""
    for i in range(rng.randint(1, 4)):
        requires = [nasty_string(rng) if rng.random() < 0.5 else f"dep{i}>=1.0" for _ in range(rng.randrange(4))]
        if rng.random() < 0.2:  # a distribution that requires itself with many extras
            requires.append(f"p{i}[" + ",".join(f"e{j}" for j in range(rng.choice([50, 600]))) + "]")
        version = rng.choice(["1.0", "9" * 5000, "", "1.0\udcff", "not a version"])
        metadata: str | bytes = (f"Metadata-Version: 2.1\nName: p{i}\nVersion: {version}\n"
                                 + "".join(f"Requires-Dist: {r}\n" for r in requires))
        metadata = encode(rng, metadata)
        dist_info = write_dist(site, f"p{i}", "1.0", metadata=metadata, folder=f"p{i}-1.0.dist-info")
        roll = rng.random()
        if roll < 0.05 and hasattr(os, "mkfifo"):  # a METADATA that would block the reader
            (dist_info / "METADATA").unlink()
            os.mkfifo(dist_info / "METADATA")
        elif roll < 0.10 and Path("/dev/zero").exists():  # one that would never end
            (dist_info / "METADATA").unlink()
            (dist_info / "METADATA").symlink_to("/dev/zero")
    if rng.random() < 0.5:
        write_torch(site, rng.choice([
            "__version__ = 5\n", "__version__ = '2.5.1'\ncuda = None\n", "__version__ = " + "(" * 5000 + "1" +
            ")" * 5000 + "\n", "__version__ = " + "-" * 50_000 + "1\n", "__version__ = '" + "9" * 5000 + "'\n",
            "\udcff = 1\n".encode("utf-8", "surrogatepass").decode("utf-8", "replace"), "def (\n",
        ]))


# --- the properties -------------------------------------------------------------------------------------------

TALLY: dict[str, collections.Counter[int]] = collections.defaultdict(collections.Counter)


def check_cli_run(args: list[str], label: str, names: list[str]) -> str:
    """Run the CLI in-process under the deadline and assert the promise for one input; its output (and errors)."""
    with deadline(DEADLINE_S):
        result = CliRunner().invoke(cli, args, catch_exceptions=True)
    what = f"{label}: envcheck {' '.join(a[:80] for a in args)}"
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{what}: {type(result.exception).__name__}: {result.exception}"
    assert result.exit_code in (0, 1, 2), f"{what}: exit {result.exit_code}: {result.stderr[-2000:]}"
    assert "Traceback" not in result.output, what
    TALLY[label][result.exit_code] += 1
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert lines and all(len(line) <= MAX_MESSAGE + 200 for line in lines), f"{what}: {result.stderr[:3000]}"
        if lines[-1].startswith("envcheck: error:"):
            assert len(lines) == 1, f"{what}: {result.stderr[:3000]}"
            assert not names or any(name in lines[0] for name in names), f"{what}: {lines[0]}"
    return result.output


def inputs(label: str) -> Iterator[tuple[int, random.Random]]:
    for i in range(FUZZ_RUNS):
        yield i, random.Random(f"{SEED}:{label}:{i}")


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    report = os.environ.get("ENVCHECK_FUZZ_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as fh:
            for label, counts in sorted(TALLY.items()):
                fh.write(json.dumps({"class": label, "inputs": sum(counts.values()),
                                     "exit_codes": dict(sorted(counts.items()))}) + "\n")


def test_fuzzed_snapshots(tmp_path: Path) -> None:
    """Mutated facts snapshots given to `check --facts` in every format end in exit 0, 1 or 2."""
    for i, rng in inputs("snapshot"):
        snapshot = tmp_path / f"s{i}.json"
        snapshot.write_bytes(encode(rng, to_json(rng, mutate(rng, json.loads(json.dumps(CLEAN)), rng.randint(1, 3)))))
        before = tree_hash(tmp_path)
        fmt = rng.choice(["text", "json", "markdown", "junit", "github"])
        check_cli_run(["check", "--facts", str(snapshot), "--format", fmt, "-v", "--no-config"], "snapshot",
                      [str(snapshot)])
        assert tree_hash(tmp_path) == before, f"input {i} changed"


def test_fuzzed_fleet_snapshots(tmp_path: Path) -> None:
    """Mutated snapshots merged by `envcheck fleet merge` end in exit 0, 1 or 2."""
    for i, rng in inputs("fleet"):
        files = []
        for j in range(rng.randint(1, 3)):
            data = mutate(rng, json.loads(json.dumps(CLEAN)), rng.randint(0, 2))
            path = tmp_path / f"n{i}-{j}.json"
            path.write_bytes(encode(rng, to_json(rng, data)))
            files.append(str(path))
        before = tree_hash(tmp_path)
        check_cli_run(["fleet", "merge", *files], "fleet", files)
        assert tree_hash(tmp_path) == before, f"input {i} changed"


def test_fuzzed_rule_files(tmp_path: Path) -> None:
    """Generated rule files with nasty values and deep conditions end in exit 0, 1 or 2."""
    for i, rng in inputs("rule-file"):
        rules = tmp_path / f"rules{i}"
        rules.mkdir()
        (rules / "fuzz.toml").write_bytes(encode(rng, rule_file(rng)))
        before = tree_hash(tmp_path)
        check_cli_run(["check", "--facts", str(FIXTURES / "clean-cuda-venv.json"), "--rules", str(rules),
                       "--no-config"], "rule-file", ["fuzz.toml"])
        assert tree_hash(tmp_path) == before, f"input {i} changed"


def test_fuzzed_configurations(tmp_path: Path) -> None:
    """Generated [tool.envcheck] tables end in exit 0, 1 or 2."""
    for i, rng in inputs("config"):
        pyproject = tmp_path / f"c{i}" / "pyproject.toml"
        pyproject.parent.mkdir()
        pyproject.write_bytes(encode(rng, config_file(rng)))
        before = tree_hash(tmp_path)
        fmt = rng.choice(["text", "github", "markdown"])
        output = check_cli_run(["check", "--facts", str(FIXTURES / "clean-cuda-venv.json"), "--config",
                                str(pyproject), "--format", fmt], "config", [str(pyproject)])
        assert tree_hash(tmp_path) == before, f"input {i} changed"
        if fmt == "github":  # no line of a pull request's configuration becomes a workflow command of its own
            assert not [line for line in output.splitlines() if line.startswith(("::add-mask", "::stop-commands"))
                        or (line.startswith("::") and "forged" in line.split("::")[1])], output[:2000]


def test_fuzzed_command_lines(tmp_path: Path) -> None:
    """Nasty option values end in exit 0, 1 or 2, and write nothing outside the output paths given."""
    for i, rng in inputs("command-line"):
        folder = tmp_path / f"o{i}"
        folder.mkdir()
        args = cli_args(rng, folder)
        check_cli_run(args, "command-line", [])  # the line names the value, the option, or both


def test_fuzzed_planted_environments(tmp_path: Path) -> None:
    """Generated dist-info folders and torch/version.py files are collected, checked and reported without an
    exception, and stay as they were."""
    pack = rule_pack.load(())
    collect: Callable[[Path], dict[str, Any]] = lambda site: _collector.collect(  # noqa: E731
        {"modules": ["torch", "apex"], "sources": [{"file": "torch/version.py", "patterns": ["cuda"]}]},
        path=[str(site)])
    for i, rng in inputs("environment"):
        site = tmp_path / f"site{i}"
        site.mkdir()
        planted_site(rng, site)
        before = tree_hash(site)
        with deadline(DEADLINE_S):
            raw = collect(site)
            facts = Facts.from_dict(json.loads(json.dumps(raw)), file=f"<site {i}>")
            report = evaluate(pack, facts)
            for fmt in ("text", "json"):
                render(report, fmt)
        TALLY["environment"][1 if report.at_or_above("error") else 0] += 1
        assert tree_hash(site) == before, f"input {i} changed"

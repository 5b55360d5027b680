"""TOML nested past the bound is refused before tomllib reads it (envcheck/support/toml_depth.py), in time linear
in the text, and the scan never refuses what the parsed value's own check (input_files.too_deep) accepts."""

from __future__ import annotations

import random
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from _torch import clean_env
from test_parse_bounds import RATIO, growth

from envcheck.support import input_files, toml
from envcheck.support.toml_depth import too_deep_at

ROOT = Path(__file__).resolve().parents[2]
DEEP_KEY = "a" + ".a" * 30_000  # 60 KB: tomllib alone took 22 s and 5.3 GB on it


def _refused(text: str, limit: int = toml.MAX_DEPTH) -> bool:
    return too_deep_at(text, limit) is not None


@pytest.mark.parametrize("text", [
    pytest.param(f"{DEEP_KEY} = 1\n", id="dotted-key"),
    pytest.param("[" + ".".join(["t"] * 70) + "]\nx = 1\n", id="table-header"),
    pytest.param("[[" + ".".join(["t"] * 70) + "]]\n", id="array-of-tables-header"),
    pytest.param("[" + ".".join(["t"] * 40) + "]\n" + ".".join(["k"] * 40) + " = 1\n", id="header-and-key"),
    pytest.param("x = " + "[" * 5000 + "]" * 5000 + "\n", id="arrays"),
    pytest.param("x = " + "{ a = " * 70 + "1" + " }" * 70 + "\n", id="inline-tables"),
    pytest.param("x = { " + ".".join(['"q"'] * 70) + " = 1 }\n", id="quoted-dotted-key-in-an-inline-table"),
    pytest.param("x = [" + "{ a.b.c = [" * 30 + "]}" * 30 + "]\n", id="keys-and-arrays-mixed"),
])
def test_deep_toml_is_refused_before_parsing(text: str) -> None:
    """Each way of nesting, alone or combined, is refused as a TOMLDecodeError naming the key and its line."""
    with pytest.raises(toml.TOMLDecodeError, match=r"nested more than 64 deep \(at line \d+\)"):
        toml.loads(text)


@pytest.mark.parametrize("text", [
    pytest.param('x = "' + "a.[{" * 1000 + '"\n', id="basic-string"),
    pytest.param("x = '" + "a.[{" * 1000 + "'\n", id="literal-string"),
    pytest.param('x = """\n' + 'a.[{"\\"""\n' * 100 + 'b"""""\ny.z = 1\n', id="multi-line-basic-string"),
    pytest.param("x = '''\n" + "a.[{''\n" * 100 + "b'''''\ny.z = 1\n", id="multi-line-literal-string"),
    pytest.param("# " + "a." * 1000 + "\nx = 1 # [[[[\n", id="comments"),
    pytest.param("x = [" + ", ".join(["1.5", "1979-05-27T07:32:00.999Z"] * 500) + "]\n", id="dots-in-values"),
    pytest.param('"' + "a." * 1000 + '" = 1\n', id="dots-in-a-quoted-key"),
])
def test_dots_and_brackets_inside_strings_comments_and_values_are_not_nesting(text: str) -> None:
    assert toml.loads(text) is not None


def test_the_scan_refuses_only_what_the_parsed_check_refuses() -> None:
    """On every TOML file of the repository and on generated ones, at every bound from 0 to 8: where the scan
    refuses, the parsed value is nested past the same bound. The scan is a lower bound of the true depth."""
    files = [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("**/*.toml")) if ".venv" not in p.parts]
    rng = random.Random(33)

    def value(depth: int) -> str:
        roll = rng.random()
        if depth == 0 or roll < 0.3:
            return rng.choice(['"s.[{"', "1.5", "[]", "{}", "'x'", '"""a\n."""'])
        if roll < 0.65:
            return "[" + ", ".join(value(depth - 1) for _ in range(rng.randint(0, 3))) + "]"
        keys = [".".join(rng.choice(["k", '"q.r"', "'l'"]) for _ in range(rng.randint(1, 3)))
                for _ in range(rng.randint(0, 3))]
        return "{ " + ", ".join(f"{k}.i{i} = {value(depth - 1)}" for i, k in enumerate(keys)) + " }"

    for n in range(300):
        header = ".".join(["t"] * rng.randint(1, 3))
        lines = [f"[[{header}{n}]]" if rng.random() < 0.3 else f"[{header}{n}]"]
        lines += [f"{'.'.join(['k'] * rng.randint(1, 3))}{i} = {value(rng.randint(0, 5))}" for i in range(3)]
        files.append("\n".join(lines) + "\n")
    checked = refused = 0
    for text in files:
        try:
            parsed = toml.loads(text)
        except toml.TOMLDecodeError:
            continue
        checked += 1
        for limit in range(9):
            if _refused(text, limit):
                refused += 1
                assert input_files.too_deep(parsed, limit) is not None, (limit, text[:300])
    assert checked > 250 and refused > 100  # the bounds from 0 to 8 are passed often: the assertion is reached


def test_the_refusal_is_exact_for_a_dotted_key() -> None:
    """A key 64 parts deep is read; 65 parts are refused (the bound input_files.MAX_DEPTH names)."""
    assert toml.loads(".".join(["k"] * 64) + " = 1\n")
    assert _refused(".".join(["k"] * 65) + " = 1\n")


def test_a_hostile_pyproject_is_one_error_line_and_small(tmp_path: Path) -> None:
    """The 60 KB pyproject.toml with a key 30,000 levels deep, found by a real `envcheck check --static` in its
    project: exit 2, one line naming the file and the key. Its memory is measured around the scan and the
    parse the check runs (tracemalloc), not timed."""
    text = f'[project]\nname = "x"\nversion = "1"\n[tool.envcheck]\n{DEEP_KEY} = 1\n'
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "envcheck", "check", "--static"], cwd=tmp_path, env=clean_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "pyproject.toml" in lines[0] and "key 'a.a.a" in lines[0] and "nested more than 64 deep" in lines[0]
    assert len(lines[0]) < 400
    tracemalloc.start()
    try:
        with pytest.raises(toml.TooDeep):
            toml.loads(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 * len(text)  # tomllib's own was 5.3 GB


@pytest.mark.timing
@pytest.mark.parametrize(("make", "size"), [
    pytest.param(lambda n: "a" + ".a" * n + " = 1\n", 20_000, id="one-deep-key"),
    pytest.param(lambda n: "".join(f"{'.'.join(['k'] * 60)}{i} = [{'[' * 3}1{']' * 3}]\n" for i in range(n)), 200,
                 id="many-keys-at-the-bound"),
    pytest.param(lambda n: "[t]\n" + "x = [" + "1.5, " * n + "]\n" + 'y = """' + "a" * n + '"""\n', 20_000,
                 id="long-values"),
])
def test_reading_hostile_toml_grows_linearly(make: object, size: int) -> None:
    """Four times the input takes well under sixteen times as long to scan and parse (or refuse)."""
    assert callable(make)

    def work(n: int) -> object:
        text = make(n)

        def read() -> object:
            try:
                return toml.loads(text)
            except toml.TOMLDecodeError as exc:
                return exc
        return read

    assert growth(work, size) < RATIO

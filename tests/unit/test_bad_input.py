"""Each class of bad input ends as exit 2 with one line naming the file and key, or as a finding: never exit 3,
a traceback or a wait."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from _fakes import FIXTURES, build_facts, collect_facts, dist_dict, write_dist, write_torch
from click.testing import CliRunner, Result

from envcheck.cli.click_cli import cli
from envcheck.cli.output import printable
from envcheck.derived.derive import Derived
from envcheck.errors import ConfigError, EnvcheckError, RuleError
from envcheck.rules import rule_pack
from envcheck.sources.project import config
from envcheck.support import input_files

CLEAN = FIXTURES / "clean-cuda-venv.json"
RULE = ('[[rule]]\nid = "EC9990"\nname = "odd"\nseverity = "error"\nsummary = "s"\nwhy = "w"\nfix = "f"\n'
        'references = ["https://example.org/1"]\n')


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def one_error_line(result: Result, *names: str) -> str:
    """The single error line of an exit-2 run, checked to name each of `names`."""
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    for name in names:
        assert name in lines[0], lines[0]
    return lines[0]


def console(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """The real `python -m envcheck` in a child process, bounded in time (a wait is a failure, not a hang)."""
    return subprocess.run([sys.executable, "-m", "envcheck", *args], capture_output=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, check=False)


# --- files that are not regular files -------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
@pytest.mark.parametrize("option", ["--facts", "--config"])
def test_fifo_is_refused_at_once(tmp_path: Path, option: str) -> None:
    """A named pipe given as an input file is refused without waiting for a writer."""
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    args = [option, str(fifo)] + (["--facts", str(CLEAN)] if option == "--config" else [])
    proc = console("check", "--static", *args)
    assert proc.returncode == 2, proc.stderr
    assert f"{fifo}: is a FIFO (named pipe), not a regular file" in proc.stderr.decode()


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        pytest.param("/dev/zero", "a character device", id="dev-zero"),
        pytest.param(".", "a directory", id="directory"),
    ],
)
def test_device_or_directory_is_refused(path: str, kind: str) -> None:
    """/dev/zero (which never ends) and a directory given as --facts are refused, not read."""
    if not Path(path).exists():
        pytest.skip(f"{path} does not exist here")
    one_error_line(run("check", "--facts", path), path, f"is {kind}, not a regular file")


@pytest.mark.parametrize("command", [("check",), ("facts",)])
@pytest.mark.parametrize("path", ["/dev/null", "/dev/zero", "."])
def test_report_file_is_refused_like_facts(command: tuple[str, ...], path: str) -> None:
    """--report FILE is read as --facts is: /dev/null, a device or a directory is exit 2 with one line, not an
    empty (or endless) report; `--report -` still reads standard input."""
    if not Path(path).exists():
        pytest.skip(f"{path} does not exist here")
    one_error_line(run(*command, "--report", path), path, "not a regular file")


def test_report_from_standard_input_still_reads() -> None:
    """`--report -` is standard input, which is not a regular file and is still read."""
    result = CliRunner().invoke(cli, ["check", "--report", "-", "--format", "json"],
                                input="torch==2.5.1\nnumpy==1.26.4\nsix==1.16.0\n")
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.output)["target"]["reason"].startswith("from the report <stdin>: ")


@pytest.mark.posix  # the limit on a file name's length and its error are the OS's
@pytest.mark.parametrize("option", ["--facts", "--report", "--config"])
def test_a_very_long_path_keeps_its_reason(option: str) -> None:
    """A path longer than the OS allows is one line naming its start and its end, and the OS's reason, which the
    clipping of a long line used to cut off."""
    path = "/tmp/" + "x" * 5000 + "-end.json"
    args = [option, path] + (["--facts", str(CLEAN)] if option == "--config" else [])
    line = one_error_line(run("check", *args), "/tmp/xxx", "…(4,8", "xxx-end.json: cannot be read (")
    assert line.endswith(")") and len(line) < 400, line


def test_oversized_input_is_refused_before_reading(tmp_path: Path) -> None:
    """A file larger than the reader's bound is refused by its size, not read."""
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)
    with pytest.raises(EnvcheckError, match=r"big.json: is 2,048 bytes, more than the 1,024"):
        input_files.read_text(big, limit=1024)


# --- encodings ------------------------------------------------------------------------------------------------

CONFIG = '[tool.envcheck]\nfail-on = "warning"\n'


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(codecs.BOM_UTF16_LE + CONFIG.encode("utf-16-le"), "is UTF-16 encoded; save it as UTF-8",
                     id="utf16-bom"),
        pytest.param(CONFIG.encode("utf-16-le"), "a NUL byte on line 1", id="utf16-no-bom"),
        pytest.param(b"# caf\xe9\n" + CONFIG.encode(), "byte 0xe9 on line 1 cannot be decoded", id="latin1"),
        pytest.param(b"\n\n" + CONFIG.encode() + b"\xff", "byte 0xff on line 5", id="stray-byte"),
    ],
)
def test_config_not_in_utf8_is_one_line(tmp_path: Path, data: bytes, message: str) -> None:
    """A pyproject.toml in another encoding is exit 2 naming the file and the first bad byte's line."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_bytes(data)
    one_error_line(run("check", "--facts", str(CLEAN), "--config", str(pyproject)), str(pyproject), message)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    """A UTF-8 byte order mark, as Windows editors write it, does not make a configuration unreadable."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_bytes(codecs.BOM_UTF8 + CONFIG.encode())
    result = run("check", "--facts", str(CLEAN), "--config", str(pyproject), "--select", "EC0101")
    assert result.exit_code in (0, 1), result.output


def test_rule_file_in_utf16_names_the_rule_file(tmp_path: Path) -> None:
    """A rule file saved as UTF-16 is refused with the rule file's name."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.toml").write_bytes(codecs.BOM_UTF16_BE + (RULE + 'when = { python = ">=3" }\n').encode("utf-16-be"))
    one_error_line(run("check", "--facts", str(CLEAN), "--rules", str(rules)), "mine.toml", "UTF-16")


# --- depth ----------------------------------------------------------------------------------------------------


def test_deep_json_snapshot_is_refused(tmp_path: Path) -> None:
    """A snapshot nested 100,000 arrays deep is exit 2, not a RecursionError."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    one_error_line(run("check", "--facts", str(deep)), str(deep), "nested more than")


def test_deep_but_parseable_json_names_the_key(tmp_path: Path) -> None:
    """A snapshot nested past the bound, but within the JSON parser's reach, names where it went too deep."""
    data = json.loads(CLEAN.read_text(encoding="utf-8"))
    value: object = "x"
    for _ in range(input_files.MAX_DEPTH + 5):
        value = {"k": value}
    data["env"] = value
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(data), encoding="utf-8")
    one_error_line(run("check", "--facts", str(deep)), str(deep), "key 'env.k.k.k")


def _deepest(value: object, depth: int = 0) -> int:
    children = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
    return max([depth, *(_deepest(c, depth + 1) for c in children)])


def test_depth_bound_is_exact_at_its_edge() -> None:
    """A value exactly at the bound passes and one a level deeper is named, whatever containers lie around it
    (empty ones included): the fast test and the keyed search agree with a plain recursive depth."""
    import random

    rng = random.Random(7)

    def build(depth: int) -> object:
        if depth == 0 or rng.random() < 0.2:
            return rng.choice(["x", 1, None, [], {}])
        if rng.random() < 0.5:
            return {f"k{i}": build(depth - 1) for i in range(rng.randint(0, 3))}
        return [build(depth - 1) for _ in range(rng.randint(0, 3))]

    for _ in range(400):
        value = build(rng.randint(0, 8))
        for limit in range(-1, 8):
            assert (input_files.too_deep(value, limit) is not None) == (_deepest(value) > limit), (value, limit)


def test_deep_toml_is_refused(tmp_path: Path) -> None:
    """A configuration with arrays nested thousands deep is exit 2 naming the file."""
    config = tmp_path / "envcheck.toml"
    config.write_text("ignore = " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    one_error_line(run("check", "--facts", str(CLEAN), "--config", str(config)), str(config), "nested")


@pytest.mark.parametrize(
    ("when", "message"),
    [
        pytest.param("{ not = " * 40 + '{ python = ">=3" }' + " }" * 40, "conditions nested more than 32 deep",
                     id="nested-not"),
        pytest.param("{ marker = '" + "(" * 200 + 'python_version > "3"' + ")" * 200 + "' }",
                     "nests parentheses more than 32 deep", id="marker-parens"),
        pytest.param("{ package = 'torch>=" + "9" * 5000 + "' }", "a number of more than 64 digits",
                     id="huge-version"),
    ],
)
def test_rule_beyond_bounds_names_rule_and_key(tmp_path: Path, when: str, message: str) -> None:
    """Deep conditions, markers nested in parentheses and versions of thousands of digits are one RuleError."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.toml").write_text(RULE + f"when = {when}\n", encoding="utf-8")
    line = one_error_line(run("check", "--facts", str(CLEAN), "--rules", str(rules)), "mine.toml", "EC9990", message)
    assert len(line) < 1200


# --- regular expressions --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        pytest.param("(a+)+$", "nests a repetition inside a repetition", id="nested-plus"),
        pytest.param("(x|x)*y", "alternates inside a repetition", id="overlapping-alternation"),
        pytest.param("a{4294967296}", "invalid regular expression", id="count-overflow"),
        pytest.param("a{5000}", "repeats more than 1000 times", id="huge-count"),
        pytest.param("a" * 2000, "characters long", id="long-pattern"),
    ],
)
def test_slow_or_huge_patterns_are_refused_at_load(tmp_path: Path, pattern: str, message: str) -> None:
    """A `source` or `env` pattern that could backtrack without bound, or is huge, is refused when loaded."""
    rules = tmp_path / "rules"
    rules.mkdir()
    for key, cond in (("source", f"{{ file = 'm.py', contains = '{pattern}' }}"),
                      ("env", f"{{ name = 'CUDA_VISIBLE_DEVICES', matches = '{pattern}' }}")):
        (rules / "mine.toml").write_text(RULE + f"when = {{ {key} = {cond} }}\n", encoding="utf-8")
        one_error_line(run("check", "--facts", str(CLEAN), "--rules", str(rules)), "EC9990", message)


def test_built_in_patterns_pass_the_bound() -> None:
    """Every pattern of the shipped rule pack is accepted (the bound refuses nothing real)."""
    assert run("rule", "--all").exit_code == 0


# --- command-line values --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e309", "0", "-1", "1e6", "ten"])
def test_probe_timeout_must_be_finite_and_sane(value: str) -> None:
    """--probe-timeout refuses nan, infinities (1e309 reads as one), and values outside half a second to a day."""
    result = CliRunner().invoke(cli, ["check", "--facts", str(CLEAN), "--probe-timeout", value])
    assert result.exit_code == 2 and "--probe-timeout" in result.output, result.output


def test_long_value_is_echoed_clipped() -> None:
    """A 100,000-character --select comes back clipped in a line of bounded length."""
    line = one_error_line(run("check", "--facts", str(CLEAN), "--select", "Z" * 100_000), "more characters")
    assert len(line) < 1200


def test_require_beyond_bounds_is_exit_2() -> None:
    """--require with parentheses nested hundreds deep or a number of thousands of digits is a usage error."""
    for req in ["x; " + "(" * 500 + 'python_version > "3"' + ")" * 500, "torch>=" + "1" * 5000]:
        one_error_line(run("check", "--facts", str(CLEAN), "--require", req), "--require")


# --- output the terminal cannot show --------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252", "ascii"])
def test_report_on_a_narrow_terminal_encoding(encoding: str) -> None:
    """The text report (with its ✗ and ✓ marks) is written whatever stdout's encoding: marks become '?'."""
    proc = console("check", "--facts", str(FIXTURES / "torchvision-pin-conflict.json"), "-v",
                   env={"PYTHONIOENCODING": encoding})
    assert proc.returncode == 1, proc.stderr
    assert b"Traceback" not in proc.stderr and b"?" in proc.stdout


def test_surrogates_from_undecodable_names_are_written(tmp_path: Path) -> None:
    """A snapshot whose strings hold lone surrogates (folder names that were not UTF-8) is reported, in every
    format, to stdout and to a file."""
    data = json.loads(CLEAN.read_text(encoding="utf-8"))
    data["distributions"][0]["location"] = "/opt/caf\udce9/site-packages"
    data["distributions"][0]["name"] = "typing_extensions\udcff"
    snapshot = tmp_path / "odd.json"
    snapshot.write_text(json.dumps(data), encoding="ascii")  # json.dumps escapes the surrogates as \udce9
    for fmt in ("text", "json", "markdown", "junit", "github"):
        result = run("check", "--facts", str(snapshot), "--format", fmt, "-v")
        assert result.exit_code in (0, 1), result.output
        assert run("check", "--facts", str(snapshot), "--format", fmt, "-o", str(tmp_path / f"r.{fmt}")).exit_code \
            in (0, 1)


def test_printable_replaces_only_what_cannot_be_encoded() -> None:
    """printable keeps text the encoding carries and replaces the rest with '?'."""
    assert printable("ok ✓", "utf-8") == "ok ✓"
    assert printable("café ✗ \udcff", "latin-1") == "café ? ?"
    assert printable("✗", "no-such-codec") == "?"


# --- snapshots, collectors and odd environments ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "key"),
    [
        pytest.param({"schema": 99}, "schema", id="future-schema"),
        pytest.param({"schema": True}, "schema", id="bool-schema"),
        pytest.param({"distributions": True}, "distributions", id="wrong-type"),
    ],
)
def test_snapshot_of_unknown_schema_or_shape_is_refused(tmp_path: Path, change: dict[str, object], key: str) -> None:
    """A snapshot of an unknown schema number, or a field of the wrong type, is exit 2 naming the key."""
    data = {**json.loads(CLEAN.read_text(encoding="utf-8")), **change}
    snapshot = tmp_path / "s.json"
    snapshot.write_text(json.dumps(data), encoding="utf-8")
    one_error_line(run("check", "--facts", str(snapshot)), str(snapshot), f"key '{key}'")


@pytest.mark.parametrize(
    ("output", "message"),
    [
        pytest.param(b"{\"python\": \"\xfd\"}", "is not UTF-8 text", id="not-utf8"),
        pytest.param(b"[1, 2]", "not a facts object", id="wrong-shape"),
        pytest.param(b'{"python": 3}', "not a facts object", id="python-not-a-table"),
        pytest.param(b"[" * 50_000, "nested more than", id="deep"),
    ],
)
def test_foreign_collector_garbage_is_exit_2(tmp_path: Path, output: bytes, message: str) -> None:
    """A --python that writes bytes that are not a facts object, in any way, is exit 2 naming --python."""
    payload = tmp_path / "payload"
    payload.write_bytes(output)
    fake = tmp_path / "python"
    # The collector is run as `PYTHON - REQUEST OUT`: this one copies its payload to OUT and prints non-UTF-8.
    fake.write_text(f"#!/bin/sh\ncat > /dev/null\ncp '{payload}' \"$3\"\nprintf '\\377' >&2\n", encoding="utf-8")
    fake.chmod(0o755)
    one_error_line(run("check", "--static", "--python", str(fake), "--no-config"), f"--python {fake}", message)


@pytest.mark.parametrize(
    ("version_py", "problem"),
    [
        pytest.param("__version__ = " + "-" * 100_000 + "1\n", "cannot read", id="deep-expression"),
        pytest.param("__version__ = '2.5.0'\n" + "x = 1\n" * 200_000, "more than the", id="huge-file"),
    ],
)
def test_torch_version_py_beyond_bounds_is_a_fact(site: Path, version_py: str, problem: str) -> None:
    """A torch/version.py too deep or too large to parse is recorded as a problem of the environment."""
    write_torch(site, version_py)
    facts = collect_facts(site)
    assert facts.torch is not None and facts.torch.problem is not None and problem in facts.torch.problem


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_metadata_fifo_is_a_problem_not_a_wait(site: Path) -> None:
    """A METADATA that is a named pipe is recorded as the distribution's problem, without blocking."""
    dist_info = write_dist(site, "odd", "1.0", metadata=None)
    os.mkfifo(dist_info / "METADATA")
    facts = collect_facts(site)
    assert any("METADATA is not a regular file" in p for d in facts.distributions for p in d.problems)


def test_self_requirement_with_many_extras_is_bounded() -> None:
    """A distribution requiring itself with 800 extras, each with its own requirement, is walked in bounded
    memory (it took over a gigabyte when each extra queued all the others again)."""
    extras = [f"e{i}" for i in range(800)]
    requires = [f"x[{','.join(extras)}]", *(f'missing{i}; extra == "e{i}"' for i in range(0, 800, 100))]
    facts = build_facts(dists=[dist_dict("x", "1.0", *requires)])
    tracemalloc.start()
    try:
        problems = Derived(facts).walk().problems
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sorted(p["dependency"] for p in problems) == sorted(f"missing{i}" for i in range(0, 800, 100))
    assert peak < 64 * 1024 * 1024, f"peak {peak:,} bytes"


# --- rule files and configurations stay data -----------------------------------------------------------------------


@pytest.mark.parametrize("file", [
    pytest.param("../etc/passwd", id="dotdot"),
    pytest.param("dia\\..\\..\\etc\\passwd", id="backslash-dotdot"),
    pytest.param("C:\\Windows\\win.ini", id="drive"),
    pytest.param("/etc/passwd", id="absolute"),
    pytest.param("dia//layers.py", id="empty-part"),
])
def test_a_source_predicate_cannot_point_outside_the_packages(tmp_path: Path, file: str) -> None:
    """A rule's `source` file is relative to a package's import root in either separator: anything that could
    leave it is refused when the rule loads, naming the rule file and key."""
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    body = (
        '[[rule]]\nid = "EC8001"\nname = "reads-outside"\nseverity = "error"\nsummary = "s"\nwhy = "w"\nfix = "f"\n'
        'references = ["https://example.org/"]\n'
        f"when = {{ source = {{ file = '{file}', contains = 'x' }} }}\n"
    )
    (rules_dir / "outside.toml").write_text(body, encoding="utf-8")
    with pytest.raises(RuleError, match=r"outside\.toml.*EC8001.*when\.source\.file.*relative to the import root"):
        rule_pack.load([rules_dir])


_NUL = "'rules\\x00x' holds a NUL character, which no path can hold"


@pytest.mark.parametrize(
    ("file", "body", "key", "message"),
    [
        pytest.param("pyproject.toml", '[tool.envcheck]\nrule-dirs = ["rules\\u0000x"]\n', "tool.envcheck.rule-dirs[0]",
                     _NUL, id="pyproject-nul"),
        pytest.param("envcheck.toml", 'rule-dirs = ["rules\\u0000x"]\n', "rule-dirs[0]", _NUL, id="envcheck-toml-nul"),
        pytest.param("envcheck.toml", f'rule-dirs = ["{"x" * 5000}"]\n', "rule-dirs[0]", "xxx' cannot be used (",
                     id="too-long", marks=pytest.mark.posix),
    ],
)
def test_a_rule_directory_that_is_no_path_is_a_configuration_error(tmp_path: Path, file: str, body: str,
                                                                   key: str, message: str) -> None:
    """A NUL character (TOML's \\u0000) or a name too long for the OS in `rule-dirs` is exit 2 with one line
    naming the file and the key, not an internal error."""
    (tmp_path / file).write_text(body, encoding="utf-8")
    one_error_line(run("check", "--facts", str(CLEAN), "--config", str(tmp_path / file)),
                   f"{tmp_path / file}: key '{key}': ", message)


def test_a_project_configuration_cannot_name_rule_directories_outside_its_folder(tmp_path: Path) -> None:
    """`rule-dirs` of a cloned project's configuration stays inside the project: a folder elsewhere is exit-2 material
    naming the key, not rules read from anywhere on the machine."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.envcheck]\nrule-dirs = ["../elsewhere"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"rule-dirs\[0\].*outside the configuration's folder"):
        config.load(project / "pyproject.toml")

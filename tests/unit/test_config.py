"""Project configuration: finding the file, reading every key, and one-line errors naming the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _fakes import FIXTURES
from click.testing import CliRunner, Result

from envcheck.cli.click_cli import cli
from envcheck.errors import ConfigError, EnvcheckError
from envcheck.sources.project import config as config_mod
from envcheck.sources.project.config import Config

CLEAN = str(FIXTURES / "clean-cuda-venv.json")
CONFLICT = str(FIXTURES / "torchvision-pin-conflict.json")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# --- discovery -----------------------------------------------------------------------------------------------


def test_nearest_pyproject_with_the_table_is_found_walking_up(tmp_path: Path) -> None:
    """From a subfolder, the nearest pyproject.toml that has [tool.envcheck] is the configuration."""
    found = write(tmp_path / "proj" / "pyproject.toml", '[tool.envcheck]\nrequire = ["torch"]\n')
    deep = tmp_path / "proj" / "src" / "pkg"
    deep.mkdir(parents=True)
    assert config_mod.find(deep) == found
    assert config_mod.resolve(start=deep).require == ("torch",)


def test_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    """A pyproject.toml without [tool.envcheck] (a subproject, a vendored package) does not stop the search."""
    outer = write(tmp_path / "pyproject.toml", '[tool.envcheck]\nforbid = ["apex"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "envcheck-lookalike"\n')
    assert config_mod.find(tmp_path / "sub") == outer


def test_envcheck_toml_wins_over_pyproject_in_the_same_folder(tmp_path: Path) -> None:
    """In one folder, a dedicated envcheck.toml (top-level keys) is preferred to pyproject.toml's table."""
    write(tmp_path / "pyproject.toml", '[tool.envcheck]\nrequire = ["a"]\n')
    dedicated = write(tmp_path / "envcheck.toml", 'require = ["b"]\n')
    cfg = config_mod.resolve(start=tmp_path)
    assert (cfg.file, cfg.require, cfg.prefix) == (str(dedicated), ("b",), "")


def test_no_file_anywhere_gives_the_defaults(tmp_path: Path) -> None:
    """Without a configuration file the defaults apply: no policy, fail-on unset."""
    assert config_mod.resolve(start=tmp_path) == Config()
    assert (Config().file, Config().require, Config().fail_on, Config().gpu_match) == (None, (), None, "all")


def test_explicit_config_and_no_config(tmp_path: Path) -> None:
    """--config names a file anywhere (an envcheck.toml or a pyproject.toml); --no-config ignores every file."""
    write(tmp_path / "pyproject.toml", '[tool.envcheck]\nrequire = ["near"]\n')
    elsewhere = write(tmp_path / "ci" / "strict.toml", 'require = ["far"]\nfail-on = "warning"\n')
    assert config_mod.resolve(elsewhere, start=tmp_path).require == ("far",)
    assert config_mod.resolve(no_config=True, start=tmp_path) == Config()
    with pytest.raises(EnvcheckError, match="--config and --no-config exclude each other"):
        config_mod.resolve(elsewhere, no_config=True)


# --- every key -------------------------------------------------------------------------------------------------


def test_every_key_is_read(tmp_path: Path) -> None:
    """Each documented key lands in its Config field, normalised (capability "8" -> "8.0", count 2 -> ">=2")."""
    (tmp_path / "ci-rules").mkdir()
    path = write(tmp_path / "envcheck.toml", """
require = ["torch>=2.6", "numpy<2; python_version < '3.13'"]
forbid = ["apex"]
gpu-min-capability = 8
gpu-min-memory-gib = 23.5
gpu-count = 2
gpu-match = "any"
probes-must-pass = ["sdpa", "bf16"]
rule-dirs = ["ci-rules"]
ignore = { EC0302 = "we import only lightning.pytorch" }
select = ["EC01", "EC03"]
fail-on = "warning"
""")
    cfg = config_mod.load(path)
    assert cfg == Config(
        file=str(path), prefix="", require=("torch>=2.6", "numpy<2; python_version < '3.13'"), forbid=("apex",),
        gpu_min_capability="8.0", gpu_min_memory_gib=23.5, gpu_count=">=2", gpu_match="any",
        probes_must_pass=("sdpa", "bf16"), rule_dirs=((tmp_path / "ci-rules").resolve(),),
        ignore=(("EC0302", "we import only lightning.pytorch"),), select=("EC01", "EC03"), fail_on="warning",
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param('"8.0"', "8.0", id="string"),
        pytest.param("8.6", "8.6", id="float"),
        pytest.param('"9"', "9.0", id="major-only"),
        pytest.param('"12.0"', "12.0", id="blackwell"),
    ],
)
def test_capability_forms(tmp_path: Path, value: str, expected: str) -> None:
    """gpu-min-capability takes a string or a number and is kept as MAJOR.MINOR."""
    path = write(tmp_path / "envcheck.toml", f"gpu-min-capability = {value}\n")
    assert config_mod.load(path).gpu_min_capability == expected


def test_rule_dirs_are_relative_to_the_file_not_the_working_directory(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """rule-dirs entries are resolved against the folder of the configuration file."""
    (tmp_path / "proj" / "policy").mkdir(parents=True)
    path = write(tmp_path / "proj" / "pyproject.toml", '[tool.envcheck]\nrule-dirs = ["policy"]\n')
    monkeypatch.chdir(tmp_path)
    assert config_mod.load(path).rule_dirs == ((tmp_path / "proj" / "policy").resolve(),)


# --- errors ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "key", "message"),
    [
        pytest.param('requires = ["torch"]', "requires", "unknown key (did you mean 'require'?)", id="typo"),
        pytest.param('colour = "red"', "colour", "unknown key (known keys: require, forbid,", id="unknown"),
        pytest.param('require = "torch"', "require", "expected a list of strings, got 'torch'", id="not-a-list"),
        pytest.param('require = ["torch>>2"]', "require[0]", "invalid requirement 'torch>>2'", id="bad-requirement"),
        pytest.param('forbid = ["ok", ""]', "forbid[1]", "expected a non-empty string, got ''", id="empty-string"),
        pytest.param('gpu-min-capability = "sm_80"', "gpu-min-capability",
                     "expected a compute capability such as \"8.0\", got 'sm_80'", id="bad-capability"),
        pytest.param("gpu-min-memory-gib = 0", "gpu-min-memory-gib", "expected a positive number of GiB, got 0",
                     id="zero-memory"),
        pytest.param("gpu-min-memory-gib = true", "gpu-min-memory-gib", "expected a positive number of GiB, got True",
                     id="bool-memory"),
        pytest.param('gpu-count = "lots"', "gpu-count", "expected a number (at least that many GPUs) or a specifier",
                     id="bad-count"),
        pytest.param("gpu-count = -1", "gpu-count", "expected a number of GPUs (at least 0), got -1",
                     id="negative-count"),
        pytest.param('gpu-match = "most"', "gpu-match", "expected \"all\" or \"any\", got 'most'", id="bad-match"),
        pytest.param('probes-must-pass = ["spda"]', "probes-must-pass[0]", "unknown probe 'spda' (probes: ",
                     id="unknown-probe"),
        pytest.param('probes-must-pass = ["sdpa", "sdpa"]', "probes-must-pass[1]", "probe 'sdpa' is listed twice",
                     id="probe-twice"),
        pytest.param('rule-dirs = ["nowhere"]', "rule-dirs[0]", "'nowhere' is not a directory", id="absent-dir"),
        pytest.param('ignore = ["EC0302"]', "ignore", "expected a table of rule -> reason", id="ignore-list"),
        pytest.param('ignore = { EC0302 = "" }', "ignore.EC0302", "expected the reason this rule is ignored",
                     id="ignore-empty-reason"),
        pytest.param("ignore = { EC0302 = 1 }", "ignore.EC0302", "expected the reason this rule is ignored",
                     id="ignore-reason-not-text"),
        pytest.param('fail-on = "sometimes"', "fail-on", "expected one of error, warning, info, never",
                     id="bad-fail-on"),
        pytest.param("select = [1]", "select[0]", "expected a non-empty string, got 1", id="select-not-text"),
    ],
)
def test_bad_values_name_file_and_key(tmp_path: Path, body: str, key: str, message: str) -> None:
    """Each bad key is one ConfigError, in pyproject.toml named as tool.envcheck.KEY, in envcheck.toml as KEY."""
    pyproject = write(tmp_path / "a" / "pyproject.toml", f"[tool.envcheck]\n{body}\n")
    with pytest.raises(ConfigError) as exc:
        config_mod.load(pyproject)
    assert str(exc.value).startswith(f"{pyproject}: key 'tool.envcheck.{key}': {message}")
    dedicated = write(tmp_path / "b" / "envcheck.toml", f"{body}\n")
    with pytest.raises(ConfigError) as exc:
        config_mod.load(dedicated)
    assert str(exc.value).startswith(f"{dedicated}: key '{key}': {message}")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        pytest.param("pyproject.toml", "[tool.envcheck\n", "invalid TOML", id="invalid-toml"),
        pytest.param("pyproject.toml", '[project]\nname = "x"\n', "has no [tool.envcheck] table", id="no-table"),
        pytest.param("pyproject.toml", '[tool]\nenvcheck = "on"\n', "key 'tool.envcheck': expected a table",
                     id="not-a-table"),
        pytest.param("envcheck.toml", "require = [", "invalid TOML", id="invalid-dedicated"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, text: str, message: str) -> None:
    """A file that is not TOML, or a --config pyproject.toml without the table, is a ConfigError naming it."""
    path = write(tmp_path / name, text)
    with pytest.raises(ConfigError) as exc:
        config_mod.load(path)
    assert str(exc.value).startswith(str(path)) and message in str(exc.value)


# --- through the command line ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "line"),
    [
        pytest.param('fail_on = "never"', "key 'tool.envcheck.fail_on': unknown key (did you mean 'fail-on'?)",
                     id="underscore"),
        pytest.param('select = ["EC0999"]', "key 'tool.envcheck.select[0]': no rule matches 'EC0999'",
                     id="select-matches-nothing"),
        pytest.param('ignore = { nonsense-rule = "why" }',
                     "key 'tool.envcheck.ignore.nonsense-rule': no rule matches 'nonsense-rule'",
                     id="ignore-matches-nothing"),
    ],
)
def test_cli_configuration_error_is_one_line_exit_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str,
                                                      line: str) -> None:
    """The configuration found from the working directory is validated first: exit 2, one line, file and key."""
    path = write(tmp_path / "pyproject.toml", f"[tool.envcheck]\n{body}\n")
    monkeypatch.chdir(tmp_path)
    result = run("check", "--facts", CLEAN)
    assert result.exit_code == 2
    assert result.output.startswith(f"envcheck: error: {path}: {line}")
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_config_fail_on_and_the_option_that_overrides_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fail-on from the configuration decides the exit code; --fail-on on the command line wins over it."""
    write(tmp_path / "envcheck.toml", 'fail-on = "never"\n')
    monkeypatch.chdir(tmp_path)
    assert run("check", "--facts", CONFLICT).exit_code == 0
    assert run("check", "--facts", CONFLICT, "--fail-on", "error").exit_code == 1
    assert run("check", "--facts", CONFLICT, "--no-config").exit_code == 1


def test_config_ignore_and_select(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ignore (with its reason) drops a rule; select narrows the pack; --select replaces the configuration's."""
    write(tmp_path / "envcheck.toml", 'ignore = { EC0101 = "torchvision is vendored" }\n')
    monkeypatch.chdir(tmp_path)
    ignored = json.loads(run("check", "--facts", CONFLICT, "--format", "json").output)
    assert "EC0101" not in {f["id"] for f in ignored["findings"]}
    write(tmp_path / "envcheck.toml", 'select = ["EC02"]\n')
    selected = json.loads(run("check", "--facts", CONFLICT, "--format", "json").output)
    assert {f["id"][:4] for f in selected["findings"]} == {"EC02"}
    replaced = json.loads(run("check", "--facts", CONFLICT, "--format", "json", "--select", "EC0101").output)
    assert [f["id"] for f in replaced["findings"]] == ["EC0101"]


def test_explicit_config_option_on_the_command_line(tmp_path: Path) -> None:
    """--config FILE is read wherever the command runs; a missing one is exit 2 naming it."""
    path = write(tmp_path / "policy.toml", 'require = ["definitely-absent-dist"]\n')
    result = run("check", "--facts", CLEAN, "--config", str(path))
    assert result.exit_code == 1 and "EC9901 project-require-definitely-absent-dist" in result.output
    missing = run("check", "--facts", CLEAN, "--config", str(tmp_path / "absent.toml"))
    assert (missing.exit_code, missing.output) == (2, f"envcheck: error: {tmp_path / 'absent.toml'}: no such file\n")


def test_manual_documents_every_key() -> None:
    """The manual's configuration table has a row for every key the loader accepts, and no row for any other."""
    manual = (Path(__file__).resolve().parents[2] / "docs" / "usage.md").read_text(encoding="utf-8")
    section = manual.split("## Project policy", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip().strip("`") for line in section.splitlines() if line.startswith("| `")]
    assert rows == list(config_mod.KEYS)

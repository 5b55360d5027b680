"""Loading rule files: every mistake is one RuleError naming file, rule and key; the shipped pack is valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck.derived import gpu_compat
from envcheck.derived import tables as tables_mod
from envcheck.errors import RuleError
from envcheck.rules import rule_pack
from envcheck.rules.model import Rule, Severity

# A valid rule, as TOML values; a test replaces some of them (None drops the key).
BASE = {
    "id": '"EC9001"', "name": '"test-rule"', "severity": '"error"', "summary": '"s"', "why": '"w"',
    "fix": '"f"', "references": '["https://example.org/issue/1"]', "when": '{ python = ">=3" }',
}


def rule_text(**changes: str | None) -> str:
    fields = {**BASE, **changes}
    return "[[rule]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items() if v is not None)


def write_rules(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def test_valid_rule_loads(tmp_path: Path) -> None:
    """The base rule of these tests loads, with its area taken from the file name."""
    path = write_rules(tmp_path, "libraries.toml", 'title = "Libraries"\n' + rule_text(commands='[["{python}", "-V"]]'))
    loaded = rule_pack.load_file(path)
    assert loaded.title == "Libraries"
    [rule] = loaded.rules
    assert (rule.id, rule.name, rule.severity, rule.area, rule.file) == ("EC9001", "test-rule", Severity.ERROR,
                                                                         "libraries", str(path))
    assert rule.commands == (("{python}", "-V"),)


@pytest.mark.parametrize(
    ("changes", "key", "message"),
    [
        pytest.param({"extra": "1"}, "extra", "unknown key", id="unknown-key"),
        pytest.param({"name": '"Bad_Name"'}, "name", "expected kebab-case", id="bad-name"),
        pytest.param({"name": '"  "'}, "name", "expected a non-empty string", id="blank-name"),
        pytest.param({"severity": '"fatal"'}, "severity", "expected error, warning or info", id="bad-severity"),
        pytest.param({"why": None}, "why", "required", id="missing-why"),
        pytest.param({"summary": "3"}, "summary", "expected a non-empty string", id="summary-not-string"),
        pytest.param({"when": None}, "when", "required (or 'foreach', or 'signatures'", id="missing-when"),
        pytest.param({"when": '{ python = ">>3" }'}, "when.python", "invalid version specifier", id="bad-specifier"),
        pytest.param({"when": '{ package = "torch>=>2" }'}, "when.package", "invalid requirement",
                     id="bad-requirement"),
        pytest.param({"when": '{ marker = "sys_platform = 1" }'}, "when.marker", "invalid marker", id="bad-marker"),
        pytest.param({"when": '{ env = { name = "CUDA_HOME", matches = "(" } }'}, "when.env.matches",
                     "invalid regular expression", id="bad-env-regex"),
        pytest.param({"when": '{ source = { file = "a/b.py", contains = "[" } }'}, "when.source.contains",
                     "invalid regular expression", id="bad-source-regex"),
        pytest.param({"when": '{ source = { file = "/etc/passwd", contains = "x" } }'}, "when.source.file",
                     "must be relative", id="absolute-source"),
        pytest.param({"when": '{ source = { file = "a.py" } }'}, "when.source", "exactly one of", id="source-no-op"),
        pytest.param({"when": '{ module = "apex..x" }'}, "when.module", "invalid module name", id="bad-module"),
        pytest.param({"when": "{ gpux = 1 }"}, "when.gpux", "unknown predicate", id="unknown-predicate"),
        pytest.param({"when": '{ fact = "nope" }'}, "when.fact.name", "unknown fact 'nope'", id="unknown-fact"),
        pytest.param({"when": '{ fact = { name = "requirements.missing" } }'}, "when.fact",
                     "exactly one of 'nonempty' or 'equals'", id="fact-no-op"),
        pytest.param({"when": '{ env = "HOME" }'}, "when.env.name", "environment variable HOME is not collected",
                     id="env-not-collected"),
        pytest.param({"when": '{ env = { name = "CUDA_HOME", equals = "a", in = ["b"] } }'}, "when.env",
                     "not equals and in", id="env-two-ops"),
        pytest.param({"when": "{ torch = {} }"}, "when.torch", "at least one of", id="torch-empty"),
        pytest.param({"when": '{ torch = { cuda = "twelve" } }'}, "when.torch.cuda", "invalid version specifier",
                     id="torch-bad-cuda"),
        pytest.param({"when": "{ any = [] }"}, "when.any", "non-empty list", id="empty-any"),
        pytest.param({"when": '{ not = { all = [ { python = ">=3" }, { python = "bad" } ] } }'},
                     "when.not.all.1.python", "invalid version specifier", id="nested-key"),
        pytest.param({"applies": '"torch"'}, "applies", "expected a non-empty table", id="applies-not-table"),
        pytest.param({"summary": '"{nope}"'}, "summary", "unknown placeholder {nope}", id="unknown-placeholder"),
        pytest.param({"fix": '"{item.name}"'}, "fix", "only available in a rule with 'foreach'",
                     id="item-outside-foreach"),
        pytest.param({"foreach": '"distributions.corrupt"', "summary": '"{item.version}"'}, "summary",
                     "items have no key 'version'", id="item-key-unknown"),
        pytest.param({"foreach": '"distributions.corrupt"', "commands": '[["{python}", "{item.nope}"]]'},
                     "commands[0]", "items have no key 'nope'", id="item-key-in-command"),
        pytest.param({"foreach": '"requirements"'}, "foreach", "expected a list-valued fact", id="bad-foreach"),
        pytest.param({"commands": '[["pip", "install", "x"]]'}, "commands[0]", 'start with "{python}"',
                     id="bare-pip"),
        pytest.param({"commands": '[["python3", "-m", "pip"]]'}, "commands[0]", 'start with "{python}"',
                     id="bare-python"),
        pytest.param({"commands": '[["{python}", ""]]'}, "commands[0]", "non-empty strings", id="empty-arg"),
        pytest.param({"commands": '"pip install x"'}, "commands", "expected a list of argv lists",
                     id="commands-string"),
        pytest.param({"references": '["http://example.org/x"]'}, "references", "https://", id="http-reference"),
        pytest.param({"references": "[]"}, "references", "non-empty list", id="no-references"),
        pytest.param({"explained_by": '["EC0702"]'}, "explained_by", "only for a rule with 'signatures'",
                     id="explained-by-without-signatures"),
        pytest.param({"explained_by": '"EC0702"'}, "explained_by", "expected a list of other rules' ids",
                     id="explained-by-not-a-list"),
        pytest.param({"explained_by": '["EC9001"]'}, "explained_by", "expected a list of other rules' ids",
                     id="explained-by-itself"),
    ],
)
def test_invalid_rule_names_file_rule_and_key(tmp_path: Path, changes: dict[str, str | None], key: str,
                                              message: str) -> None:
    """Each mistake in a rule is one RuleError whose message names the file, the rule id and the key."""
    path = write_rules(tmp_path, "pack.toml", rule_text(**changes))
    with pytest.raises(RuleError) as info:
        rule_pack.load_file(path)
    err = info.value
    assert (err.file, err.rule_id, err.key) == (str(path), "EC9001", key)
    assert str(err).startswith(f"{path}: rule EC9001: key '{key}': ")
    assert message in str(err)
    assert "\n" not in str(err)


@pytest.mark.parametrize("bad_id", [pytest.param('"E101"', id="short"), pytest.param('"ec0101"', id="lower"),
                                    pytest.param("101", id="number"), pytest.param(None, id="absent")])
def test_bad_id_names_file_and_position(tmp_path: Path, bad_id: str | None) -> None:
    """A rule without a valid id is named by its position in the file."""
    path = write_rules(tmp_path, "pack.toml", rule_text() + rule_text(id=bad_id, name='"other"'))
    with pytest.raises(RuleError) as info:
        rule_pack.load_file(path)
    assert (info.value.rule_id, info.value.key) == (None, "rule[1].id")
    assert str(info.value).startswith(f"{path}: key 'rule[1].id': expected an id like 'EC0101'")


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        pytest.param("[[rule]\nid = 1\n", None, "invalid TOML", id="invalid-toml"),
        pytest.param('titel = "x"\n', "titel", "unknown top-level key", id="unknown-top-level"),
        pytest.param("rule = 1\n", "rule", "expected [[rule]] tables", id="rule-not-list"),
        pytest.param('title = 1\n', "title", "must be strings", id="title-not-string"),
    ],
)
def test_invalid_file(tmp_path: Path, text: str, key: str | None, message: str) -> None:
    """A file that is not a valid rule file at all is one RuleError naming it (and the key, where there is one)."""
    path = write_rules(tmp_path, "pack.toml", text)
    with pytest.raises(RuleError) as info:
        rule_pack.load_file(path)
    assert (info.value.file, info.value.key) == (str(path), key)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("second", "key", "message"),
    [
        pytest.param(rule_text(name='"another-rule"'), "id", "duplicate id", id="duplicate-id"),
        pytest.param(rule_text(id='"EC9002"'), "name", "duplicate name 'test-rule'", id="duplicate-name"),
    ],
)
def test_duplicates_across_files(tmp_path: Path, second: str, key: str, message: str) -> None:
    """Ids and names are unique across every file of every rule directory; the error names both files."""
    first = write_rules(tmp_path / "a", "one.toml", rule_text())
    other = write_rules(tmp_path / "b", "two.toml", second)
    with pytest.raises(RuleError) as info:
        rule_pack.load_files([tmp_path / "a", tmp_path / "b"])
    assert (info.value.file, info.value.key) == (str(other), key)
    assert str(info.value).startswith(f"{other}: rule {info.value.rule_id}: key '{key}': {message}")
    assert str(first) in str(info.value)


def test_explained_by_names_a_rule_of_the_pack(tmp_path: Path) -> None:
    """`explained_by` names rules of any file of the pack; one that no file has is an error naming it."""
    signed = ('[[rule.signatures]]\nanchor = "went wrong"\npattern = "went wrong"\nsource = "https://example.org/s"\n'
              'thread = "https://example.org/t"\nexample = "it went wrong"\nnear_miss = "it went right"\n')
    write_rules(tmp_path / "a", "one.toml", rule_text(explained_by='["EC9002"]') + signed)
    write_rules(tmp_path / "b", "two.toml", rule_text(id='"EC9002"', name='"other-rule"'))
    [first, _second] = rule_pack.load_files([tmp_path / "a", tmp_path / "b"])
    assert first.rules[0].explained_by == ("EC9002",)
    with pytest.raises(RuleError) as info:
        rule_pack.load_files([tmp_path / "a"])
    assert (info.value.rule_id, info.value.key) == ("EC9001", "explained_by")
    assert "no rule EC9002 in the pack" in str(info.value)


def test_missing_rule_directory(tmp_path: Path) -> None:
    """A rule directory that does not exist is an error naming it."""
    with pytest.raises(RuleError, match="rule directory does not exist"):
        rule_pack.load_files([tmp_path / "absent"])


def test_shipped_pack_is_valid() -> None:
    """The shipped pack loads; every rule has https references, and ids and names are unique across files."""
    files = rule_pack.load_files([rule_pack.builtin_rules_dir()])
    every = [r for f in files for r in f.rules]
    assert every, "the shipped pack is empty"
    assert len({r.id for r in every}) == len(every)
    assert len({r.name for r in every}) == len(every)
    for rule in every:
        assert rule.references and all(ref.startswith("https://") for ref in rule.references), rule.id
        assert rule.area == Path(rule.file).stem
    assert [r.id for r in rule_pack.load()] == [r.id for r in every]


def _pack(tmp_path: Path) -> list[Rule]:
    text = (rule_text() + rule_text(id='"EC9002"', name='"second-rule"')
            + rule_text(id='"EC9101"', name='"other-area"'))
    return list(rule_pack.load_file(write_rules(tmp_path, "pack.toml", text)).rules)


@pytest.mark.parametrize(
    ("select", "ignore", "expected"),
    [
        pytest.param((), (), ["EC9001", "EC9002", "EC9101"], id="everything"),
        pytest.param(("EC90",), (), ["EC9001", "EC9002"], id="id-prefix"),
        pytest.param(("ec90",), (), ["EC9001", "EC9002"], id="prefix-any-case"),
        pytest.param(("other-area", "EC9001"), (), ["EC9001", "EC9101"], id="name-and-id"),
        pytest.param(("EC9",), ("second-rule",), ["EC9001", "EC9101"], id="ignore-by-name"),
        pytest.param((), ("EC91",), ["EC9001", "EC9002"], id="ignore-only"),
    ],
)
def test_select(tmp_path: Path, select: tuple[str, ...], ignore: tuple[str, ...], expected: list[str]) -> None:
    """select() keeps rules matching any selector (id prefix or name) and none of the ignores."""
    assert [r.id for r in rule_pack.select(_pack(tmp_path), select, ignore)] == expected


def test_unknown_selectors(tmp_path: Path) -> None:
    """unknown_selectors() returns exactly the entries that match no rule, in the order given."""
    assert rule_pack.unknown_selectors(_pack(tmp_path), ["EC90", "typo", "ec91", "second-rule", "EC0"]) == [
        "typo", "EC0"]


# --- the data tables, loaded with the pack ---------------------------------------------------------------------


def _data_file(rule_dir: Path, stem: str, text: str) -> Path:
    """A data table in a rule directory's data/ folder."""
    return write_rules(rule_dir / "data", f"{stem}.toml", text)


def test_pack_carries_every_registered_table() -> None:
    """load() returns the rules and every registered data table of the shipped pack, parsed, as one RulePack."""
    pack = rule_pack.load()
    assert isinstance(pack, rule_pack.RulePack) and list(pack) == list(pack.rules) and len(pack) > 50
    assert set(pack.tables.parsed) == set(tables_mod.REGISTRY)
    assert isinstance(pack.tables[tables_mod.CUDA_DRIVER], gpu_compat.CudaDriverTable)
    assert pack.only(pack.rules[:1]).tables is pack.tables


@pytest.mark.parametrize(
    ("stem", "text", "key", "message"),
    [
        pytest.param("cuda-driver", "minor-compatibility = [", None, "invalid TOML", id="bad-toml"),
        pytest.param("cuda-driver", '[minor-compatibility]\n"12" = "525"\n', "minor-compatibility.12",
                     "expected a CUDA major and a driver branch", id="bad-value"),
        pytest.param("xformers", '[xformers]\nsymptom = "s"\n[xformers.releases]\n"0.1" = { torch = "2.6" }\n',
                     "xformers.releases.0.1", "not a version or specifier", id="bad-specifier"),
        pytest.param("cuda-drivers", "", None,
                     r"unknown data table \(known: amd-gpus, conda-forge-builds, cuda-driver, ",
                     id="misspelt-file"),
    ],
)
def test_bad_table_fails_the_pack_load(tmp_path: Path, stem: str, text: str, key: str | None, message: str) -> None:
    """A malformed or unknown table in a rule directory's data/ fails `load` with one RuleError naming the file
    and the key: before any fact is collected, never as an error verdict later."""
    write_rules(tmp_path, "mine.toml", rule_text())
    path = _data_file(tmp_path, stem, text)
    with pytest.raises(RuleError, match=message) as info:
        rule_pack.load([tmp_path])
    assert (info.value.file, info.value.key) == (str(path), key)


def test_later_directory_table_replaces_the_shipped_one(tmp_path: Path) -> None:
    """A rule directory's table replaces the shipped table of the same name (newer data without a new envcheck)."""
    shipped = (rule_pack.builtin_rules_dir() / "data" / "cuda-driver.toml").read_text(encoding="utf-8")
    path = _data_file(tmp_path, "cuda-driver", shipped.replace('"12" = "525.60.13"', '"12" = "530.30.02"'))
    pack = rule_pack.load([tmp_path])
    assert str(pack.tables[tables_mod.CUDA_DRIVER].minor_compat_floor["linux"][12]) == "530.30.2"
    assert pack.tables.files["cuda-driver"] == str(path)


def test_every_registered_table_must_be_found(tmp_path: Path) -> None:
    """A pack whose data/ lacks a registered table is a RuleError naming the file that is missing."""
    with pytest.raises(RuleError, match="data table missing") as info:
        tables_mod.load([tmp_path])
    assert info.value.file == str(tmp_path / "data" / "amd-gpus.toml")  # the first missing, by name


def test_tables_absent_from_a_hand_built_pack_fail_by_name() -> None:
    """Reading a table that was not loaded (rules evaluated without their pack) names the table."""
    with pytest.raises(LookupError, match="'cuda-driver' was not loaded"):
        tables_mod.NO_TABLES[tables_mod.CUDA_DRIVER]


# --- one meaning for a selector everywhere ---------------------------------------------------------------------


@pytest.mark.parametrize("selector", ["EC01", "ec0201", "EC0101", "requirement-version-conflict", "EC05"])
def test_selectors_mean_the_same_everywhere(selector: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An id, an id prefix (any case) or a name picks the same rules in rules.select, `--select`, the
    configuration's `select`, `envcheck rule` and the pytest marker."""
    from click.testing import CliRunner

    from envcheck.cli.click_cli import cli
    from envcheck.pipeline.stages import rule_set
    from envcheck.pytest_plugin import _Session
    from envcheck.sources.project.config import Config

    pack = rule_pack.load()
    expected = [r.id for r in rule_pack.select(pack, [selector])]
    assert expected and all(rule_pack.matches(selector, i, next(r.name for r in pack if r.id == i)) for i in expected)
    assert [r.id for r in rule_set(Config(), select=[selector]).chosen] == expected
    assert [r.id for r in rule_set(Config(select=(selector,))).chosen] == expected
    result = CliRunner().invoke(cli, ["rule", selector, "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in json.loads(result.output)] == expected
    monkeypatch.chdir(tmp_path)  # no project configuration: the marker sees the shipped pack only
    marker_rules = _Session(tmp_path)._marker_rules([pytest.mark.envcheck(selector).mark])
    assert [r.id for r in marker_rules] == expected

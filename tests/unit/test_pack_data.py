"""The caches hold data, never code: a cache folder restored whole (its key with it, as CI's `actions/cache` of
~/.cache restores it) can describe a rule pack at worst, and nothing in it runs.

The rule pack is cached in envcheck/cache/pack_data.py's JSON format; the other caches are JSON. A validly signed
entry holding a pickle, or naming a class outside the pack's own modules, is a miss."""

from __future__ import annotations

import ast
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from _fakes import FIXTURES

from envcheck.cache import pack_data, signed
from envcheck.cache.pack_stamp import pack_stamp
from envcheck.derived.tables import Tables
from envcheck.facts.snapshot import Facts
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate

ROOT = Path(__file__).resolve().parents[2]


class _Touch:
    """A pickle that makes a folder when it is loaded: what a planted entry would do."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (self.path,))


def _plant(payload: bytes) -> None:
    """`payload` as the shipped pack's entry, signed with the key in the cache folder: what a restored folder holds
    when whoever wrote it had that key."""
    stamp = pack_stamp([rule_pack.builtin_rules_dir()])
    assert stamp is not None
    signed.store_signed("rule-pack", stamp, payload)


def test_a_validly_signed_pickle_is_never_run(tmp_path: Path) -> None:
    """A restored cache folder brings its key: a pickle signed with it still never runs, and the pack is read
    afresh from the rule files."""
    expected = rule_pack.load(use_cache=False)
    marker = tmp_path / "ran"
    _plant(pickle.dumps(_Touch(str(marker))))
    assert rule_pack.load() == expected
    assert not marker.exists()


def _entry(shapes: object, value: object) -> bytes:
    """An entry of the format: its shapes' line, then its value's."""
    return f"{json.dumps(shapes)}\n{json.dumps(value)}".encode()


@pytest.mark.parametrize("entry", [
    pytest.param(_entry([["os:system", []]], {"o": [0]}), id="a-function"),
    pytest.param(_entry([["subprocess:Popen", ["args"]]], {"o": [0, "touch ran"]}), id="a-class-outside-the-pack"),
    pytest.param(_entry([["builtins:eval", []]], {"o": [0]}), id="a-builtin"),
    pytest.param(_entry([], {"n": ["envcheck.rules.rule_pack:Path", [".", "ran"]]}),
                 id="an-imported-name-in-an-allowed-module"),
    pytest.param(_entry([["envcheck.errors:EnvcheckError", []]], {"o": [0]}), id="a-module-not-allowed"),
    pytest.param(_entry([["envcheck.rules.model:Severity", []]], {"o": [0]}), id="an-enum-as-an-object"),
    pytest.param(_entry([], {"e": ["envcheck.rules.model:Rule", "x"]}), id="a-class-as-an-enum"),
    pytest.param(_entry([], {"r": 5}), id="a-reference-to-nothing"),
    pytest.param(_entry([], {"q": []}), id="an-unknown-tag"),
    pytest.param(_entry([], {"t": [], "o": []}), id="two-tags"),
    pytest.param(_entry([["envcheck.rules.model:Rule", [1, 2]]], {"o": [0, 1, 2]}), id="an-attribute-that-is-no-name"),
    pytest.param(_entry([["envcheck.rules.model:Rule", ["__class__"]]], {"o": [0, "x"]}), id="a-special-attribute"),
    pytest.param(_entry([["envcheck.rules.model:Rule", ["id"]]], {"o": [1, "x"]}), id="a-shape-that-is-not-there"),
    pytest.param(_entry([["envcheck.rules.model:Rule", ["id"]]], {"o": [0, "x", "y"]}), id="more-values-than-names"),
    pytest.param(_entry([["envcheck.rules.model:Rule", ["id"]]], {"o": [True, "x"]}), id="a-shape-that-is-no-number"),
    pytest.param(json.dumps({"o": ["envcheck.rules.model:Rule", ["id", "x"]]}).encode(), id="the-format-before-shapes"),
])
def test_an_entry_naming_anything_but_the_packs_data_classes_is_refused(entry: bytes) -> None:
    with pytest.raises(pack_data.NotData):
        pack_data.loads(entry)


def test_an_attribute_that_a_slot_or_a_property_holds_is_set_as_object_setattr_sets_it() -> None:
    """packaging's specifiers keep their attributes in slots: they come back through object.__setattr__, equal."""
    from packaging.specifiers import SpecifierSet

    value = (SpecifierSet(">=2.1,<3"), SpecifierSet("==2.4.*"))
    assert pack_data.loads(pack_data.dumps(value)) == value


def _parts(*entries: bytes) -> bytes:
    """A pack's entry as the cache writes it: the lengths of its parts, then the parts (pack_data.dumps_parts)."""
    return json.dumps([len(e) for e in entries]).encode() + b"\n" + b"".join(entries)


def test_a_validly_signed_entry_naming_other_code_is_a_miss(tmp_path: Path) -> None:
    expected = rule_pack.load(use_cache=False)
    _plant(_parts(_entry([["subprocess:Popen", ["args"]]], {"o": [0, f"touch {tmp_path / 'ran'}"]})))
    assert rule_pack.load() == expected
    assert not (tmp_path / "ran").exists()


def test_a_table_of_a_signed_entry_naming_other_code_is_parsed_from_its_file_instead(tmp_path: Path) -> None:
    """The entry's rules are the pack's, but one of its tables names other code: that table, decoded when first
    read, is a miss, and is read from its file instead; nothing runs."""
    expected = rule_pack.load(use_cache=False)
    stems = tuple(expected.tables.parsed)
    forged = _entry([["subprocess:Popen", ["args"]]], {"o": [0, f"touch {tmp_path / 'ran'}"]})
    head = pack_data.dumps((stems, rule_pack.RulePack(expected.rules, Tables({}, expected.tables.files))))
    _plant(_parts(head, forged, *(pack_data.dumps(expected.tables.parsed[s]) for s in stems[1:])))
    again = rule_pack.load()
    assert isinstance(again.tables.parsed, pack_data.OnFirstUse)  # the entry was read: its tables on first use
    assert again.tables.parsed[stems[0]] == expected.tables.parsed[stems[0]]
    assert again == expected
    assert not (tmp_path / "ran").exists()


def test_a_cached_pack_decodes_a_table_when_it_is_first_read() -> None:
    """From the cache, the rules come back at once and each table when it is read: a check that reads no GPU-name
    table never imports the module of its class (envcheck/derived/nvidia_gpus.py), which reading it does."""
    rule_pack.load()  # parsed and cached: the child reads the cache
    code = ("import sys\n"
            "from envcheck.rules import rule_pack\n"
            "from envcheck.derived.tables import GPUS\n"
            "pack = rule_pack.load()\n"
            "before = 'envcheck.derived.nvidia_gpus' in sys.modules\n"
            "names = pack.tables[GPUS]\n"
            "print(before, type(names).__name__, 'envcheck.derived.nvidia_gpus' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["False", "GpuNames", "True"]


def test_the_shipped_pack_is_cached_as_data_and_read_back_equal() -> None:
    """The pack written and read back is equal to the one parsed, rule by rule and table by table, checks a real
    snapshot the same way; the entry on disk is JSON, not a pickle."""
    fresh = rule_pack.load(use_cache=False)
    data = pack_data.dumps(fresh)
    again = pack_data.loads(data)
    assert again == fresh and again.tables == fresh.tables
    facts = Facts.from_dict(json.loads((FIXTURES / "clean-cuda-venv.json").read_text(encoding="utf-8")),
                            file="clean-cuda-venv.json")
    assert evaluate(again, facts) == evaluate(fresh, facts)
    rule_pack.load()
    entry = (signed.cache_dir() / "rule-pack.signed").read_bytes()
    payload = entry[entry.index(b"\n", len(b"envcheck-signed-1\n")) + 33:]
    head, *tables = pack_data.parts(payload)  # the rules, then each table on its own
    for part in (head, *tables):
        shapes, value = part.split(b"\n")
        assert isinstance(json.loads(shapes), list) and isinstance(json.loads(value), dict)
    stems, pack = pack_data.loads(head)
    assert pack.rules == fresh.rules and set(stems) == set(fresh.tables.parsed) == set(pack.tables.files)
    assert {stem: pack_data.loads(part) for stem, part in zip(stems, tables, strict=True)} == fresh.tables.parsed
    assert rule_pack.load() == fresh


def test_shared_objects_stay_shared() -> None:
    """An object the pack holds in two places is one object again after a round trip (the format's references)."""
    fresh = rule_pack.load(use_cache=False)
    pair = (fresh.rules[0], fresh.rules[0])
    first, second = pack_data.loads(pack_data.dumps(pair))
    assert first is second and first == fresh.rules[0]


def test_equal_immutable_objects_are_written_once_and_mutable_ones_apart() -> None:
    """Two equal specifier sets made apart come back as one object (written once, then referred to); two equal
    requirements, which hold a set (their extras), come back as two, each equal to what was written."""
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from envcheck.rules.conditions.environment import Fact

    value = (SpecifierSet(">=2.1,<3"), SpecifierSet(">=2.1,<3"), Requirement("torch>=2"), Requirement("torch>=2"))
    assert value[0] is not value[1]
    again = pack_data.loads(pack_data.dumps(value))
    assert again == value
    assert again[0] is again[1]
    assert again[2] is not again[3] and again[2].extras is not again[3].extras
    # Equal is not the same: 0.0 == -0.0, but a condition comparing with one is not one comparing with the other.
    zeros = (Version("0.0"), Version("0.0"), Fact("x", "equals", 0.0), Fact("x", "equals", -0.0))
    again = pack_data.loads(pack_data.dumps(zeros))
    assert again[0] is again[1]
    assert again[2] is not again[3] and repr(again[3].value) == "-0.0"


_EXECUTABLE_FORMATS = {"pickle", "marshal", "shelve", "dill", "cloudpickle", "joblib"}


# What reads a cache: its entries (cache/), the pack, the replayed check, the walk's memo, the collector's metadata.
_READERS = ("envcheck/cache", "envcheck/pipeline", "envcheck/rules/rule_pack.py", "envcheck/derived/walk_memo.py",
            "envcheck/facts")


def test_no_module_of_envcheck_reads_an_executable_format() -> None:
    """No envcheck module imports pickle, marshal or shelve, and nothing that reads a cache calls eval or exec: no
    cache can hold code. (The probe child execs its own program text, a constant: it reads no cache.)"""
    found = []
    for path in sorted((ROOT / "envcheck").rglob("*.py")):
        reads_a_cache = path.relative_to(ROOT).as_posix().startswith(_READERS)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: import {n}" for n in names if n.split(".")[0] in _EXECUTABLE_FORMATS]
            if reads_a_cache and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("eval", "exec"):
                found.append(f"{path.name}:{node.lineno}: {node.func.id}()")
    assert not found

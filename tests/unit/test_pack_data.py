"""The caches hold data, never code: a cache folder restored whole (its key with it, as CI's `actions/cache` of
~/.cache restores it) can describe a rule pack at worst, and nothing in it runs.

The rule pack is cached in envcheck/cache/pack_data.py's JSON format; the other caches are JSON. A validly signed
entry holding a pickle, or naming a class outside the pack's own modules, is a miss."""

from __future__ import annotations

import ast
import json
import os
import pickle
from pathlib import Path

import pytest
from _fakes import FIXTURES

from envcheck.cache import pack_data, signed
from envcheck.cache.pack_stamp import pack_stamp
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


@pytest.mark.parametrize("document", [
    pytest.param({"o": ["os:system", []]}, id="a-function"),
    pytest.param({"o": ["subprocess:Popen", ["args", "touch ran"]]}, id="a-class-outside-the-pack"),
    pytest.param({"o": ["builtins:eval", []]}, id="a-builtin"),
    pytest.param({"n": ["envcheck.rules.rule_pack:Path", [".", "ran"]]}, id="an-imported-name-in-an-allowed-module"),
    pytest.param({"o": ["envcheck.errors:EnvcheckError", []]}, id="a-module-not-allowed"),
    pytest.param({"o": ["envcheck.rules.model:Severity", []]}, id="an-enum-as-an-object"),
    pytest.param({"e": ["envcheck.rules.model:Rule", "x"]}, id="a-class-as-an-enum"),
    pytest.param({"r": 5}, id="a-reference-to-nothing"),
    pytest.param({"q": []}, id="an-unknown-tag"),
    pytest.param({"t": [], "o": []}, id="two-tags"),
    pytest.param({"o": ["envcheck.rules.model:Rule", [1, 2]]}, id="an-attribute-that-is-no-name"),
])
def test_an_entry_naming_anything_but_the_packs_data_classes_is_refused(document: object) -> None:
    with pytest.raises(pack_data.NotData):
        pack_data.loads(json.dumps(document).encode())


def test_a_validly_signed_entry_naming_other_code_is_a_miss(tmp_path: Path) -> None:
    expected = rule_pack.load(use_cache=False)
    _plant(json.dumps({"o": ["subprocess:Popen", ["args", f"touch {tmp_path / 'ran'}"]]}).encode())
    assert rule_pack.load() == expected
    assert not (tmp_path / "ran").exists()


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
    assert isinstance(json.loads(payload), dict) and pack_data.loads(payload) == fresh


def test_shared_objects_stay_shared() -> None:
    """An object the pack holds in two places is one object again after a round trip (the format's references)."""
    fresh = rule_pack.load(use_cache=False)
    pair = (fresh.rules[0], fresh.rules[0])
    first, second = pack_data.loads(pack_data.dumps(pair))
    assert first is second and first == fresh.rules[0]


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

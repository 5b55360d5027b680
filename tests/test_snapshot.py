"""The Facts snapshot: JSON round trip, and a FactsError naming file and key for every malformed snapshot."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import collect_facts, dist_dict, facts_dict, torch_dict, write_apex, write_dist, write_torch

from envcheck.errors import FactsError
from envcheck.facts import collect as collect_mod
from envcheck.facts.snapshot import Facts


def _collected(site: Path) -> Facts:
    write_dist(site, "torchvision", "0.21.0", requires=["torch==2.6.0", "numpy"], requires_python=">=3.9",
               top_level=["torchvision"])
    write_dist(site, "broken", "1.0", metadata=None)
    write_torch(site, "__version__ = '2.6.0+cu124'\ncuda = '12.4'\nhip = None\ndebug = False\n")
    write_apex(site)
    request = {"modules": ["apex.normalization", "absent_module"],
               "sources": [{"file": "apex/normalization/fused_layer_norm.py", "patterns": ["FusedRMSNorm"]}]}
    return collect_facts(site, request=request)


def test_dict_round_trip_is_equal(site: Path) -> None:
    """Facts.from_dict(facts.to_dict()) equals the original, with and without a trip through JSON text."""
    facts = _collected(site)
    assert facts.torch is not None and facts.modules and facts.sources and len(facts.distributions) == 2
    assert Facts.from_dict(facts.to_dict()) == facts
    assert Facts.from_dict(json.loads(json.dumps(facts.to_dict()))) == facts


def test_saved_snapshot_loads_with_its_origin(site: Path, tmp_path: Path) -> None:
    """A snapshot written as JSON loads back equal, its origin naming the file."""
    facts = _collected(site)
    saved = tmp_path / "env.json"
    saved.write_text(json.dumps(facts.to_dict()), encoding="utf-8")
    loaded = collect_mod.load(str(saved))
    assert loaded.origin == f"file:{saved}"
    assert loaded.to_dict() == facts.to_dict()


def test_unknown_keys_are_ignored() -> None:
    """Keys this version does not know (e.g. `derived`, written for readers) do not stop a snapshot loading."""
    data = facts_dict(dists=[dist_dict("numpy", "2.1.0")])
    data["derived"] = {"requirements.missing": []}
    data["distributions"][0]["future_field"] = 1
    assert Facts.from_dict(data).active("numpy") is not None


def test_lookup_by_any_spelling() -> None:
    """installed() and active() find a distribution by any PEP 503 spelling of its name."""
    facts = Facts.from_dict(facts_dict(dists=[dist_dict("pytorch_lightning", "2.4.0")]))
    assert [d.version for d in facts.installed("PyTorch-Lightning")] == ["2.4.0"]
    assert facts.active("pytorch.lightning") is not None
    assert facts.active("lightning") is None and facts.installed("lightning") == ()


def _node(data: dict[str, Any], path: tuple[str | int, ...]) -> Any:
    node: Any = data
    for part in path:
        node = node[part]
    return node


def _set(*path: str | int, to: Any) -> Callable[[dict[str, Any]], None]:
    """A mutation that sets data[path[0]][path[1]]... to `to`."""

    def mutate(data: dict[str, Any]) -> None:
        _node(data, path[:-1])[path[-1]] = to

    return mutate


def _delete(*path: str | int) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        del _node(data, path[:-1])[path[-1]]

    return mutate


@pytest.mark.parametrize(
    ("mutate", "key", "message"),
    [
        pytest.param(_set("schema", to=2), "schema", "schema 2 is not supported", id="other-schema"),
        pytest.param(_delete("schema"), "schema", "schema None is not supported", id="no-schema"),
        pytest.param(_delete("python"), "python", "missing", id="missing-python"),
        pytest.param(_delete("python", "executable"), "python.executable", "missing", id="missing-executable"),
        pytest.param(_delete("distributions", 0, "name"), "distributions[0].name", "missing", id="missing-name"),
        pytest.param(_set("distributions", 0, "version", to=3), "distributions[0].version",
                     "expected str, got int", id="version-int"),
        pytest.param(_set("python", "virtualenv", to="yes"), "python.virtualenv", "expected bool, got str",
                     id="virtualenv-str"),
        pytest.param(_set("distributions", 0, "editable", to=1), "distributions[0].editable",
                     "expected bool, got int", id="editable-int"),
        pytest.param(_set("distributions", to={}), "distributions", "expected a list", id="distributions-object"),
        pytest.param(_set("distributions", 0, to="numpy"), "distributions[0]", "expected an object",
                     id="dist-str"),
        pytest.param(_set("distributions", 0, "requires", to=["ok", 5]), "distributions[0].requires[1]",
                     "expected a string", id="requires-item"),
        pytest.param(_set("python", "path", to="/opt/venv"), "python.path", "expected list, got str",
                     id="path-str"),
        pytest.param(_set("python", "libc", to={"name": "glibc"}), "python.libc.version", "missing",
                     id="libc-partial"),
        pytest.param(_set("env", to={"CUDA_HOME": 12}), "env.CUDA_HOME", "expected a string", id="env-value"),
        pytest.param(_set("torch", "location", to=None), "torch.location", "expected str, got NoneType",
                     id="torch-location"),
        pytest.param(_set("torch", "fields", to=[]), "torch.fields", "expected an object", id="torch-fields"),
        pytest.param(_set("modules", "apex", "found", to="yes"), "modules.apex.found", "expected bool",
                     id="module-found"),
        pytest.param(_set("sources", "a/b.py", "matches", to={"x": "yes"}), "sources.a/b.py.matches",
                     "expected an object of booleans", id="source-matches"),
        pytest.param(_set("problems", to="one"), "problems", "expected list", id="problems-str"),
    ],
)
def test_malformed_snapshot_names_file_and_key(mutate: Callable[[dict[str, Any]], None], key: str,
                                                message: str) -> None:
    """Each malformed part of a snapshot is one FactsError whose message names the file and the dotted key."""
    data = facts_dict(dists=[dist_dict("numpy", "2.1.0", "packaging")], torch=torch_dict(),
                      modules={"apex": {"found": True, "origin": "/x"}},
                      sources={"a/b.py": {"path": None, "matches": {}}})
    Facts.from_dict(copy.deepcopy(data))  # the unmutated snapshot is valid
    mutate(data)
    with pytest.raises(FactsError) as info:
        Facts.from_dict(data, file="env.json")
    assert (info.value.file, info.value.key) == ("env.json", key)
    assert str(info.value).startswith(f"env.json: key '{key}': ")
    assert message in str(info.value)


def test_snapshot_that_is_not_an_object() -> None:
    """A JSON value other than an object is refused, naming the file."""
    with pytest.raises(FactsError, match=r"^env\.json: expected an object, got list$"):
        Facts.from_dict([], file="env.json")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"{not json", "is not JSON", id="not-json"),
        pytest.param(b"\xff\xfe\x00garbage", "cannot be read", id="not-utf8"),
        pytest.param(None, "no such file", id="absent"),
    ],
)
def test_load_refuses_unreadable_files(tmp_path: Path, content: bytes | None, message: str) -> None:
    """load() turns an absent, undecodable or non-JSON file into one FactsError naming the file."""
    target = tmp_path / "env.json"
    if content is not None:
        target.write_bytes(content)
    with pytest.raises(FactsError) as info:
        collect_mod.load(str(target))
    assert str(info.value).startswith(f"{target}: {message}")
    assert "\n" not in str(info.value)

"""The Facts snapshot: JSON round trip, and a FactsError naming file and key for every malformed snapshot."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _fakes import (
    FIXTURES,
    collect_facts,
    dist_dict,
    facts_dict,
    gpu_dict,
    nvml_dict,
    torch_dict,
    write_apex,
    write_dist,
    write_torch,
)

import envcheck
from envcheck.errors import FactsError
from envcheck.facts.gpus import STATUSES
from envcheck.facts.probe_statuses import PROBE_STATUSES
from envcheck.facts.snapshot import READABLE_SCHEMAS, SCHEMA, Facts
from envcheck.sources.live import collect as collect_mod

SCHEMA_FILE = Path(envcheck.__file__).parent / "schemas" / "facts.schema.json"
FACTS_SCHEMA = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


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


# Malformed snapshots: (mutation of a valid snapshot, the key the error names, the message after the key).
BAD = [
    pytest.param(_set("schema", to=4), "schema", "schema 4 is not supported (this envcheck reads schemas 1 to 3); "
                 "it was written by a newer envcheck: upgrade envcheck to read it", id="newer-schema"),
    pytest.param(_set("schema", to=0), "schema", "expected an integer of at least 1, got 0", id="schema-zero"),
    pytest.param(_set("schema", to=True), "schema", "expected an integer of at least 1, got true", id="schema-true"),
    pytest.param(_set("schema", to="2"), "schema", 'expected an integer of at least 1, got "2"', id="schema-str"),
    pytest.param(_delete("schema"), "schema", "missing: not a snapshot written by `envcheck facts`",
                 id="no-schema"),
    pytest.param(_delete("python"), "python", "missing", id="missing-python"),
    pytest.param(_set("python", to=[]), "python", "expected an object, got a list", id="python-list"),
    pytest.param(_delete("python", "executable"), "python.executable", "missing", id="missing-executable"),
    pytest.param(_set("python", "executable", to=None), "python.executable", "expected a string, got null",
                 id="null-executable"),
    pytest.param(_delete("distributions"), "distributions", "missing", id="no-distributions"),
    pytest.param(_delete("distributions", 0, "name"), "distributions[0].name", "missing", id="missing-name"),
    pytest.param(_set("distributions", 0, "version", to=3), "distributions[0].version",
                 "expected a string, got 3", id="version-int"),
    pytest.param(_set("python", "virtualenv", to="yes"), "python.virtualenv", 'expected true or false, got "yes"',
                 id="virtualenv-str"),
    pytest.param(_set("distributions", 0, "editable", to=1), "distributions[0].editable",
                 "expected true or false, got 1", id="editable-int"),
    pytest.param(_set("distributions", to={}), "distributions", "expected a list, got an object",
                 id="distributions-object"),
    pytest.param(_set("distributions", 0, to="numpy"), "distributions[0]", 'expected an object, got "numpy"',
                 id="dist-str"),
    pytest.param(_set("distributions", 0, "requires", to=["ok", 5]), "distributions[0].requires[1]",
                 "expected a string, got 5", id="requires-item"),
    pytest.param(_set("python", "path", to="/opt/venv"), "python.path", 'expected a list, got "/opt/venv"',
                 id="path-str"),
    pytest.param(_set("python", "libc", to={"name": "glibc"}), "python.libc.version", "missing",
                 id="libc-partial"),
    pytest.param(_set("env", to={"CUDA_HOME": 12}), "env.CUDA_HOME", "expected a string, got 12", id="env-value"),
    pytest.param(_set("torch", "location", to=None), "torch.location", "expected a string, got null",
                 id="torch-location"),
    pytest.param(_set("torch", "fields", to=[]), "torch.fields", "expected an object, got a list",
                 id="torch-fields"),
    pytest.param(_set("torch", "debug", to="no"), "torch.debug", 'expected true or false, got "no"',
                 id="torch-debug"),
    pytest.param(_set("modules", "apex", "found", to="yes"), "modules.apex.found", "expected true or false",
                 id="module-found"),
    pytest.param(_set("modules", "apex", to=True), "modules.apex", "expected an object, got true",
                 id="module-not-object"),
    pytest.param(_set("sources", "a/b.py", "matches", to={"x": "yes"}), "sources.a/b.py.matches.x",
                 'expected true or false, got "yes"', id="source-matches"),
    pytest.param(_set("problems", to="one"), "problems", 'expected a list, got "one"', id="problems-str"),
    pytest.param(_set("nvml", to=[]), "nvml", "expected an object, got a list", id="nvml-list"),
    pytest.param(_set("nvml", "status", to="fine"), "nvml.status", "expected one of ", id="nvml-status"),
    pytest.param(_set("nvml", "devices", to=True), "nvml.devices", "expected a list, got true",
                 id="nvml-devices-true"),
    pytest.param(_set("nvml", "devices", 0, "index", to="x"), "nvml.devices[0].index",
                 'expected an integer of at least 0, got "x"', id="gpu-index-str"),
    pytest.param(_set("nvml", "devices", 0, "index", to=-1), "nvml.devices[0].index",
                 "expected an integer of at least 0, got -1", id="gpu-index-negative"),
    pytest.param(_delete("nvml", "devices", 0, "index"), "nvml.devices[0].index", "missing", id="gpu-index-missing"),
    pytest.param(_set("nvml", "devices", 0, "memory_total_mib", to="80GB"), "nvml.devices[0].memory_total_mib",
                 'expected an integer of at least 0, got "80GB"', id="gpu-memory-str"),
    pytest.param(_set("nvml", "devices", 0, "mig_mode", to="off"), "nvml.devices[0].mig_mode",
                 'expected true or false, got "off"', id="gpu-mig-str"),
    pytest.param(_set("probes", "sdpa", "status", to="fine"), "probes.sdpa.status", "expected one of ",
                 id="probe-status"),
    pytest.param(_set("probes", "sdpa", "details", to=[]), "probes.sdpa.details", "expected an object, got a list",
                 id="probe-details"),
    pytest.param(_set("probes", "sdpa", "cases", "cpu", to="ok"), "probes.sdpa.cases.cpu",
                 'expected an object, got "ok"', id="probe-case-not-object"),
    pytest.param(_delete("probes", "sdpa", "cases", "cpu", "status"), "probes.sdpa.cases.cpu.status", "missing",
                 id="probe-case-no-status"),
    pytest.param(_set("probes", "sdpa", "wall_s", to="1s"), "probes.sdpa.wall_s",
                 'expected a finite number of at least 0, got "1s"', id="probe-wall-str"),
    pytest.param(_set("probes", "sdpa", "wall_s", to=True), "probes.sdpa.wall_s",
                 "expected a finite number of at least 0, got true", id="probe-wall-bool"),
]

# Unusual but valid: what the reader and the schema both accept.
ACCEPTED = [
    pytest.param(_set("schema", to=1), id="schema-1"),
    pytest.param(_set("distributions", 0, "top_level", to=["numpy"]), id="schema-2-with-top-level"),
    pytest.param(_set("derived", to={"requirements.missing": []}), id="derived"),
    pytest.param(_set("distributions", 0, "future_field", to=1), id="unknown-dist-key"),
    pytest.param(_set("torch", to=None), id="no-torch"),
    pytest.param(_set("nvml", to=None), id="nvml-not-collected"),
    pytest.param(_set("nvml", "devices", 0, "memory_total_mib", to=None), id="gpu-memory-unknown"),
    pytest.param(_set("nvml", "devices", 0, "mig_mode", to=None), id="gpu-mig-unknown"),
    pytest.param(_set("env", to=None), id="env-null"),
    pytest.param(_delete("modules"), id="no-modules"),
    pytest.param(_set("probes", "sdpa", "wall_s", to=None), id="probe-wall-unknown"),
    pytest.param(_set("probes", "sdpa", "cases", "cpu", "max_abs_diff", to=0.5), id="probe-case-extra-key"),
    pytest.param(_set("python", "libc", to=None), id="no-libc"),
]


def _valid() -> dict[str, Any]:
    """A valid snapshot with every section filled, for the mutations above."""
    return facts_dict(dists=[dist_dict("numpy", "2.1.0", "packaging")], torch=torch_dict(),
                      modules={"apex": {"found": True, "origin": "/x"}},
                      sources={"a/b.py": {"path": None, "matches": {}}}, nvml=nvml_dict(gpu_dict(0)),
                      probes={"sdpa": {"status": "ok", "details": {}, "wall_s": 0.5,
                                       "cases": {"cpu": {"status": "ok", "error_class": None, "message": None}}}})


@pytest.mark.parametrize(("mutate", "key", "message"), BAD)
def test_malformed_snapshot_names_file_and_key(mutate: Callable[[dict[str, Any]], None], key: str,
                                                message: str) -> None:
    """Each malformed part of a snapshot is one FactsError, one line: `FILE: key 'KEY': what was expected, got what`."""
    data = _valid()
    Facts.from_dict(copy.deepcopy(data))  # the unmutated snapshot is valid
    mutate(data)
    with pytest.raises(FactsError) as info:
        Facts.from_dict(data, file="env.json")
    assert (info.value.file, info.value.key) == ("env.json", key)
    assert str(info.value).startswith(f"env.json: key '{key}': {message}")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("mutate", "key", "message"), BAD)
def test_schema_refuses_what_the_reader_refuses(mutate: Callable[[dict[str, Any]], None], key: str,
                                                message: str) -> None:
    """facts.schema.json rejects every snapshot the reader rejects, at the same place."""
    data = _valid()
    FACTS_SCHEMA.validate(data)
    mutate(data)
    errors = list(FACTS_SCHEMA.iter_errors(data))
    assert errors, f"the schema accepts what the reader refuses ({key}: {message})"


@pytest.mark.parametrize("mutate", ACCEPTED)
def test_reader_and_schema_accept_unusual_valid_snapshots(mutate: Callable[[dict[str, Any]], None]) -> None:
    """Nulls where a value may be unknown, unknown keys and schema-1 snapshots are accepted by both."""
    data = _valid()
    mutate(data)
    Facts.from_dict(data, file="env.json")
    FACTS_SCHEMA.validate(data)


def test_gpu_fields_are_read_as_written() -> None:
    """A GPU's index, memory and MIG mode keep their values; unknown memory and MIG mode stay None."""
    data = _valid()
    data["nvml"]["devices"] = [gpu_dict(0), gpu_dict(3, memory_mib=None, mig_mode=None)]
    devices = Facts.from_dict(data).nvml.devices  # type: ignore[union-attr]
    assert [(d.index, d.memory_total_mib, d.mig_mode) for d in devices] == [(0, 81559, False), (3, None, None)]


def test_long_bad_values_and_keys_stay_one_short_line() -> None:
    """A huge bad value or map key is cut short in the error, so the line stays readable."""
    data = _valid()
    data["env"] = {"X" * 5000: "y" * 5000, "CUDA_HOME": 7 * 10**4000}
    with pytest.raises(FactsError) as info:
        Facts.from_dict(data, file="env.json")
    assert "env.CUDA_HOME" in str(info.value) and len(str(info.value)) < 200
    data["env"] = {"X" * 5000: 5}
    with pytest.raises(FactsError) as info:
        Facts.from_dict(data, file="env.json")
    assert len(str(info.value)) < 200


def test_snapshot_that_is_not_an_object() -> None:
    """A JSON value other than an object is refused, naming the file."""
    with pytest.raises(FactsError, match=r"^env\.json: expected an object, got a list$"):
        Facts.from_dict([], file="env.json")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"{not json", "is not JSON", id="not-json"),
        pytest.param(b"\xff\xfe\x00garbage", "is UTF-16 encoded", id="utf16"),
        pytest.param(b"{\"a\": \"\xff\"}", "is not UTF-8 text: byte 0xff on line 1", id="not-utf8"),
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


def test_facts_schema_is_valid_and_matches_the_code() -> None:
    """facts.schema.json is a valid draft 2020-12 schema whose version, status and schema lists are the code's."""
    schema = FACTS_SCHEMA.schema
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith(f"/facts-{SCHEMA}.json")
    assert schema["properties"]["schema"]["enum"] == list(READABLE_SCHEMAS)
    assert set(schema["$defs"]["nvml"]["properties"]["status"]["enum"]) == STATUSES
    assert set(schema["$defs"]["probe_status"]["enum"]) == set(PROBE_STATUSES)


# Every facts snapshot among the fixtures; torch-builds/ holds recorded PyPI metadata for the build matrix's tests,
# gpu-runs/ what the GPU test recorded (NVML's facts and the probes' results, read by tests/e2e/test_probes_real.py).
FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*.json")
                       if not {"torch-builds", "gpu-runs"} & set(p.relative_to(FIXTURES).parts))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[str(p.relative_to(FIXTURES)) for p in FIXTURE_FILES])
def test_fixture_snapshots_are_valid(path: Path) -> None:
    """Every snapshot under tests/fixtures/ (schema 1, with top_level) validates against the schema and loads."""
    data = json.loads(path.read_text(encoding="utf-8"))
    FACTS_SCHEMA.validate(data)
    facts = collect_mod.load(str(path))
    assert facts.distributions and Facts.from_dict(facts.to_dict(), origin=facts.origin) == facts


def test_written_snapshot_is_the_current_schema(site: Path) -> None:
    """A snapshot written now carries the current schema number, validates, and has no top_level."""
    data = _collected(site).to_dict()
    assert data["schema"] == SCHEMA
    FACTS_SCHEMA.validate(data)
    assert all("top_level" not in d for d in data["distributions"])


def test_rule_case_snapshots_are_valid() -> None:
    """The snapshots built for every rule's cases (probes with cases, NVML devices, broken distributions) validate."""
    from test_rule_pack import CASES, _snapshot

    checked = 0
    for cases in CASES.values():
        for case in cases.values():
            FACTS_SCHEMA.validate(_snapshot(case).to_dict())
            checked += 1
    assert checked > 100

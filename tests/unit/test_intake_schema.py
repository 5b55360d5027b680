"""Schema 3's unknown markers: a report's snapshot round-trips and validates, older snapshots read as fully known,
and the shared condition and derivation code honours the markers."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from _fakes import dist_dict, facts_dict
from packaging.markers import Marker

import envcheck
from envcheck.derived.derive import Derived
from envcheck.facts.snapshot import Facts
from envcheck.sources.reports import read_report
from envcheck.support.versions import marker_holds

REPORTS = Path(__file__).parents[1] / "fixtures" / "reports"
SCHEMA = json.loads((Path(envcheck.__file__).parent / "schemas" / "facts.schema.json").read_text(encoding="utf-8"))


def test_report_snapshot_validates_and_round_trips() -> None:
    """A snapshot read from a report is valid under facts.schema.json and reads back equal through from_dict."""
    facts = read_report((REPORTS / "torch-2.6-rtx5090d.txt").read_bytes(), "r")
    data = json.loads(json.dumps(facts.to_dict()))
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    again = Facts.from_dict(data, origin=facts.origin)
    assert again == facts
    assert again.distributions[0].requires_known is False and again.distributions_complete is False


def test_schema_2_snapshot_reads_as_fully_known() -> None:
    """A schema 2 snapshot (no markers) reads as complete, with Requires-Dist known and nothing unknown."""
    data = facts_dict(dists=[dist_dict("numpy", "1.26.4")])
    data["schema"] = 2
    for key in ("distributions_complete", "unknown", "provenance"):
        data.pop(key, None)
    facts = Facts.from_dict(data)
    assert facts.distributions_complete and facts.unknown == () and facts.provenance == {}
    assert all(d.requires_known for d in facts.distributions)


@pytest.mark.parametrize(("marker", "env", "expected"), [
    pytest.param("sys_platform == 'linux'", {"sys_platform": "linux"}, True, id="stated-true"),
    pytest.param("sys_platform == 'win32'", {"sys_platform": "linux"}, False, id="stated-false"),
    pytest.param("sys_platform == 'linux'", {"python_version": "3.11"}, None, id="unstated"),
    pytest.param("python_version >= '3.8' and os_name == 'nt'", {"python_version": "3.11"}, None,
                 id="one-unstated"),
    pytest.param("extra == 'gpu'", {"extra": ""}, False, id="extra"),
    pytest.param("platform_machine == 'sys_platform'", {"platform_machine": "x86_64"}, False,
                 id="name-inside-quotes-is-a-value"),
])
def test_marker_holds_is_unknown_for_unstated_variables(marker: str, env: dict[str, str],
                                                        expected: bool | None) -> None:
    """A marker naming a variable the environment lacks is unknown, not evaluated for this interpreter."""
    assert marker_holds(Marker(marker), env) is expected


def test_requirement_walk_is_unknown_for_report_distributions() -> None:
    """With Requires-Dist unknown, the requirement facts are unknown rather than empty or all missing."""
    facts = read_report((REPORTS / "torch-1.4-gtx980.txt").read_bytes(), "r")
    derived = Derived(facts)
    assert derived.get("requirements.unsatisfied") is None
    assert derived.get("requirements.missing") is None
    assert derived.get("python.externally-managed") is None
    assert derived.get("distributions.partial-installs") is None
    assert derived.get("distributions.duplicates") is None
    assert derived.get("distributions.requires-python") is None

"""A hostile environment stays bounded: thousands of real .dist-info folders whose requirements are circular and
conflicting, with no RECORD (so that each is judged for what it left behind), are collected, checked and reported
in time linear in their number, and every report format stays small: a rule's items are listed up to a bound with
how many more there are, and the JSON report says what it cut.

Measured by hand at 50,000 such distributions (see the report of the change that added this file); the suite uses a
few thousand."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from _fakes import collect_facts, write_dist
from test_parse_bounds import RATIO, growth

import envcheck
from envcheck.report import render
from envcheck.report.json import MAX_ITEMS
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Report, Status

SCHEMA = json.loads((Path(envcheck.__file__).parent / "schemas" / "report.schema.json").read_text(encoding="utf-8"))


def hostile_site(site: Path, count: int) -> Path:
    """`count` distributions p0..p{count-1}: each requires the next one below its version and the one after above
    it (a circle of conflicts), one at its exact version, and one of 100 names nothing installs; none has RECORD."""
    site.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        write_dist(site, f"p{i}", "1.0", requires=[f"p{(i + 1) % count}<1.0", f"p{(i + 2) % count}>=2",
                                                   f"p{(i * 7) % count}==1.0", f"missing-{i % 100}>=1"])
    return site


def _checked(site: Path) -> Report:
    return evaluate(rule_pack.load(()), collect_facts(site))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return _checked(hostile_site(tmp_path_factory.mktemp("hostile") / "site-packages", 3000))


def test_every_item_is_found(hostile: Report) -> None:
    """Two conflicts and one missing requirement per distribution: all counted, whatever the reports show."""
    failing = [f for f in hostile.findings if f.status is Status.FAIL]
    assert sum(f.rule_id == "EC0101" for f in failing) == 6000
    assert sum(f.rule_id == "EC0102" for f in failing) == 3000
    assert hostile.counts()["fail"] == len(failing)


@pytest.mark.parametrize(("fmt", "limit", "listed"), [("text", 20_000, 10), ("markdown", 40_000, 50),
                                                      ("github", 40_000, 50), ("junit", 60_000, 50)])
def test_each_format_lists_a_bounded_part(hostile: Report, fmt: str, limit: int, listed: int) -> None:
    """The text, markdown, GitHub and JUnit reports list the first items of each rule, then how many more there
    are, and the why, fix and conflicts of a few items: thousands of items make tens of kilobytes, not megabytes."""
    out = render(hostile, fmt)
    assert len(out.encode()) < limit
    assert f"… and {6000 - listed} more" in out and f"… and {3000 - listed} more" in out
    assert "more fixes, one per item" in out


def test_the_json_report_says_what_it_cut(hostile: Report) -> None:
    """At most MAX_ITEMS findings of a rule and status; `cut` names the rest, `summary` counts every one, and the
    document is valid against the schema."""
    data = json.loads(render(hostile, "json"))
    jsonschema.validate(data, SCHEMA)
    conflicts = [f for f in data["findings"] if f["id"] == "EC0101"]
    assert len(conflicts) == MAX_ITEMS
    assert {"id": "EC0101", "status": "fail", "shown": MAX_ITEMS, "total": 6000} in data["cut"]
    assert {"id": "EC0102", "status": "fail", "shown": MAX_ITEMS, "total": 3000} in data["cut"]
    assert data["summary"]["fail"] == 9000 + sum(f["status"] == "fail" and f["id"] not in ("EC0101", "EC0102")
                                                 for f in data["findings"])


def test_a_small_report_cuts_nothing() -> None:
    data = json.loads(render(Report(findings=(), python="/x", origin="local", envcheck_version="0"), "json"))
    assert data["cut"] == []


@pytest.mark.timing
def test_collecting_and_reporting_a_hostile_environment_grows_linearly(tmp_path: Path) -> None:
    """Four times as many hostile distributions take well under sixteen times as long to collect, check and
    report in every format (each folder without RECORD read every other folder's top_level.txt: quadratic)."""
    def make(size: int) -> object:
        site = hostile_site(tmp_path / str(size) / "site-packages", size)

        def work() -> object:
            report = _checked(site)
            return [render(report, fmt) for fmt in ("text", "json", "markdown", "github", "junit")]
        return work

    assert growth(make, 400) < RATIO  # type: ignore[arg-type]

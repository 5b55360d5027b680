"""The engine: one verdict per rule (or per item), templates filled in for the checked interpreter."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from _fakes import build_facts, dist_dict

from envcheck import rule_pack
from envcheck.conditions import Condition, Context, Outcome
from envcheck.derived.tables import NO_TABLES
from envcheck.engine import evaluate
from envcheck.model import Finding, Report, Rule, Severity, Status
from envcheck.rule_pack import RulePack

EXE = "/opt/my envs/bin/python"


def make_rule(tmp_path: Path, body: str, *, rule_id: str = "EC9001", severity: str = "error") -> Rule:
    """One rule loaded from a real TOML file; `body` adds applies / when / foreach / texts."""
    text = (f'[[rule]]\nid = "{rule_id}"\nname = "rule-{rule_id.lower()}"\nseverity = "{severity}"\n'
            'why = "w"\nreferences = ["https://example.org/1"]\n' + body.rstrip("\n") + "\n")
    if "summary =" not in body:
        text += 'summary = "s"\n'
    if "fix =" not in body:
        text += 'fix = "f"\n'
    path = tmp_path / f"{rule_id}.toml"
    path.write_text(text, encoding="utf-8")
    [rule] = rule_pack.load_file(path).rules
    return rule


def pack(*rules: Rule) -> RulePack:
    """Hand-made rules as a pack: none of these tests' rules reads a data table."""
    return RulePack(rules, NO_TABLES)


FACTS = build_facts(dists=[dist_dict("torch", "2.5.1+cu124"), dist_dict("transformers", "4.46.0")],
                    python={"executable": EXE})


@pytest.mark.parametrize(
    ("body", "severity", "status", "missing"),
    [
        pytest.param('applies = { package = "apex" }\nwhen = { python = ">=3" }', "error", Status.NA, (),
                     id="applies-false"),
        pytest.param('applies = { module = "apex" }\nwhen = { python = ">=3" }', "error", Status.SKIPPED,
                     ("module apex (not looked up in this snapshot)",), id="applies-unknown"),
        pytest.param('when = { all = [ { python = ">=3" }, { module = "apex" } ] }', "error", Status.SKIPPED,
                     ("module apex (not looked up in this snapshot)",), id="when-unknown"),
        pytest.param('applies = { package = "torch" }\nwhen = { package = "torch<2.6" }', "error", Status.FAIL, (),
                     id="error-fails"),
        pytest.param('when = { package = "torch<2.6" }', "warning", Status.WARN, (), id="warning-warns"),
        pytest.param('when = { package = "torch<2.6" }', "info", Status.INFO, (), id="info-informs"),
        pytest.param('when = { package = "torch>=2.6" }', "error", Status.PASS, (), id="when-false-passes"),
        pytest.param('when = { all = [ { package = "torch>=2.6" }, { module = "apex" } ] }', "error", Status.PASS,
                     (), id="false-beats-unknown"),
        pytest.param('foreach = "requirements.missing"', "error", Status.PASS, (), id="foreach-empty-passes"),
    ],
)
def test_verdicts(tmp_path: Path, body: str, severity: str, status: Status, missing: tuple[str, ...]) -> None:
    """applies false -> n/a; unknown -> skipped naming the missing facts; when true -> per severity; false -> pass."""
    rule = make_rule(tmp_path, body, severity=severity)
    [finding] = evaluate(pack(rule), FACTS).findings
    assert (finding.rule_id, finding.status, finding.missing) == ("EC9001", status, missing)
    assert finding.severity is Severity(severity)


def test_finding_renders_templates_for_the_checked_interpreter(tmp_path: Path) -> None:
    """A finding's texts and commands are rendered with the checked interpreter and the installed versions."""
    rule = make_rule(tmp_path, 'when = { package = "torch<2.6" }\n'
                               'summary = "torch {torch.version} with transformers {transformers.version} on '
                               '{python.version}, CUDA {torch.cuda}, apex {apex.version}, {{literal}}"\n'
                               'commands = [["{python}", "-m", "pip", "install", "torch>={torch.version}"]]\n')
    facts = build_facts(dists=[dist_dict("torch", "2.5.1+cu124"), dist_dict("transformers", "4.46.0")],
                        python={"executable": EXE})
    [finding] = evaluate(pack(rule), facts).findings
    assert finding.summary == ("torch 2.5.1+cu124 with transformers 4.46.0 on 3.11.7, CUDA none, "
                               "apex (not installed), {literal}")
    assert finding.commands == ((EXE, "-m", "pip", "install", "torch>=2.5.1+cu124"),)
    assert (finding.why, finding.fix, finding.references) == ("w", "f", ("https://example.org/1",))


def test_foreach_gives_one_finding_per_item(tmp_path: Path) -> None:
    """A foreach rule gives one finding per item, each rendered with its own {item.KEY} values."""
    rule = make_rule(tmp_path, 'foreach = "requirements.missing"\n'
                               'summary = "{item.package} needs {item.requirement}"\n'
                               'commands = [["{python}", "-m", "pip", "install", "{item.requirement}"]]\n')
    facts = build_facts(dists=[dist_dict("b-pkg", "1.0", "zlib-ng>=2"), dist_dict("a-pkg", "2.0", "safetensors")],
                        python={"executable": EXE})
    findings = evaluate(pack(rule), facts).findings
    assert [(f.status, f.summary) for f in findings] == [(Status.FAIL, "a-pkg needs safetensors"),
                                                         (Status.FAIL, "b-pkg needs zlib-ng>=2")]
    assert findings[1].commands == ((EXE, "-m", "pip", "install", "zlib-ng>=2"),)
    assert findings[1].item is not None and findings[1].item["package"] == "b-pkg"


@dataclasses.dataclass(frozen=True)
class Boom:
    """A condition whose evaluation raises, as a rule over surprising data might."""

    def evaluate(self, ctx: Context) -> Outcome:
        raise ValueError("unexpected data")

    def leaves(self) -> Iterator[Condition]:
        yield self

    def describe(self) -> str:
        return "boom"


def test_rule_that_raises_is_an_error_verdict(tmp_path: Path) -> None:
    """A rule that raises while evaluated is an `error` verdict naming the exception; the others still run."""
    good = make_rule(tmp_path, 'when = { package = "torch<2.6" }', rule_id="EC9001")
    bad = dataclasses.replace(make_rule(tmp_path, 'when = { python = ">=3" }', rule_id="EC9002"), when=Boom())
    later = make_rule(tmp_path, 'when = { package = "torch>=2.6" }', rule_id="EC9003")
    report = evaluate(pack(later, bad, good), FACTS)
    assert [(f.rule_id, f.status) for f in report.findings] == [
        ("EC9001", Status.FAIL), ("EC9002", Status.ERROR), ("EC9003", Status.PASS)]
    assert report.findings[1].detail == "ValueError: unexpected data"


def test_report_carries_its_context(tmp_path: Path) -> None:
    """The report names the checked interpreter, where the facts came from, and the collection problems."""
    facts = build_facts(python={"executable": EXE}, problems=["listing distributions failed: x"])
    report = evaluate(pack(make_rule(tmp_path, 'when = { python = ">=3" }')), facts)
    assert (report.python, report.origin, report.collection_problems) == (
        EXE, "local", ("listing distributions failed: x",))


def _finding(rule_id: str, severity: Severity, status: Status) -> Finding:
    return Finding(rule_id=rule_id, name=rule_id.lower(), severity=severity, status=status, summary="s")


REPORT = Report(
    findings=(
        _finding("EC0001", Severity.ERROR, Status.FAIL), _finding("EC0002", Severity.WARNING, Status.WARN),
        _finding("EC0003", Severity.INFO, Status.INFO), _finding("EC0004", Severity.ERROR, Status.PASS),
        _finding("EC0005", Severity.ERROR, Status.SKIPPED), _finding("EC0006", Severity.ERROR, Status.ERROR),
        _finding("EC0007", Severity.WARNING, Status.NA),
    ),
    python=EXE, origin="local", envcheck_version="0.0.0",
)


@pytest.mark.parametrize(
    ("fail_on", "expected"),
    [
        pytest.param("error", ["EC0001"], id="error"),
        pytest.param("warning", ["EC0001", "EC0002"], id="warning"),
        pytest.param("info", ["EC0001", "EC0002", "EC0003"], id="info"),
        pytest.param("never", [], id="never"),
    ],
)
def test_at_or_above(fail_on: str, expected: list[str]) -> None:
    """--fail-on LEVEL fails on findings of that severity or worse; passes, skips and rule errors never fail."""
    assert [f.rule_id for f in REPORT.at_or_above(fail_on)] == expected


def test_counts_cover_every_status() -> None:
    """Report.counts() has one entry per status."""
    assert REPORT.counts() == {s.value: 1 for s in Status}


def test_foreach_over_an_unknown_fact_is_skipped_not_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A foreach rule whose derived list is unknown (None) is skipped naming the fact, never a vacuous pass."""
    from envcheck.derived import derive

    monkeypatch.setitem(derive.DERIVATIONS, "distributions.duplicates", derive.Derivation(
        "distributions.duplicates", "test", derive.DERIVATIONS["distributions.duplicates"].fields, lambda d: None))
    shipped = rule_pack.load()
    rule = next(r for r in shipped if r.foreach == "distributions.duplicates")
    report = evaluate(shipped.only([rule]), build_facts())
    assert [(f.status, f.missing) for f in report.findings] == [(Status.SKIPPED, ("fact distributions.duplicates",))]


@pytest.mark.parametrize(
    ("body", "summary"),
    [
        pytest.param('applies = { package = "apex" }\nwhen = { python = ">=3" }',
                     "does not apply here: applies when `apex` is installed", id="n/a"),
        pytest.param('when = { module = "apex" }', "not checked: needs module apex (not looked up in this snapshot)",
                     id="skipped"),
        pytest.param('when = { package = "torch>=2.6" }', "not found: fires when `torch>=2.6` is installed", id="pass"),
        pytest.param('foreach = "requirements.missing"', "not found: requirements.missing is empty", id="foreach-pass"),
    ],
)
def test_quiet_verdicts_say_why_in_their_summary(tmp_path: Path, body: str, summary: str) -> None:
    """A pass, n/a or skipped verdict's summary says in words why nothing was found, not the rule's name again."""
    [finding] = evaluate(pack(make_rule(tmp_path, body)), FACTS).findings
    assert finding.summary == summary


def test_error_verdict_summary_names_the_exception(tmp_path: Path) -> None:
    """A rule that raised has a summary saying so, with the exception, as the detail has it."""
    bad = dataclasses.replace(make_rule(tmp_path, 'when = { python = ">=3" }'), when=Boom())
    [finding] = evaluate(pack(bad), FACTS).findings
    assert finding.summary == "could not be evaluated: ValueError: unexpected data"


FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.mark.parametrize("fixture", ["clean-cuda-venv.json", "torchvision-pin-conflict.json"])
def test_evaluation_opens_no_file(fixture: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """evaluate() is pure: with every way of opening a file made to fail, the shipped pack (its data tables
    included) gives the same verdicts as with them, and none is a rule error."""
    import builtins
    import io
    import os

    from envcheck.facts import collect as collect_mod

    shipped = rule_pack.load()
    facts = collect_mod.load(str(FIXTURES / fixture))
    expected = evaluate(shipped, facts)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"evaluate() opened a file: {args[:1]}")

    for owner, name in ((builtins, "open"), (io, "open"), (os, "open"), (Path, "open")):
        monkeypatch.setattr(owner, name, refuse)
    with pytest.raises(AssertionError, match="opened a file"):
        Path(__file__).read_text(encoding="utf-8")  # the guard works
    report = evaluate(shipped, facts)
    assert report == expected
    assert [f.rule_id for f in report.findings if f.status is Status.ERROR] == []
    # The table-reading derivations really ran: the companion rules and the driver rule gave verdicts.
    table_rules = {r.id for r in shipped if r.foreach and r.foreach.startswith("companions.")}
    assert table_rules and all(f.status is not Status.SKIPPED for f in report.findings if f.rule_id in table_rules)

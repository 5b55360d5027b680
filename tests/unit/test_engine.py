"""The engine: one verdict per rule (or per item), templates filled in for the checked interpreter."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _crashes
import pytest
from _fakes import SITE, build_facts, dist_dict, nvml_dict

from envcheck.derived.tables import NO_TABLES
from envcheck.facts.observed import Observation
from envcheck.facts.project import ProjectFacts
from envcheck.facts.snapshot import Facts
from envcheck.rules import rule_pack
from envcheck.rules.conditions import Condition, Context, Outcome
from envcheck.rules.conditions.where import Where
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Finding, Report, Rule, Severity, Status
from envcheck.rules.rule_pack import RulePack
from envcheck.sources.logs.origin import Foreign

EXE = "/opt/my envs/bin/python"


def make_rule(tmp_path: Path, body: str, *, rule_id: str = "EC9001", severity: str = "error") -> Rule:
    """One rule loaded from a real TOML file; `body` adds applies / when / foreach / texts."""
    text = (f'[[rule]]\nid = "{rule_id}"\nname = "rule-{rule_id.lower()}"\nseverity = "{severity}"\n'
            'references = ["https://example.org/1"]\n')
    # The defaults come before the body, which may end in a [[rule.signatures]] table.
    text += "".join(f'{key} = "{value}"\n' for key, value in (("why", "w"), ("summary", "s"), ("fix", "f"))
                    if f"\n{key} =" not in f"\n{body}")
    text += body.rstrip("\n") + "\n"
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


@pytest.mark.evaluation_crash
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
    assert (report.installer, report.project) == ("pip (this snapshot does not record the installer)", "")


def test_report_names_the_project_and_its_files(tmp_path: Path) -> None:
    """The report's project line: its folder and every file read, in reading order."""
    project = ProjectFacts(root="/srv/app", name=None, files=("pyproject.toml", "requirements.txt"), requirements=(),
                           index_options=(), locks=())
    facts = dataclasses.replace(build_facts(), project=project)
    report = evaluate(pack(make_rule(tmp_path, 'when = { python = ">=3" }')), facts)
    assert report.project == "/srv/app: pyproject.toml, requirements.txt"


@pytest.mark.parametrize(
    ("body", "summary", "evidence"),
    [
        pytest.param('when = { all = [ { module = "b" }, { module = "a" }, { python = ">=3" } ] }',
                     "not checked: needs module a (not looked up in this snapshot); module b (not looked up in this "
                     "snapshot)", "", id="skipped-names-each-missing-fact-sorted"),
        pytest.param('applies = { first = [ { module = "a" }, { package = "torch" } ] }\n'
                     'when = { first = [ { package = "torch<2.6" } ] }',
                     "s", "`torch` is installed (instead of: module a (not looked up in this snapshot)); "
                     "`torch<2.6` is installed", id="applies-and-when-evidence-joined"),
        pytest.param('when = { package = "torch<2.6" }', "s", "", id="no-first-no-evidence"),
        pytest.param('applies = { all = [ { package = "torch" }, { any = [ { package = "apex" }, '
                     '{ package = "xformers" } ] } ] }\nwhen = { python = ">=3" }',
                     "does not apply here: applies when `torch` is installed and (`apex` is installed or `xformers` is "
                     "installed)", "", id="n/a-describes-a-combination"),
        pytest.param('when = { any = [ { package = "apex" }, { first = [ { module = "a" }, { package = "xformers" } '
                     '] } ] }', "not found: fires when `apex` is installed or (the first known of: module `a` is "
                     "importable; else `xformers` is installed)", "", id="pass-describes-a-combination"),
    ],
)
def test_verdict_summary_and_evidence(tmp_path: Path, body: str, summary: str, evidence: str) -> None:
    """The texts a verdict shows: what a skipped one lacked, what a n/a or pass one would need, and which parts of
    `first` decided a finding."""
    [finding] = evaluate(pack(make_rule(tmp_path, body)), FACTS).findings
    assert (finding.summary, finding.evidence) == (summary, evidence)


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


@pytest.mark.evaluation_crash
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

    from envcheck.sources.live import collect as collect_mod

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


# --- verdicts drawn from error output (Facts.observed) ---------------------------------------------------------------

SIGNATURE = '''
[[rule.signatures]]
anchor = "went wrong in"
pattern = 'went wrong in (?P<package>[a-z-]+)(?: with torch (?P<installed>[0-9.]+))?'
yields = { "torch.version" = "installed" }
source = "https://example.org/source"
thread = "https://example.org/thread"
example = "RuntimeError: went wrong in b-pkg with torch 2.5.1"
near_miss = "all went well in b-pkg"
'''


def _seen(*captures: dict[str, str], rule_id: str = "EC9001", signature: int = 0,
          facts: dict[str, str] | None = None) -> tuple[Observation, ...]:
    """Observations as envcheck.rules.signatures.scan makes them: one per matched line of log.txt."""
    return tuple(Observation(rule_id=rule_id, signature=signature, line=n, text=f"went wrong {n}",
                             captures=dict(c), facts=dict(facts or {}), source="log.txt")
                 for n, c in enumerate(captures, 1))


def _observed_finding(tmp_path: Path, body: str, seen: tuple[Observation, ...], facts: Facts = FACTS,
                      severity: str = "error") -> Finding:
    rule = make_rule(tmp_path, body + SIGNATURE, severity=severity)
    [finding] = evaluate(pack(rule), dataclasses.replace(facts, observed=seen)).findings
    return finding


@pytest.mark.parametrize(
    ("count", "evidence"),
    [
        pytest.param(1, "the error output shows it (log.txt, line 1: «went wrong 1»)", id="one"),
        pytest.param(3, "the error output shows it (log.txt, line 1: «went wrong 1»; log.txt, line 2: «went wrong 2»; "
                        "log.txt, line 3: «went wrong 3»)", id="three-all-shown"),
        pytest.param(4, "the error output shows it (log.txt, line 1: «went wrong 1»; log.txt, line 2: «went wrong 2»; "
                        "log.txt, line 3: «went wrong 3»; and 1 more)", id="four-one-more"),
        pytest.param(7, "the error output shows it (log.txt, line 1: «went wrong 1»; log.txt, line 2: «went wrong 2»; "
                        "log.txt, line 3: «went wrong 3»; and 4 more)", id="seven-four-more"),
    ],
)
def test_error_output_evidence_shows_three_lines_and_counts_the_rest(tmp_path: Path, count: int,
                                                                     evidence: str) -> None:
    """The evidence quotes the first three matched lines, where they are, and how many more there were."""
    body = 'summary = "s"\nfix = "f"\n'
    finding = _observed_finding(tmp_path, body, _seen(*[{"package": "a"}] * count))
    assert (finding.status, finding.observed, finding.evidence) == (Status.FAIL, True, evidence)


_TEXTS = ('summary = "driver {driver.version} broke"\nwhy = "driver {driver.version} lacks it"\n'
          'fix = "upgrade {driver.version}"\n')
_DRIVER = build_facts(nvml=nvml_dict())
_FALLBACK_FIX = ("The error output shows this failure but not the facts its usual fix names: `envcheck check` run in "
                 "the environment that printed it gives the fix for that environment.")
_OWN = '\nsummary = "{package} broke"\nwhy = "{package} lacks it"\nfix = "reinstall {package}"\n'


@pytest.mark.parametrize(
    ("body", "signature_texts", "facts", "summary", "why", "fix"),
    [
        pytest.param(_TEXTS, "", _DRIVER, "driver 550.54.15 broke", "driver 550.54.15 lacks it", "upgrade 550.54.15",
                     id="facts-state-the-rule-s-text"),
        pytest.param(_TEXTS, "", build_facts(), "rule ec9001: the error output shows it", "", _FALLBACK_FIX,
                     id="facts-do-not-state-it"),
        pytest.param('summary = "plain"\nwhy = "plain why"\nfix = "plain fix"\n', "", build_facts(), "plain",
                     "plain why", "plain fix", id="text-without-placeholders"),
        pytest.param(_TEXTS, _OWN, build_facts(), "b-pkg broke", "b-pkg lacks it", "reinstall b-pkg",
                     id="the-signature-s-own-text"),
        pytest.param(_TEXTS, _OWN, _DRIVER, "b-pkg broke", "b-pkg lacks it", "reinstall b-pkg",
                     id="the-signature-s-text-first"),
    ],
)
def test_error_output_finding_text(tmp_path: Path, body: str, signature_texts: str, facts: Facts, summary: str,
                                   why: str, fix: str) -> None:
    """A finding drawn from error output (a rule only error output shows) says what the signature says, else the
    rule's own text where the facts state every value it names, else a fallback that guesses nothing."""
    rule = make_rule(tmp_path, body + SIGNATURE + signature_texts)
    seen = _seen({"package": "b-pkg"})
    [finding] = evaluate(pack(rule), dataclasses.replace(facts, observed=seen)).findings
    assert (finding.summary, finding.why, finding.fix) == (summary, why, fix)
    assert (finding.status, finding.observed) == (Status.FAIL, True)


def test_error_output_of_an_unknown_signature_falls_back(tmp_path: Path) -> None:
    """An observation naming a signature the rule no longer has (a snapshot from an older pack) still makes the
    finding, with the rule's own text where it can and no severity claimed."""
    finding = _observed_finding(tmp_path, 'summary = "plain"\nfix = "f"\n', _seen({}, signature=1), severity="info")
    assert (finding.summary, finding.why, finding.fix) == ("plain", "w", "f")
    assert (finding.severity, finding.status) == (Severity.INFO, Status.INFO)


def test_only_the_rule_s_own_observations_count(tmp_path: Path) -> None:
    """A line another rule's signature matched is not this rule's evidence: without its own, an error-output rule
    is n/a, and says why."""
    finding = _observed_finding(tmp_path, 'summary = "s"\nfix = "f"\n', _seen({}, rule_id="EC9002"))
    assert (finding.status, finding.summary, finding.evidence) == (
        Status.NA, "shown only by error output (envcheck explain, check --report): none was given, or none showed it",
        "")


@pytest.mark.parametrize(
    ("rule_severity", "claimed", "severity", "status"),
    [
        pytest.param("info", "error", Severity.ERROR, Status.FAIL, id="info-raised-to-error"),
        pytest.param("info", "warning", Severity.WARNING, Status.WARN, id="info-raised-to-warning"),
        pytest.param("warning", "info", Severity.WARNING, Status.WARN, id="never-lowered"),
        pytest.param("warning", "", Severity.WARNING, Status.WARN, id="none-claimed"),
    ],
)
def test_error_output_raises_the_severity_its_signature_claims(tmp_path: Path, rule_severity: str, claimed: str,
                                                               severity: Severity, status: Status) -> None:
    """The message shows the failure happened: the finding is as severe as its signature says, never less than the
    rule's own severity."""
    signature = f'severity = "{claimed}"\n' if claimed else ""
    rule = make_rule(tmp_path, 'summary = "s"\nfix = "f"\n' + SIGNATURE + signature, severity=rule_severity)
    [finding] = evaluate(pack(rule), dataclasses.replace(FACTS, observed=_seen({}, {}))).findings
    assert (finding.severity, finding.status) == (severity, status)


def test_error_output_adds_to_a_finding_the_facts_give(tmp_path: Path) -> None:
    """A rule the facts already fire keeps its own text and evidence; the error output's lines come first."""
    body = ('when = { first = [ { module = "apex" }, { package = "torch<2.6" } ] }\n'
            'summary = "torch {torch.version} is old"\nfix = "f"\n')
    finding = _observed_finding(tmp_path, body, _seen({"package": "x"}))
    assert (finding.summary, finding.observed) == ("torch 2.5.1+cu124 is old", True)
    assert finding.evidence == ("the error output shows it (log.txt, line 1: «went wrong 1»); `torch<2.6` is installed "
                                "(instead of: module apex (not looked up in this snapshot))")


def test_error_output_fires_a_rule_the_facts_pass(tmp_path: Path) -> None:
    """The failure happened: a rule whose `when` this environment's facts answer false is still a finding from the
    text, told as the output's (the rule's own text would state it of this environment) and with no command."""
    finding = _observed_finding(tmp_path, 'when = { package = "torch>=2.6" }\nsummary = "s"\nfix = "f"\n'
                                          'commands = [["{python}", "-m", "pip", "install", "torch>=2.6"]]\n',
                                _seen({"package": "x"}))
    assert (finding.status, finding.summary, finding.fix, finding.commands) == (
        Status.FAIL, "rule ec9001: the error output shows it", _FALLBACK_FIX, ())
    assert finding.evidence == (
        "the error output shows it (log.txt, line 1: «went wrong 1»); judged on what the error output states alone "
        "(this environment's facts say otherwise: not found: fires when `torch>=2.6` is installed)")


_FOREACH = ('foreach = "requirements.missing"\nsummary = "{item.package} needs torch {item.installed}"\n'
            'fix = "reinstall it"\n'
            'commands = [["{python}", "-m", "pip", "install", "{item.package}=={item.installed}"]]\n')


@pytest.mark.parametrize(
    ("captures", "facts", "summary", "fix", "commands", "item"),
    [
        pytest.param({"package": "b-pkg", "installed": "2.5"}, {}, "b-pkg needs torch 2.5", "reinstall it",
                     ((EXE, "-m", "pip", "install", "b-pkg==2.5"),), {"package": "b-pkg", "installed": "2.5"},
                     id="the-text-states-every-value"),
        pytest.param({"package": "b-pkg", "installed": "2.5"}, {"torch.version": "2.5.0"}, "b-pkg needs torch 2.5.0",
                     "reinstall it", ((EXE, "-m", "pip", "install", "b-pkg==2.5.0"),),
                     {"package": "b-pkg", "installed": "2.5.0"}, id="a-yielded-fact-beats-its-capture"),
        pytest.param({"package": "b-pkg"}, {}, "rule ec9001: the error output shows it", "reinstall it", (),
                     {"package": "b-pkg", "installed": ""}, id="an-unstated-value-is-not-guessed"),
    ],
)
def test_error_output_of_a_foreach_rule_names_its_item(tmp_path: Path, captures: dict[str, str],
                                                       facts: dict[str, str], summary: str, fix: str,
                                                       commands: tuple[tuple[str, ...], ...],
                                                       item: dict[str, str]) -> None:
    """With no item in the facts (a pasted report names no missing requirement), the error output's captures are
    the item: its text and commands are written where they state every value they name, and nothing is guessed."""
    pasted = dataclasses.replace(FACTS, origin="report:log.txt")  # a pasted report's facts: nothing to weigh
    finding = _observed_finding(tmp_path, _FOREACH, _seen(captures, facts=facts), facts=pasted)
    assert (finding.summary, finding.fix, finding.commands) == (summary, fix, commands)
    assert finding.item is not None
    assert {k: v for k, v in finding.item.items() if v or k in item} == item
    assert set(finding.item) == {"package", "package_version", "requirer", "via", "requirement", "dependency",
                                 "specifier", "installed", "kind"}


@dataclasses.dataclass(frozen=True)
class BadData:
    """A condition whose data turns out unusable when evaluated: a legitimate rule error, not a crash."""

    def evaluate(self, ctx: Context) -> Outcome:
        raise Where("rules/x.toml", "EC9003", "when").error("no such row")

    def leaves(self) -> Iterator[Condition]:
        yield self

    def describe(self) -> str:
        return "bad data"


@pytest.mark.evaluation_crash
def test_the_suite_fails_a_test_whose_evaluation_crashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/_crashes.py: a rule that raises an exception other than an EnvcheckError is recorded (and its test
    fails at the end unless marked evaluation_crash); a RuleError from bad data is only the rule's error verdict."""
    crashes = _crashes.watch(monkeypatch)
    crashing = dataclasses.replace(make_rule(tmp_path, "when = { python = \">=3\" }", rule_id="EC9002"), when=Boom())
    bad_data = dataclasses.replace(make_rule(tmp_path, "when = { python = \">=3\" }", rule_id="EC9003"), when=BadData())
    report = evaluate(pack(crashing, bad_data), FACTS)
    assert [(f.rule_id, f.status, f.detail) for f in report.findings] == [
        ("EC9002", Status.ERROR, "ValueError: unexpected data"),
        ("EC9003", Status.ERROR, "RuleError: rules/x.toml: rule EC9003: key 'when': no such row")]
    assert len(crashes) == 1 and crashes[0].startswith("rule EC9002: Traceback")
    assert crashes[0].rstrip().endswith("ValueError: unexpected data")
    for marker, fails in ((None, True), (pytest.mark.evaluation_crash, False)):
        node = types.SimpleNamespace(get_closest_marker=lambda name, m=marker: m)
        watching = _crashes.no_crash(types.SimpleNamespace(node=node), monkeypatch)  # a request's one part it reads
        next(watching)
        evaluate(pack(crashing, bad_data), FACTS)
        if fails:
            with pytest.raises(pytest.fail.Exception, match=r"evaluate\(\) crashed on 1 rule\(s\)"):
                next(watching)
        else:
            with pytest.raises(StopIteration):
                next(watching)


def test_only_the_matched_signature_claims_a_severity(tmp_path: Path) -> None:
    """Of a rule's signatures, only the one that matched raises the severity: a line the first (severity-less)
    signature matched leaves the rule at its own severity, though the second claims `error`."""
    second = SIGNATURE.replace("went wrong in", "broke down in") + 'severity = "error"\n'
    rule = make_rule(tmp_path, 'summary = "s"\nfix = "f"\n' + SIGNATURE + second, severity="info")
    assert [s.severity for s in rule.signatures] == ["", "error"]
    for index, severity in ((0, Severity.INFO), (1, Severity.ERROR)):
        [finding] = evaluate(pack(rule), dataclasses.replace(FACTS, observed=_seen({}, signature=index))).findings
        assert finding.severity is severity, index


@pytest.mark.parametrize(
    ("when", "evidence"),
    [
        pytest.param('when = { python = ">=3" }', ["probe: sm_90 missing", "table: sm_80 covered"],
                     id="each-item-s-own"),
        pytest.param('when = { first = [ { python = ">=3" } ] }', ["Python `>=3`", "Python `>=3`"],
                     id="the-rule-s-first-comes-first"),
    ],
)
def test_an_item_names_what_decided_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str,
                                       evidence: list[str]) -> None:
    """An item of a foreach rule may say which facts decided it (a probe's answer, else a table's): that is the
    finding's evidence, unless the rule's own `first` decided."""
    from envcheck.derived import derive

    name = "gpu.devices-not-in-build"
    fields = derive.DERIVATIONS[name].fields
    items = [{**dict.fromkeys(fields, "x"), "evidence": text} for text in ("probe: sm_90 missing",
                                                                            "table: sm_80 covered")]
    monkeypatch.setitem(derive.DERIVATIONS, name, derive.Derivation(name, "test", fields, lambda d: items))
    rule = make_rule(tmp_path, f'foreach = "{name}"\n{when}\n')
    assert [f.evidence for f in evaluate(pack(rule), FACTS).findings] == evidence


def test_what_must_be_done_by_hand_follows_the_fix(tmp_path: Path) -> None:
    """Where a command cannot run as the rule wrote it (pip cannot uninstall a copy without a RECORD), the finding's
    fix goes on to say what is done instead, after one space."""
    files = [f"{SITE}/apex-0.1.dist-info", f"{SITE}/apex"]
    apex = dist_dict("apex", "0.1", unrecorded="its RECORD is empty", files_by_name=files)
    facts = build_facts(dists=[apex], python={"executable": EXE})
    rule = make_rule(tmp_path, 'when = { package = "apex" }\nfix = "Remove apex."\n'
                               'commands = [["{python}", "-m", "pip", "uninstall", "-y", "apex"]]\n')
    [finding] = evaluate(pack(rule), facts).findings
    assert finding.commands == (("rm", "-rf", *files),)
    assert finding.fix.startswith("Remove apex. pip and uv cannot uninstall apex 0.1 in ")


@pytest.mark.parametrize(
    ("when", "log_dists", "verdicts"),
    [
        pytest.param('when = { package = "torch>=2.6" }', [], [(Status.FAIL, True)], id="here-it-passes"),
        pytest.param('when = { package = "torch<2.6" }', [], [(Status.FAIL, True), (Status.FAIL, False)],
                     id="here-it-fires-too"),
        pytest.param('when = { package = "torch<2.6" }', [dist_dict("torch", "2.4.0")],
                     [(Status.FAIL, True), (Status.FAIL, False)], id="the-log-s-facts-fire-it-too"),
    ],
)
def test_a_log_of_another_environment_is_judged_on_its_own_facts(tmp_path: Path, when: str,
                                                                 log_dists: list[dict[str, Any]],
                                                                 verdicts: list[tuple[Status, bool]]) -> None:
    """Error output not tied to the checked environment (`foreign`): what it shows is a finding of the log, judged
    on the log's facts, with no command, and says so; this environment's own verdict follows where it is a finding."""
    rule = make_rule(tmp_path, f'{when}\nsummary = "s"\nfix = "f"\n'
                               'commands = [["{python}", "-m", "pip", "install", "torch>=2.6"]]\n' + SIGNATURE)
    log = dataclasses.replace(build_facts(dists=log_dists),
                              observed=_seen({"package": "x"}) + tuple(dataclasses.replace(o, line=7, text="another's")
                                                                       for o in _seen({}, rule_id="EC9002")))
    report = evaluate(pack(rule), FACTS, foreign=Foreign(log, "its paths name another environment"))
    assert [(f.status, f.observed) for f in report.findings] == verdicts
    from_log = report.findings[0]
    assert from_log.commands == ()
    assert from_log.evidence == ("the error output shows it (log.txt, line 1: «went wrong 1»); judged on what the "
                                 "error output states alone (its paths name another environment)")
    assert all(f.commands for f in report.findings[1:])


@pytest.mark.parametrize(
    ("general_lines", "shown"),
    [
        pytest.param((1,), ["EC9001"], id="the-facts-confirm-the-only-line"),
        pytest.param((1, 2), ["EC9001", "EC9002"], id="a-line-left-unexplained"),
    ],
)
def test_a_line_the_facts_confirm_is_not_read_generally_too(tmp_path: Path, general_lines: tuple[int, ...],
                                                            shown: list[str]) -> None:
    """A message with several causes (`decides = false`) is one rule's failure where that rule's facts fire it;
    the error-output-only rule that reads the same lines as "one of several causes" then has nothing left to say,
    unless it read a line the facts did not confirm."""
    specific = make_rule(tmp_path, 'when = { package = "torch<2.6" }\nsummary = "s"\nfix = "f"\n' + SIGNATURE
                         + "decides = false\n", rule_id="EC9001")
    general = make_rule(tmp_path, 'summary = "s"\nfix = "f"\n' + SIGNATURE, rule_id="EC9002")
    seen = _seen({}) + tuple(dataclasses.replace(o, line=n) for n in general_lines
                             for o in _seen({}, rule_id="EC9002"))
    report = evaluate(pack(specific, general), dataclasses.replace(FACTS, observed=seen))
    assert [f.rule_id for f in report.findings if f.status.is_finding] == shown
    assert all(f.observed for f in report.findings)


def test_a_message_with_several_causes_needs_the_facts(tmp_path: Path) -> None:
    """A signature with `decides = false` shows this rule's failure only where the facts fire the rule: where they
    do not, the rule is judged as if no line had been given."""
    rule = make_rule(tmp_path, 'when = { package = "torch>=2.6" }\nsummary = "s"\nfix = "f"\n' + SIGNATURE
                     + "decides = false\n")
    [finding] = evaluate(pack(rule), dataclasses.replace(FACTS, observed=_seen({}))).findings
    assert (finding.status, finding.observed, finding.evidence) == (Status.PASS, False, "")

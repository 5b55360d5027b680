"""Error signatures: each matches the real text it cites and not its near miss, the loader refuses a broken one, the
scan stays linear in its input, and a recognised line becomes its rule's finding, with the line as evidence."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any

import pytest
from _fakes import build_facts
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.errors import RuleError
from envcheck.rules.bounded import MAX_PATHS, Unbounded, paths
from envcheck.rules.conditions.where import Where
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Status
from envcheck.rules.rule_pack import load
from envcheck.rules.signatures import MAX_AFTER, MAX_BEFORE, MAX_LINE, MAX_TEXT, Signature, parse_signatures, scan

PACK = load(())
SIGNATURES = [s for rule in PACK for s in rule.signatures]


def test_the_pack_has_signatures() -> None:
    """The built-in pack declares error signatures (a count that only goes up)."""
    assert len(SIGNATURES) >= 1


@pytest.mark.parametrize("signature", SIGNATURES, ids=[f"{s.rule_id}-{s.index}" for s in SIGNATURES])
def test_each_signature_matches_its_example_and_not_its_near_miss(signature: Signature) -> None:
    """A signature recognises the real text it cites, states what it yields from it, and ignores its near miss."""
    seen = [o for o in scan(signature.example, SIGNATURES) if o.rule_id == signature.rule_id]
    assert seen and seen[0].signature == signature.index
    assert set(signature.yields) <= set(seen[0].facts)
    assert not [o for o in scan(signature.near_miss, [signature])]


def _raw(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "anchor": "went wrong", "pattern": r"the (?P<thing>\w+) went wrong", "source": "https://example.org/src#L1",
        "thread": "https://example.org/issues/1", "example": "Error: the engine went wrong",
        "near_miss": "it went wrong",
    }
    raw.update(changes)
    return {k: v for k, v in raw.items() if v is not None}


@pytest.mark.parametrize(
    ("changes", "key", "message"),
    [
        pytest.param({"pattern": r"the ((\w+)+) went wrong"}, "pattern", "exponential", id="nested-quantifier"),
        pytest.param({"pattern": r"(?P<thing>\w+) (?P=thing) went wrong"}, "pattern", "backreference", id="backref"),
        # issue 33: this one loaded, then took over a minute on a 54-byte line
        pytest.param({"pattern": r"the (?:\w|\w\w)* went wrong"}, "pattern", "exponential", id="overlapping-branches"),
        pytest.param({"pattern": r"the (?:\w{1,9} ?)+ went wrong"}, "pattern", "exponential", id="ambiguous-group"),
        pytest.param({"pattern": r"the (?:e?)* ?\w+ went wrong"}, "pattern", "match nothing", id="empty-repeat"),
        pytest.param({"pattern": r".*the.*(?P<thing>\w+) went wrong"}, "pattern", "ways", id="polynomial"),
        pytest.param({"pattern": r"(?i)the (?P<thing>\w+) went wrong"}, "pattern", "(?i:...)", id="global-flags"),
        pytest.param({"pattern": r"the (?P<_envcheck_match>\w+) went wrong"}, "pattern", "scan's own", id="our-group"),
        pytest.param({"pattern": "the ( went wrong"}, "pattern", "not a regular expression", id="bad-regex"),
        pytest.param({"pattern": "a{4294967296} went wrong"}, "pattern", "not a regular expression", id="huge-count"),
        pytest.param({"pattern": "(?:" * 2000 + "went wrong" + ")" * 2000}, "pattern", "deep", id="deep-groups"),
        pytest.param({"example": "all is well"}, "example", "does not match its own example", id="example-missed"),
        pytest.param({"near_miss": "the engine went wrong"}, "near_miss", "matches its near miss", id="near-miss"),
        pytest.param({"yields": {"gpu.colour": "thing"}}, "yields.gpu.colour", "unknown fact", id="unknown-fact"),
        pytest.param({"yields": {"gpu.name": "other"}}, "yields.gpu.name", "no group", id="no-such-group"),
        pytest.param({"yields": {"driver.cuda": "thing"}}, "yields.driver.cuda", "does not state", id="not-stated"),
        pytest.param({"summary": "{other} broke"}, "summary", "no group", id="summary-group"),
        pytest.param({"source": "http://example.org"}, "source", "https://", id="not-https"),
        pytest.param({"thread": None}, "thread", "required", id="no-thread"),
        pytest.param({"lines": 9}, "lines", "0 to", id="too-many-lines"),
        pytest.param({"colour": "red"}, "colour", "unknown key", id="unknown-key"),
    ],
)
def test_a_broken_signature_is_one_rule_error(changes: dict[str, Any], key: str, message: str) -> None:
    """Each way a signature can be wrong is refused where it is loaded, naming the rule and the key."""
    with pytest.raises(RuleError) as caught:
        parse_signatures([_raw(**changes)], "EC9000", Where("rules/x.toml", "EC9000", "signatures"))
    assert f"signatures.0.{key}" in str(caught.value) and message in str(caught.value)


def test_a_foreach_rule_s_signature_brings_its_own_fix() -> None:
    """Where the rule's fix names what only facts know ({item.*}), a signature must say the fix without them."""
    with pytest.raises(RuleError, match=r"fix.*required"):
        parse_signatures([_raw()], "EC9000", Where("f", "EC9000", "signatures"), rule_fix="Install {item.x}.")
    parse_signatures([_raw(fix="Replace the {thing}.")], "EC9000", Where("f", "EC9000", "signatures"),
                     rule_fix="Install {item.x}.")


def _timed(text: str) -> float:
    """The fastest of three scans of `text`: on a shared machine, a pause taken by another process is noise that the
    fastest run leaves out (the scan takes milliseconds here, as long as one such pause)."""
    times = []
    for _ in range(3):
        begun = time.perf_counter()
        scan(text, SIGNATURES)
        times.append(time.perf_counter() - begun)
    return min(times)


_COUNTER = iter(range(10**9))


@pytest.mark.parametrize("line", [
    pytest.param(lambda s: s.anchor, id="anchors"),
    # issue 32: every line a recognised message, each line different (no window is answered from memory)
    pytest.param(lambda s: f"{next(_COUNTER)} {s.example.replace(chr(10), ' ')}", id="recognised-each-different"),
    pytest.param(lambda s: ("/python3.1/site-packages/torch/ " * 10) + s.anchor + f" {next(_COUNTER)}",
                 id="prefix-of-path-pieces"),
    pytest.param(lambda s: " " * 3000 + s.anchor + " " * 3000, id="long-lines"),
    pytest.param(lambda s: (s.example.replace("\n", " ") + " ") * 20, id="examples-run-together"),
    pytest.param(lambda s: "x" * 900 + s.anchor, id="anchor-after-a-long-word"),
])
@pytest.mark.timing
def test_the_scan_is_linear_in_its_input(line: Any) -> None:
    """Hostile logs (every anchor on every line, very long lines, examples run together) cost time in proportion to
    their size: four times the text takes well under sixteen times as long."""
    unit = "\n".join(line(s) for s in SIGNATURES) + "\n"
    small = unit * max(1, 100_000 // len(unit))
    large = small * 4
    _timed(small)  # warm the regex caches
    assert _timed(large) < 10 * max(_timed(small), 0.002)


@pytest.mark.timing
def test_one_repeated_warning_costs_one_match() -> None:
    """A log of one recognised warning repeated (issue 32: 8 MB took 25 s) is matched once: four times the log takes
    about four times as long, not more, and every copy is recognised."""
    rule = next(r for r in PACK if r.id == "EC0401")
    unit = rule.signatures[0].example.replace("UserWarning:\n", "UserWarning: ", 1).rstrip("\n") + "\n"
    small = unit * (200_000 // len(unit))
    _timed(small)
    assert _timed(small * 4) < 10 * max(_timed(small), 0.002)
    assert len(scan(small, SIGNATURES)) >= small.count("\n") // 3


@pytest.mark.timing
def test_a_megabyte_log_scans_in_well_under_a_second() -> None:
    """A 1 MB log of ordinary lines with every signature's example somewhere in it reads in well under a second."""
    filler = "INFO step 1200/5000 loss=0.4312 lr=3e-05 grad_norm=1.02 tokens/s=18234\n" * 15_000
    text = filler + "\n".join(s.example for s in SIGNATURES)
    assert len(text) > 1_000_000
    begun = time.perf_counter()
    seen = scan(text, SIGNATURES)
    assert time.perf_counter() - begun < 1.0
    assert {(o.rule_id, o.signature) for o in seen} >= {(s.rule_id, s.index) for s in SIGNATURES}


def _observed(rule_id: str, text: str) -> Any:
    rule = next(r for r in PACK if r.id == rule_id)
    return scan(text, rule.signatures, source="log.txt")


def test_a_recognised_line_is_its_rule_s_finding_when_the_facts_cannot_say() -> None:
    """With no torch and no GPU in the facts, the sm_XX warning still makes EC0401 fail, from the text: the line is
    the evidence, the GPU and the build's architectures come from it, and no command is guessed."""
    rule = next(r for r in PACK if r.id == "EC0401")
    seen = _observed("EC0401", rule.signatures[0].example)
    facts = dataclasses.replace(build_facts(), observed=tuple(seen))
    (finding,) = [f for f in evaluate(PACK.only([rule]), facts).findings]
    assert finding.status is Status.FAIL
    assert "sm_120" in finding.summary and "sm_90" in finding.summary
    assert "log.txt, line 2" in finding.evidence
    assert finding.commands == ()
    assert "sm_120" in finding.fix


def test_the_facts_decide_and_the_line_is_added_as_evidence(tmp_path: Path) -> None:
    """When the stated facts make the rule fire (collect_env names torch 2.5.1+cu124; the warning names the GPU and
    the build's architectures), the finding is the facts' own, and the recognised line joins its evidence."""
    rule = next(r for r in PACK if r.id == "EC0401")
    report = tmp_path / "issue.md"
    report.write_text("PyTorch version: 2.5.1+cu124\nIs debug build: False\nCUDA used to build PyTorch: 12.4\n"
                      "OS: Ubuntu 22.04.4 LTS (x86_64)\n\n" + rule.signatures[0].example, encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--report", str(report), "--select", "EC0401"])
    assert result.exit_code == 1, result.output
    flat = " ".join(result.output.split())
    assert "GPU 0 (NVIDIA GeForce RTX 5090, compute capability 12.0) has no kernels in torch 2.5.1+cu124" in flat
    assert "the error output shows it" in flat and "the torch-build probe's arch list" in flat


def test_an_evidence_only_rule_is_not_applicable_without_error_output() -> None:
    """A rule that only error output can show is n/a in a check that was given none: never a pass."""
    rules = [r for r in PACK if r.evidence_only]
    if not rules:
        pytest.skip("no evidence-only rule in the pack yet")
    report = evaluate(PACK.only(rules), build_facts())
    assert {f.status for f in report.findings} == {Status.NA}


def test_error_output_alone_is_a_report(tmp_path: Path) -> None:
    """`check --report` of a file holding only torch's warning recognises it (no longer 'nothing recognised'),
    fails EC0401 and names the line it read."""
    rule = next(r for r in PACK if r.id == "EC0401")
    report = tmp_path / "issue.md"
    report.write_text(f"It crashes on my new card:\n\n```\n{rule.signatures[0].example}\n```\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--report", str(report), "--select", "EC0401"])
    assert result.exit_code == 1, result.output
    assert "EC0401's error message at line 5" in result.output
    assert "RTX 5090" in result.output


def test_a_signature_can_say_the_failure_is_worse_than_its_rule_guesses(tmp_path: Path) -> None:
    """EC0203 is info from a version range (the project may never compile); Dynamo's RuntimeError in the output
    shows it does, so the finding is an error, and the report names no 'nothing recognised' problem."""
    report = tmp_path / "trace.txt"
    report.write_text('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
                      "RuntimeError: Dynamo is not supported on Python 3.13+\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--report", str(report), "--select", "EC0203"])
    assert result.exit_code == 1, result.output
    assert "✗ EC0203" in result.output and "[error]" in result.output
    assert "could not collect everything" not in result.output
    with pytest.raises(RuleError, match="severity"):
        parse_signatures([_raw(severity="fatal")], "EC9000", Where("f", "EC9000", "signatures"))


def test_what_the_error_output_shows_comes_first() -> None:
    """Of two failures, the one the error output shows is listed first, whatever its rule id: it is what was asked
    about (envcheck explain, an issue body's traceback); the rest of the check follows in the usual order."""
    from envcheck.report.common import problems
    from envcheck.rules.model import Finding, Report, Severity

    def failing(rule_id: str, observed: bool) -> Finding:
        return Finding(rule_id=rule_id, name="x", severity=Severity.ERROR, status=Status.FAIL, summary="s",
                       observed=observed)

    report = Report(findings=(failing("EC0101", False), failing("EC1701", True)), python="p", origin="o",
                    envcheck_version="0")
    assert [f.rule_id for f in problems(report)] == ["EC1701", "EC0101"]
    plain = dataclasses.replace(report, findings=(failing("EC0101", False), failing("EC1701", False)))
    assert [f.rule_id for f in problems(plain)] == ["EC0101", "EC1701"]


def test_a_signature_can_require_two_captures_to_differ() -> None:
    """xformers built for torch 2.0.1 when torch 2.0.1 runs it (a CUDA xformers on a Mac) is not "built for another
    torch": EC0701's signature requires the two versions to differ, and says nothing rather than the wrong cause."""
    rule = next(r for r in PACK if r.id == "EC0701")
    same = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 2.0.1 with CUDA 1106 (you have 2.0.1)\n    Python  3.9.16 (you have 3.9.16)\n")
    assert scan(same, rule.signatures) == []
    assert scan(same.replace("(you have 2.0.1)", "(you have 2.1.0)"), rule.signatures)
    with pytest.raises(RuleError, match="differ"):
        parse_signatures([_raw(differ=["thing"])], "EC9000", Where("f", "EC9000", "signatures"))


def _reference(text: str, signatures: list[Signature]) -> list[tuple[int, str, int, str, dict[str, str]]]:
    """What a signature recognises, found the plain way: every line holding its anchor, the window cut as the module
    says, and the pattern tried at each start up to the anchor, in a Python loop. The scan must find the same."""
    lines = text.split("\n")
    found = []
    for order, signature in enumerate(signatures):
        for number, line in enumerate(lines):
            at = line.find(signature.anchor)
            if at < 0:
                continue
            first = max(0, at - MAX_BEFORE)
            window = "\n".join([line[first:at + MAX_AFTER].rstrip("\r")]
                               + [x[:MAX_LINE].rstrip("\r") for x in lines[number + 1:number + 1 + signature.lines]])
            match = next((m for pos in range(at - first + 1) if (m := signature.pattern.match(window, pos))), None)
            if match is None:
                continue
            captures = {k: v.strip() for k, v in match.groupdict().items() if v is not None}
            if signature.differ and captures.get(signature.differ[0]) == captures.get(signature.differ[1]):
                continue
            text_seen = " ".join(part.strip() for part in match[0].splitlines() if part.strip())
            found.append((number + 1, order, signature.rule_id, signature.index, text_seen[:MAX_TEXT - 1], captures))
    return [entry[:1] + entry[2:] for entry in sorted(found, key=lambda e: e[:2])]


def _mixed_log() -> str:
    """Real threads (the corpus), every example and near miss, and each anchor at the end of a long prefix or with
    CRLF endings: the inputs where a faster scan could part from the plain one."""
    corpus = Path(__file__).parents[1] / "fixtures" / "corpus"
    threads = [p.read_text(encoding="utf-8").partition("\n+++\n")[2] for p in sorted(corpus.glob("[0-9]*.md"))]
    return "\n".join([*threads, *(s.example for s in SIGNATURES), *(s.near_miss for s in SIGNATURES),
                      *("x" * 400 + s.example for s in SIGNATURES), *(s.example.replace("\n", "\r\n") for s in
                                                                      SIGNATURES)] * 2)


def test_what_the_scan_forgets_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """With room to remember almost no window, the scan finds the same: memory bounds the cost, never the answer."""
    import envcheck.rules.signatures as signatures

    text = _mixed_log()
    want = scan(text, SIGNATURES)
    monkeypatch.setattr(signatures, "MAX_REMEMBERED", 3000)
    assert scan(text, SIGNATURES) == want


def test_the_scan_finds_what_the_plain_loop_finds() -> None:
    """One pass for each anchor, the starts tried in one call and repeated windows answered from memory change
    nothing: on real threads and every signature's texts, the scan finds what the plain loop over lines and starts
    finds, line for line and capture for capture (twice over: the second copy is answered from memory)."""
    text = _mixed_log()
    seen = [(o.line, o.rule_id, o.signature, o.text[:MAX_TEXT - 1], o.captures) for o in scan(text, SIGNATURES)]
    want = _reference(text, SIGNATURES)
    assert len(seen) > 1000
    assert seen == want


@pytest.mark.parametrize(("pattern", "refused"), [
    (r"(?P<name>[^\n:]{1,120}?) with CUDA capability sm_(?P<cc>\d+)", ""),
    (r"capabilities (?:(?:sm|compute)_[3-7]\d ){0,12}(?:sm|compute)_[3-7]\d(?![ \w])", ""),
    (r"(?:[^\n]{0,200}?python(?P<python>3\.\d{1,2})/(?:site|dist)-packages/torch/[^\n]{0,60}?: UserWarning: )?x", ""),
    (r"version (?P<v>\d+(?:\.\d+){0,3})\b", ""),
    # words that share their first letters, none the start of another: one at most matches where they stand
    (r"load: (?P<p>[^\n]{0,300}?[\\/](?:torchaudio|torchvision|torch_scatter|pyg_lib)[\\/][^\n]{0,120}?\.so)", ""),
    (r"(?:\w|\w\w)*x", "more than one way"),
    (r"(a+)+x", "more than one way"),
    (r"(?:ab|a|b)*x", "more than one way"),
    (r"(?:a?)*x", "match nothing"),
    (r"\w*\w*x", "ways"),
    (r"\w{0,500}(?:\w{0,500}z)", "ways"),  # the inner repetition is tried for each length of the outer one
    (r"[^\n]{0,2000}?a[^b\n]{0,2000}b", "steps"),  # few ways, but each reads the rest of the line again
    (r"[^\n]*:[^\n]*:[^\n]*;", "ways"),
    (r"(\w+) \1", "back"),
])
def test_the_bound_refuses_what_can_explode_and_keeps_what_cannot(pattern: str, refused: str) -> None:
    """The shapes the shipped pack uses (a bounded prefix before a literal, an unambiguous repeated group, a
    version's dotted parts) have a bound; a repetition of an ambiguous part and repetitions that can split a line
    in millions of ways do not."""
    if refused:
        with pytest.raises(Unbounded, match=refused):
            paths(pattern, window=5000, line=2000, starts=MAX_BEFORE + 1)
    else:
        assert paths(pattern, window=5000, line=2000, starts=MAX_BEFORE + 1) <= MAX_PATHS


def test_a_refused_pattern_really_explodes() -> None:
    """The refusal is not theoretical: the pattern issue 33 found takes exponential time in Python's re (each
    extra character multiplies its time; measured on two short lines, not timed against a clock)."""
    slow = re.compile(r"(?:\w|\w\w)*!")
    counts = []
    for size in (14, 20):
        begun = time.perf_counter()
        slow.match("a" * size)
        counts.append(time.perf_counter() - begun)
    assert counts[1] > 4 * counts[0]


def test_a_user_rule_that_could_backtrack_is_one_error_line(tmp_path: Path) -> None:
    """Issue 33: a rule file's signature `(?:\\w|\\w\\w)*` loaded, then took over a minute on a 54-byte line. It is
    refused where the pack loads: exit 2 and one line naming the file, the rule and the key, before anything runs."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.toml").write_text(
        '[[rule]]\nid = "EC9990"\nname = "odd"\nseverity = "error"\nsummary = "s"\nwhy = "w"\nfix = "f"\n'
        'references = ["https://example.org/1"]\n\n[[rule.signatures]]\nanchor = "went wrong"\n'
        "pattern = '(?:\\w|\\w\\w)* went wrong'\nsource = \"https://example.org/src\"\n"
        'thread = "https://example.org/issues/1"\nexample = "it went wrong"\nnear_miss = "all is well"\n',
        encoding="utf-8")
    facts = Path(__file__).parents[1] / "fixtures" / "clean-cuda-venv.json"
    result = CliRunner().invoke(cli, ["check", "--facts", str(facts), "--rules", str(rules)])
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert "mine.toml" in line and "EC9990" in line and "signatures.0.pattern" in line and "exponential" in line

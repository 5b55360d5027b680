"""A finding's "see" links are about that finding: the rule's references, narrowed to its item where a reference is
scoped to some items, and first the thread of each signature that recognised the failure in error output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _fakes import dist_dict, facts_dict, torch_dict
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.errors import RuleError
from envcheck.facts.snapshot import Facts
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Rule
from envcheck.rules.rule_pack import load, load_file
from envcheck.support.toml import loads

PACK = load()
BY_ID = {r.id: r for r in PACK.rules}
CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus"
# Documentation hosts and the words a rule about their subject names.
_HOSTS = {"nvidia.com": ("nvidia", "cuda", "nccl", "driver"), "pytorch.org": ("torch",), "numpy.org": ("numpy",),
          "pip.pypa.io": ("pip",), "microsoft.com": ("windows",), "huggingface.co": ("transformers",),
          "astral.sh": ("uv",), "docs.python.org": ("python",)}


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def project_of(url: str) -> tuple[str, ...]:
    """The names a reference is about, by where it is: a GitHub repository's (PyTorch's own repositories are the
    packages torchvision, torchaudio, ...; pytorch/pytorch is torch) and its owner's, a PyPI project, a documentation
    host's subject."""
    github = re.match(r"https://github\.com/([^/]+)/([^/#?]+)", url)
    if github:
        owner, repo = github.group(1).lower(), github.group(2).lower()
        if owner == "pytorch":
            return ("torch" if repo == "pytorch" else repo if repo.startswith("torch") else f"torch{repo}",)
        return repo, owner
    pypi = re.match(r"https://pypi\.org/project/([^/]+)", url)
    if pypi:
        return (pypi.group(1),)
    host = re.match(r"https://([^/]+)", url)
    name = host.group(1) if host else url
    docs = re.match(r"([a-z0-9-]+)\.readthedocs\.io$", name)
    if docs:
        return (docs.group(1),)
    return next((words for suffix, words in _HOSTS.items() if name.endswith(suffix)), (name,))


def _corpus() -> dict[str, set[str]]:
    """Each corpus thread's URL -> the rules `envcheck check --report` must find in it (tests/unit/test_corpus.py)."""
    out: dict[str, set[str]] = {}
    for path in sorted(CORPUS.glob("[0-9]*.md")):
        head = path.read_text(encoding="utf-8").removeprefix("+++\n").partition("\n+++\n")[0]
        meta = loads(head)
        out.setdefault(meta["url"], set()).update(meta["expect"], meta.get("accept", []))
    return out


def _text(rule: Rule) -> str:
    """Everything a rule says, its signatures' text included, normalised for a search of names."""
    parts = [rule.name, rule.summary, rule.why, rule.fix, rule.fix_without_plan]
    parts += [t for s in rule.signatures for t in (s.summary, s.why, s.fix)]
    parts += [leaf.describe() for cond in (rule.applies, rule.when) for leaf in cond.leaves()]
    return _norm(" ".join(parts))


def unrelated(rule: Rule, corpus: dict[str, set[str]]) -> list[str]:
    """The rule's references that nothing ties to its failure: not a signature's thread or source (a real report
    or the line of this very message), not a corpus thread in which envcheck finds this rule, and not about a
    project the rule's text names."""
    cited = {u for s in rule.signatures for u in (s.thread, s.source)}
    text = _text(rule)
    return [url for url in rule.references if url not in cited and rule.id not in corpus.get(url, set())
            and not any(_norm(name) in text for name in project_of(url))]


ERROR_RULES = sorted(r.id for r in PACK.rules if r.file.endswith("-errors.toml"))


@pytest.mark.parametrize("rule_id", ERROR_RULES)
def test_every_reference_of_an_error_rule_is_about_its_failure(rule_id: str) -> None:
    """A rule that error output shows (rules/*-errors.toml) cites what is about its failure: the threads and source
    lines of its signatures, corpus threads that show it, or the projects its text names."""
    assert unrelated(BY_ID[rule_id], _corpus()) == []


def test_the_check_sees_an_unrelated_reference() -> None:
    """The check above fails where it should: a thread of another project, which neither a signature nor the
    corpus ties to the rule, is found; the rule's own signature thread is not."""
    rule = BY_ID[ERROR_RULES[0]]
    stray = "https://github.com/octo-org/unrelated-trainer/pull/16"
    assert unrelated(rule.__class__(**{**rule.__dict__, "references": (*rule.references, stray)}), _corpus()) \
        == [stray]


def test_a_scoped_reference_is_not_about_another_item() -> None:
    """A reference scoped to some items is not in the home of another item the rule scopes references to (a
    torchaudio change scoped to torchvision would be cited for the wrong companion)."""
    for rule in PACK.rules:
        values = {v for _, _, vs in rule.scoped_references for v in vs}
        for url, _, scope in rule.scoped_references:
            others = {_norm(v) for v in values - set(scope)}
            assert not others & {_norm(n) for n in project_of(url)}, (rule.id, url, scope)


def _facts(*dists: dict[str, object]) -> Facts:
    return Facts.from_dict(facts_dict(dists=list(dists), torch=torch_dict("2.9.0", "12.8")))


def test_each_companion_finding_cites_what_is_about_its_companion() -> None:
    """EC0701 for torchaudio cites torchaudio's threads and changes, for torchcodec its install table: never the
    other companion's, nor torchvision's."""
    facts = _facts(dist_dict("torch", "2.9.0"), dist_dict("torchaudio", "2.11.0"), dist_dict("torchcodec", "0.11.0"))
    found = {f.item["name"]: f.references for f in evaluate(PACK.only([BY_ID["EC0701"]]), facts).findings
             if f.status.is_finding and f.item}
    assert set(found) == {"torchaudio", "torchcodec"}
    assert found["torchaudio"] and all("pytorch/audio" in u or "microWakeWord" in u for u in found["torchaudio"])
    assert found["torchcodec"] == ("https://github.com/pytorch/torchcodec?tab=readme-ov-file#installing-torchcodec",)


def test_a_recognised_message_cites_its_signatures_thread_first(tmp_path: Path) -> None:
    """`envcheck explain` of torchvision's missing operator: EC0701's finding cites the thread of the signature
    that recognised it first, and nothing about torchaudio or torchcodec."""
    log = tmp_path / "train.log"
    log.write_text("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                   "    import torchvision\nRuntimeError: operator torchvision::nms does not exist\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["explain", str(log), "--static", "--no-config", "--format", "json",
                                      "--select", "EC0701"])
    finding = next(f for f in json.loads(result.stdout)["findings"] if f["id"] == "EC0701")
    assert finding["references"][0] == "https://github.com/fudan-generative-vision/hallo/issues/98"
    assert not any("audio" in u or "torchcodec" in u for u in finding["references"])


@pytest.mark.parametrize(("entry", "words"), [
    pytest.param('{ url = "https://x.org/a", item = { nope = "a" } }', "item field 'nope' is not one of",
                 id="unknown-field"),
    pytest.param('{ url = "https://x.org/a" }', "takes exactly `url` and `item`", id="no-item"),
    pytest.param('{ url = "http://x.org/a", item = { name = "a" } }', "expected an https:// URL", id="http"),
])
def test_a_bad_scoped_reference_is_a_load_error(tmp_path: Path, entry: str, words: str) -> None:
    """A scoped reference names a field of the rule's items and a value; anything else is one line naming it."""
    (tmp_path / "mine.toml").write_text(
        '[[rule]]\nid = "EC9870"\nname = "mine"\nseverity = "info"\nsummary = "s"\nwhy = "w"\nfix = "f"\n'
        f'foreach = "companions.torch-mismatch"\nreferences = [{entry}]\n', encoding="utf-8")
    with pytest.raises(RuleError, match=re.escape(words)):
        load_file(tmp_path / "mine.toml")


def test_a_scope_needs_items(tmp_path: Path) -> None:
    """`item` scopes a reference to a foreach rule's findings: on a rule without items it is a load error."""
    (tmp_path / "mine.toml").write_text(
        '[[rule]]\nid = "EC9870"\nname = "mine"\nseverity = "info"\nsummary = "s"\nwhy = "w"\nfix = "f"\n'
        'when = { python = ">=3" }\nreferences = [{ url = "https://x.org/a", item = { name = "a" } }]\n',
        encoding="utf-8")
    with pytest.raises(RuleError, match="this rule has none"):
        load_file(tmp_path / "mine.toml")

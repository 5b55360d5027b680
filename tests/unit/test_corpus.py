"""Recall on real issue threads: every tests/fixtures/corpus/NNN-*.md file holds the text a user pasted into a public
GitHub issue and the rules whose findings name the cause the thread found; `envcheck check --report` must find them.

The corpus and how it was built: tests/fixtures/corpus/README.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.support.toml import loads

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus"
# Measured recall, rounded down. NOTE: the floor only goes up: raise it when rules or readers find more, never lower
# it to make a change pass (a change that loses a thread must say why in the README's table of misses).
RECALL_FLOOR = 0.76
FOUND = frozenset({"fail", "warn", "info"})  # a finding; pass, n/a and skipped are not
_URL = re.compile(r"https://github\.com/[A-Za-z0-9][\w.-]*/[\w.-]+/(?:issues|pull)/\d+")
_NAME = re.compile(r"\d{3}-[a-z0-9]+(?:-[a-z0-9]+)*\.md")
_KEYS = {"url", "expect", "accept", "kind", "note"}


@dataclass(frozen=True)
class Thread:
    """One corpus file: the thread it quotes, what the quote should make envcheck find, and the quote."""

    name: str
    url: str
    expect: tuple[str, ...]
    accept: tuple[str, ...]  # other rules whose findings name the same cause (overlapping rules); any one counts
    kind: str
    note: str
    text: str


def _parse(path: Path) -> Thread:
    """The corpus file at `path`: TOML front matter between `+++` lines, then the quoted text."""
    raw = path.read_text(encoding="utf-8")
    head, sep, text = raw.removeprefix("+++\n").partition("\n+++\n")
    assert raw.startswith("+++\n") and sep, f"{path.name}: no front matter between +++ lines"
    meta = loads(head)
    assert set(meta) <= _KEYS and {"url", "expect", "kind"} <= set(meta), f"{path.name}: keys {sorted(meta)}"
    return Thread(path.name, meta["url"], tuple(meta["expect"]), tuple(meta.get("accept", ())), meta["kind"],
                  meta.get("note", ""), text)


def _threads() -> list[Thread]:
    return [_parse(path) for path in sorted(CORPUS.glob("[0-9]*.md"))]


@cache
def _rule_ids() -> frozenset[str]:
    """The ids of the shipped rule pack, read once."""
    result = CliRunner().invoke(cli, ["rule", "--all", "--format", "json"])
    assert result.exit_code == 0, result.output
    return frozenset(rule["id"] for rule in json.loads(result.stdout))


def _findings(path: Path, tmp: Path) -> tuple[int, frozenset[str]]:
    """(exit code, ids found) of `envcheck check --report` on the quoted text of corpus file `path`."""
    report = tmp / path.name
    report.write_text(_parse(path).text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--report", str(report), "--format", "json", "--no-config"])
    if result.exit_code not in (0, 1):  # 2: nothing recognised in it, no verdict; 3: a crash (its own test)
        return result.exit_code, frozenset()
    return result.exit_code, frozenset(f["id"] for f in json.loads(result.stdout)["findings"]
                                       if f["status"] in FOUND)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Thread, int, frozenset[str]]]:
    """Every corpus thread with the exit code and findings of its report, each checked once for the module."""
    tmp = tmp_path_factory.mktemp("corpus")
    out = {}
    for path in sorted(CORPUS.glob("[0-9]*.md")):
        code, found = _findings(path, tmp)
        out[path.name] = (_parse(path), code, found)
    return out


def test_corpus_files_are_well_formed() -> None:
    """Every corpus file is named NNN-slug.md, cites one GitHub issue or pull request once, names only rules the pack
    has, and quotes some text."""
    threads = _threads()
    assert len(threads) >= 100
    ids = _rule_ids()
    for thread in threads:
        assert _NAME.fullmatch(thread.name), thread.name
        assert _URL.fullmatch(thread.url), f"{thread.name}: {thread.url}"
        named = {*thread.expect, *thread.accept}
        assert named <= ids, f"{thread.name}: unknown rules {sorted(named - ids)}"
        assert not thread.accept or len(thread.expect) == 1, f"{thread.name}: accept needs exactly one expected rule"
        assert not set(thread.accept) & set(thread.expect), f"{thread.name}: a rule both expected and accepted"
        assert len(set(thread.expect)) == len(thread.expect), thread.name
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", thread.kind), f"{thread.name}: kind {thread.kind!r}"
        assert thread.text.strip(), f"{thread.name}: no quoted text"
        assert thread.expect or thread.note.startswith("uncovered"), f"{thread.name}: expect=[] needs an uncovered note"
    numbers = [thread.name[:3] for thread in threads]
    assert len(set(numbers)) == len(numbers), "two corpus files share a number"
    urls = Counter(thread.url for thread in threads)
    assert not [url for url, n in urls.items() if n > 1], "a thread is quoted twice"


def test_no_report_crashes(results: dict[str, tuple[Thread, int, frozenset[str]]]) -> None:
    """No quoted text makes `check --report` fail with an internal error (exit 3)."""
    assert not [name for name, (_, code, _) in results.items() if code == 3]


def test_recall_does_not_fall(results: dict[str, tuple[Thread, int, frozenset[str]]]) -> None:
    """The share of expected rules that `check --report` finds in the corpus (a thread's expected rule counts as found
    when one of its accepted alternatives is) is at least RECALL_FLOOR."""
    expected = hit = 0
    misses: dict[str, list[str]] = defaultdict(list)
    for name, (thread, code, found) in results.items():
        for rule_id in thread.expect:
            expected += 1
            if rule_id in found or found & set(thread.accept):
                hit += 1
            else:
                misses[thread.kind].append(f"{name} {rule_id} (exit {code})")
    recall = hit / expected
    lines = [f"recall {hit}/{expected} = {recall:.3f} (floor {RECALL_FLOOR})"]
    lines += [f"  {kind}: {', '.join(names)}" for kind, names in sorted(misses.items())]
    assert recall >= RECALL_FLOOR, "\n".join(lines)

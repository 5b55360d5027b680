"""Every companion release a finding or a planned command names comes from one table: the companions of
rules/data/torch-builds.toml (the build matrix), for every torch release and every companion it lists."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from _fakes import build_facts, dist_dict, torch_dict
from packaging.version import Version

from envcheck.derived import build_matrix as tb
from envcheck.derived import companions
from envcheck.derived import tables as tables_mod
from envcheck.facts.snapshot import Facts
from envcheck.remedy.commands import planner
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Finding
from envcheck.rules.rule_pack import load as load_pack

PACK = load_pack()
MATRIX = PACK.tables[tables_mod.TORCH_BUILDS]
COMPANIONS = companions.merged((PACK.tables[tables_mod.TORCH_COMPANIONS], PACK.tables[tables_mod.XFORMERS]),
                               MATRIX)
# triton is in the matrix too, but no rule and no planned command names a triton release: it comes with torch.
NAMED = ("torchaudio", "torchcodec", "torchvision", "xformers")


@pytest.fixture(autouse=True)
def _real_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(companions.INDEX_BASE_VARIABLE, raising=False)


def _entries(*names: str) -> Iterator[Any]:
    for release in MATRIX.releases:
        for name in names:
            if name in release.companions:
                yield pytest.param(str(release.version), name, release.companions[name],
                                   id=f"torch-{release.version}-{name}")


def _stale(name: str, torch: str) -> str:
    """A release of `name` that the companion table says was built for another torch minor than `torch`."""
    version = Version(torch)
    for release in COMPANIONS[name].releases:
        exact = release.exact_torch()
        fits = (exact.release[:2] == version.release[:2] if exact is not None
                else release.torch.contains(version, prereleases=True))
        if not fits:
            return release.key.replace(".*", ".0")
    raise AssertionError(f"every {name} release fits torch {torch}")


def _facts(torch: str, *dists: tuple[str, str]) -> Facts:
    entries = [dist_dict(name, version) for name, version in dists] + [dist_dict("torch", torch)]
    return build_facts(dists=entries, torch=torch_dict(torch, cuda="12.8"))


def _finding(facts: Facts, rule_id: str, name: str) -> Finding:
    report = evaluate(PACK.only(r for r in PACK if r.id == rule_id), facts)
    found = [f for f in report.findings if f.status.is_finding and f.item is not None and f.item["name"] == name]
    assert len(found) == 1, [(f.rule_id, f.status, f.summary) for f in report.findings]
    return found[0]


def _versions_named(finding: Finding, name: str) -> set[str]:
    """Every version of `name` the finding prints: `name X.Y.Z` in its text, `name==X.Y.Z` in its commands."""
    text = f"{finding.summary}\n{finding.fix}"
    printed = set(re.findall(rf"\b{name} (\d[\w.*]*?)(?=[,;:)\s]|\.?$|\.\s)", text))
    printed |= {arg.split("==", 1)[1] for command in finding.commands for arg in command
                if arg.startswith(f"{name}==")}
    return printed


@pytest.mark.parametrize(("torch", "name", "entry"), list(_entries(*NAMED)))
def test_a_stale_companion_is_replaced_by_the_matrix_entry(torch: str, name: str, entry: str) -> None:
    """EC0701 for a companion built for another torch names, in its text and its command, the release the build
    matrix lists for the installed torch."""
    stale = _stale(name, torch)
    finding = _finding(_facts(torch, (name, stale)), "EC0701", name)
    assert finding.item is not None and finding.item["expected"] == entry
    assert _versions_named(finding, name) == {stale, entry}
    assert [a for c in finding.commands for a in c if a.startswith(f"{name}==")] == [f"{name}=={entry}"]


@pytest.mark.parametrize(("torch", "name", "entry"), list(_entries("torchcodec")))
def test_torchaudio_without_torchcodec_names_the_matrix_entry(torch: str, name: str, entry: str) -> None:
    """EC0706 (torchaudio without torchcodec) names the torchcodec release the matrix lists for torch."""
    finding = _finding(_facts(torch, ("torchaudio", "2.11.0")), "EC0706", name)
    assert _versions_named(finding, name) == {entry}


@pytest.mark.parametrize(("torch", "name", "entry"), list(_entries(*NAMED)))
def test_the_planner_pins_the_matrix_entry(torch: str, name: str, entry: str) -> None:
    """A bare `pip install NAME` planned for the installed torch pins the matrix's release, torch untouched."""
    facts = _facts(torch)
    python = facts.python.executable
    planned = planner.plan_command((python, "-m", "pip", "install", name), facts, COMPANIONS)
    assert [a for c in planned for a in c[4:] if not a.startswith("-")] == [f"{name}=={entry}"]


@pytest.mark.parametrize(("torch", "name", "entry"), list(_entries(*NAMED)))
def test_companion_release_is_the_matrix_entry(torch: str, name: str, entry: str) -> None:
    """The one answer behind every finding and command, asked directly: the matrix's entry, also for a local
    version tag."""
    assert companions.companion_release(COMPANIONS[name], Version(torch)) == entry
    assert companions.companion_release(COMPANIONS[name], Version(f"{torch}+cpu")) == entry


def test_torch_pins_written_in_rule_commands_agree_with_the_matrix() -> None:
    """A rule command that pins torch and a companion together pins the companion the matrix lists for it."""
    checked = 0
    for rule in PACK:
        for command in rule.commands:
            pins = dict(arg.split("==", 1) for arg in command if re.fullmatch(r"[a-z]+==\d[\w.]*", arg))
            if "torch" not in pins:
                continue
            made_for = tb.companions(MATRIX, pins["torch"])
            for name in set(pins) & set(NAMED):
                assert pins[name] == made_for.get(name), (rule.id, command)
                checked += 1
    assert checked >= 1

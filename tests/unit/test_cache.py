"""The caches of the static tier: the signed rule pack, each distribution's parsed metadata and the requirement walk's
result are reused only while nothing they depend on has changed, a corrupt or foreign entry is ignored, and nothing
lands in the checked environment."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import sys
from pathlib import Path

import pytest
from _fakes import FIXTURES, collect_facts, write_dist
from click.testing import CliRunner

from envcheck.cache import signed
from envcheck.cli.click_cli import cli
from envcheck.derived import requirements, walk_memo
from envcheck.derived.derive import Derived
from envcheck.facts.snapshot import Facts
from envcheck.rules import rule_pack
from envcheck.sources.live import _collector

RULE = """
[[rule]]
id = "EC8801"
name = "cache-probe"
severity = "warning"
summary = "{summary}"
why = "Because."
fix = "Fix it."
references = ["https://example.org"]
when = {{ package = "numpy" }}
"""


def _rule_dir(tmp_path: Path, summary: str = "first text") -> Path:
    folder = tmp_path / "extra-rules"
    folder.mkdir(exist_ok=True)
    (folder / "extra.toml").write_text(RULE.format(summary=summary), encoding="utf-8")
    return folder


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("the rule files were parsed although the cached pack was valid")

    monkeypatch.setattr(rule_pack, "load_files", refuse)


def _entry() -> Path:
    return signed.cache_dir() / "rule-pack.signed"


def test_second_load_is_served_from_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A pack loaded once is loaded again without parsing a rule file, with the same rules and tables."""
    extra = _rule_dir(tmp_path)
    first = rule_pack.load([extra])
    _no_parsing(monkeypatch)
    second = rule_pack.load([extra])
    assert second == first
    assert second.tables.parsed.keys() == first.tables.parsed.keys()


def test_packs_of_different_rule_directories_do_not_evict_each_other(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    """Two projects with their own rule directories, checked in turn, each find their pack cached (one entry per
    set of directories), as does the shipped pack."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _rule_dir(tmp_path / "a")
    second = _rule_dir(tmp_path / "b", summary="second text")
    packs = {key: rule_pack.load(dirs) for key, dirs in (("shipped", []), ("a", [first]), ("b", [second]))}
    _no_parsing(monkeypatch)
    assert {key: rule_pack.load(dirs) for key, dirs in (("b", [second]), ("shipped", []), ("a", [first]))} == packs
    assert len(list(signed.cache_dir().glob("rule-pack*.signed"))) == 3


def test_cache_directory_and_key_are_private() -> None:
    """The cache directory is created 0700 and the signing key 0600, so nobody else can plant or read entries."""
    rule_pack.load()
    assert (signed.cache_dir().stat().st_mode & 0o777) == 0o700
    assert ((signed.cache_dir() / "key").stat().st_mode & 0o777) == 0o600


@pytest.mark.parametrize("change", ["edit", "add", "remove"])
def test_a_changed_rule_file_is_a_miss(tmp_path: Path, change: str) -> None:
    """Editing, adding or removing a rule file changes the pack that is loaded the next time."""
    extra = _rule_dir(tmp_path)
    assert any(r.summary == "first text" for r in rule_pack.load([extra]))
    if change == "edit":
        (extra / "extra.toml").write_text(RULE.format(summary="second, longer text"), encoding="utf-8")
        assert any(r.summary == "second, longer text" for r in rule_pack.load([extra]))
    elif change == "add":
        (extra / "more.toml").write_text(RULE.format(summary="x").replace("EC8801", "EC8802").replace(
            "cache-probe", "cache-probe-two"), encoding="utf-8")
        assert {"EC8801", "EC8802"} <= {r.id for r in rule_pack.load([extra])}
    else:
        (extra / "extra.toml").unlink()
        assert "EC8801" not in {r.id for r in rule_pack.load([extra])}


def test_a_changed_data_table_is_a_miss(tmp_path: Path) -> None:
    """A rule directory's data table that changes is parsed again, so a broken one is still refused."""
    extra = _rule_dir(tmp_path)
    rule_pack.load([extra])
    (extra / "data").mkdir()
    (extra / "data" / "xformers.toml").write_text("not = [valid", encoding="utf-8")
    with pytest.raises(rule_pack.RuleError, match=r"xformers\.toml"):
        rule_pack.load([extra])


@pytest.mark.parametrize("damage", ["truncated", "flipped", "foreign-key", "garbage"])
def test_a_corrupt_or_foreign_entry_is_never_unpickled(tmp_path: Path, damage: str) -> None:
    """An entry whose signature does not verify is ignored (the pack is loaded afresh), its pickle never run."""
    expected = rule_pack.load()
    marker = tmp_path / "unpickled"
    data = _entry().read_bytes()
    head, sep, rest = data.partition(b"\n")
    stamp, sep2, signed = rest.partition(b"\n")
    # A pickle that creates `marker` when it is loaded: what a planted entry would do.
    evil = pickle.dumps(_Touch(str(marker)))
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "flipped":
        data = data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:]
    elif damage == "foreign-key":
        data = head + sep + stamp + sep2 + signed[:32] + evil  # a valid layout around someone else's payload
    else:
        data = b"\x00garbage"
    _entry().write_bytes(data)
    assert rule_pack.load() == expected
    assert not marker.exists()


class _Touch:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (self.path,))


def test_an_entry_signed_with_another_users_key_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry copied from elsewhere (another key signed it) is not trusted even though it is well formed."""
    rule_pack.load()
    (signed.cache_dir() / "key").write_bytes(os.urandom(32))  # this user's key is now a different one
    _no_parsing(monkeypatch)
    with pytest.raises(AssertionError, match="were parsed"):
        rule_pack.load()


def test_no_cache_neither_reads_nor_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """use_cache=False (--no-cache) parses the rule files and leaves no entry behind."""
    rule_pack.load(use_cache=False)
    assert not _entry().exists()
    rule_pack.load()
    _no_parsing(monkeypatch)
    with pytest.raises(AssertionError, match="were parsed"):
        rule_pack.load(use_cache=False)


def test_cli_no_cache_leaves_no_cache(tmp_path: Path) -> None:
    """`envcheck check --no-cache` writes no rule pack to the cache; without it, it does."""
    runner = CliRunner()
    snapshot = str(FIXTURES / "clean-cuda-venv.json")
    runner.invoke(cli, ["check", "--facts", snapshot, "--no-cache", "--no-config"])
    assert not _entry().exists()
    runner.invoke(cli, ["check", "--facts", snapshot, "--no-config"])
    assert _entry().exists()


def test_a_cache_directory_inside_the_environment_is_not_used(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """A cache directory under the checked interpreter's prefix is never created or written."""
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "env"))
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "env" / "cache"))
    rule_pack.load()
    assert not (tmp_path / "env").exists()


def test_a_cache_directory_in_any_environment_is_not_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A cache directory inside some other venv (the one `--python` checks) is not used either."""
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(venv / "cache"))
    assert signed.usable_dir() is None
    rule_pack.load()
    assert not (venv / "cache").exists()


def test_a_directory_others_can_write_is_not_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A cache directory that group or others may write to is not trusted (someone else could plant entries)."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(shared))
    assert signed.usable_dir() is None
    rule_pack.load()
    assert list(shared.iterdir()) == []


# --- the distributions' metadata (the collector) -----------------------------------------------------------------


def _collect(site: Path, cache_dir: Path | None) -> list[dict[str, object]]:
    request = {} if cache_dir is None else {"cache_dir": str(cache_dir)}
    return list(_collector.collect(request, path=[str(site)])["distributions"])


def _no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(dist: object) -> None:
        raise AssertionError("metadata was read although the cached entry was valid")

    monkeypatch.setattr(_collector, "_distribution", refuse)


@pytest.fixture
def private_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    return folder


def test_unchanged_metadata_is_not_read_again(site: Path, private_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second collection of unchanged distributions is served from the cache, with the same facts."""
    write_dist(site, "numpy", "2.1.0", requires=["packaging"])
    write_dist(site, "torch", "2.5.1", requires=["numpy"])
    first = _collect(site, private_dir)
    assert first == _collect(site, None)
    _no_reading(monkeypatch)
    assert _collect(site, private_dir) == first


@pytest.mark.parametrize("change", ["metadata", "installer", "direct-url", "reinstall"])
def test_a_changed_distribution_is_read_again(site: Path, private_dir: Path, change: str) -> None:
    """Any change to the files a distribution's facts come from is seen on the next collection."""
    folder = write_dist(site, "numpy", "2.1.0")
    write_dist(site, "torch", "2.5.1")
    _collect(site, private_dir)
    if change == "metadata":
        text = (folder / "METADATA").read_text(encoding="utf-8")
        (folder / "METADATA").write_text(text.replace("Version: 2.1.0", "Version: 2.1.1"), encoding="utf-8")
        expect: tuple[str, object] = ("version", "2.1.1")
    elif change == "installer":
        (folder / "INSTALLER").write_text("uv\n", encoding="utf-8")
        expect = ("installer", "uv")
    elif change == "direct-url":
        (folder / "direct_url.json").write_text('{"url": "file:///src", "dir_info": {"editable": true}}',
                                                encoding="utf-8")
        expect = ("editable", True)
    else:
        for file in folder.iterdir():
            file.unlink()
        folder.rmdir()
        write_dist(site, "numpy", "2.1.0", installer="conda")
        expect = ("installer", "conda")
    numpy = next(d for d in _collect(site, private_dir) if d["name"] == "numpy")
    assert numpy[expect[0]] == expect[1]


@pytest.mark.parametrize("content", [
    "{not json",
    json.dumps([1, 2]),
    json.dumps({"format": 1, "python": sys.version, "entries": {"x": "y"}}),
    "wrong-types",
])
def test_a_corrupt_metadata_cache_is_ignored(site: Path, private_dir: Path, content: str) -> None:
    """A cache file that is not exactly what the collector writes is ignored, and the facts are read afresh."""
    write_dist(site, "numpy", "2.1.0")
    expected = _collect(site, None)
    _collect(site, private_dir)
    (file,) = private_dir.glob("dists-*.json")
    if content == "wrong-types":  # the right layout, with a fact whose fields are of the wrong types
        data = json.loads(file.read_text(encoding="utf-8"))
        for entry in data["entries"].values():
            entry[1]["version"] = 2
            entry[1]["requires"] = "numpy"
        content = json.dumps(data)
    file.write_text(content, encoding="utf-8")
    assert _collect(site, private_dir) == expected


def test_a_planted_metadata_cache_is_ignored(site: Path, private_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A well-formed cache file that claims other facts, owned by another user, is not believed."""
    if not hasattr(os, "getuid") or os.getuid() != 0:
        pytest.skip("giving a file to another user needs root")
    write_dist(site, "numpy", "2.1.0")
    _collect(site, private_dir)
    (file,) = private_dir.glob("dists-*.json")
    data = json.loads(file.read_text(encoding="utf-8"))
    for entry in data["entries"].values():
        entry[1]["version"] = "9.9.9"
    file.write_text(json.dumps(data), encoding="utf-8")
    os.chown(file, 65534, -1)
    assert {d["version"] for d in _collect(site, private_dir)} == {"2.1.0"}


def test_metadata_cache_inside_the_environment_is_not_used(site: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector writes no cache under the checked interpreter's prefix, whatever directory it is given."""
    env = tmp_path / "env"
    (env / "cache").mkdir(parents=True, mode=0o700)
    monkeypatch.setattr(sys, "prefix", str(env))
    write_dist(site, "numpy", "2.1.0")
    _collect(site, env / "cache")
    assert list((env / "cache").iterdir()) == []


def test_metadata_cache_in_a_shared_directory_is_not_used(site: Path, tmp_path: Path) -> None:
    """A directory others can write to is not trusted by the collector either."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    write_dist(site, "numpy", "2.1.0")
    _collect(site, shared)
    assert list(shared.iterdir()) == []


# --- the requirement walk's result (envcheck.derived.walk_memo) ------------------------------------------------


def _walk_facts(site: Path, *, torch_requires: str = "numpy>=2", numpy: str = "1.26.4") -> Facts:
    write_dist(site, "numpy", numpy)
    write_dist(site, "torch", "2.5.1", requires=[torch_requires, "filelock", "bad line ((", "nvidia-x; extra == 'cu'"])
    write_dist(site, "accelerate", "1.0.0", requires=["torch[cu]>=2"])
    return collect_facts(site)


def _unsatisfied(facts: Facts, memo: signed.SignedMemo | None) -> object:
    derived = Derived(facts, memo=memo)
    return derived.get("requirements.unsatisfied"), derived.get("distributions.corrupt")


def _no_walking(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(derived: object) -> None:
        raise AssertionError("the requirements were walked although the remembered result was valid")

    monkeypatch.setattr(requirements, "walked", refuse)


def _walk_entries() -> list[Path]:
    return sorted(signed.cache_dir().glob("walk-*.signed"))


def test_the_walk_is_remembered(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second evaluation of unchanged facts takes the walk's result from the memo, identical to walking."""
    facts = _walk_facts(site)
    walked = _unsatisfied(facts, None)
    assert walked[0]  # numpy conflicts, filelock and nvidia-x are missing: the walk has something to remember
    assert _unsatisfied(facts, signed.SignedMemo()) == walked
    assert len(_walk_entries()) == 1
    _no_walking(monkeypatch)
    assert _unsatisfied(facts, signed.SignedMemo()) == walked


@pytest.mark.parametrize("change", ["requirement", "version", "marker-environment", "complete"])
def test_a_changed_input_walks_again(site: Path, tmp_path: Path, change: str) -> None:
    """Any change to what the walk reads is another key: the result is computed afresh, never the old one."""
    facts = _walk_facts(site)
    _unsatisfied(facts, signed.SignedMemo())
    other = tmp_path / "other-site"
    other.mkdir()
    if change == "requirement":
        changed = _walk_facts(other, torch_requires="numpy>=1")
    elif change == "version":
        changed = _walk_facts(other, numpy="2.1.0")
    elif change == "marker-environment":
        env = {**facts.python.marker_environment, "python_version": "3.9"}
        changed = dataclasses.replace(facts, python=dataclasses.replace(facts.python, marker_environment=env))
    else:
        changed = dataclasses.replace(facts, distributions_complete=False)
    assert walk_memo.key(changed) != walk_memo.key(facts)
    assert _unsatisfied(changed, signed.SignedMemo()) == _unsatisfied(changed, None)


@pytest.mark.parametrize("payload", [b"", b"not json", b"[]", b'{"problems": [], "invalid": {}}',
                                     b'{"problems": [{"package": "x"}], "invalid": {}, "incomplete": false}',
                                     b'{"problems": [], "invalid": {"x": [1]}, "incomplete": false}'])
def test_a_malformed_remembered_walk_is_ignored(site: Path, payload: bytes) -> None:
    """An entry that verifies but does not decode to exactly what the walk writes is walked again, not trusted."""
    facts = _walk_facts(site)
    signed.store_signed(walk_memo.name(facts), walk_memo.key(facts), payload)
    assert _unsatisfied(facts, signed.SignedMemo()) == _unsatisfied(facts, None)


def test_a_tampered_remembered_walk_is_ignored(site: Path) -> None:
    """An entry whose bytes were changed after signing fails its HMAC and is walked again."""
    facts = _walk_facts(site)
    walked = _unsatisfied(facts, signed.SignedMemo())
    entry = _walk_entries()[0]
    forged = walk_memo.dumps([], {}, False)
    data = entry.read_bytes()
    entry.write_bytes(data[:data.index(b"{")] + forged)
    assert _unsatisfied(facts, signed.SignedMemo()) == walked


def test_cli_static_check_remembers_the_walk_unless_no_cache(tmp_path: Path) -> None:
    """`envcheck --static` stores the walk in the user cache and prints the same report from it; --no-cache stores
    nothing."""
    runner = CliRunner()
    args = ["check", "--static", "--no-config", "--no-project", "--format", "json"]
    first = runner.invoke(cli, [*args, "--no-cache"])
    assert not _walk_entries()
    second = runner.invoke(cli, args)
    assert len(_walk_entries()) == 1
    third = runner.invoke(cli, args)
    assert first.exit_code == second.exit_code == third.exit_code
    assert first.output == second.output == third.output


def test_the_remembered_walk_keeps_any_string_exactly(site: Path) -> None:
    """Names that are not valid UTF-8 (a lone surrogate from a folder name) digest and round-trip unchanged."""
    facts = _walk_facts(site)
    odd = dataclasses.replace(facts.distributions[0], name="caf\udce9", requires=("x\ud800y",))
    changed = dataclasses.replace(facts, distributions=(odd, *facts.distributions[1:]))
    assert walk_memo.key(changed) != walk_memo.key(facts)
    item = dict.fromkeys(requirements.UNSAT_FIELDS, "caf\udce9 \ud800")
    payload = walk_memo.dumps([item], {"caf\udce9": ["x\ud800y"]}, True)
    assert walk_memo.loads(payload, requirements.UNSAT_FIELDS) == ([item], {"caf\udce9": ["x\ud800y"]}, True)

"""The gather of `envcheck fleet` without torch: distributed.run against an in-memory store.

The c10d store is the seam: FakeStore answers the calls envcheck makes (set, get, check, add, compare_set,
multi_get, set_timeout) as TCPStore does. Other ranks are played by writing their keys into it beforehand. The
collection is replaced by the recorded snapshots; the SIGTERM is a real signal. tests/e2e/test_fleet_real.py runs
the same code under a real torchrun.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from _fakes import FIXTURES
from click.testing import CliRunner

from envcheck.cli.fleet_cli import fleet
from envcheck.errors import CollectError, EnvcheckError
from envcheck.facts.snapshot import Facts
from envcheck.fleet import distributed
from envcheck.fleet.fingerprint import fingerprint, view
from envcheck.pipeline.stages import ProbeOptions
from envcheck.rules import rule_pack
from envcheck.sources.live import collect as collect_mod

NODE_A = collect_mod.load(str(FIXTURES / "fleet" / "node-a.json"))
NODE_C = collect_mod.load(str(FIXTURES / "fleet" / "node-c.json"))
STATIC = ProbeOptions(run=False)


class FakeStore:
    """A dict with TCPStore's calls; `calls` records (method, key) so tests can see what was sent."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.calls: list[tuple[str, str]] = []

    def _b(self, value: str | bytes) -> bytes:
        return value.encode() if isinstance(value, str) else value

    def set(self, key: str, value: str | bytes) -> None:
        self.calls.append(("set", key))
        self.data[key] = self._b(value)

    def get(self, key: str) -> bytes:
        if key not in self.data:
            raise RuntimeError(f"timeout waiting for {key}")  # TCPStore blocks until its timeout
        return self.data[key]

    def check(self, keys: list[str]) -> bool:
        return all(k in self.data for k in keys)

    def multi_get(self, keys: list[str]) -> list[bytes]:
        return [self.get(k) for k in keys]

    def add(self, key: str, n: int) -> int:
        value = int(self.data.get(key, b"0")) + n
        self.data[key] = str(value).encode()
        return value

    def compare_set(self, key: str, expected: str, desired: str | bytes) -> bytes:
        self.calls.append(("compare_set", key))
        if key not in self.data and expected == "":
            self.data[key] = self._b(desired)
        return self.data.get(key, b"")

    def set_timeout(self, timeout: object) -> None:
        pass

    def play(self, rank: int, host: str, facts: Facts | None = None, error: str | None = None,
             hello_only: bool = False) -> None:
        """What another rank would have posted."""
        self.set(f"hello/{rank}", json.dumps({"host": host, "local_rank": rank}))
        if hello_only:
            return
        fp = None
        if facts is not None:
            fp = fingerprint(view(facts))
            self.compare_set(f"facts/{fp}", "", zlib.compress(json.dumps(facts.to_dict()).encode()))
        self.set(f"result/{rank}", json.dumps({"host": host, "rank": rank, "local_rank": rank, "python": "/p",
                                               "device": None, "fingerprint": fp, "error": error}))
        self.add("results", 1)


def _environ(rank: int, world: int) -> dict[str, str]:
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "t", "TORCHELASTIC_RESTART_COUNT": "0"}


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> FakeStore:
    fake = FakeStore()
    monkeypatch.setattr(distributed, "_connect", lambda env, timeout_s: fake)
    return fake


def _collect_returns(monkeypatch: pytest.MonkeyPatch, fn: Callable[..., tuple[Facts, str | None]]) -> None:
    monkeypatch.setattr(distributed.local, "collect", fn)


def _run(rank: int, world: int, timeout_s: float = 5.0) -> distributed.Gathered:
    return distributed.run(lambda: [], STATIC, timeout_s, environ=_environ(rank, world))


def test_rank0_gathers_every_rank(store: FakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rank 0 has a member per rank and the facts of each environment, and stops waiting once all answered."""
    _collect_returns(monkeypatch, lambda *a: (NODE_A, None))
    store.play(1, "node-a", NODE_A)
    store.play(2, "node-c", NODE_C)
    start = time.monotonic()
    gathered = _run(0, 3, timeout_s=60)
    assert time.monotonic() - start < 10  # did not sit out the 60 s deadline
    assert [(m.rank, m.host, m.error) for m in gathered.members] == [
        (0, gathered.members[0].host, None), (1, "node-a", None), (2, "node-c", None)]
    assert set(gathered.facts) == {fingerprint(view(NODE_A)), fingerprint(view(NODE_C))}
    assert gathered.stopped is None


def test_facts_of_an_environment_are_posted_once(store: FakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rank whose environment another rank already posted sends only its small result record."""
    _collect_returns(monkeypatch, lambda *a: (NODE_A, None))
    store.play(0, "node-a", NODE_A)
    _run(1, 2)
    assert [c for c in store.calls if c[0] == "compare_set"] == [("compare_set", f"facts/{fingerprint(view(NODE_A))}")]
    assert ("set", "result/1") in store.calls


def test_rank_that_never_answers_is_failed_with_its_host(store: FakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """At the deadline a rank that connected but sent no result is named with its host; one that never connected
    is said to have never reached the store."""
    _collect_returns(monkeypatch, lambda *a: (NODE_A, None))
    store.play(1, "node-b", hello_only=True)
    gathered = _run(0, 3, timeout_s=1.0)
    by_rank = {m.rank: m for m in gathered.members}
    assert by_rank[0].error is None
    assert (by_rank[1].host, by_rank[1].error) == ("node-b", "no facts within --gather-timeout 1 s")
    assert by_rank[2].host == ""
    assert by_rank[2].error == "no facts within --gather-timeout 1 s (it never reached the rendezvous store)"


def test_collection_that_raises_is_reported_by_the_rank(store: FakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rank whose collection raises posts the error instead of facts, and rank 0 reports it."""
    def boom(*args: Any) -> tuple[Facts, str | None]:
        raise CollectError("--python /nope: no such file")

    _collect_returns(monkeypatch, boom)
    _run(1, 2)
    _collect_returns(monkeypatch, lambda *a: (NODE_A, None))
    gathered = _run(0, 2)
    assert [m.error for m in gathered.members] == [None, "collection failed: --python /nope: no such file"]


def test_collection_that_hangs_is_reported_as_timed_out(store: FakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A collection still running at 90% of the gather timeout is reported by its own rank as timed out."""
    release = threading.Event()

    def hang(*args: Any) -> tuple[Facts, str | None]:
        release.wait(30)
        return NODE_A, None

    _collect_returns(monkeypatch, hang)
    try:
        gathered = _run(0, 1, timeout_s=1.0)
    finally:
        release.set()
    assert [m.error for m in gathered.members] == ["collection did not finish within 1 s"]


def test_rules_that_fail_to_load_are_the_ranks_failure(store: FakeStore) -> None:
    """The rules are loaded inside the collection: a rank with a broken rule directory reports that, quietly."""
    def broken() -> list[Any]:
        raise EnvcheckError("rules/x.toml: key 'id': expected an id")

    outcome = distributed.run(broken, STATIC, 5.0, environ=_environ(1, 2))
    assert outcome.warning is None and outcome.members == []
    assert json.loads(store.data["result/1"])["error"] == "collection failed: rules/x.toml: key 'id': expected an id"


def test_other_ranks_never_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rank other than 0 that cannot reach the store returns a warning instead of raising; rank 0 raises."""
    def unreachable(env: Any, timeout_s: float) -> Any:
        raise EnvcheckError("cannot reach the rendezvous store (MASTER_ADDR:MASTER_PORT): timed out")

    monkeypatch.setattr(distributed, "_connect", unreachable)
    _collect_returns(monkeypatch, lambda *a: (NODE_A, None))
    outcome = _run(1, 2)
    assert outcome.warning == ("rank 1 could not deliver its facts: cannot reach the rendezvous store "
                               "(MASTER_ADDR:MASTER_PORT): timed out")
    with pytest.raises(EnvcheckError, match="cannot reach"):
        _run(0, 2)


@pytest.mark.posix  # os.kill(SIGTERM) on Windows terminates the process outright, no handler runs
def test_sigterm_prints_what_rank0_has(store: FakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the launcher stops the job (a real SIGTERM), rank 0 returns what it has: itself, the ranks that
    answered, the others as failed, and why it stopped."""
    _collect_returns(monkeypatch, lambda *a: (NODE_A, None))
    store.play(1, "node-b", NODE_A)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        gathered = _run(0, 3, timeout_s=60)
    finally:
        timer.cancel()
    assert gathered.stopped is not None and "SIGTERM" in gathered.stopped
    assert [(m.rank, m.error) for m in gathered.members] == [
        (0, None), (1, None), (2, "the job was stopped before this rank answered (it never reached the rendezvous "
                                  "store)")]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the previous handler is back


def test_cli_rank0_report_and_quiet_other_ranks(store: FakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the command: rank 1 prints nothing and exits 0; rank 0 prints one report of both, exit 0."""
    _collect_returns(monkeypatch, lambda *a: (NODE_A, None))
    runner = CliRunner()
    other = runner.invoke(fleet, ["--static"], env=_environ(1, 2))
    assert (other.exit_code, other.stdout, other.stderr) == (0, "", "")
    first = runner.invoke(fleet, ["--static", "--format", "json"], env=_environ(0, 2))
    assert first.exit_code == 0, first.output
    doc = json.loads(first.stdout)
    assert [(n["ranks"], n["group"]) for n in doc["nodes"]] == [([0, 1], 1)]
    assert doc["complete"] is True and doc["expected"] == 2


def test_cli_incomplete_fleet_exits_1_whatever_fail_on(store: FakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rank that did not answer makes the exit code 1, even with --fail-on never."""
    _collect_returns(monkeypatch, lambda *a: (NODE_A, None))
    result = CliRunner().invoke(fleet, ["--static", "--fail-on", "never", "--gather-timeout", "1"],
                                env=_environ(0, 2))
    assert result.exit_code == 1
    assert "1 node failed" in result.stdout and "INCOMPLETE" in result.stdout


def test_rules_of_rank0_are_checked_before_gathering(store: FakeStore) -> None:
    """On rank 0 a selector typo is a usage error at once (exit 2), not after the gather."""
    result = CliRunner().invoke(fleet, ["--static", "--select", "EC7777"], env=_environ(0, 2))
    assert result.exit_code == 2
    assert store.calls == []
    assert rule_pack.load()  # the pack itself loads

"""The torch.distributed part of `envcheck fleet`: each torchrun rank collects, rank 0 gathers what arrives in time.

The facts travel through the c10d key-value store of torchrun's rendezvous (`torch.distributed.rendezvous("env://")`,
the store `init_process_group` would use), not through a collective such as `gather_object`. A collective is all or
nothing: one rank that hangs or dies makes it fail on every rank, and rank 0 is left with its own facts only. With
the store each rank posts its own result when it has one, and rank 0 reads whatever is there at its deadline: the
ranks that answered are reported, the others are named as failed with the reason. It needs no process group, so no
full mesh of connections between thousands of ranks either.

Per rank, under the namespace envcheck-fleet/<run id>/<restart count>/ of the store:
  hello/<rank>    {"host", "local_rank"}, posted on connecting: a rank that then hangs is named with its host
  facts/<fp>      zlib-compressed Facts JSON, posted by the first rank with that environment fingerprint only
  result/<rank>   {"host", "rank", "local_rank", "python", "device", "fingerprint" | "error"}
  results         a counter, incremented after each result: rank 0 polls it, not every key

A rank's collection that raises becomes {"error": ...}; one still running at 90% of --gather-timeout is reported
by that rank as timed out. Ranks other than 0 print nothing and exit 0 whatever happens (torchrun stops the whole
job when one worker exits non-zero, which would cost rank 0 its report). When the launcher stops the job anyway
(SIGTERM: another worker crashed or was killed), rank 0 prints the report of what it has.

torch is imported here only, lazily: the rest of envcheck stays torch-free. This runs inside torchrun's worker,
which is the training interpreter, so importing torch is what the user's job does too.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from types import FrameType
from typing import Any

from envcheck.errors import EnvcheckError
from envcheck.facts.snapshot import Facts
from envcheck.fleet import local
from envcheck.fleet.fingerprint import fingerprint, view
from envcheck.fleet.model import Member
from envcheck.pipeline.stages import ProbeOptions
from envcheck.rules.model import Rule

_OWN_SHARE = 0.9  # of --gather-timeout a rank may spend collecting before it reports itself as timed out
_POLL_S = (0.01, 0.1)  # rank 0 polls the result counter, backing off from the first to the second


@dataclass(frozen=True)
class RankEnv:
    """Where this process sits in the job, from the variables torchrun sets for each worker."""

    rank: int
    world_size: int
    local_rank: int | None
    namespace: str  # store key prefix, unique per torchrun run and restart

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> RankEnv:
        missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not environ.get(v)]
        if missing:
            verb = "is" if len(missing) == 1 else "are"
            raise EnvcheckError(
                f"`envcheck fleet` runs as a torchrun worker, and {', '.join(missing)} {verb} not set: start it "
                "with `torchrun --nproc-per-node N -m envcheck fleet` (under Slurm: `srun torchrun ...`), or merge "
                "saved snapshots with `envcheck fleet merge FILE...`")
        try:
            rank, world = int(environ["RANK"]), int(environ["WORLD_SIZE"])
            local_rank = int(environ["LOCAL_RANK"]) if environ.get("LOCAL_RANK") else None
        except ValueError as exc:
            raise EnvcheckError(f"RANK, WORLD_SIZE and LOCAL_RANK must be integers ({exc})") from None
        if not 0 <= rank < world:
            raise EnvcheckError(f"RANK {rank} is not within WORLD_SIZE {world}")
        run_id = environ.get("TORCHELASTIC_RUN_ID") or "none"
        attempt = environ.get("TORCHELASTIC_RESTART_COUNT") or "0"
        return cls(rank=rank, world_size=world, local_rank=local_rank,
                   namespace=f"envcheck-fleet/{run_id}/{attempt}/")


@dataclass
class Gathered:
    """What a rank has at the end. On rank 0: a member per rank, the facts per fingerprint, and why the gather
    stopped early if it did. On any other rank only `warning`: why it could not deliver its facts, if it could not."""

    rank: int
    expected: int
    members: list[Member] = field(default_factory=list)
    facts: dict[str, Facts] = field(default_factory=dict)
    stopped: str | None = None
    warning: str | None = None


class _Stopped(BaseException):
    """SIGTERM arrived: the launcher is stopping the job. A BaseException, so that no `except Exception` on the way
    (torch's import, the store client) swallows it."""


@contextlib.contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one report, even if the launcher repeats the signal
        raise _Stopped

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Collection:
    """local.collect() in a daemon thread, so that a hung collection cannot keep this rank from reporting."""

    def __init__(self, load_rules: Callable[[], Sequence[Rule]], probes: ProbeOptions, local_rank: int | None
                 ) -> None:
        self.facts: Facts | None = None
        self.device: str | None = None
        self.error: str | None = None
        self._done = threading.Event()
        self._timed_out = False
        self._load_rules = load_rules
        self._probes = probes
        self._local_rank = local_rank
        threading.Thread(target=self._run, name="envcheck-fleet-collect", daemon=True).start()

    def _run(self) -> None:
        try:
            self.facts, self.device = local.collect(self._load_rules(), self._probes, self._local_rank)
        except BaseException as exc:  # noqa: BLE001 - whatever happens becomes this rank's reported failure
            self.error = f"collection failed: {exc}" if isinstance(exc, EnvcheckError) else \
                f"collection failed: {type(exc).__name__}: {exc}"
        finally:
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set() or self._timed_out

    def wait(self, until: float, limit_s: float) -> None:
        # Short waits, so that the main thread runs a SIGTERM handler promptly.
        while not self._done.wait(0.1):
            if time.monotonic() >= until:
                self._timed_out = True
                self.error = f"collection did not finish within {limit_s:.0f} s"
                return


def _connect(env: RankEnv, timeout_s: float) -> Any:
    """The rendezvous store torchrun set up, under this run's namespace."""
    try:
        import torch.distributed as dist  # the only torch import in envcheck's own process
    except Exception as exc:  # noqa: BLE001 - a missing or broken torch is a reported error, not a traceback
        raise EnvcheckError(f"`envcheck fleet` needs torch.distributed in this interpreter: {type(exc).__name__}: "
                            f"{exc}") from None
    if not dist.is_available():
        raise EnvcheckError("this torch build has no torch.distributed (`envcheck fleet` needs its store)")
    try:
        store, _, _ = next(dist.rendezvous("env://", timeout=timedelta(seconds=timeout_s)))
    except Exception as exc:  # noqa: BLE001 - torch raises RuntimeError, ValueError, DistStoreError...
        raise EnvcheckError(f"cannot reach the rendezvous store (MASTER_ADDR:MASTER_PORT): {type(exc).__name__}: "
                            f"{exc}") from None
    return dist.PrefixStore(env.namespace, store)


def run(load_rules: Callable[[], Sequence[Rule]], probes: ProbeOptions, timeout_s: float,
        environ: Mapping[str, str] | None = None) -> Gathered:
    """This rank's part: rank 0 returns what it gathered, any other rank only a warning (it never raises).

    `load_rules` runs inside the collection, so that a rank whose rules cannot be loaded reports that as its failure.
    """
    env = RankEnv.from_environ(os.environ if environ is None else environ)
    start = time.monotonic()
    host = socket.gethostname()
    gathered = Gathered(rank=env.rank, expected=env.world_size)
    collection: _Collection | None = None
    store: Any = None
    with _stop_on_sigterm():
        try:
            collection = _Collection(load_rules, probes, env.local_rank)
            store = _connect(env, timeout_s)
            store.set(f"hello/{env.rank}", json.dumps({"host": host, "local_rank": env.local_rank}))
            collection.wait(start + _OWN_SHARE * timeout_s, _OWN_SHARE * timeout_s)
            own = _own(collection, host, env, gathered)
            if own["fingerprint"] is not None and not store.check([f"facts/{own['fingerprint']}"]):
                facts = gathered.facts[own["fingerprint"]]
                payload = zlib.compress(json.dumps(facts.to_dict()).encode("utf-8"), 1)
                store.compare_set(f"facts/{own['fingerprint']}", "", payload)  # the first rank of this environment
            store.set(f"result/{env.rank}", json.dumps(own))
            store.add("results", 1)
            if env.rank != 0:
                return gathered
            _gather(store, env, start + timeout_s, gathered, timeout_s)
        except _Stopped:
            if env.rank != 0:
                return gathered
            gathered.stopped = (f"the launcher stopped the job (SIGTERM) after {time.monotonic() - start:.0f} s, "
                                "before every rank had answered: a worker exited or was killed (see the "
                                "launcher's log)")
            if store is not None:
                with contextlib.suppress(Exception):  # the store may be gone with the launcher
                    store.set_timeout(timedelta(seconds=5))
                    _read(store, env, gathered, until_reason="the job was stopped before this rank answered")
            _complete(gathered, _own(collection, host, env, gathered), env)
        except Exception as exc:  # rank 0 re-raises it (the CLI's one-line error); the others report it, see below
            if env.rank == 0:
                raise
            # Any other rank keeps quiet and exits 0: rank 0 reports it as not having answered.
            gathered.warning = f"rank {env.rank} could not deliver its facts: {exc}"
    return gathered


def _own(collection: _Collection | None, host: str, env: RankEnv, gathered: Gathered) -> dict[str, Any]:
    """This rank's result record; its facts, if any, go into `gathered.facts`."""
    record: dict[str, Any] = {"host": host, "rank": env.rank, "local_rank": env.local_rank, "python": "",
                              "device": None, "fingerprint": None, "error": None}
    if collection is None or not collection.done:
        record["error"] = "interrupted before its facts were collected"
    elif collection.facts is None or collection.error is not None:
        record["error"] = collection.error or "no facts"
    else:
        fp = fingerprint(view(collection.facts))
        gathered.facts[fp] = collection.facts
        record.update(python=collection.facts.python.executable, device=collection.device, fingerprint=fp)
    return record


def _complete(gathered: Gathered, own: Mapping[str, Any], env: RankEnv) -> None:
    """After an early stop: rank 0 reports itself from what it has, and every rank not heard from as failed."""
    heard = {m.rank for m in gathered.members}
    if 0 not in heard:
        gathered.members.append(_member(own))
    gathered.members += [Member(host="", label=f"rank {r}", rank=r, error="the job was stopped before this rank "
                                "answered") for r in range(1, env.world_size) if r not in heard]
    gathered.members.sort(key=lambda m: m.rank if m.rank is not None else -1)


def _gather(store: Any, env: RankEnv, deadline: float, gathered: Gathered, timeout_s: float) -> None:
    pause = _POLL_S[0]
    while int(store.add("results", 0)) < env.world_size and time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(pause * 1.5, _POLL_S[1])
    _read(store, env, gathered, until_reason=f"no facts within --gather-timeout {timeout_s:g} s")


def _read(store: Any, env: RankEnv, gathered: Gathered, until_reason: str) -> None:
    """Every rank's result that is in the store, and the facts of each environment; the rest as failed."""
    keys = [f"result/{r}" for r in range(env.world_size)]
    if int(store.add("results", 0)) >= env.world_size and hasattr(store, "multi_get"):  # newer torch only
        raw: list[bytes | None] = list(store.multi_get(keys))  # everyone answered: one round trip
    else:
        raw = [store.get(k) if store.check([k]) else None for k in keys]
    members: list[Member] = []
    for rank, data in enumerate(raw):
        if data is None:
            hello = json.loads(store.get(f"hello/{rank}")) if store.check([f"hello/{rank}"]) else None
            reason = until_reason + ("" if hello else " (it never reached the rendezvous store)")
            members.append(Member(host=hello["host"] if hello else "", label=f"rank {rank}", rank=rank,
                                  local_rank=hello.get("local_rank") if hello else None, error=reason))
            continue
        record = json.loads(data)
        fp = record.get("fingerprint")
        if fp is not None and fp not in gathered.facts:
            try:
                blob = store.get(f"facts/{fp}")
                gathered.facts[fp] = Facts.from_dict(json.loads(zlib.decompress(blob)), file=f"rank {rank}")
            except Exception as exc:  # noqa: BLE001 - a corrupt or missing payload fails that rank, not the report
                record.update(fingerprint=None, error=f"its facts could not be read: {type(exc).__name__}: {exc}")
        members.append(_member(record))
    gathered.members = members


def _member(record: Mapping[str, Any], fallback_error: str = "no facts") -> Member:
    fp = record.get("fingerprint")
    return Member(host=str(record.get("host") or ""), label=f"rank {record.get('rank')}", fingerprint=fp,
                  error=None if fp else str(record.get("error") or fallback_error), rank=record.get("rank"),
                  local_rank=record.get("local_rank"), python=str(record.get("python") or ""),
                  device=record.get("device"))

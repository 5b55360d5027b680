"""Results of the live probes: what actually happened when torch ran on this machine, in a child process.

Imported where probe results are made or read (a snapshot with probes, the runner, the reports): a static check
never defines the class. The statuses and the default timeout are in envcheck/facts/probe_statuses.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envcheck.facts._reader import Reader
from envcheck.facts.probe_statuses import PROBE_STATUSES


@dataclass(frozen=True)
class ProbeResult:
    """One probe's outcome. `cases` holds per-case outcomes for probes that try several things (SDPA's matrix)."""

    status: str  # one of PROBE_STATUSES
    error_class: str | None = None  # "RuntimeError"; for crashed: the signal name ("SIGSEGV")
    message: str | None = None  # the exception's first line, or why it was skipped / how it crashed
    details: dict[str, Any] = field(default_factory=dict)  # probe-specific data (versions, timings, flags)
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)  # case -> {status, error_class, message, ...}
    wall_s: float | None = None  # the probe's own wall time
    stderr_tail: str | None = None  # the child's last stderr lines, for crashed and timeout

    @classmethod
    def from_reader(cls, r: Reader) -> ProbeResult:
        return cls(status=r.choice("status", PROBE_STATUSES), error_class=r.opt_text("error_class"),
                   message=r.opt_text("message"), details=r.json_object("details"),
                   cases=r.map_of("cases", _case), wall_s=r.opt_number("wall_s", minimum=0),
                   stderr_tail=r.opt_text("stderr_tail"))


def _case(r: Reader) -> dict[str, Any]:
    """One case's outcome: a status, the error's class and message, and probe-specific keys kept as they are."""
    r.choice("status", PROBE_STATUSES)
    r.opt_text("error_class")
    r.opt_text("message")
    return r.as_dict()

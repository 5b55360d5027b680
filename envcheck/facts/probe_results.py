"""Results of the live probes: what actually happened when torch ran on this machine, in a child process."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envcheck.facts._reader import Reader

# ok: the probe ran and what it tried worked; error: it ran and what it tried raised (the error is the finding);
# crashed: the child died (signal or exit code); timeout: killed after --probe-timeout; skipped: not run, and
# `message` says why (no CUDA device, apex absent, torch failed to import, ...).
PROBE_STATUSES = ("ok", "error", "crashed", "timeout", "skipped")
# How long a probe may take before it (and what it started) is killed, unless --probe-timeout says otherwise: the
# default of the command line, of `envcheck.check()` and of the probe runner. The first CUDA use can take a minute
# (context creation, PTX JIT).
PROBE_TIMEOUT_S = 120.0


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

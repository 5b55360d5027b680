"""Results of the live probes: what actually happened when torch ran on this machine, in a child process."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envcheck.errors import FactsError
from envcheck.facts._reader import Reader

# ok: the probe ran and what it tried worked; error: it ran and what it tried raised (the error is the finding);
# crashed: the child died (signal or exit code); timeout: killed after --probe-timeout; skipped: not run, and
# `message` says why (no CUDA device, apex absent, torch failed to import, ...).
PROBE_STATUSES = ("ok", "error", "crashed", "timeout", "skipped")


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
        details = r.raw("details") or {}
        cases = r.raw("cases") or {}
        wall = r.raw("wall_s")
        if not isinstance(details, dict) or not isinstance(cases, dict):
            bad = "details" if not isinstance(details, dict) else "cases"
            raise FactsError(r.file, "expected an object", key=f"{r.key}.{bad}")
        status = r.req_str("status")
        if status not in PROBE_STATUSES:
            raise FactsError(r.file, f"expected one of {', '.join(PROBE_STATUSES)}", key=f"{r.key}.status")
        return cls(status=status, error_class=r.opt_str("error_class"), message=r.opt_str("message"),
                   details=dict(details), cases={str(k): v for k, v in cases.items() if isinstance(v, dict)},
                   wall_s=float(wall) if isinstance(wall, (int, float)) and not isinstance(wall, bool) else None,
                   stderr_tail=r.opt_str("stderr_tail"))

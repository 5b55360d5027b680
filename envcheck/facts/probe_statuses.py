"""What a live probe's outcome can be, and how long a probe may take: read by the options, the conditions and the
probe runner. The outcome's class is envcheck/facts/probe_results.py, imported where probe results are made or
read: a static check never defines it."""

from __future__ import annotations

# ok: the probe ran and what it tried worked; error: it ran and what it tried raised (the error is the finding);
# crashed: the child died (signal or exit code); timeout: killed after --probe-timeout; skipped: not run, and
# `message` says why (no CUDA device, apex absent, torch failed to import, ...).
PROBE_STATUSES = ("ok", "error", "crashed", "timeout", "skipped")
# How long a probe may take before it (and what it started) is killed, unless --probe-timeout says otherwise: the
# default of the command line, of `envcheck.check()` and of the probe runner. The first CUDA use can take a minute
# (context creation, PTX JIT).
PROBE_TIMEOUT_S = 120.0

"""What one rank collects: the static facts of its interpreter, and the live probes on its own GPU only.

torchrun starts one rank per GPU. Each rank probes the GPU its local rank would use, by giving the probe children
a CUDA_VISIBLE_DEVICES of that one device, so eight ranks on an eight-GPU node probe the eight GPUs in parallel,
once each, instead of eight times all eight. A rank's device is the local_rank-th entry of its CUDA_VISIBLE_DEVICES
(or of NVML's device list, by UUID, when that is unset), wrapping around when there are more ranks than GPUs.

No torch here: the probes run in child processes, as everywhere in envcheck.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence

from envcheck.facts.snapshot import Facts
from envcheck.pipeline.stages import ProbeOptions, gather
from envcheck.rules.model import Rule
from envcheck.sources.probes import run_probes
from envcheck.sources.probes.catalog import PROBE_NAMES


def local_device(facts: Facts, local_rank: int | None, environ: Mapping[str, str]) -> str | None:
    """The CUDA_VISIBLE_DEVICES value naming this rank's GPU; None to leave the probes' view of GPUs unchanged."""
    nvml = facts.nvml
    if local_rank is None or nvml is None or not nvml.devices:
        return None
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        # By UUID: CUDA numbers devices fastest-first unless the user set CUDA_DEVICE_ORDER, and NVML's index is
        # PCI bus order, so an index would name another GPU. GPUs this user may not open are no rank's to use.
        choices = [d.uuid for d in nvml.accessible_devices if d.uuid]
        if not choices:
            return None
    else:
        choices = [c.strip() for c in visible.split(",") if c.strip()]
        if not choices or choices[0].startswith("-"):
            return None  # no GPU visible to this rank: probing sees what the rank sees
    return choices[local_rank % len(choices)]


def collect(rules: Sequence[Rule], probes: ProbeOptions, local_rank: int | None,
            environ: Mapping[str, str] | None = None) -> tuple[Facts, str | None]:
    """(facts, the device probed or None). Raises what the collection raises: the caller reports it."""
    env = dict(os.environ if environ is None else environ)
    facts = gather(rules, probes=ProbeOptions(run=False))
    if not probes.run:
        return facts, None
    device = local_device(facts, local_rank, env)
    keyed = facts
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = device
        # The cache key covers the device: another rank of this node probing another GPU must not reuse these.
        keyed = dataclasses.replace(facts, env={**facts.env, "CUDA_VISIBLE_DEVICES": device})
    probed = run_probes(keyed, PROBE_NAMES, timeout_s=probes.timeout_s, use_cache=probes.use_cache, env=env)
    return dataclasses.replace(facts, probes=probed.results, problems=facts.problems + probed.problems), device

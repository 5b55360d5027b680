"""The probes envcheck can run: names, what each tries, and whether it runs in a child of its own.

Probes run in children of the checked interpreter (envcheck/sources/probes/_child.py holds their code). Safe probes
share one child, so `import torch` is paid once; a probe marked `isolated` gets a child of its own because it is known
to crash processes (a fused CUDA kernel from a mismatched build can segfault). Either way, a child that dies takes
only the probe it was running with it: the runner restarts a child for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProbeSpec:
    """One probe: its name, what it tries, and how it runs."""

    name: str
    doc: str  # one sentence: what it tries
    isolated: bool = False  # run in a child of its own
    needs_torch: bool = True  # skipped (not failed) when torch cannot be imported


PROBES: tuple[ProbeSpec, ...] = (
    ProbeSpec("torch-import", "Imports torch: time, warnings (e.g. the NumPy 1.x/2.x ABI warning), the exception if "
              "it fails.", needs_torch=False),
    ProbeSpec("torch-build", "torch's compiled arch list, CUDA / cuDNN / NCCL versions, C++11 ABI, CUDA "
              "availability, and each visible device's capability matched to NVML by UUID."),
    ProbeSpec("sdpa", "scaled_dot_product_attention with mixed query/key/value dtypes, outside and inside "
              "autocast, on cpu and each CUDA device; on CUDA, the backend matrix with torch's reasons."),
    ProbeSpec("transformer-fastpath", "nn.TransformerEncoderLayer in eval under autocast (bf16 on cpu; bf16 and "
              "fp16 on cuda): did the fast path run, and the error if any."),
    ProbeSpec("bf16", "Native bfloat16 per CUDA device (no emulation): a bf16 matmul and torch's own answer."),
    # needs_torch=False: the probe looks for apex first and imports torch only when apex is there, so the usual
    # case (no apex) costs no second `import torch` in its isolated child.
    ProbeSpec("apex-fused-norm", "NVIDIA apex FusedRMSNorm / FusedLayerNorm with fp32 input and fp16 weights on "
              "CUDA.", isolated=True, needs_torch=False),
    # Shared, needs_torch=False: the probe only orchestrates; the imports run in grandchildren of its own (forked
    # from the shared child on Linux, which has torch imported: see runner.FIRST), so an extension that crashes
    # costs one module and no other probe, and NumPy-only extensions are tried even without torch.
    ProbeSpec("extension-imports", "Imports every installed distribution that ships native extensions and builds "
              "on torch or NumPy, in crash-isolated children: the error each raises, if any.", needs_torch=False),
    ProbeSpec("safetensors", "A safetensors save/load round trip of a tensor.", needs_torch=True),
    ProbeSpec("loaded-libraries", "The shared libraries the process has mapped after importing torch (Linux "
              "/proc/self/maps): which cuDNN, cuBLAS, NCCL, libstdc++ ... were actually loaded, and from where."),
)
PROBE_NAMES = tuple(p.name for p in PROBES)
# The probes that run work on CUDA devices: after one of them hangs (a wedged GPU), the runner skips the others.
GPU_PROBES = frozenset({"sdpa", "transformer-fastpath", "bf16", "apex-fused-norm"})
BY_NAME = {p.name: p for p in PROBES}

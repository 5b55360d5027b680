"""`transformers env` / `hf env`, `accelerate env` and `diffusers-cli env`: "- Key: value" lines.

They state the platform, the Python version, torch's version with its local build ("2.0.1+cu117 (True)"), some
library versions ("not installed" for absent ones) and, for accelerate, one "GPU type" (not how many GPUs).
"""

from __future__ import annotations

import re

from envcheck.sources.reports.collect_env import LIBC, PLATFORM_MACHINE, sys_platform_of
from envcheck.sources.reports.found import Found, Gpu, Package, cuda_of_local_version
from envcheck.sources.reports.text import Block
from envcheck.support.patterns import lazy

__all__ = ["parse", "recognise"]

# Matched where the line's text begins (after the indent and "- "): str methods find that, since a pattern such
# as `\s*-?\s*(.+?):` tries every split of a run of spaces and is cubic in its length.
_HEAD = lazy(r"(?:`(transformers|Accelerate)`|🤗 Diffusers|Diffusers) version:", re.IGNORECASE)
# "- X version: 1.2.3" keys that name a distribution, as these tools spell them.
_PACKAGES = {
    "`transformers` version": "transformers", "transformers version": "transformers",
    "`accelerate` version": "accelerate", "accelerate version": "accelerate", "🤗 diffusers version": "diffusers",
    "diffusers version": "diffusers", "huggingface_hub version": "huggingface-hub",
    "safetensors version": "safetensors", "numpy version": "numpy", "peft version": "peft",
    "bitsandbytes version": "bitsandbytes", "xformers version": "xformers", "deepspeed version": "deepspeed",
    "tokenizers version": "tokenizers",
}
_VERSION = lazy(r"^(\d[\w.+!-]*)")


def _text_start(line: str) -> int:
    """Where the text of a "- Key: value" line begins: after the indent, one "-" and the spaces after it."""
    body = line.lstrip()
    if body.startswith("-"):
        body = body[1:].lstrip()
    return len(line) - len(body)


def _is_head(line: str) -> bool:
    return _HEAD.match(line, _text_start(line)) is not None


# The answers of the pattern this once was, `^\s*-?\s*(.+?):\s*(.*?)\s*$`, down to its odd one: a colon that begins
# the text takes the character before it (a space or the "-") as the key.
def _key_value(line: str) -> tuple[str, str] | None:
    """(key, value) of a "- Key: value" line, the key up to its first colon and the value stripped; None without
    a colon after the key's first character."""
    start = _text_start(line)
    colon = line.find(":", start + 1)
    if colon < 0:
        if start == 0 or not line.startswith(":", start):
            return None
        start, colon = start - 1, start
    return line[start:colon], line[colon + 1:].strip()


def recognise(block: Block) -> bool:
    return any(_is_head(line) for line in block.lines[:400])


def parse(block: Block) -> Found:
    start = next(i for i, line in enumerate(block.lines) if _is_head(line))
    values: dict[str, str] = {}
    end = start + 1
    for index in range(start, len(block.lines)):
        line = block.lines[index]
        pair = _key_value(line)
        if not pair or not line.lstrip().startswith(("-", "`", "🤗")):
            if line.strip():
                continue
            break
        values.setdefault(pair[0].strip().lower(), pair[1])
        end = index + 1
    packages = []
    for key, name in _PACKAGES.items():
        version = _VERSION.match(values.get(key, ""))
        if version:
            packages.append(Package(name, version.group(1)))
    torch = _VERSION.match(values.get("pytorch version (gpu?)", ""))
    torch_version = torch.group(1) if torch else None
    cuda = hip = None
    if torch_version:
        packages.append(Package("torch", torch_version))
        named = cuda_of_local_version(torch_version)
        if named is not None:
            cuda, hip = named[0] or "", named[1]
    platform = values.get("platform", "")
    python = _VERSION.match(values.get("python version", ""))
    machine = PLATFORM_MACHINE.search(platform)
    libc = LIBC.search(platform)
    gpu = values.get("gpu type")
    return Found(
        fmt="hf env", where=block.where("hf env", start, end), packages=tuple(packages),
        torch_version=torch_version, torch_cuda=cuda, torch_hip=hip,
        python_version=python.group(1) if python else None, sys_platform=sys_platform_of(None, platform or None),
        machine=machine.group(1) if machine else None, libc=(libc.group(1), libc.group(2)) if libc else None,
        # One "GPU type" says nothing of how many: a GPU list of one would be a guess. Kept only without NVML.
        gpus=(Gpu(name=gpu),) if gpu and hip is None else None,
    )

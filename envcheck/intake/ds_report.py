"""`ds_report` (DeepSpeed): "DeepSpeed general environment info:" then "key ........ value" lines."""

from __future__ import annotations

import re

from envcheck.intake.found import Found, Package, major_minor_text
from envcheck.intake.text import Block

__all__ = ["parse", "recognise"]

_HEAD = "DeepSpeed general environment info"
_LINE = re.compile(r"^\s*([a-z][a-z0-9 ()/.,-]*?)\s*\.{3,}\s*(.*?)\s*$")
_VERSION = re.compile(r"\d[\w.+!-]*")


def recognise(block: Block) -> bool:
    return any(_HEAD in line for line in block.lines)


def parse(block: Block) -> Found:
    start = next(i for i, line in enumerate(block.lines) if _HEAD in line)
    values: dict[str, str] = {}
    end = start + 1
    for index in range(start + 1, len(block.lines)):
        match = _LINE.match(block.lines[index])
        if not match:
            break
        values[match.group(1)] = match.group(2)
        end = index + 1
    torch = _VERSION.match(values.get("torch version", ""))
    deepspeed = _VERSION.match(values.get("deepspeed info", ""))
    packages = [Package(name, m.group(0)) for name, m in (("torch", torch), ("deepspeed", deepspeed)) if m]
    cuda_text = values.get("torch cuda version")
    hip_text = values.get("torch hip version")
    cuda = None if cuda_text is None else (major_minor_text(cuda_text) or "")  # "None": a build without CUDA
    hip = major_minor_text(hip_text) if hip_text else None
    return Found(fmt="ds_report", where=block.where("ds_report", start, end), packages=tuple(packages),
                 torch_version=torch.group(0) if torch else None, torch_cuda=cuda, torch_hip=hip)

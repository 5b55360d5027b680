"""`ds_report` (DeepSpeed): "DeepSpeed general environment info:" then "key ........ value" lines."""

from __future__ import annotations

from envcheck.sources.reports.found import Found, Package
from envcheck.sources.reports.text import Block
from envcheck.support.patterns import lazy
from envcheck.support.versions import major_minor_text

__all__ = ["parse", "recognise"]

_HEAD = "DeepSpeed general environment info"
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789 ()/.,-")
_VERSION = lazy(r"\d[\w.+!-]*")


def recognise(block: Block) -> bool:
    return any(_HEAD in line for line in block.lines)


# A "key ........ value" line is read with str methods. The pattern it once was gave the same answers in time
# quadratic in a run of spaces or dots (its lazy key may hold both, and so may what follows the key):
#   ^\s*([a-z][a-z0-9 ()/.,-]*?)\s*\.{3,}\s*(.*?)\s*$
def _key_value(line: str) -> tuple[str, str] | None:
    """(key, value) of a "key ........ value" line: the key (lower case, digits, spaces, `()/.,-`) up to the first
    run of three dots, the value after the dots, stripped; None for any other line."""
    text = line.lstrip()
    if not text or not "a" <= text[0] <= "z":
        return None
    dots = text.find("...", 1)
    if dots < 0:
        return None
    key = text[:dots].rstrip()
    if not _KEY_CHARS.issuperset(key):
        return None
    value = text[dots:].lstrip(".")
    return key, value.strip()


def parse(block: Block) -> Found:
    start = next(i for i, line in enumerate(block.lines) if _HEAD in line)
    values: dict[str, str] = {}
    end = start + 1
    for index in range(start + 1, len(block.lines)):
        pair = _key_value(block.lines[index])
        if pair is None:
            break
        values[pair[0]] = pair[1]
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

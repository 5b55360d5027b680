"""`nvidia-smi` (the table) and `nvidia-smi -q` (the "NVSMI LOG" key/value listing).

Table layouts read: before driver 530 ("| NVIDIA-SMI 525.125.06   Driver Version: 525.125.06   CUDA Version: 12.0 |",
names cut to 19 characters with "..."), 530 and later (wider name column), 610 and later ("KMD Version",
"CUDA UMD Version"). The table states no compute capability; the GPU-name table supplies it.
"""

from __future__ import annotations

import re

from envcheck.sources.reports.found import Found, Gpu, number
from envcheck.sources.reports.text import Block
from envcheck.support.patterns import lazy

__all__ = ["parse_query", "parse_table", "recognise_query", "recognise_table"]

_BANNER = lazy(r"NVIDIA-SMI\s+(\S+)\s+(?:Driver|KMD) Version:\s*(\S+)(?:\s+CUDA (?:UMD )?Version:\s*(\S+))?")
# "|   0  NVIDIA GeForce RTX 4090        On  |   00000000:01:00.0  On |                  Off |". The name (stripped
# where it is read) ends before one space, not `\s+`: a lazy name then `\s+` is quadratic in a run of spaces. It
# begins with a non-space, or is one space where nothing but spaces precede the mode (as `\s+(.+?)\s+` read it).
_GPU_ROW = lazy(r"^\|\s+(\d+)\s+(\S.*?|\s)\s(?:On|Off|WDDM|TCC|N/A)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:"
                r"[0-9A-Fa-f]{2}\.\d)")
# Begun only where a run of digits begins: tried inside one too, a search is quadratic in a long run of digits.
_MEMORY = lazy(r"(?<!\d)(\d+)MiB\s*/\s*(\d+)MiB")
_QUERY_NAME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 ./()-")
_QUERY_GPU = lazy(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")


def recognise_table(block: Block) -> bool:
    return any(_BANNER.search(line) for line in block.lines[:400])


def recognise_query(block: Block) -> bool:
    return any("NVSMI LOG" in line or line.startswith("Attached GPUs") for line in block.lines[:400])


def _cuda(text: str | None) -> str | None:
    return text if text and re.fullmatch(r"\d+\.\d+", text) else None


# str methods, not the pattern this once was, `^(\s*)([A-Za-z][A-Za-z0-9 ./()-]*?)\s*:\s*(.*)$`, which gave the
# same answers in time quadratic in a run of spaces: its lazy key may hold spaces, and so may what follows it.
def _query_key(line: str) -> tuple[int, str, str] | None:
    """(indent, key, value) of a "    Key    : value" line of `nvidia-smi -q`, stripped; None for another line."""
    text = line.lstrip()
    colon = text.find(":")
    if colon < 0 or not ("A" <= text[0] <= "Z" or "a" <= text[0] <= "z"):
        return None
    key = text[:colon].rstrip()
    if not _QUERY_NAME.issuperset(key):
        return None
    return len(line) - len(text), key, text[colon + 1:].strip()


def parse_table(block: Block) -> Found:
    lines = block.lines
    start = next(i for i, line in enumerate(lines) if _BANNER.search(line))
    banner = _BANNER.search(lines[start])
    assert banner is not None  # found above
    gpus: list[Gpu] = []
    end = start + 1
    for index in range(start + 1, len(lines)):
        row = _GPU_ROW.match(lines[index])
        if row:
            memory = _MEMORY.search(lines[index + 1]) if index + 1 < len(lines) else None
            gpus.append(Gpu(name=row.group(2).strip(), pci_bus_id=row.group(3),
                            memory_total_mib=number(memory.group(2)) if memory else None))
            end = index + 2
        elif "Processes:" in lines[index]:
            break
    # A banner without GPU rows is a paste cut after its first line, not a machine without GPUs (nvidia-smi prints
    # "No devices were found" and no table there): the GPUs are not listed, so unknown.
    return Found(fmt="nvidia-smi", where=block.where("nvidia-smi", start, end),
                 driver_version=banner.group(2), cuda_driver_version=_cuda(banner.group(3)),
                 gpus=tuple(gpus) if gpus else None)


def parse_query(block: Block) -> Found:
    lines = block.lines
    start = next(i for i, line in enumerate(lines) if "NVSMI LOG" in line or line.startswith("Attached GPUs"))
    driver: str | None = None
    cuda: str | None = None
    gpus: list[dict[str, str]] = []
    section = ""
    end = start + 1
    for index in range(start, len(lines)):
        line = lines[index]
        gpu = _QUERY_GPU.match(line)
        if gpu:
            gpus.append({"pci_bus_id": gpu.group(1)})
            end = index + 1
            continue
        key = _query_key(line)
        if key is None:
            if line.strip() and not line.startswith(" "):
                section = ""
            elif line.strip():
                section = line.strip()  # "FB Memory Usage": a heading whose keys follow, indented deeper
            continue
        indent, name, value = key
        end = index + 1
        if indent == 0 and name == "Driver Version":
            driver = value
        elif indent == 0 and name == "CUDA Version":
            cuda = value
        elif gpus and name == "Product Name":
            gpus[-1]["name"] = value
        elif gpus and name == "GPU UUID":
            gpus[-1]["uuid"] = value
        elif gpus and name == "Total" and section == "FB Memory Usage":
            gpus[-1]["memory"] = value
        if not value and indent > 0:
            section = name
    out = []
    for listed in gpus:
        memory = re.match(r"(\d+)\s*MiB", listed.get("memory", ""))
        out.append(Gpu(name=listed.get("name"), uuid=listed.get("uuid"), pci_bus_id=listed["pci_bus_id"],
                       memory_total_mib=number(memory.group(1)) if memory else None))
    return Found(fmt="nvidia-smi -q", where=block.where("nvidia-smi -q", start, end),
                 driver_version=driver if driver and re.match(r"\d+\.\d+", driver) else None,
                 cuda_driver_version=_cuda(cuda), gpus=tuple(out))

"""`python -m torch.utils.collect_env`: "Key: value" lines whose set and spelling changed across torch releases.

Layouts read (each with a fixture under tests/fixtures/reports/collect_env/): torch 1.0-1.6 ("Is debug build: No",
"Python version: 3.7", a "[pip]"/"[pip3]" library list), 1.7-1.13 (adds "ROCM used to build PyTorch", "Clang
version", "Libc version", "Python platform"), 2.x (adds "CUDA_MODULE_LOADING set to", "Is XNNPACK available", the
CPU section, full Python version with build details). Only the keys below are read; new keys are ignored.
"""

from __future__ import annotations

import re

from envcheck.sources.reports.conda_list import package_of_row
from envcheck.sources.reports.found import Found, Gpu, Package, cuda_of_local_version
from envcheck.sources.reports.text import Block
from envcheck.support.patterns import lazy
from envcheck.support.versions import major_minor_text

__all__ = ["LIBC", "PLATFORM_MACHINE", "parse", "sys_platform_of"]

_KEY = lazy(r"^\s*([A-Za-z][A-Za-z0-9_ ./()-]*?):\s*(.*)$")
_NOT_STATED = {"", "n/a", "none", "could not collect", "no cuda", "not available"}
# "GPU 0: NAME": the name is the rest of the line, right-stripped by str.rstrip (a lazy `(.+?)\s*$` is quadratic in
# a run of spaces inside the name).
_GPU_LINE = lazy(r"\s*GPU \d+: ")
_GFX_TARGET = lazy(r"\((gfx[0-9a-f]{3,4})\b")
_LIBRARY = lazy(r"^\s*\[(pip3?|conda|uv)\]\s+(.*)$")
_FREEZE = lazy(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*(\S+)$")
# A conda version begins with a digit (as in `conda list`, conda_list._ROW): "[conda] Could not collect" is no row.
_CONDA_ROW = lazy(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s+(\d\S*)(?:\s+(\S+))?(?:\s+(\S+))?$")
_ARCHS = lazy(r"supports CUDA capabilities ((?:(?:sm|compute)_\d+[af]?\s*)+)")
_LINUX_WORDS = lazy(r"ubuntu|debian|centos|linux|fedora|red hat|rhel|rocky|alma|suse|arch|mint|pop!_os|"
                    r"amazon|oracle|gentoo|nixos|manjaro", re.IGNORECASE)
_MACHINE = lazy(r"\((x86_64|aarch64|arm64|ppc64le|s390x|AMD64|i686)\)")
PLATFORM_MACHINE = lazy(r"-(x86_64|aarch64|arm64|ppc64le|s390x|AMD64)(?:-|$)")
LIBC = lazy(r"(glibc|musl)-(\d+\.\d+)")


# vLLM's `collect_env` (2025) pads keys into a column ("PyTorch version              : 2.7.1+cu128") under
# "====" section banners; torch's own has "Key: value". Both read alike.
_TORCH_KEY = lazy(r"PyTorch version\s*:")


def recognise(block: Block) -> bool:
    """collect_env's first key, with another of its keys near it."""
    text = "\n".join(block.lines[:400])
    return _TORCH_KEY.search(text) is not None and ("CUDA used to build PyTorch" in text or "Is debug build" in text)


def _stated(value: str) -> str | None:
    value = value.strip()
    return None if value.lower() in _NOT_STATED else value


def sys_platform_of(os_text: str | None, platform_text: str | None) -> str | None:
    """`sys.platform` ("linux", "win32", "darwin") of the OS a report names; None when it names none."""
    for text in (platform_text, os_text):
        if not text:
            continue
        if text.startswith("Linux") or _LINUX_WORDS.search(text):
            return "linux"
        if "Windows" in text:
            return "win32"
        if re.search(r"mac ?os|darwin|os x", text, re.IGNORECASE):
            return "darwin"
    return None


def _gpu_name(line: str) -> str | None:
    """NAME of a "GPU 0: NAME" line; None for any other line."""
    head = _GPU_LINE.match(line)
    if head is None or head.end() == len(line):
        return None
    name = line[head.end():]
    return name.rstrip() or name[0]  # as `(.+?)\s*$` read it: a name of spaces is its first space


def parse(block: Block) -> Found:
    values: dict[str, str] = {}
    gpus: list[Gpu] = []
    packages: list[Package] = []
    archs: tuple[str, ...] | None = None
    start: int | None = None
    end = 0
    in_gpus = False
    for index, line in enumerate(block.lines):
        found_archs = _ARCHS.search(line)
        if found_archs:
            archs = tuple(found_archs.group(1).split())
        if start is None:
            if not _TORCH_KEY.search(line) and "Collecting environment information" not in line \
                    and "System Info" not in line:
                continue
            start = index
        library = _LIBRARY.match(line)
        if library:
            end = index + 1
            packages.extend(_library(library.group(1), library.group(2)))
            continue
        gpu = _gpu_name(line) if in_gpus else None
        if gpu is not None:
            end = index + 1
            gpus.append(Gpu(name=gpu))
            continue
        in_gpus = False
        key = _KEY.match(line)
        if key and key.group(1).strip() not in values:
            name, value = key.group(1).strip(), key.group(2).strip()
            values[name] = value
            end = index + 1
            if name == "GPU models and configuration":
                # "GPU 0: NAME" on this line or the next ones, one per GPU.
                in_gpus = True
                inline = _gpu_name(value)
                if inline is not None:
                    gpus.append(Gpu(name=inline))
    start = start or 0
    torch_version = _stated(values.get("PyTorch version", ""))
    cuda: str | None = None
    hip: str | None = None
    built = values.get("CUDA used to build PyTorch")
    if built is not None and built.strip().lower() != "could not collect":
        cuda = major_minor_text(built) if _stated(built) else ""  # N/A, None: a build without CUDA
    rocm = values.get("ROCM used to build PyTorch")
    if rocm is not None and _stated(rocm):
        hip = major_minor_text(rocm)
    if torch_version is not None and (cuda is None or cuda == "") and hip is None:
        named = cuda_of_local_version(torch_version)
        if named is not None:
            cuda = named[0] or cuda
            hip = named[1]
    gpu_text = _stated(values.get("GPU models and configuration", ""))
    if gpu_text and not gpus:
        gpus = [Gpu(name=gpu_text)]  # torch 1.x on one GPU: the bare name
    python = values.get("Python version", "")
    py_match = re.match(r"(\d+\.\d+(?:\.\d+)?)", python)
    os_text = _stated(values.get("OS", ""))
    platform_text = _stated(values.get("Python platform", ""))
    machine = _MACHINE.search(os_text or "") or PLATFORM_MACHINE.search(platform_text or "")
    libc = LIBC.search(values.get("Libc version", "")) or LIBC.search(platform_text or "")
    driver = _stated(values.get("Nvidia driver version", ""))
    vllm = re.match(r"\d[\w.+-]*", values.get("vLLM Version", ""))
    if vllm:
        packages.append(Package("vllm", vllm.group(0)))
    return Found(
        fmt="collect_env", where=block.where("collect_env", start, max(end, start + 1)),
        packages=tuple(packages),
        packages_complete=False,  # collect_env lists only the libraries it finds relevant
        torch_version=torch_version, torch_cuda=cuda, torch_hip=hip,
        python_version=py_match.group(1) if py_match else None,
        sys_platform=sys_platform_of(os_text, platform_text),
        machine=machine.group(1) if machine else None,
        libc=(libc.group(1), libc.group(2)) if libc else None,
        driver_version=driver if driver and re.match(r"\d+\.\d+", driver) else None,
        # A ROCm build lists AMD devices ("Device 66a1"): not NVIDIA GPUs, which is what the GPU facts describe.
        gpus=tuple(gpus) if gpus and hip is None else None,
        amd_gpus=_amd_targets(gpus) if hip is not None else None,
        arch_list=archs,
        conda=any(p.installer == "conda" for p in packages),
    )


def _amd_targets(gpus: list[Gpu]) -> tuple[str, ...] | None:
    """The gfx target of each GPU a ROCm build lists ("AMD Radeon RX 7900 XTX (gfx1100)", torch 2.1 and later, or
    "AMD Instinct MI100 (gfx908:sramecc+:xnack-)"); None unless every listed GPU names one."""
    targets = [_GFX_TARGET.search(gpu.name or "") for gpu in gpus]
    return tuple(t.group(1) for t in targets if t) if targets and all(targets) else None


def _library(kind: str, rest: str) -> list[Package]:
    """One "[pip3] numpy==1.26.4" or "[conda] pytorch 2.1.0 py3.10_cuda11.8_cudnn8.7.0_0 pytorch" line; none for
    collect_env's stand-ins for an empty or failed list ("[conda] Could not collect", "No relevant packages")."""
    rest = rest.strip()
    if rest.lower() in _NOT_STATED or rest.lower() == "no relevant packages":
        return []
    if kind == "conda":
        row = _CONDA_ROW.match(rest)
        return [] if row is None else [package_of_row(row.group(1), row.group(2), row.group(3) or "",
                                                      row.group(4) or "")]
    freeze = _FREEZE.match(rest)
    return [] if freeze is None else [Package(freeze.group(1), freeze.group(2))]

"""Fakes at the seams: real .dist-info folders, real package trees, and Facts built from either or from a minimal
dict; and a pasted text run through the CLI.

Distributions are written as real folders under tmp_path and read by the real collector through the real
`importlib.metadata`; nothing of importlib is mocked. Pure-logic tests build Facts from a minimal dict instead.
Test modules import these by name (`from _fakes import write_dist, build_facts`): tests/ is on pytest's `pythonpath`
(pyproject.toml), and parametrize tables need them at import time.
"""

from __future__ import annotations

import importlib.machinery
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from envcheck.facts.snapshot import Facts
from envcheck.sources.live import _collector

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parent.parent  # the checkout
EXT_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]  # ".cpython-311-x86_64-linux-gnu.so" on CPython/Linux
SITE = "/opt/venv/lib/python3.11/site-packages"

_GENERATE = object()  # write_dist's default: generate METADATA from the keyword arguments


def write_dist(
    site: Path,
    name: str,
    version: str,
    *,
    requires: Iterable[str] = (),
    requires_python: str | None = None,
    top_level: Iterable[str] | None = None,
    record: Iterable[str] | None = None,
    installer: str | None = "pip",
    metadata: Any = _GENERATE,
    folder: str | None = None,
) -> Path:
    """A real `NAME-VERSION.dist-info` folder in `site`.

    `metadata` replaces the generated METADATA (str or bytes, written as is) or, when None, leaves it out.
    `top_level` writes top_level.txt, `record` writes RECORD rows; either may be left out.
    """
    dist_info = site / (folder or f"{name.replace('-', '_')}-{version}.dist-info")
    dist_info.mkdir(parents=True)
    if metadata is _GENERATE:
        lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        if requires_python is not None:
            lines.append(f"Requires-Python: {requires_python}")
        lines += [f"Requires-Dist: {r}" for r in requires]
        metadata = "\n".join(lines) + "\n\nA long description.\nName: not-a-header\n"
    if isinstance(metadata, bytes):
        (dist_info / "METADATA").write_bytes(metadata)
    elif metadata is not None:
        (dist_info / "METADATA").write_text(metadata, encoding="utf-8")
    if top_level is not None:
        (dist_info / "top_level.txt").write_text("".join(f"{t}\n" for t in top_level), encoding="utf-8")
    if record is not None:
        (dist_info / "RECORD").write_text("".join(f"{r},,\n" for r in record), encoding="utf-8")
    if installer is not None:
        (dist_info / "INSTALLER").write_text(f"{installer}\n", encoding="utf-8")
    return dist_info


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Files under `root`, given as relative path -> content."""
    for relative, content in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


# Importing any of these raises: a collector that executes package code fails the test that wrote them.
POISON = 'raise RuntimeError("must not be imported")\n'
FUSED_LAYER_NORM = "class FusedRMSNorm:\n    pass\n\nclass FusedLayerNorm:\n    pass\n"


def write_apex(site: Path) -> None:
    """A fake NVIDIA apex: a package whose __init__ raises, a subpackage, and a compiled extension module."""
    write_tree(site, {
        "apex/__init__.py": POISON,
        "apex/normalization/__init__.py": POISON,
        "apex/normalization/fused_layer_norm.py": FUSED_LAYER_NORM,
        f"fused_layer_norm_cuda{EXT_SUFFIX}": b"\x7fELF not really a shared object",
    })


def write_torch(site: Path, version_py: str | None) -> None:
    """A fake torch package whose __init__ raises; torch/version.py holds `version_py` (absent when None)."""
    files: dict[str, str | bytes] = {"torch/__init__.py": POISON}
    if version_py is not None:
        files["torch/version.py"] = version_py
    write_tree(site, files)


def collect_facts(*sites: Path, request: dict[str, Any] | None = None) -> Facts:
    """Facts from the real collector run in this process over exactly `sites` (the import path, in order)."""
    raw = _collector.collect(request or {}, path=[str(s) for s in sites])
    return Facts.from_dict(json.loads(json.dumps(raw)), file="<collected>")


# --- Facts from a minimal dict, for pure-logic tests -----------------------------------------------------------

MARKER_ENV = {
    "implementation_name": "cpython", "implementation_version": "3.11.7", "os_name": "posix",
    "platform_machine": "x86_64", "platform_release": "6.1.0-18-amd64", "platform_system": "Linux",
    "platform_version": "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1", "python_full_version": "3.11.7",
    "platform_python_implementation": "CPython", "python_version": "3.11", "sys_platform": "linux",
}


def python_dict(**changes: Any) -> dict[str, Any]:
    """The `python` section of a snapshot of a Linux venv interpreter, with `changes` applied."""
    base: dict[str, Any] = {
        "version": "3.11.7", "implementation": "cpython", "executable": "/opt/venv/bin/python",
        "prefix": "/opt/venv", "base_prefix": "/usr", "virtualenv": True, "conda": False,
        "platform": "linux", "machine": "x86_64", "system": "Linux", "release": "6.1.0-18-amd64",
        "libc": {"name": "glibc", "version": "2.36"}, "user_site": None, "cwd": "/opt/project",
        "path": ["/opt/project", SITE], "marker_environment": dict(MARKER_ENV),
    }
    base.update(changes)
    return base


def dist_dict(name: str, version: str, *requires: str, location: str = SITE, **changes: Any) -> dict[str, Any]:
    """One `distributions` entry of a snapshot."""
    base: dict[str, Any] = {
        "name": name, "version": version, "location": location,
        "metadata_dir": f"{location}/{name.replace('-', '_')}-{version}.dist-info", "requires": list(requires),
        "requires_python": None, "installer": "pip", "editable": False,
        "problems": [],
    }
    base.update(changes)
    return base


def torch_dict(version: str | None = "2.5.1+cu124", cuda: str | None = "12.4", hip: str | None = None,
               problem: str | None = None) -> dict[str, Any]:
    """The `torch` section of a snapshot (torch/version.py as the collector reads it)."""
    return {"location": f"{SITE}/torch", "version": version, "cuda": cuda, "hip": hip, "git_version": None,
            "debug": False, "fields": {}, "problem": problem}


def facts_dict(
    *,
    dists: Iterable[dict[str, Any]] = (),
    torch: dict[str, Any] | None = None,
    modules: Mapping[str, Any] | None = None,
    sources: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    python: Mapping[str, Any] | None = None,
    problems: Iterable[str] = (),
    nvml: dict[str, Any] | None = None,
    probes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A complete snapshot dict; every section not given is empty (`nvml` null: not collected)."""
    return {
        "schema": _collector.SCHEMA, "envcheck_version": "0.0.0", "python": python_dict(**(python or {})),
        "distributions": list(dists), "torch": torch, "modules": dict(modules or {}),
        "sources": dict(sources or {}), "env": dict(env or {}), "problems": list(problems),
        "nvml": nvml, "probes": dict(probes or {}),
    }


def gpu_dict(index: int = 0, capability: str | None = "9.0", name: str | None = "NVIDIA H100 80GB HBM3",
             memory_mib: int | None = 81559, **changes: Any) -> dict[str, Any]:
    """One `nvml.devices` entry of a snapshot."""
    base: dict[str, Any] = {
        "index": index, "name": name, "uuid": f"GPU-{index:08d}-0000-0000-0000-000000000000",
        "pci_bus_id": f"00000000:{index + 0x17:02X}:00.0", "compute_capability": capability,
        "memory_total_mib": memory_mib, "mig_mode": False, "error": None,
    }
    base.update(changes)
    return base


def nvml_dict(*devices: dict[str, Any], status: str = "ok", reason: str | None = None,
              driver: str | None = "550.54.15", cuda: str | None = "12.4") -> dict[str, Any]:
    """The `nvml` section of a snapshot: driver 550.54.15 (CUDA 12.4) and `devices` unless told otherwise."""
    if status != "ok" and reason is None:
        reason = f"NVML said {status}"
    return {"status": status, "reason": reason, "driver_version": driver, "cuda_driver_version": cuda,
            "devices": list(devices)}


def build_facts(**kwargs: Any) -> Facts:
    """Facts from `facts_dict(**kwargs)`."""
    return Facts.from_dict(facts_dict(**kwargs), file="<test>")


# --- error output through the CLI --------------------------------------------------------------------------------


def envcheck_on_text(tmp_path: Path, text: str, command: str, *options: str) -> Result:
    """`envcheck COMMAND` on `text` written to a file: `explain FILE`, or `check`/`facts` with `--report FILE`."""
    from envcheck.cli.click_cli import cli

    log = tmp_path / "pasted.txt"
    log.write_text(text, encoding="utf-8")
    source = [str(log)] if command == "explain" else ["--report", str(log)]
    return CliRunner().invoke(cli, [command, *source, *options])


def folded(result: Result) -> str:
    """The command's output with its line breaks and wrapping indents folded to single spaces."""
    return " ".join(result.output.split())

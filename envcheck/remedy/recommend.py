"""What-if planning: the torch-family install for this machine, a described one, or a saved snapshot.

`envcheck recommend` asks `envcheck.derived.builds.recommend` (the same answer the GPU rules' commands give) for a
Machine made of a snapshot's facts with any described part put in its place: `--gpu "RTX 5090"` (a name from
rules/data/gpus.toml, or `sm_120` / `12.0`), `--capability 12.0`, `--driver 570.86`, `--python 3.12`, `--platform
linux-x86_64`. Pure: facts and tables in, a Plan out; the CLI collects the facts and prints `render_text`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from envcheck.derived import build_matrix as tb
from envcheck.derived import builds, nvidia_gpus
from envcheck.derived.conda_recommend import conda_recommendation
from envcheck.derived.tables import CONDA_FORGE, CUDA_DRIVER, GPUS, TORCH_BUILDS, Tables
from envcheck.errors import EnvcheckError
from envcheck.facts.snapshot import Facts
from envcheck.remedy.commands.conda import conda_owns_torch
from envcheck.remedy.commands.installers import choose, for_environment
from envcheck.support.output_text import shell


class DescribeError(EnvcheckError):
    """A described machine that cannot be used (an unknown GPU name, a malformed driver or Python version)."""


@dataclass(frozen=True)
class Described:
    """What the user described; None / () keeps what the facts say."""

    gpus: tuple[str, ...] = ()  # "RTX 5090", "sm_120", "12.0"
    capabilities: tuple[str, ...] = ()  # "12.0"
    driver: str | None = None
    python: str | None = None  # "3.12"
    platform: str | None = None  # "linux-x86_64"

    @property
    def empty(self) -> bool:
        return self == Described()


@dataclass(frozen=True)
class Plan:
    """The recommendation for a machine, and the command that installs it in the checked environment."""

    machine: builds.Machine
    recommendation: builds.Recommendation
    command: tuple[str, ...] | None  # None when nothing fits, or no environment can run it
    installer: str  # how the command was written: "pip (...)", "uv pip (...)", "pip (a described machine)"
    conda: str = ""  # where conda installed torch: the conda-forge build chosen instead of PyPI's, in words


def _gpus(described: Described, table: nvidia_gpus.GpuNames) -> list[tuple[str, tb.Capability]]:
    out: list[tuple[str, tb.Capability]] = []
    for text in described.gpus:
        direct = nvidia_gpus.capability_of(text)
        found = nvidia_gpus.lookup(table, text) if direct is None else ("a GPU", direct)
        if found is None:
            raise DescribeError(f"--gpu {text!r}: not a GPU name envcheck knows (rules/data/gpus.toml); give its "
                                "compute capability instead, e.g. --capability 8.6 or --gpu sm_86 (NVIDIA lists "
                                "them at https://developer.nvidia.com/cuda-gpus)")
        out.append(found)
    for text in described.capabilities:
        direct = nvidia_gpus.capability_of(text)
        if direct is None:
            raise DescribeError(f"--capability {text!r}: expected a compute capability such as 8.6 or 12.0")
        out.append(("a GPU", direct))
    return out


def _driver(text: str, needed: bool) -> Version | None:
    """The driver version given or found; `needed` when there are GPUs to plan for."""
    if not text:
        if needed:
            raise DescribeError("no NVIDIA driver version is known for these GPUs: give it with --driver, e.g. "
                                "--driver 570.86.10")
        return None
    try:
        return Version(text)
    except InvalidVersion:
        raise DescribeError(f"--driver {text!r}: expected a driver version such as 570.86.10") from None


def machine(facts: Facts, described: Described, tables: Tables) -> builds.Machine:
    """The machine to plan for: the snapshot's, with each described part in its place."""
    base = builds.machine_of(facts)
    platform = described.platform or (base.platform if base else tb.platform_key(facts))
    if platform is None:
        raise DescribeError(f"the build matrix has no wheels for this platform ({facts.python.platform} "
                            f"{facts.python.machine}): give one with --platform ({', '.join(tb.PLATFORMS)})")
    if platform not in tb.PLATFORMS:
        raise DescribeError(f"--platform {platform!r}: expected one of {', '.join(tb.PLATFORMS)}")
    python = described.python or ".".join(facts.python.version.split(".")[:2])
    if not re.fullmatch(r"3\.\d+t?", python):
        raise DescribeError(f"--python {python!r}: expected a Python version such as 3.12")
    gpus = _gpus(described, tables[GPUS])
    if not gpus and not described.gpus and not described.capabilities:
        if base is None:
            raise DescribeError("NVML could not tell this machine's GPUs and their compute capability: describe "
                                "them with --gpu NAME or --capability X.Y (and --driver)")
        gpus = list(base.gpus)
    driver_text = described.driver or (base.driver_text if base else "")
    driver = _driver(driver_text, bool(gpus))
    torch = facts.torch.version if facts.torch is not None else None
    companions = tuple(name for name in builds.MOVES_WITH_TORCH if facts.active(name) is not None)
    return builds.Machine(platform, python, tuple(gpus), driver, driver_text, torch, companions,
                          builds.installed_versions(facts))


def plan(facts: Facts | None, described: Described, tables: Tables) -> Plan:
    """The Plan for the machine `facts` describes (None: a wholly described machine), with `described` in place."""
    if facts is None:
        if not described.platform or not described.python:
            raise DescribeError("a described machine needs --platform and --python (or --facts FILE)")
        if described.platform not in tb.PLATFORMS:
            raise DescribeError(f"--platform {described.platform!r}: expected one of {', '.join(tb.PLATFORMS)}")
        if not re.fullmatch(r"3\.\d+t?", described.python):
            raise DescribeError(f"--python {described.python!r}: expected a Python version such as 3.12")
        gpus = _gpus(described, tables[GPUS])
        text = described.driver or ""
        chosen = builds.Machine(described.platform, described.python, tuple(gpus), _driver(text, bool(gpus)), text)
    else:
        chosen = machine(facts, described, tables)
    rec = builds.recommend(tables[TORCH_BUILDS], chosen)
    if not rec.requirements:
        return Plan(chosen, rec, None, "")
    if facts is None:
        argv = ("python", "-m", "pip", "install", *rec.requirements, "--index-url", rec.index_url)
        return Plan(chosen, rec, argv, "pip (a described machine: run it with the Python that is to have torch)")
    if described.empty and conda_owns_torch(facts):
        return _conda_plan(chosen, rec, facts, tables)
    argv = (facts.python.executable, "-m", "pip", "install", *rec.requirements, "--index-url", rec.index_url)
    rendered = for_environment([argv], facts)
    return Plan(chosen, rec, rendered.commands[0] if rendered.commands else None, choose(facts).describe())


def _conda_plan(chosen: builds.Machine, rec: builds.Recommendation, facts: Facts, tables: Tables) -> Plan:
    """Where conda installed torch, conda-forge's build (the one the GPU rules' fixes name), in the environment's
    conda, mamba or pixi command: PyPI's choice, written for conda, could name a CUDA conda-forge did not build."""
    found = conda_recommendation(facts, tables[CONDA_FORGE], tables[CUDA_DRIVER])
    item = found[0] if found else None
    if item is None or not item["install"]:
        why = item["because"] if item is not None else "conda's record of torch or the GPUs are not known"
        return Plan(chosen, dataclasses.replace(rec, because=(why,)), None, "", "no conda-forge build fits")
    argv = (facts.python.executable, "-m", "pip", "install", item["install"], "--index-url", item["index_url"])
    rendered = for_environment([argv], facts)
    return Plan(chosen, dataclasses.replace(rec, because=(item["because"],)),
                rendered.commands[0] if rendered.commands else None,
                "conda-forge, in the environment's own tool: conda installed torch here", item["recommended"])


def _machine_line(m: builds.Machine) -> str:
    gpus = ", ".join(f"{name} ({cap[0]}.{cap[1]})" for name, cap in m.gpus) or "no NVIDIA GPU"
    driver = f", driver {m.driver_text or m.driver}" if m.driver is not None else ""
    torch = f"; installed: torch {m.torch}" if m.torch else ""
    extra = f" with {', '.join(m.companions)}" if m.torch and m.companions else ""
    return f"{m.platform}, Python {m.python}, {gpus}{driver}{torch}{extra}"


def render_text(p: Plan) -> str:
    """The plan for people: the choice, why, and the exact command."""
    rec = p.recommendation
    head = (f"recommended: the installed {rec.described} (nothing to change)" if rec.nothing_to_change
            else f"recommended: {rec.described}" + (f" from {rec.index_url}" if rec.index_url else ""))
    if p.conda:
        head = f"recommended: {p.conda}"
    lines = [head, f"for: {_machine_line(p.machine)}", "why:"]
    lines += [f"  {sentence}" for sentence in rec.because]
    if rec.requirements and not p.conda:
        lines.append(f"install: {' '.join(rec.requirements)}")
    if p.command is not None:
        lines += [f"command ({p.installer}):", f"  {shell(p.command)}"]
    return "\n".join(lines) + "\n"


def render_json(p: Plan) -> str:
    """The plan as JSON: machine, choice, reasons, requirements, index URL and command."""
    rec = p.recommendation
    m = p.machine
    data = {
        "machine": {"platform": m.platform, "python": m.python,
                    "gpus": [{"name": name, "compute_capability": f"{c[0]}.{c[1]}"} for name, c in m.gpus],
                    "driver": m.driver_text or (str(m.driver) if m.driver else None), "torch": m.torch,
                    "companions": list(m.companions)},
        "recommended": None if rec.choice is None else {
            "torch": str(rec.choice.release.version), "variant": rec.choice.variant.name,
            "coverage": list(rec.choice.coverage)},
        "nothing_to_change": rec.nothing_to_change,
        "because": list(rec.because),
        "requirements": list(rec.requirements),
        "index_url": rec.index_url or None,
        "command": None if p.command is None else list(p.command),
        "installer": p.installer or None,
        "conda": p.conda or None,
    }
    return json.dumps(data, indent=2) + "\n"


def describe_from(gpu: Sequence[str], capability: Sequence[str], driver: str | None, python: str | None,
                  platform: str | None) -> Described:
    """The CLI's options as a Described."""
    return Described(tuple(gpu), tuple(capability), driver, python, platform)

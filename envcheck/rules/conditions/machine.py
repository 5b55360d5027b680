"""Predicates over the machine: GPUs and the driver (from NVML) and the results of the live probes."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envcheck.facts.gpus import STATUSES
from envcheck.facts.probe_statuses import PROBE_STATUSES
from envcheck.rules.conditions._parsing import regex_of, specifier_of, string_of, table_of
from envcheck.rules.conditions.core import FALSE, TRUE, Condition, Context, Outcome, of, unknown
from envcheck.rules.conditions.environment import Leaf
from envcheck.support.versions import parse_version

if TYPE_CHECKING:
    from envcheck.facts.gpu_device import GpuDevice
    from envcheck.rules.conditions.where import Where


def _nvml_unknown(ctx: Context) -> Outcome | None:
    nvml = ctx.facts.nvml
    if nvml is None:
        return unknown("GPUs (NVML facts not in this snapshot)")
    if not nvml.devices_known:
        return unknown(f"GPUs (NVML: {nvml.status}: {nvml.reason})")
    return None


@dataclass(frozen=True)
class Gpu(Leaf):
    """`gpu = { capability = "<8.0", name = "RTX 40", memory_gib = ">=24", count = ">1", match = "any" }`.

    Device keys (capability, name, memory_gib) must all hold for one device (`match = "any"`, the default) or
    for every device (`match = "all"`, false when there is none). `count` constrains how many GPUs there are.
    NVML sees every GPU of the machine, whatever CUDA_VISIBLE_DEVICES says.
    """

    capability: SpecifierSet | None
    name: str | None
    memory_gib: SpecifierSet | None
    count: SpecifierSet | None
    match: str

    def describe(self) -> str:
        parts = [f"{k} `{v}`" for k, v in (("capability", self.capability), ("name", self.name),
                                           ("memory GiB", self.memory_gib), ("count", self.count)) if v is not None]
        return f"{'every' if self.match == 'all' else 'a'} GPU with " + ", ".join(parts)

    def _device(self, device: GpuDevice) -> bool | None:
        if self.capability is not None:
            cc = parse_version(device.compute_capability or "")
            if cc is None:
                return None
            if not self.capability.contains(cc, prereleases=True):
                return False
        if self.name is not None:
            if device.name is None:
                return None
            if re.search(self.name, device.name) is None:
                return False
        if self.memory_gib is not None:
            if device.memory_total_mib is None:
                return None
            if not self.memory_gib.contains(Version(f"{device.memory_total_mib / 1024:.1f}"), prereleases=True):
                return False
        return True

    def evaluate(self, ctx: Context) -> Outcome:
        missing = _nvml_unknown(ctx)
        if missing is not None:
            return missing
        assert ctx.facts.nvml is not None
        devices = ctx.facts.nvml.accessible_devices  # a GPU the user may not open is not theirs to run on
        if self.count is not None and not self.count.contains(Version(str(len(devices)))):
            return FALSE
        if self.capability is None and self.name is None and self.memory_gib is None:
            return TRUE if self.count is not None else of(bool(devices))
        results = [self._device(d) for d in devices]
        if self.match == "all":
            if not results or False in results:
                return FALSE
        elif True in results:
            return TRUE
        elif None not in results:
            return FALSE
        if None in results:
            return unknown("GPU details (NVML could not read every device)")
        return TRUE


@dataclass(frozen=True)
class Driver(Leaf):
    """`driver = { version = "<525.60.13", cuda = "<12.4", status = "driver-mismatch", loaded = true }`: the NVIDIA
    driver.

    `version` is the driver's own version, `cuda` the newest CUDA runtime it supports, `status` NVML's state.
    Version keys are false when no driver is installed; `status` is unknown when the NVML bindings are missing.
    `loaded` asks whether the driver answered with its version (NVML, or nvidia-smi in a report): its kernel module
    is loaded, which it is only on a machine with an NVIDIA GPU, even where the GPUs themselves are not listed.
    """

    version: SpecifierSet | None
    cuda: SpecifierSet | None
    status: tuple[str, ...]
    loaded: bool | None = None

    def describe(self) -> str:
        parts = [f"{k} `{v}`" for k, v in (("version", self.version), ("CUDA", self.cuda)) if v is not None]
        if self.status:
            parts.append(f"NVML status {' or '.join(self.status)}")
        if self.loaded is not None:
            parts.append("loaded (it answered with its version)" if self.loaded else "not loaded")
        return "NVIDIA driver: " + ", ".join(parts)

    def evaluate(self, ctx: Context) -> Outcome:
        nvml = ctx.facts.nvml
        if nvml is None:
            return unknown("NVIDIA driver (NVML facts not in this snapshot)")
        if self.loaded is not None:
            if nvml.status in ("no-driver", "driver-not-loaded"):
                loaded: bool | None = False
            else:  # nvmlInit answered, or nvidia-smi printed its header: the module found a GPU
                loaded = True if parse_version(nvml.driver_version or "") is not None else None
            if loaded and ctx.facts.python.platform == "darwin":
                # macOS's "driver" (collect_env reads the CUDA kext's version) loads without an NVIDIA GPU.
                return unknown("whether this Mac has an NVIDIA GPU (its CUDA driver loads without one)")
            if loaded is None:
                return unknown(f"whether the NVIDIA driver is loaded (NVML: {nvml.status}: {nvml.reason})")
            if loaded is not self.loaded:
                return FALSE
        if self.status and nvml.status not in self.status:
            if nvml.status == "unavailable":
                # NVML was never asked: the driver might be in any state.
                return unknown(f"NVIDIA driver status (NVML: unavailable: {nvml.reason})")
            return FALSE
        if self.version is None and self.cuda is None:
            return TRUE
        if nvml.status in ("no-driver", "driver-not-loaded"):
            return FALSE
        for spec, raw, label in ((self.version, nvml.driver_version, "version"),
                                 (self.cuda, nvml.cuda_driver_version, "CUDA version")):
            if spec is None:
                continue
            parsed = parse_version(raw or "")
            if parsed is None:
                return unknown(f"NVIDIA driver {label} (NVML: {nvml.status}: {nvml.reason or raw!r})")
            if not spec.contains(parsed, prereleases=True):
                return FALSE
        return TRUE


@dataclass(frozen=True)
class Probe(Leaf):
    """`probe = { name = "sdpa", case = "cpu/q=float32,kv=float16/eager", status = "error", error = "RuntimeError",
    message = "REGEX" }`: what a live probe (or one case of it) observed.

    With `error` or `message` and no `status`, the status must be "error". A probe that was skipped, crashed or
    timed out makes the predicate unknown unless `status` asks for exactly that.
    """

    name: str
    case: str | None
    status: tuple[str, ...]
    error: str | None
    message: str | None

    def describe(self) -> str:
        target = f"probe `{self.name}`" + (f" case `{self.case}`" if self.case else "")
        parts = [f"status {' or '.join(self.status)}"] if self.status else []
        if self.error:
            parts.append(f"raised {self.error}")
        if self.message:
            parts.append(f"message matches `{self.message}`")
        return f"{target}: " + ", ".join(parts)

    def evaluate(self, ctx: Context) -> Outcome:
        result = ctx.facts.probes.get(self.name)
        if result is None:
            if "probes" in ctx.facts.unknown:
                return unknown(f"probe {self.name} (not in the report: run `envcheck` on that machine)")
            return unknown(f"probe {self.name} (not run: probes are skipped with --static)")
        outcome: dict[str, Any] = {"status": result.status, "error_class": result.error_class,
                                   "message": result.message}
        if self.case is not None and result.status in ("ok", "error"):
            case = result.cases.get(self.case)
            if case is None:
                return unknown(f"probe {self.name} case {self.case} (not tried on this machine)")
            outcome = case
        status = str(outcome.get("status"))
        if status not in self.status and status in ("skipped", "crashed", "timeout"):
            return unknown(f"probe {self.name} ({status}: {outcome.get('message') or 'no detail'})")
        if status not in self.status:
            return FALSE
        if self.error is not None and outcome.get("error_class") != self.error:
            return FALSE
        if self.message is not None and re.search(self.message, str(outcome.get("message") or "")) is None:
            return FALSE
        return TRUE


def _statuses(value: object, where: Where, allowed: tuple[str, ...] | frozenset[str]) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, str) and i in allowed for i in items):
        raise where.error(f"expected one of {', '.join(sorted(allowed))} (or a list of them), got {value!r}")
    return tuple(items)


def _p_gpu(value: object, where: Where) -> Condition:
    table = table_of(value, where, {"capability", "name", "memory_gib", "count", "match"}, set())
    if not set(table) - {"match"}:  # `match` alone constrains nothing
        raise where.error("needs at least one of capability, name, memory_gib, count")
    match = table.get("match", "any")
    if match not in ("any", "all"):
        raise where.at("match").error("expected 'any' or 'all'")
    return Gpu(
        capability=specifier_of(table["capability"], where.at("capability")) if "capability" in table else None,
        name=regex_of(table["name"], where.at("name")) if "name" in table else None,
        memory_gib=specifier_of(table["memory_gib"], where.at("memory_gib")) if "memory_gib" in table else None,
        count=specifier_of(table["count"], where.at("count")) if "count" in table else None,
        match=match,
    )


def _p_driver(value: object, where: Where) -> Condition:
    table = table_of(value, where, {"version", "cuda", "status", "loaded"}, set())
    if not table:
        raise where.error("needs at least one of version, cuda, status, loaded")
    loaded = table.get("loaded")
    if loaded is not None and not isinstance(loaded, bool):
        raise where.at("loaded").error(f"expected true or false, got {loaded!r}")
    return Driver(
        version=specifier_of(table["version"], where.at("version")) if "version" in table else None,
        cuda=specifier_of(table["cuda"], where.at("cuda")) if "cuda" in table else None,
        status=_statuses(table["status"], where.at("status"), STATUSES) if "status" in table else (),
        loaded=loaded,
    )


def _p_probe(value: object, where: Where) -> Condition:
    from envcheck.sources.probes.catalog import (
        PROBE_NAMES,  # rule loading only: a cached pack never needs the catalogue
    )

    table = table_of(value, where, {"name", "case", "status", "error", "message"}, {"name"})
    name = string_of(table["name"], where.at("name"))
    if name not in PROBE_NAMES:
        raise where.at("name").error(f"unknown probe {name!r} (known: {', '.join(PROBE_NAMES)})")
    if not any(k in table for k in ("status", "error", "message")):
        raise where.error("needs at least one of status, error, message")
    status = _statuses(table["status"], where.at("status"), PROBE_STATUSES) if "status" in table else ("error",)
    return Probe(
        name=name,
        case=string_of(table["case"], where.at("case")) if "case" in table else None,
        status=status,
        error=string_of(table["error"], where.at("error")) if "error" in table else None,
        message=regex_of(table["message"], where.at("message")) if "message" in table else None,
    )


PARSERS: dict[str, Callable[[object, Where], Condition]] = {"gpu": _p_gpu, "driver": _p_driver, "probe": _p_probe}

"""Predicates over the static facts: packages, modules, source files, markers, Python, environment variables,
derived facts and torch's build. Each is a frozen dataclass with `evaluate`, `describe` and a parser."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from envcheck.derived.derive import DERIVATIONS
from envcheck.rules.conditions._parsing import (
    check_bounded,
    first_line,
    regex_of,
    requirement_of,
    specifier_of,
    string_of,
    table_of,
)
from envcheck.rules.conditions.core import FALSE, TRUE, Condition, Context, Outcome, of, unknown
from envcheck.sources.live._collector import _ENV_NAMES, _ENV_PREFIXES
from envcheck.support.versions import marker_holds, parse_version

if TYPE_CHECKING:
    from envcheck.rules.conditions.where import Where


class Leaf:
    """A predicate with no sub-conditions: its own only leaf (the machine predicates share it)."""

    def leaves(self) -> Iterator[Condition]:
        yield self  # type: ignore[misc]


def _requirement_holds(req: Requirement, ctx: Context) -> Outcome:
    """Installed, in a version the specifier admits (pre-releases and local versions included), marker true."""
    if req.marker is not None:
        holds = marker_holds(req.marker, ctx.marker_env)
        if holds is None:
            return unknown(f"marker of {req}")
        if not holds:
            return FALSE
    dist = ctx.facts.active(req.name)
    if dist is None:
        if not ctx.facts.absence_known(req.name):
            return unknown(f"whether {req.name} is installed (the package list read is partial)")
        return FALSE
    if not req.specifier:
        return TRUE
    version = parse_version(dist.version)
    if version is None:
        return unknown(f"version of {dist.name} ({dist.version!r} is not a PEP 440 version)")
    return of(req.specifier.contains(version, prereleases=True))


@dataclass(frozen=True)
class Package(Leaf):
    """`package = "transformers>=4.26,<5.8"`: installed (the imported copy) in that range, markers holding."""

    requirement: Requirement

    def describe(self) -> str:
        return f"`{self.requirement}` is installed"

    def evaluate(self, ctx: Context) -> Outcome:
        return _requirement_holds(self.requirement, ctx)


@dataclass(frozen=True)
class Missing(Leaf):
    """`missing = "safetensors"` / `"safetensors>=0.4.3"`: no installed copy satisfies it (markers must hold)."""

    requirement: Requirement

    def describe(self) -> str:
        return f"`{self.requirement}` is not installed"

    def evaluate(self, ctx: Context) -> Outcome:
        req = self.requirement
        if req.marker is not None:
            holds = marker_holds(req.marker, ctx.marker_env)
            if holds is None:
                return unknown(f"marker of {req}")
            if not holds:
                return FALSE  # not required here, so not missing
        bare = copy.copy(req)
        bare.marker = None  # already evaluated above; a URL requirement may itself contain ';'
        out = _requirement_holds(bare, ctx)
        return out if out.value is None else of(not out.value)


@dataclass(frozen=True)
class Module(Leaf):
    """`module = "apex.normalization"`: importable, as found on the import path without importing anything."""

    name: str

    def describe(self) -> str:
        return f"module `{self.name}` is importable"

    def evaluate(self, ctx: Context) -> Outcome:
        fact = ctx.facts.modules.get(self.name)
        if fact is None:
            return unknown(f"module {self.name} (not looked up in this snapshot)")
        if fact.error:
            return unknown(f"module {self.name} ({fact.error})")
        return of(fact.found)


@dataclass(frozen=True)
class Source(Leaf):
    """`source = { file = "dia/layers.py", contains = "REGEX" }` (or `lacks`): the file exists and (not) matches."""

    file: str
    pattern: str
    contains: bool

    def describe(self) -> str:
        return f"`{self.file}` {'contains' if self.contains else 'lacks'} `{self.pattern}`"

    def evaluate(self, ctx: Context) -> Outcome:
        fact = ctx.facts.sources.get(self.file)
        if fact is None:
            return unknown(f"source {self.file} (not read in this snapshot)")
        if fact.error:
            return unknown(f"source {self.file} ({fact.error})")
        if fact.path is None:
            return FALSE
        found = fact.matches.get(self.pattern)
        if found is None:
            return unknown(f"source {self.file} (pattern {self.pattern!r} not searched in this snapshot)")
        return of(found == self.contains)


@dataclass(frozen=True)
class MarkerCond(Leaf):
    """`marker = "sys_platform == 'win32'"`: a PEP 508 marker, for the checked interpreter."""

    marker: Marker

    def describe(self) -> str:
        return f"marker `{self.marker}`"

    def evaluate(self, ctx: Context) -> Outcome:
        holds = marker_holds(self.marker, ctx.marker_env)
        return unknown(f"marker {self.marker}") if holds is None else of(holds)


@dataclass(frozen=True)
class Python(Leaf):
    """`python = ">=3.13"`: the checked interpreter's version."""

    specifier: SpecifierSet

    def describe(self) -> str:
        return f"Python `{self.specifier}`"

    def evaluate(self, ctx: Context) -> Outcome:
        version = parse_version(ctx.facts.python.version)
        if version is None:
            return unknown("python version")
        return of(self.specifier.contains(version, prereleases=True))


@dataclass(frozen=True)
class Env(Leaf):
    """`env = "NAME"` (set) or `env = { name = "NAME", set = false | equals = "x" | in = [...] | matches = "RE" }`."""

    name: str
    op: str  # "set", "unset", "equals", "in", "matches"
    values: tuple[str, ...] = ()

    def describe(self) -> str:
        return _describe_env(self)

    def evaluate(self, ctx: Context) -> Outcome:
        if "env" in ctx.facts.unknown:
            return unknown(f"environment variable {self.name} (not stated)")
        value = ctx.facts.env.get(self.name)
        if self.op == "set":
            return of(value is not None)
        if self.op == "unset":
            return of(value is None)
        if value is None:
            return FALSE
        if self.op == "equals":
            return of(value == self.values[0])
        if self.op == "in":
            return of(value in self.values)
        return of(re.search(self.values[0], value) is not None)


@dataclass(frozen=True)
class Fact(Leaf):
    """`fact = { name = "requirements.missing", nonempty = true }` (or `equals = VALUE`): a derived fact."""

    name: str
    op: str  # "nonempty", "empty", "equals"
    value: Any = None

    def describe(self) -> str:
        wanted = {"nonempty": "non-empty", "empty": "empty"}.get(self.op, repr(self.value))
        return f"fact `{self.name}` is {wanted}"

    def evaluate(self, ctx: Context) -> Outcome:
        got = ctx.derived.get(self.name)
        if got is None:
            return unknown(f"fact {self.name}")
        if self.op == "nonempty":
            return of(bool(got))
        if self.op == "empty":
            return of(not got)
        return of(bool(got == self.value))


@dataclass(frozen=True)
class Torch(Leaf):
    """`torch = { version = "<2.6", cuda = ">=12.8" | "none" | "any", hip = ... }`: torch's build (version.py).

    False when no torch is importable (there is no build to match); unknown when version.py is unreadable.
    """

    version: SpecifierSet | None
    cuda: str | SpecifierSet | None  # "none", "any" or a specifier; None: not constrained
    hip: str | SpecifierSet | None

    def describe(self) -> str:
        return _describe_torch(self)

    def evaluate(self, ctx: Context) -> Outcome:
        build = ctx.facts.torch
        if build is None:
            return FALSE
        if build.problem:
            return unknown(f"torch build ({build.problem})")
        if self.version is not None:
            version = parse_version(build.version or "")
            if version is None:
                return unknown(f"torch version ({build.version!r} is not PEP 440)")
            if not self.version.contains(version, prereleases=True):
                return FALSE
        for wanted, got, label in ((self.cuda, build.cuda, "cuda"), (self.hip, build.hip, "hip")):
            if wanted is None:
                continue
            # isinstance first: `SpecifierSet(...) == "none"` parses "none" as a specifier and raises.
            if isinstance(wanted, str):  # "none" or "any"
                if (got is None) != (wanted == "none"):
                    return FALSE
                continue
            if got is None:
                return FALSE
            parsed = parse_version(got)
            if parsed is None:
                return unknown(f"torch {label} version ({got!r})")
            if not wanted.contains(parsed, prereleases=True):
                return FALSE
        return TRUE


def _describe_env(env: Env) -> str:
    if env.op in ("set", "unset"):
        return f"${env.name} is {env.op}"
    if env.op == "equals":
        return f"${env.name} == {env.values[0]!r}"
    if env.op == "in":
        return f"${env.name} in {list(env.values)!r}"
    return f"${env.name} matches `{env.values[0]}`"


def _describe_torch(t: Torch) -> str:
    parts = []
    if t.version is not None:
        parts.append(f"version `{t.version}`")
    for label, value in (("CUDA", t.cuda), ("HIP", t.hip)):
        if value is not None:
            parts.append(f"{label} {value if isinstance(value, str) else '`' + str(value) + '`'}")
    return "torch build: " + ", ".join(parts)


# --- parsers ---------------------------------------------------------------------------------------------------


def _env_collected(name: str) -> bool:
    return name in _ENV_NAMES or name.startswith(_ENV_PREFIXES)


def _p_package(value: object, where: Where) -> Condition:
    return Package(requirement_of(value, where))


def _p_missing(value: object, where: Where) -> Condition:
    return Missing(requirement_of(value, where))


def _p_module(value: object, where: Where) -> Condition:
    name = string_of(value, where)
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
        raise where.error(f"invalid module name {name!r}")
    return Module(name)


def _p_source(value: object, where: Where) -> Condition:
    table = table_of(value, where, {"file", "contains", "lacks"}, {"file"})
    if ("contains" in table) == ("lacks" in table):
        raise where.error("needs exactly one of 'contains' or 'lacks'")
    file = string_of(table["file"], where.at("file"))
    # The collector reads `file` below the package's import root: no absolute path, drive, or `..` in either
    # separator's spelling, so a rule file cannot make envcheck read outside the installed packages.
    parts = file.replace("\\", "/").split("/")
    if file.startswith(("/", "\\")) or ".." in parts or "" in parts or ":" in parts[0]:
        raise where.at("file").error("must be relative to the import root, e.g. 'dia/layers.py'")
    key = "contains" if "contains" in table else "lacks"
    return Source(file, regex_of(table[key], where.at(key)), key == "contains")


def _p_marker(value: object, where: Where) -> Condition:
    text = string_of(value, where)
    check_bounded(text, "marker", where)
    try:
        return MarkerCond(Marker(text))
    except InvalidMarker as exc:
        raise where.error(f"invalid marker {text!r}: {first_line(exc)}") from None


def _p_python(value: object, where: Where) -> Condition:
    return Python(specifier_of(value, where))


def _p_env(value: object, where: Where) -> Condition:
    if isinstance(value, str):
        value = {"name": value}
    table = table_of(value, where, {"name", "set", "equals", "in", "matches"}, {"name"})
    name = string_of(table["name"], where.at("name"))
    if not _env_collected(name):
        raise where.at("name").error(f"environment variable {name} is not collected by envcheck")
    ops = [k for k in ("set", "equals", "in", "matches") if k in table]
    if len(ops) > 1:
        raise where.error(f"use one of set / equals / in / matches, not {' and '.join(ops)}")
    op = ops[0] if ops else "set"
    if op == "set":
        flag = table.get("set", True)
        if not isinstance(flag, bool):
            raise where.at("set").error("expected true or false")
        return Env(name, "set" if flag else "unset")
    if op == "in":
        items = table["in"]
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise where.at("in").error("expected a list of strings")
        return Env(name, "in", tuple(items))
    if op == "matches":
        return Env(name, "matches", (regex_of(table["matches"], where.at("matches")),))
    if not isinstance(table["equals"], str):
        raise where.at("equals").error("expected a string")
    return Env(name, "equals", (table["equals"],))


def _p_fact(value: object, where: Where) -> Condition:
    if isinstance(value, str):
        value = {"name": value, "nonempty": True}
    table = table_of(value, where, {"name", "nonempty", "equals"}, {"name"})
    name = string_of(table["name"], where.at("name"))
    if name not in DERIVATIONS:
        raise where.at("name").error(f"unknown fact {name!r} (known: {', '.join(sorted(DERIVATIONS))})")
    if ("nonempty" in table) == ("equals" in table):
        raise where.error("needs exactly one of 'nonempty' or 'equals'")
    if "nonempty" in table:
        if not isinstance(table["nonempty"], bool):
            raise where.at("nonempty").error("expected true or false")
        return Fact(name, "nonempty" if table["nonempty"] else "empty")
    return Fact(name, "equals", table["equals"])


def _build_field(value: object, where: Where) -> str | SpecifierSet:
    text = string_of(value, where)
    return text if text in ("none", "any") else specifier_of(text, where)


def _p_torch(value: object, where: Where) -> Condition:
    table = table_of(value, where, {"version", "cuda", "hip"}, set())
    if not table:
        raise where.error("needs at least one of version, cuda, hip")
    return Torch(
        version=specifier_of(table["version"], where.at("version")) if "version" in table else None,
        cuda=_build_field(table["cuda"], where.at("cuda")) if "cuda" in table else None,
        hip=_build_field(table["hip"], where.at("hip")) if "hip" in table else None,
    )


PARSERS: dict[str, Callable[[object, Where], Condition]] = {
    "package": _p_package,
    "missing": _p_missing,
    "module": _p_module,
    "source": _p_source,
    "marker": _p_marker,
    "python": _p_python,
    "env": _p_env,
    "fact": _p_fact,
    "torch": _p_torch,
}

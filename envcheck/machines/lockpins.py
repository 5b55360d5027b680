"""A lock's entries for one declared machine, each with the line it is written on and the index it comes from.

locks.py (envcheck/sources/project/) reads every lock's entries with their markers; here they are narrowed to what one
machine installs and placed in the file: an entry applies where its markers hold (a marker on a variable the
declaration does not state counts as holding, as for lock drift), and for uv.lock, which lists every platform's
packages in one universal resolution, only the entries the project's own entry reaches through dependency edges
whose markers hold there (what `uv sync --no-dev` installs). A lock is read and walked once per process however many
machines ask (`_scan`, `_graph`): a lock of thousands of packages costs its parse once, not once per machine.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from envcheck.facts.snapshot import canonical_name
from envcheck.sources.project import locks as locks_mod
from envcheck.support import toml
from envcheck.support.patterns import lazy
from envcheck.support.versions import marker_holds, parse_requirement

_BLOCK = lazy(r"^\[\[(?:package|packages)\]\]\s*$", re.MULTILINE)
_NAME = lazy(r'^name\s*=\s*"([^"]+)"', re.MULTILINE)
_VERSION = lazy(r'^version\s*=\s*"([^"]+)"', re.MULTILINE)
# Where a lock says an entry comes from: uv.lock's `source = { registry = ... }`, pylock.toml's `index`, poetry's `url`.
_REGISTRY = lazy(r'^(?:source\s*=\s*\{[^}\n]*\bregistry\s*=\s*"([^"]+)"'
                 r'|index\s*=\s*"([^"]+)"|url\s*=\s*"([^"]+)")', re.MULTILINE)


@dataclass(frozen=True)
class Located:
    """One entry of a lock as found in its text."""

    name: str  # canonical
    written: str  # "torch 2.5.1+cu124", or the versions of every entry that applies ("a 1.0 or a 2.0")
    version: str | None  # None: entries of several versions apply, and which one is installed is not in the files
    line: int | None
    index: str | None


@functools.lru_cache(maxsize=4)
def _scan(text: str) -> dict[tuple[str, str], list[tuple[int, str | None]]]:
    """(name, version) -> [(line of its `name =`, its index)] of every [[package]] table, in file order."""
    out: dict[tuple[str, str], list[tuple[int, str | None]]] = {}
    starts = [m.start() for m in _BLOCK.finditer(text)]
    line, at = 1, 0
    for i, start in enumerate(starts):
        block = text[start:starts[i + 1] if i + 1 < len(starts) else len(text)]
        name, version = _NAME.search(block), _VERSION.search(block)
        if name is None:
            continue
        line += text.count("\n", at, start + name.start())  # counted on from the last block: linear in the text
        at = start + name.start()
        registry = _REGISTRY.search(block)
        url = None if registry is None else next((g for g in registry.groups() if g), None)
        out.setdefault((canonical_name(name.group(1)), version.group(1) if version else ""), []).append((line, url))
    return out


@functools.lru_cache(maxsize=4)
def _graph(text: str) -> tuple[dict[str, list[dict[str, Any]]], tuple[str, ...]] | None:
    """uv.lock's packages by name and the names of its project's own entries (editable or virtual sources); None
    when it cannot be parsed or has no such entry."""
    try:
        data: dict[str, Any] = toml.loads(text)
    except toml.TOMLDecodeError:
        return None
    by_name: dict[str, list[dict[str, Any]]] = {}
    roots = []
    for package in data.get("package", []):
        if not isinstance(package, dict) or not isinstance(package.get("name"), str):
            continue
        by_name.setdefault(canonical_name(package["name"]), []).append(package)
        source = package.get("source")
        if isinstance(source, dict) and any(k in source for k in ("editable", "virtual")):
            roots.append(canonical_name(package["name"]))
    return (by_name, tuple(roots)) if roots else None


def _holds(marker: object, env: dict[str, str]) -> bool:
    if not isinstance(marker, str):
        return True
    parsed = parse_requirement(f"x; {marker}")
    return parsed is None or parsed.marker is None or marker_holds(parsed.marker, {**env, "extra": ""}) is not False


def _uv_reached(text: str, env: dict[str, str]) -> set[str] | None:
    """The uv.lock packages `uv sync --no-dev` installs where `env` holds; None when the lock cannot be walked."""
    graph = _graph(text)
    if graph is None:
        return None
    by_name, roots = graph
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo: list[tuple[str, tuple[str, ...]]] = [(root, ()) for root in roots]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        for package in by_name.get(name, []):
            edges = list(package.get("dependencies", []))
            optional = package.get("optional-dependencies", {})
            for extra in extras:
                edges += optional.get(extra, []) if isinstance(optional, dict) else []
            for edge in edges:
                if isinstance(edge, dict) and isinstance(edge.get("name"), str) and _holds(edge.get("marker"), env):
                    wanted = edge.get("extra", [])
                    todo.append((canonical_name(edge["name"]),
                                 tuple(sorted(e for e in wanted if isinstance(e, str))) if isinstance(wanted, list)
                                 else ()))
    return {name for name, _ in seen}


def lock_pins(lock: locks_mod.LockFile, env: dict[str, str]) -> list[Located]:
    """The entries of `lock` that a machine whose markers are `env` installs, in the lock's order."""
    text = lock.file.read_text(encoding="utf-8")
    reached = _uv_reached(text, env) if lock.tool == "uv" else None
    places = _scan(text)
    taken: dict[tuple[str, str], int] = {}
    found: dict[str, list[Located]] = {}
    for entry in lock.entries:
        if not locks_mod.applies(entry, env) or (reached is not None and entry.name not in reached):
            continue
        key = (entry.name, entry.version)
        listed = places.get(key, [])
        nth = taken.get(key, 0)
        taken[key] = nth + 1
        line, url = listed[nth] if nth < len(listed) else (None, None)
        found.setdefault(entry.name, []).append(Located(entry.name, f"{entry.name} {entry.version}", entry.version,
                                                        line, url))
    out = []
    for name, entries in found.items():
        if len({e.version for e in entries}) == 1:
            out.append(entries[0])
        else:  # several entries apply (forks on an extra, or on what the declaration does not state)
            out.append(Located(name, " or ".join(e.written for e in entries), None, entries[0].line, None))
    return out

"""Lock files: uv.lock, pylock.toml (PEP 751), poetry.lock, pdm.lock, read into (name, version, markers) entries.

Only what drift needs is read: each package's name and version and the markers under which the lock uses it
(uv.lock's `resolution-markers` of a forked package, pylock.toml's `marker`, poetry's `markers`, pdm's `marker`);
which entries apply is decided later, for the checked interpreter's marker environment (`applies`). A lock format
version this envcheck does not know is a ProjectError naming the file and the line of the version key, as is a
lock that is not TOML: a newer format may mean something else by the same keys, so it is refused, not guessed at.
Entries without a version (uv.lock's editable and virtual sources: the project itself and its workspace members;
pylock.toml's directory and VCS packages) pin nothing comparable and are left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

from envcheck.facts.snapshot import canonical_name
from envcheck.sources.project.errors import ProjectError
from envcheck.sources.project.root import LOCKS
from envcheck.support import toml
from envcheck.support.patterns import lazy

# tool -> (the key holding the format version, the major versions read). uv.lock's `version` is an integer.
_VERSION_KEY = {"uv": ("version", ("1",)), "pylock": ("lock-version", ("1",)),
                "poetry": ("metadata.lock-version", ("1", "2")), "pdm": ("metadata.lock_version", ("4",))}
_LOCAL_SOURCES = ("editable", "virtual", "directory", "path")


@dataclass(frozen=True)
class Entry:
    """One locked package: it applies where any of `markers` holds (always, when there are none)."""

    name: str  # canonical
    version: str
    markers: tuple[str, ...]


@dataclass(frozen=True)
class LockFile:
    """A lock file the project keeps, and its entries."""

    file: Path
    tool: str
    sync: str
    entries: tuple[Entry, ...]


def _line_of(text: str, key: str) -> int | None:
    leaf = key.rsplit(".", 1)[-1]
    match = re.search(rf"^\s*{re.escape(leaf)}\s*=", text, re.MULTILINE)
    return None if match is None else text.count("\n", 0, match.start()) + 1


def _version(data: dict[str, Any], key: str) -> object:
    value: object = data
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


# The lines a drift check reads: table headers, the unindented keys below, and the indented continuation lines of a
# multi-line `resolution-markers` array. Everything else of a lock (hashes, wheel lists, dependency edges: nine
# tenths of a uv.lock) is dropped before parsing, in one pass of one regular expression over the text. Anchored on
# "\n" (the text gets one in front) rather than on `^` with re.MULTILINE: the literal lets the regex engine skip
# from newline to newline, two to four times faster on a large lock.
_KEPT = lazy(r"\n(\[[^\n]*"
             r"|(?:name|version|source|marker|markers|lock-version|lock_version)[ \t]*=[^\n]*"
             r"|resolution-markers[ \t]*=[^\n]*(?:\n[ \t]+[^\n]*)*(?:\n\][^\n]*)?)")


_STRING = lazy(r'"((?:[^"\\\n]|\\.)*)"|\'([^\'\n]*)\'')
_HEADER = lazy(r"\[\[[\w.-]+\]\]|\[[\w.-]+\]")
_LOCAL_KEY = lazy(r"\b(?:editable|virtual|directory|path)\s*=")


class _Unusual(Exception):
    """A kept line this scanner does not read: the lock is then parsed whole, by the TOML parser."""


def _strings(value: str) -> list[str]:
    out = []
    for match in _STRING.finditer(value):
        if match.group(1) is None:
            out.append(match.group(2))
        elif "\\" not in match.group(1):
            out.append(match.group(1))
        else:
            try:  # TOML's basic-string escapes are JSON's, bar \U and \e (the TOML parser then takes over)
                out.append(json.loads(f'"{match.group(1)}"'))
            except ValueError:
                raise _Unusual from None
    return out


def _scalar(value: str) -> str | int:
    value = value.strip()
    if value[:1] == '"' and value.endswith('"') and value.count('"') == 2 and "\\" not in value:
        return value[1:-1]  # the common case, `name = "torch"`, without a regular expression
    if re.fullmatch(r"\d+", value):
        return int(value)
    found = _strings(value)
    if len(found) != 1 or not value.startswith(("'", '"')):
        raise _Unusual
    return found[0]


def _scan(text: str) -> dict[str, Any]:
    """The same data as the TOML parser gives for the keys drift reads, from the `_KEPT` lines alone: a large
    uv.lock is mostly wheel lists and hashes, which a full parse spends nearly all of its time on."""
    if '"""' in text or "\'\'\'" in text:
        raise _Unusual  # a multi-line string could hold a line that looks like a key
    data: dict[str, Any] = {}
    table: dict[str, Any] | None = data
    for match in _KEPT.finditer("\n" + text):
        line = match.group(1)
        if line.startswith("["):
            header = line.split("#", 1)[0].strip()
            if not _HEADER.fullmatch(header):
                raise _Unusual  # not a table header this scanner knows: the TOML parser says what is wrong
            if header in ("[[package]]", "[[packages]]"):
                table = {}
                data.setdefault(header.strip("[]"), []).append(table)
            elif header == "[metadata]":
                table = data.setdefault("metadata", {})
            else:
                table = None  # a sub-table ([package.metadata], [[packages.wheels]], ...): nothing drift reads
            continue
        if table is None:
            continue
        key, _, value = line.partition("=")
        key = key.strip()
        if key == "source":
            table[key] = {"local": True} if _LOCAL_KEY.search(value) else {}
        elif key == "resolution-markers" or (key in ("marker", "markers") and value.strip()[:1] in "[{"):
            table[key] = _strings(value)
        else:
            table[key] = _scalar(value.split(" #", 1)[0] if value.strip()[:1] not in "'\"" else value)
    return data


def _parse(text: str) -> dict[str, Any]:
    """The lock's data: scanned from its essential lines, else (anything unusual) parsed whole."""
    try:
        return _scan(text)
    except _Unusual:
        whole: dict[str, Any] = toml.loads(text)
        return whole


def read(path: Path, display: str) -> LockFile:
    """The lock at `path` (its tool chosen by its file name); `display` names it in messages. Not pixi.lock,
    which is YAML: sources/project/pixi.py's lock_file reads it."""
    tool, sync = LOCKS[path.name]
    if tool == "pixi":
        raise ProjectError(display, "is pixi's lock: envcheck.sources.project.pixi reads it")
    try:
        text = path.read_text(encoding="utf-8")
        data = _parse(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(display, f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    except toml.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise ProjectError(display, f"invalid TOML: {exc}", line=int(line.group(1)) if line else None) from None
    key, majors = _VERSION_KEY[tool]
    version = _version(data, key)
    if isinstance(version, bool) or not isinstance(version, (int, str)) \
            or str(version).split(".")[0] not in majors:
        shown = "missing" if version is None else f"{version!r}"
        raise ProjectError(display, f"lock version {shown} is not one this envcheck reads "
                                    f"({tool} lock versions {', '.join(m + '.x' for m in majors)})",
                           line=_line_of(text, key), key=key)
    packages = data.get("packages" if tool == "pylock" else "package", [])
    if not isinstance(packages, list):
        raise ProjectError(display, "expected an array of tables", key="packages" if tool == "pylock" else "package")
    entries = []
    for i, package in enumerate(packages):
        entry = _entry(tool, package)
        if entry is None:
            continue
        if not entry.name or not entry.version:
            raise ProjectError(display, "expected a name and a version", key=f"package[{i}]")
        for marker in entry.markers:
            try:
                _marker(marker)
            except InvalidMarker as exc:
                # packaging's message goes on to the marker again and a caret under the fault: its first line says it
                first = (str(exc).splitlines() or [""])[0]
                raise ProjectError(display, f"invalid marker {marker!r}: {first}", key=f"package[{i}]") from None
        entries.append(entry)
    return LockFile(path, tool, sync, tuple(entries))


def _texts(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str))
    if isinstance(value, dict):  # poetry.lock 2.1: group -> marker
        return tuple(v for v in value.values() if isinstance(v, str))
    return ()


def _entry(tool: str, package: object) -> Entry | None:
    if not isinstance(package, dict):
        return None
    name, version = package.get("name"), package.get("version")
    if not isinstance(name, str):
        return Entry("", "", ())
    if tool == "uv":
        source = package.get("source")
        if isinstance(source, dict) and any(k in source for k in (*_LOCAL_SOURCES, "local")):
            return None
        markers = _texts(package.get("resolution-markers"))
    elif tool == "pylock":
        markers = _texts(package.get("marker"))
    elif tool == "poetry":
        markers = _texts(package.get("markers"))
    else:
        markers = _texts(package.get("marker"))
    if version is None:
        return None if tool in ("uv", "pylock") else Entry(canonical_name(name), "", ())
    return Entry(canonical_name(name), str(version), markers)


@lru_cache(maxsize=4096)
def _marker(text: str) -> Marker:
    # A large uv.lock repeats the same few resolution markers on thousands of packages: parse each once.
    return Marker(text)


_EXTRA = lazy(r"""\bextra\s*==\s*['"]([^'"]+)['"]""")


def applies(entry: Entry, env: dict[str, str]) -> bool:
    """Whether the lock uses `entry` in the environment `env`, for some choice of extra: which extra (or uv's
    conflicting-extras fork) the environment was synced with is recorded nowhere, so each one a marker names is
    tried. A marker that cannot be evaluated counts as true (the entry is then compared, not silently dropped)."""
    if not entry.markers:
        return True
    for marker in entry.markers:
        parsed = _marker(marker)
        for extra in ("", *_EXTRA.findall(marker)):
            try:
                if parsed.evaluate({**env, "extra": extra}):
                    return True
            except (UndefinedComparison, UndefinedEnvironmentName):
                return True
    return False

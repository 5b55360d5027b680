"""Find the project at or above a folder and read what it declares.

The project is the nearest folder, from the working directory up, holding any of the files below; only that one
folder is read (a parent's files belong to another project), and in it exactly these files, so what is read is
predictable:

- pyproject.toml: `[project] dependencies`, `[project.optional-dependencies]` of the extras named with `--extra`,
  `[dependency-groups]` (PEP 735, `include-group` followed) of the groups named with `--group`;
- setup.cfg: `[options] install_requires` and `[options.extras_require]` of the named extras;
- requirements.txt (with its `-r` / `-c` includes); other requirements files only when named with `--requirements`,
  which then replaces requirements.txt;
- environment.yml / environment.yaml: the `pip:` list of its dependencies (with its `-r` includes);
- the locks uv.lock, pylock.toml, poetry.lock, pdm.lock, and pixi's pixi.lock (sources/project/pixi.py).

A project whose [project] (or setup.cfg) name is an installed distribution is judged by that distribution's
installed metadata instead of its pyproject.toml / setup.cfg requirements (see judge.py), so nothing is checked
twice; requirements files, groups and locks are checked either way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from envcheck.facts.project import Declared, Lock, Pin, ProjectFacts
from envcheck.facts.snapshot import canonical_name
from envcheck.sources.project import locks as locks_mod
from envcheck.sources.project import pixi
from envcheck.sources.project import requirements as req_mod
from envcheck.sources.project.errors import ProjectError
from envcheck.sources.project.root import CONDA, LOCKS, PYPROJECT, REQUIREMENTS, SETUP_CFG, find_root
from envcheck.support import toml
from envcheck.support.patterns import lazy


@dataclass(frozen=True)
class Project:
    """What a project's files declare, before it is compared with an environment."""

    root: Path
    name: str | None
    files: tuple[str, ...]
    requirements: tuple[Declared, ...]
    index_options: tuple[str, ...]
    locks: tuple[locks_mod.LockFile, ...]

    def facts(self, marker_env: dict[str, str]) -> ProjectFacts:
        """The snapshot's record: the lock pins that apply under `marker_env` (the checked interpreter's)."""
        locks = tuple(
            Lock(file=self._display(lock.file), tool=lock.tool, sync=lock.sync,
                 pins=tuple(sorted((Pin(e.name, e.version) for e in lock.entries if locks_mod.applies(e, marker_env)),
                                   key=lambda p: (p.name, p.version))))
            for lock in self.locks)
        return ProjectFacts(root=str(self.root), name=self.name, files=self.files, requirements=self.requirements,
                            index_options=self.index_options, locks=locks)

    def _display(self, path: Path) -> str:
        return _display(self.root, path)


def _display(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path.resolve())


def read_lock(path: Path, display: str) -> locks_mod.LockFile:
    """Any lock of LOCKS: pixi.lock by sources/project/pixi.py (it is YAML), the others by locks.py."""
    if path.name == pixi.LOCK:
        return pixi.lock_file(path, display)
    return locks_mod.read(path, display)


def _line(text: str, needle: str) -> int | None:
    """The line `needle` is written on: as a TOML string first (`"chess"` is not the word in a description)."""
    for form in (f'"{needle}"', f"'{needle}'", needle):
        at = text.find(form)
        if at >= 0:
            return text.count("\n", 0, at) + 1
    return None


class _Reading:
    """The files read so far and what they declared."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: list[str] = []
        self.requirements: list[Declared] = []
        self.index_options: list[str] = []
        self.locks: list[locks_mod.LockFile] = []
        self.name: str | None = None

    def display(self, path: Path) -> str:
        return _display(self.root, path)

    def add_file(self, path: Path) -> None:
        shown = self.display(path)
        if shown not in self.files:
            self.files.append(shown)

    def declare(self, text: object, source: str, kind: str, file: str, file_text: str) -> None:
        if not isinstance(text, str):
            raise ProjectError(file, f"expected a requirement string, got {text!r}", key=source.split(": ", 1)[-1])
        line = _line(file_text, text)
        try:
            Requirement(text)
        except InvalidRequirement as exc:
            raise ProjectError(file, f"invalid requirement {text!r}: {(str(exc).splitlines() or [''])[0]}",
                               line=line) from None
        self.requirements.append(Declared(text.strip(), f"{file}:{line}" if line else source, kind))

    def requirements_file(self, path: Path) -> None:
        read = req_mod.read(path, self.display)
        for f in read.files:
            self.add_file(f)
        for item in read.lines:
            self.requirements.append(Declared(item.text, item.source, "constraint" if item.constraint else
                                              "requirements"))
        for option in read.index_options:
            self.index_options.append(option)


def _pyproject(reading: _Reading, path: Path, extras: Sequence[str], groups: Sequence[str]) -> set[str]:
    """Reads `path`; returns the extras and groups it defines among those asked for."""
    shown = reading.display(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = toml.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(shown, f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    except toml.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise ProjectError(shown, f"invalid TOML: {exc}", line=int(line.group(1)) if line else None) from None
    reading.add_file(path)
    found: set[str] = set()
    project = data.get("project")
    if isinstance(project, dict):
        if isinstance(project.get("name"), str):
            reading.name = project["name"]
        for i, item in enumerate(_list(project, "dependencies", shown, "project.")):
            reading.declare(item, f"{shown}: project.dependencies[{i}]", "project", shown, text)
        optional = project.get("optional-dependencies", {})
        if isinstance(optional, dict):
            wanted = {canonical_name(e) for e in extras}
            for extra in optional:
                if canonical_name(extra) not in wanted:
                    continue
                found.add(f"extra:{canonical_name(extra)}")
                for i, item in enumerate(_list(optional, extra, shown, "project.optional-dependencies.")):
                    _declare_expanding(reading, item, f"{shown}: project.optional-dependencies.{extra}[{i}]",
                                       shown, text)
    _policy_requirements(reading, data, shown, text)
    table = data.get("dependency-groups")
    if groups and isinstance(table, dict):
        by_name = {canonical_name(g): g for g in table}
        for group in groups:
            if canonical_name(group) in by_name:
                found.add(f"group:{canonical_name(group)}")
                _group(reading, table, by_name, by_name[canonical_name(group)], shown, text, [])
    return found


def _policy_requirements(reading: _Reading, data: dict[str, Any], shown: str, text: str) -> None:
    """`[tool.envcheck] require` as kind "policy", for derived facts (which torch the project needs); the policy
    rules judge and validate them (envcheck/sources/project/config.py reports a malformed one), so what does not parse
    is passed over here."""
    tool = data.get("tool")
    table = tool.get("envcheck") if isinstance(tool, dict) else None
    items = table.get("require") if isinstance(table, dict) else None
    if not isinstance(items, list):
        return
    for i, item in enumerate(items):
        if not isinstance(item, str):
            continue
        try:
            Requirement(item)
        except InvalidRequirement:
            continue
        line = _line(text, item)
        reading.requirements.append(Declared(item.strip(), f"{shown}:{line}" if line else
                                             f"{shown}: tool.envcheck.require[{i}]", "policy"))


def _declare_expanding(reading: _Reading, item: object, source: str, shown: str, text: str) -> None:
    # An extra naming the project itself (`myproj[cuda]`) is an include of its other extras: those are asked for
    # through --extra, so the self-reference adds nothing to check here.
    if isinstance(item, str) and reading.name:
        try:
            if canonical_name(Requirement(item).name) == canonical_name(reading.name):
                return
        except InvalidRequirement:
            pass
    reading.declare(item, source, "extra", shown, text)


def _list(table: dict[str, Any], key: str, shown: str, prefix: str) -> list[object]:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise ProjectError(shown, f"expected an array of requirement strings, got {value!r}", key=prefix + key)
    return value


def _group(reading: _Reading, table: dict[str, Any], by_name: dict[str, str], group: str, shown: str, text: str,
           stack: list[str]) -> None:
    if group in stack:
        raise ProjectError(shown, f"include-group loop: {' -> '.join([*stack, group])}",
                           key=f"dependency-groups.{stack[-1]}")
    for i, item in enumerate(_list(table, group, shown, "dependency-groups.")):
        if isinstance(item, dict) and set(item) == {"include-group"}:
            target = by_name.get(canonical_name(str(item["include-group"])))
            if target is None:
                raise ProjectError(shown, f"include-group {item['include-group']!r}: no such group",
                                   key=f"dependency-groups.{group}[{i}]")
            _group(reading, table, by_name, target, shown, text, [*stack, group])
            continue
        if isinstance(item, str):
            reading.declare(item, f"{shown}: dependency-groups.{group}[{i}]", "group", shown, text)
        else:
            raise ProjectError(shown, f"expected a requirement string or {{include-group = ...}}, got {item!r}",
                               key=f"dependency-groups.{group}[{i}]")


def _setup_cfg(reading: _Reading, path: Path, extras: Sequence[str]) -> set[str]:
    import configparser  # only for a project with a setup.cfg, few of them

    shown = reading.display(path)
    parser = configparser.ConfigParser(interpolation=None)
    try:
        text = path.read_text(encoding="utf-8")
        parser.read_string(text, source=shown)
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(shown, f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    except configparser.Error as exc:
        raise ProjectError(shown, f"invalid INI: {str(exc).splitlines()[0]}",
                           line=getattr(exc, "lineno", None)) from None
    reading.add_file(path)
    if parser.has_option("metadata", "name") and reading.name is None:
        reading.name = parser.get("metadata", "name").strip()
    found: set[str] = set()

    def lines(section: str, option: str) -> list[str]:
        value = parser.get(section, option, fallback="")
        return [ln.strip() for ln in value.splitlines() if ln.strip() and not ln.strip().startswith("#")]

    for i, item in enumerate(lines("options", "install_requires")):
        reading.declare(item, f"{shown}: options.install_requires[{i}]", "project", shown, text)
    wanted = {canonical_name(e) for e in extras}
    if parser.has_section("options.extras_require"):
        for extra in parser.options("options.extras_require"):
            if canonical_name(extra) in wanted:
                found.add(f"extra:{canonical_name(extra)}")
                for i, item in enumerate(lines("options.extras_require", extra)):
                    _declare_expanding(reading, item, f"{shown}: options.extras_require.{extra}[{i}]", shown, text)
    return found


_PIP_KEY = lazy(r"^(\s*)-\s*pip\s*:\s*$")
_ITEM = lazy(r"^(\s*)-\s*(.*?)\s*$")


def _conda(reading: _Reading, path: Path) -> None:
    """The `pip:` list of a conda environment file. Read line by line (the list is a plain YAML sequence of
    strings), so that no YAML library is needed."""
    shown = reading.display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(shown, f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    reading.add_file(path)
    indent: int | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        content = raw.split(" #", 1)[0].rstrip()
        if not content.strip() or content.strip().startswith("#"):
            continue
        if indent is None:
            match = _PIP_KEY.match(content)
            if match:
                indent = len(match.group(1))
            continue
        item = _ITEM.match(content)
        if item is None or len(item.group(1)) <= indent:
            indent = None  # the pip list ended
            continue
        value = item.group(2).strip().strip("'\"")
        include = re.match(r"^(-r|--requirement)[\s=]+(.+)$", value)
        if include:
            target = path.parent / include.group(2).strip()
            if not target.is_file():
                raise ProjectError(shown, f"{include.group(1)} {include.group(2).strip()}: no such file", line=number)
            reading.requirements_file(target)
        elif value.startswith("-"):
            option = re.match(r"^(--index-url|--extra-index-url|--find-links|-i|-f)[\s=]+(.+)$", value)
            if option:
                reading.index_options.extend([{"-i": "--index-url", "-f": "--find-links"}.get(option.group(1),
                                                                                                 option.group(1)),
                                              option.group(2).strip()])
        elif not re.match(r"^[A-Za-z][\w+.-]*://", value) and not value.startswith((".", "/")):
            try:
                Requirement(value)
            except InvalidRequirement as exc:
                raise ProjectError(shown, f"invalid requirement {value!r}: {(str(exc).splitlines() or [''])[0]}",
                                   line=number) from None
            reading.requirements.append(Declared(value, f"{shown}:{number}", "requirements"))


def discover(start: Path, *, requirements: Sequence[str | os.PathLike[str]] = (), extras: Sequence[str] = (),
             groups: Sequence[str] = ()) -> Project | None:
    """The project at or above `start`, read; None when there is none and no file is named."""
    root = find_root(start)
    if root is None and not requirements:
        if extras or groups:
            raise ProjectError(str(start), "--extra / --group: no project (pyproject.toml, setup.cfg) at or above "
                                           "this folder")
        return None
    reading = _Reading(root or start.resolve())
    found: set[str] = set()
    folder = reading.root
    if root is not None and (folder / PYPROJECT).is_file():
        found |= _pyproject(reading, folder / PYPROJECT, extras, groups)
    if root is not None and (folder / SETUP_CFG).is_file():
        found |= _setup_cfg(reading, folder / SETUP_CFG, extras)
    for extra in extras:
        if f"extra:{canonical_name(extra)}" not in found:
            raise ProjectError(reading.files[0] if reading.files else str(folder), f"--extra {extra}: the project "
                               "declares no such extra ([project.optional-dependencies] or [options.extras_require])")
    for group in groups:
        if f"group:{canonical_name(group)}" not in found:
            raise ProjectError(PYPROJECT, f"--group {group}: the project declares no such group ([dependency-groups])")
    named = [Path(r) for r in requirements]
    if named:
        for path in named:
            if not path.is_file():
                raise ProjectError(str(path), "--requirements: no such file")
            if path.name in LOCKS:
                reading.add_file(path)
                reading.locks.append(read_lock(path, reading.display(path)))
            elif path.name in CONDA or path.suffix in (".yml", ".yaml"):
                _conda(reading, path)
            else:
                reading.requirements_file(path)
    elif root is not None:
        if (folder / REQUIREMENTS).is_file():
            reading.requirements_file(folder / REQUIREMENTS)
        for conda in CONDA:
            if (folder / conda).is_file():
                _conda(reading, folder / conda)
                break
    if root is not None:
        for lock in LOCKS:
            path = folder / lock
            if path.is_file() and reading.display(path) not in reading.files:
                reading.add_file(path)
                reading.locks.append(read_lock(path, reading.display(path)))
    return Project(root=reading.root, name=reading.name, files=tuple(reading.files),
                   requirements=tuple(reading.requirements), index_options=tuple(reading.index_options),
                   locks=tuple(reading.locks))

"""pixi projects: the manifest (pixi.toml, or `[tool.pixi]` in pyproject.toml) and its lock, pixi.lock.

pixi locks conda packages (from conda-forge and other channels) and PyPI packages together, per environment and per
platform. What is read:

- pixi.lock, format versions 6 and 7 (the YAML that pixi writes; a version this envcheck does not know is refused,
  naming the file and the `version` key). Version 6: `environments.ENV.packages.SUBDIR` lists `- conda: URL` and
  `- pypi: URL` entries, and the top-level `packages` list describes each URL (a conda entry's name, version and
  build come from its file name, `NAME-VERSION-BUILD.conda`, unless the entry states them; a PyPI entry states
  `name` and `version`). Version 7 adds a top-level `platforms` list: named platforms, each with its conda `subdir`
  and the `virtual-packages` it was solved for (`__cuda=12`), and the environments' package lists are keyed by
  those names. Read line by line: pixi writes one fixed layout, and no YAML library is needed.
- the manifest's `[system-requirements]` (and each feature's), which say the virtual packages a machine must have
  (`cuda = "12"`: a driver that runs CUDA 12), and the declared dependency on torch's conda package.

For the lock-drift check the `default` environment's entries are the pins (`lock_file`), each applying on its
platform only. For a declared machine (`machine_pins`) the environment's entries for the machine's platform are,
choosing among version 7's named platforms of that subdir the one whose virtual packages the machine has.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcheck.facts.conda import TORCH_STACK, CondaPackage, channel_name
from envcheck.facts.snapshot import canonical_name
from envcheck.sources.project import locks as locks_mod
from envcheck.sources.project.errors import ProjectError
from envcheck.support import input_files, toml
from envcheck.support.patterns import lazy

__all__ = ["DEFAULT", "LOCK", "PixiLock", "PixiPackage", "lock_file", "manifest_requirements", "read_lock",
           "subdir_markers"]

LOCK = "pixi.lock"
DEFAULT = "default"
VERSIONS = (6, 7)
# conda names whose Python distribution is named otherwise
_DIST_NAME = {"pytorch": "torch", "py-opencv": "opencv-python"}
# conda subdir -> the PEP 508 markers of a Python on it
SUBDIR_MARKERS = {
    "linux-64": ('linux', 'x86_64'), "linux-aarch64": ('linux', 'aarch64'), "osx-64": ('darwin', 'x86_64'),
    "osx-arm64": ('darwin', 'arm64'), "win-64": ('win32', 'AMD64'),
}
_ITEM = lazy(r"^(\s*)- (conda|pypi): (\S+)\s*$")
# A key and the rest of its line (stripped in Python: `(.*?)\s*$` would retry the tail at every space of a long run).
_KEY = lazy(r"^(\s*)([A-Za-z0-9_.-]+):(.*)$")
_LIST_VALUE = lazy(r"^\s*- (\S.*)$")
_CONDA_FILE = lazy(r"^(.+)-([^-]+)-([^-]+)\.(?:conda|tar\.bz2)$")


@dataclass(frozen=True)
class PixiPackage:
    """One entry of the lock's `packages` list."""

    kind: str  # "conda" | "pypi"
    url: str
    name: str  # as the lock names it: the conda name ("pytorch") or the PyPI name
    version: str
    build: str  # a conda entry's build string; "" for PyPI
    line: int  # where the entry starts

    @property
    def dist_name(self) -> str:
        """The Python distribution it installs, canonical: conda's "pytorch" is "torch"."""
        return canonical_name(_DIST_NAME.get(self.name, self.name) if self.kind == "conda" else self.name)

    @property
    def channel(self) -> str:
        """"conda-forge" for a conda entry from conda-forge; the index URL's host path for PyPI entries."""
        if self.kind != "conda":
            return ""
        return channel_name(self.url.rsplit("/", 1)[0])

    def conda_record(self) -> CondaPackage | None:
        """The entry as conda's record of it, for the torch stack's conda packages."""
        if self.kind != "conda" or self.name not in TORCH_STACK:
            return None
        subdir = self.url.rsplit("/", 2)[-2] if self.url.count("/") >= 2 else ""
        return CondaPackage(self.name, self.version, self.build, self.channel, subdir, f"{LOCK}:{self.line}")


@dataclass(frozen=True)
class PixiLock:
    """pixi.lock, read."""

    file: Path
    version: int
    platforms: Mapping[str, tuple[str, tuple[str, ...]]]  # platform name -> (subdir, virtual packages "__cuda=12")
    environments: Mapping[str, Mapping[str, tuple[str, ...]]]  # env -> platform name -> package URLs
    packages: Mapping[str, PixiPackage] = field(default_factory=dict)  # URL -> entry

    def subdir(self, platform: str) -> str:
        return self.platforms.get(platform, (platform, ()))[0]

    def installs(self, environment: str, platform: str) -> list[PixiPackage]:
        """The entries `environment` installs on `platform` (a platform name), in the lock's order."""
        urls = self.environments.get(environment, {}).get(platform, ())
        return [self.packages[u] for u in urls if u in self.packages]


def _conda_entry(url: str, stated: dict[str, str], line: int) -> PixiPackage:
    match = _CONDA_FILE.match(url.rsplit("/", 1)[-1])
    name, version, build = match.groups() if match is not None else ("", "", "")
    return PixiPackage("conda", url, stated.get("name", name), stated.get("version", version),
                       stated.get("build", build), line)


def read_lock(path: Path, display: str) -> PixiLock:
    """The lock at `path`; a version this envcheck does not read, or an entry without a name and version, is a
    ProjectError naming `display` and the line."""
    text = input_files.read_text(path, error=lambda _file, why: ProjectError(display, f"cannot be read: {why}"))
    lines = text.splitlines()
    version = next((m.group(3).strip() for m in map(_KEY.match, lines[:5]) if m and m.group(1) == "" and
                    m.group(2) == "version"), None)
    if version is None or not version.isdigit() or int(version) not in VERSIONS:
        shown = "missing" if version is None else repr(version)
        line = next((i for i, t in enumerate(lines, 1) if t.startswith("version:")), None)
        raise ProjectError(display, f"lock version {shown} is not one this envcheck reads (pixi lock versions "
                                    f"{', '.join(map(str, VERSIONS))})", line=line, key="version")
    section = ""
    platforms: dict[str, tuple[str, list[str]]] = {}
    environments: dict[str, dict[str, list[str]]] = {}
    packages: dict[str, PixiPackage] = {}
    env = platform = None
    in_env_packages = False
    current: tuple[str, str, int, dict[str, str]] | None = None  # kind, url, line, stated keys
    platform_entry: str | None = None
    in_virtual = False

    def flush() -> None:
        if current is None:
            return
        kind, url, start, stated = current
        entry = _conda_entry(url, stated, start) if kind == "conda" else PixiPackage(
            "pypi", url, stated.get("name", ""), stated.get("version", ""), "", start)
        if entry.name and entry.version:  # a local source without a version pins nothing comparable
            packages[url] = entry

    for number, raw in enumerate(lines, 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if not raw.startswith((" ", "-")):
            flush()
            current = None
            key = _KEY.match(raw)
            section = key.group(2) if key else ""
            continue
        if section == "platforms":
            key = _KEY.match(raw.replace("- ", "  ", 1)) if raw.lstrip().startswith("- name:") else _KEY.match(raw)
            if raw.lstrip().startswith("- name:") and key is not None:
                platform_entry, in_virtual = key.group(3).strip(), False
                platforms[platform_entry] = (platform_entry, [])
            elif key is not None and platform_entry is not None and key.group(2) == "subdir":
                platforms[platform_entry] = (key.group(3).strip(), platforms[platform_entry][1])
            elif key is not None and key.group(2) == "virtual-packages":
                in_virtual = True
            elif in_virtual and platform_entry is not None and (value := _LIST_VALUE.match(raw)):
                platforms[platform_entry][1].append(value.group(1).rstrip())
        elif section == "environments":
            item = _ITEM.match(raw)
            key = _KEY.match(raw)
            if item is not None and env is not None and platform is not None and in_env_packages:
                environments[env].setdefault(platform, []).append(item.group(3))
            elif key is not None and len(key.group(1)) == 2 and not key.group(3).strip():
                env, platform, in_env_packages = key.group(2), None, False
                environments.setdefault(env, {})
            elif key is not None and key.group(2) == "packages" and not key.group(3).strip():
                in_env_packages = True
            elif key is not None and in_env_packages and not key.group(3).strip() and len(key.group(1)) > 4:
                platform = key.group(2)
        elif section == "packages":
            item = _ITEM.match(raw)
            if item is not None and len(item.group(1)) <= 2:
                flush()
                current = (item.group(2), item.group(3), number, {})
                continue
            key = _KEY.match(raw)
            if current is not None and key is not None and key.group(2) in ("name", "version", "build") \
                    and len(key.group(1)) <= 4 and key.group(3).strip():
                current[3].setdefault(key.group(2), key.group(3).strip().strip("'\""))
    flush()
    return PixiLock(path, int(version), {k: (v[0], tuple(v[1])) for k, v in platforms.items()},
                    {e: {p: tuple(u) for p, u in by.items()} for e, by in environments.items()}, packages)


def subdir_markers(subdir: str) -> str | None:
    """The PEP 508 marker that holds exactly on a conda subdir ("linux-64"); None for noarch and others."""
    found = SUBDIR_MARKERS.get(subdir)
    return None if found is None else f'sys_platform == "{found[0]}" and platform_machine == "{found[1]}"'


def lock_file(path: Path, display: str) -> locks_mod.LockFile:
    """pixi.lock as the drift check reads a lock: the `default` environment's Python distributions (conda's and
    PyPI's), each applying on the platforms it is locked for."""
    lock = read_lock(path, display)
    entries: dict[tuple[str, str], set[str]] = {}
    for platform in lock.environments.get(DEFAULT, {}):
        marker = subdir_markers(lock.subdir(platform))
        for entry in lock.installs(DEFAULT, platform):
            if marker is not None:
                entries.setdefault((entry.dist_name, entry.version), set()).add(marker)
    out = tuple(locks_mod.Entry(name, version, tuple(sorted(markers)))
                for (name, version), markers in sorted(entries.items()))
    return locks_mod.LockFile(path, "pixi", "pixi install", out)


def manifest(root: Path) -> tuple[str, dict[str, Any]] | None:
    """(file name, the pixi table) of the project's manifest: pixi.toml's whole document, or pyproject.toml's
    [tool.pixi]; None when neither is there or readable."""
    for name in ("pixi.toml", "pyproject.toml"):
        path = root / name
        if not path.is_file():
            continue
        try:
            data = toml.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, toml.TOMLDecodeError):
            continue
        table = data if name == "pixi.toml" else data.get("tool", {}).get("pixi")
        if isinstance(table, dict):
            return name, table
    return None


def system_requirements(table: Mapping[str, Any], environment: str = DEFAULT) -> dict[str, str]:
    """The virtual packages `environment` requires: the manifest's [system-requirements] and those of the
    features the environment lists (`[environments] default = ["cuda"]`), each as written (`cuda = "12"`)."""
    out: dict[str, str] = {}

    def add(value: object) -> None:
        if isinstance(value, dict):
            for key, spec in value.items():
                if isinstance(spec, (str, int, float)):
                    out[str(key)] = str(spec)
                elif isinstance(spec, dict) and isinstance(spec.get("version"), str):
                    out[str(key)] = spec["version"]

    add(table.get("system-requirements"))
    environments = table.get("environments")
    listed = environments.get(environment) if isinstance(environments, dict) else None
    features = listed.get("features") if isinstance(listed, dict) else listed
    for name in features if isinstance(features, list) else []:
        feature = table.get("feature", {}).get(name) if isinstance(table.get("feature"), dict) else None
        if isinstance(feature, dict):
            add(feature.get("system-requirements"))
    return out


def manifest_requirements(table: Mapping[str, Any]) -> dict[str, str]:
    """The conda dependencies of the torch stack the manifest declares, anywhere (base, features, targets):
    name -> spec as written (`pytorch = ">=2.8.0,<3"`)."""
    out: dict[str, str] = {}

    def scan(value: object) -> None:
        if not isinstance(value, dict):
            return
        deps = value.get("dependencies")
        if isinstance(deps, dict):
            for name, spec in deps.items():
                if name in TORCH_STACK and name not in out:
                    out[name] = spec if isinstance(spec, str) else str(spec.get("version", "*")) \
                        if isinstance(spec, dict) else "*"
        for nested in ("feature", "target"):
            inner = value.get(nested)
            if isinstance(inner, dict):
                for sub in inner.values():
                    scan(sub)

    scan(table)
    return out

"""What the project would install on a declared machine: its lock's entries for that machine where it has a lock,
else its pinned requirements, each with the file and line it is written on.

A lock (uv.lock, pylock.toml, poetry.lock, pdm.lock) is what `uv sync` and its peers install: every entry whose
markers hold on the machine, and for uv.lock (a universal lock of every platform's packages) only those its project
reaches through dependencies whose markers hold there (lockpins.py). Without a lock, the project's
requirements (requirements files with their index options, `[project]` dependencies, the named extras and groups)
are what `pip install` gets: a requirement pinned to one version (`==`, `===`) is a pin; a range is a pin whose
version is unknown, since which release a resolver picks tomorrow is not in the files. A marker that names a
variable a declaration does not state (`python_full_version`) leaves the version unknown too: nothing is guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement

from envcheck.facts.conda import CondaPackage
from envcheck.facts.snapshot import canonical_name
from envcheck.machines.declared import DeclaredMachine
from envcheck.machines.lockpins import lock_pins
from envcheck.sources.project import locks as locks_mod
from envcheck.sources.project import pixi
from envcheck.sources.project.discover import Project
from envcheck.sources.project.errors import ProjectError
from envcheck.support import toml
from envcheck.support.patterns import lazy
from envcheck.support.versions import marker_holds, parse_requirement

# platform key -> (sys_platform, platform_machine, platform_system, os_name)
PLATFORM_MARKERS = {
    "linux-x86_64": ("linux", "x86_64", "Linux", "posix"),
    "linux-aarch64": ("linux", "aarch64", "Linux", "posix"),
    "windows-x86_64": ("win32", "AMD64", "Windows", "nt"),
    "macos-arm64": ("darwin", "arm64", "Darwin", "posix"),
    "macos-x86_64": ("darwin", "x86_64", "Darwin", "posix"),
}
# The last path part of a wheel index of PyTorch's layout (https://download.pytorch.org/whl/cu124, or a mirror).
_INDEX_VARIANT = lazy(r"/whl/(cpu|cu\d+|rocm\d+(?:\.\d+)+)/?$")


@dataclass(frozen=True)
class Pin:
    """One package the project would install on the machine, and where the project says so."""

    name: str  # canonical
    written: str  # as the file writes it: "torch==2.5.1+cu124", "torch>=2.3", or a lock's "torch 2.5.1+cu124"
    version: str | None  # the one version it installs, as written ("2.5.1", "2.5.1+cu124"); None: not one version
    file: str  # relative to the project root
    line: int | None
    index: str | None = None  # the index it comes from where the files say (a lock's registry, --index-url)
    conda: CondaPackage | None = None  # a conda package of the torch stack (pixi.lock): its build and channel

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    @property
    def requirement(self) -> str:
        """A PEP 508 requirement for what it installs: `torch==2.5.1+cu124`, or the range as written."""
        return f"{self.name}=={self.version}" if self.version is not None else self.written


@dataclass(frozen=True)
class Pins:
    """Everything the project would install on one machine."""

    root: Path
    name: str | None  # the project's [project] name
    files: tuple[str, ...]  # the files read, relative to root
    pins: tuple[Pin, ...]  # in the files' order
    lock: locks_mod.LockFile | None  # the lock they come from; None: the requirements
    lock_shown: str  # the lock's file name as shown ("uv.lock"); "" without a lock
    index_options: tuple[str, ...]  # the requirements files' index options (argv form)
    index_where: dict[str, str]  # an index URL -> where it is written ("requirements.txt:1")
    declared: dict[str, Pin]  # with a lock: what the project's own files require of each name (pyproject.toml)
    requires_python: Pin | None = None  # the project itself: its [project] version, `written` "requires-python SPEC"
    # Every requirement the project's files write for each name on this machine (pyproject.toml, requirements files
    # and their -c constraints), in the order read: a pin change changes each of them that would exclude the new
    # version, so that no file is left to conflict with it.
    written: dict[str, tuple[Pin, ...]] = field(default_factory=dict)
    manifest: str = ""  # a pixi project's manifest (pixi.toml, or pyproject.toml with [tool.pixi]); "" otherwise
    system_requirements: dict[str, str] = field(default_factory=dict)  # pixi's, for the environment read
    environment: str = ""  # the pixi environment whose packages these are ("default"); "" without pixi.lock

    def get(self, name: str) -> Pin | None:
        key = canonical_name(name)
        return next((p for p in self.pins if p.name == key), None)

    def elsewhere(self, pin: Pin) -> tuple[Pin, ...]:
        """The project's other requirements of `pin`'s name: those written in another place than the pin itself
        (with a lock, every one: the pin is the lock's entry)."""
        return tuple(w for w in self.written.get(pin.name, ()) if w.where != pin.where)

    @property
    def source(self) -> str:
        """What the pins were read from, in words: "uv.lock", "requirements.txt, pyproject.toml"."""
        if self.lock is not None:
            return self.lock_shown
        return ", ".join(dict.fromkeys(p.file for p in self.pins)) or "no pinned requirement"


def marker_environment(machine: DeclaredMachine) -> dict[str, str]:
    """The PEP 508 marker variables a declaration states. PyTorch publishes wheels for CPython only, so the
    implementation is CPython; python_full_version and platform_release are not stated, and stay unknown."""
    sys_platform, arch, system, os_name = PLATFORM_MARKERS[machine.platform]
    python = machine.python.rstrip("t")
    return {"python_version": python, "sys_platform": sys_platform, "platform_machine": arch,
            "platform_system": system, "os_name": os_name, "implementation_name": "cpython",
            "platform_python_implementation": "CPython"}


def index_variant(url: str | None) -> str | None:
    """The PyTorch variant an index URL serves ("cu124"); None for PyPI and other indexes."""
    match = _INDEX_VARIANT.search(url or "")
    return None if match is None else match.group(1)


def _line_of(text: str, needle: str) -> int | None:
    at = text.find(needle)
    return None if at < 0 else text.count("\n", 0, at) + 1


def _exact(req: Requirement) -> str | None:
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and not specs[0].version.endswith("*"):
        return specs[0].version
    return None


def _read(root: Path, shown: str) -> str:
    try:
        return (root / shown).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _where(source: str) -> tuple[str, int | None]:
    """("requirements.txt", 3) from a Declared source "requirements.txt:3" or "pyproject.toml: project.x[0]"."""
    match = re.fullmatch(r"(.+?):(\d+)", source)
    if match:
        return match.group(1), int(match.group(2))
    return source.split(":", 1)[0], None


def _from_requirements(project: Project, env: dict[str, str]) -> list[Pin]:
    exact: dict[str, Pin] = {}
    ranges: dict[str, Pin] = {}
    constraints: dict[str, Pin] = {}
    order: dict[str, None] = {}  # the names in first-seen order (a dict: a list searched per line was quadratic)
    index = next((project.index_options[i + 1] for i, o in enumerate(project.index_options[:-1])
                  if o in ("--index-url", "--extra-index-url") and index_variant(project.index_options[i + 1])),
                 None)
    for declared in project.requirements:
        if declared.kind == "policy":
            continue
        req = parse_requirement(declared.requirement)
        if req is None or req.url is not None:
            continue
        file, line = _where(declared.source)
        name = canonical_name(req.name)
        holds = True if req.marker is None else marker_holds(req.marker, env)
        if holds is False:
            continue
        version = _exact(req) if holds else None
        pin = Pin(name, declared.requirement, version, file, line, index if name in _FROM_TORCH_INDEX else None)
        if declared.kind == "constraint":
            constraints.setdefault(name, pin)
            continue
        order.setdefault(name)
        if version is not None:
            # The first exact pin, unless a later one names the build (`==2.5.1+cu124` after pyproject's `==2.5.1`)
            if name not in exact or ("+" in version and "+" not in (exact[name].version or "")):
                exact[name] = pin
        else:
            ranges.setdefault(name, pin)
    out = []
    for name in order:
        constraint = constraints.get(name)
        # A range with a `-c` file's exact pin installs the constraint's version.
        out.append(exact.get(name) or (constraint if constraint is not None and constraint.version else ranges[name]))
    return out


def _written(project: Project, env: dict[str, str]) -> dict[str, tuple[Pin, ...]]:
    """Every requirement of each name the project's files write that applies on the machine (its marker holds or
    names what the declaration does not state), with its file and line."""
    out: dict[str, list[Pin]] = {}
    for declared in project.requirements:
        req = parse_requirement(declared.requirement) if declared.kind != "policy" else None
        if req is None or req.url is not None or (req.marker is not None and marker_holds(req.marker, env) is False):
            continue
        file, line = _where(declared.source)
        out.setdefault(canonical_name(req.name), []).append(
            Pin(canonical_name(req.name), declared.requirement, _exact(req), file, line))
    return {name: tuple(pins) for name, pins in out.items()}


# The packages PyTorch's indexes serve in variants: a requirements file's PyTorch index is where these come from.
_FROM_TORCH_INDEX = frozenset({"torch", "torchvision", "torchaudio", "xformers", "triton", "pytorch-triton-rocm"})


def _own(project: Project) -> Pin | None:
    """The project itself as a pin: its static [project] version, and its requires-python as `written`; None when
    pyproject.toml states no requires-python or no version (a dynamic one is not in the files)."""
    text = _read(project.root, "pyproject.toml") if "pyproject.toml" in project.files else ""
    try:
        table = toml.loads(text).get("project") if text else None
    except toml.TOMLDecodeError:
        return None
    if not isinstance(table, dict) or not project.name:
        return None
    spec, version = table.get("requires-python"), table.get("version")
    if not isinstance(spec, str) or not isinstance(version, str):
        return None
    return Pin(canonical_name(project.name), f"requires-python {spec}", version, "pyproject.toml",
               _line_of(text, "requires-python"))


def pins_for(project: Project, machine: DeclaredMachine) -> Pins:
    """What `project` would install on `machine`, from its first lock (uv.lock, pylock.toml, poetry.lock, pdm.lock)
    where it has one, else from its requirements."""
    env = marker_environment(machine)
    index_where: dict[str, str] = {}
    for i, option in enumerate(project.index_options[:-1]):
        if option in ("--index-url", "--extra-index-url"):
            url = project.index_options[i + 1]
            for shown in project.files:
                line = _line_of(_read(project.root, shown), url) if not shown.endswith(".lock") else None
                if line is not None:
                    index_where.setdefault(url, f"{shown}:{line}")
                    break
    lock = project.locks[0] if project.locks else None
    if lock is not None and lock.tool == "pixi":
        return _pixi_pins(project, machine, lock, index_where)
    if lock is not None:
        shown = next((f for f in project.files if f.rsplit("/", 1)[-1] == lock.file.name), lock.file.name)
        try:
            pins = [Pin(p.name, p.written, p.version, shown, p.line, p.index) for p in lock_pins(lock, env)]
        except (OSError, UnicodeDecodeError) as exc:
            raise ProjectError(shown, f"cannot be read for the machines ({exc})") from None
        declared = {pin.name: pin for pin in _from_requirements(project, env)}
        return Pins(project.root, project.name, project.files, tuple(pins), lock, shown, (), index_where, declared,
                    _own(project), _written(project, env))
    return Pins(project.root, project.name, project.files, tuple(_from_requirements(project, env)), None, "",
                project.index_options, index_where, {}, _own(project), _written(project, env))


# build-matrix platform -> conda subdir
_SUBDIR = {"linux-x86_64": "linux-64", "linux-aarch64": "linux-aarch64", "windows-x86_64": "win-64",
           "macos-arm64": "osx-arm64", "macos-x86_64": "osx-64"}


def _pixi_platform(lock: pixi.PixiLock, environment: str, machine: DeclaredMachine) -> str | None:
    """The lock's platform that `machine` installs: the one of its subdir; among lock version 7's named platforms
    of that subdir, one solved with `__cuda` for a machine with NVIDIA GPUs, one without for the others."""
    subdir = _SUBDIR[machine.platform]
    names = [p for p in lock.environments.get(environment, {}) if lock.subdir(p) == subdir]
    if len(names) <= 1:
        return names[0] if names else None
    cuda = [p for p in names if any(v.startswith("__cuda=") for v in lock.platforms.get(p, ("", ()))[1])]
    rest = [p for p in names if p not in cuda]
    preferred = (cuda or rest) if machine.gpus else (rest or cuda)
    return preferred[0]


def _pixi_pins(project: Project, machine: DeclaredMachine, lock: locks_mod.LockFile,
               index_where: dict[str, str]) -> Pins:
    """What the pixi project's `default` environment installs on `machine`, from pixi.lock (sources/project/pixi.py)."""
    shown = next((f for f in project.files if f.rsplit("/", 1)[-1] == lock.file.name), lock.file.name)
    read = pixi.read_lock(lock.file, shown)
    platform = _pixi_platform(read, pixi.DEFAULT, machine)
    pins = []
    for entry in read.installs(pixi.DEFAULT, platform) if platform is not None else []:
        written = f"{entry.name} {entry.version} {entry.build}".strip() if entry.kind == "conda" \
            else f"{entry.name} {entry.version} (PyPI)"
        pins.append(Pin(entry.dist_name, written, entry.version, shown, entry.line, entry.channel or None,
                        entry.conda_record()))
    found = pixi.manifest(project.root)
    declared: dict[str, Pin] = {}
    requirements: dict[str, str] = {}
    name = ""
    if found is not None:
        name, table = found
        text = _read(project.root, name)
        for conda_name, spec in pixi.manifest_requirements(table).items():
            key = canonical_name("torch" if conda_name in ("pytorch", "pytorch-gpu", "pytorch-cpu") else conda_name)
            declared.setdefault(key, Pin(key, f"{conda_name} {spec}", None, name,
                                         _line_of(text, f"{conda_name} =") or _line_of(text, conda_name)))
        requirements = pixi.system_requirements(table)
    return Pins(project.root, project.name, project.files, tuple(pins), lock, shown, (), index_where, declared,
                _own(project), manifest=name, system_requirements=requirements, environment=pixi.DEFAULT)

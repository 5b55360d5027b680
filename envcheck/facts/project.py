"""What the project being checked declares: its requirements and its lock's pins, as a snapshot records them.

Read from the project's files by envcheck/sources/project/ (never by the collector: the files belong to the project, not
to the checked interpreter) and attached to the Facts, so that a snapshot saved by `envcheck facts` carries what
the project asked for and `envcheck check --facts FILE` judges the environment against it elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.facts._reader import Reader


@dataclass(frozen=True)
class Declared:
    """One requirement as the project declares it."""

    requirement: str  # the PEP 508 text: "torch>=2.6; sys_platform == 'linux'"
    source: str  # where: "requirements.txt:3", "pyproject.toml: project.dependencies[0]"
    kind: str  # "project" ([project] / setup.cfg: judged by installed metadata when the project is installed),
    # "extra", "group", "requirements" (a requirements file or a conda environment's pip section), "constraint"
    # (a `-c` file: limits the version where the package is installed, requires nothing), "policy" (the
    # pyproject.toml's `[tool.envcheck] require`: judged by the policy rules EC99xx; read here only so that derived
    # facts such as wheel availability see what the project requires)

    @classmethod
    def from_reader(cls, r: Reader) -> Declared:
        return cls(requirement=r.text("requirement"), source=r.text("source"),
                   kind=r.choice("kind", ("project", "extra", "group", "requirements", "constraint", "policy")))


@dataclass(frozen=True)
class Pin:
    """One package of a lock that applies to the checked environment (its markers hold there)."""

    name: str  # canonical name
    version: str


@dataclass(frozen=True)
class Lock:
    """A lock file's pins for this environment."""

    file: str  # relative to the project root: "uv.lock"
    tool: str  # "uv", "pylock", "poetry", "pdm"
    sync: str  # the command that makes the environment match it, in the project's tool: "uv sync"
    pins: tuple[Pin, ...]  # sorted by name; a name may appear more than once where the lock forks on markers

    @classmethod
    def from_reader(cls, r: Reader) -> Lock:
        return cls(file=r.text("file"), tool=r.choice("tool", ("uv", "pylock", "poetry", "pdm")), sync=r.text("sync"),
                   pins=r.list_of("pins", lambda p: Pin(name=p.text("name"), version=p.text("version"))))


@dataclass(frozen=True)
class ProjectFacts:
    """The project at or above the working directory (or the files named with --requirements)."""

    root: str  # the project's folder, absolute
    name: str | None  # [project] name (or setup.cfg's metadata name); None when it declares none
    files: tuple[str, ...]  # every file read, relative to root where inside it, in reading order
    requirements: tuple[Declared, ...]
    index_options: tuple[str, ...]  # --index-url / --extra-index-url / --find-links from requirements files, as argv
    locks: tuple[Lock, ...]

    @classmethod
    def from_reader(cls, r: Reader) -> ProjectFacts:
        return cls(root=r.text("root"), name=r.opt_text("name"), files=r.texts("files"),
                   requirements=r.list_of("requirements", Declared.from_reader),
                   index_options=r.texts("index_options"), locks=r.list_of("locks", Lock.from_reader))

"""The Facts snapshot: everything envcheck knows about one environment, as typed, JSON-round-trippable data.

The JSON form is what `envcheck facts` writes and `envcheck check --facts FILE` reads. Its `schema` number changes
whenever a field changes meaning; a snapshot of another schema is refused with a clear message rather than
misread. Each field below says what it means and what it is when unknown. Field-by-field documentation for users
is in docs/facts.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envcheck.errors import FactsError
from envcheck.facts._collector import SCHEMA, canonical_name
from envcheck.facts._reader import Reader
from envcheck.facts.gpus import NvmlFacts
from envcheck.facts.installer import InstallerFacts
from envcheck.facts.probe_results import ProbeResult

__all__ = ["SCHEMA", "Distribution", "Facts", "ModuleFact", "PythonFacts", "SourceFact", "TorchBuild"]


@dataclass(frozen=True)
class PythonFacts:
    """The checked interpreter and its platform."""

    version: str  # "3.11.7" (platform.python_version())
    implementation: str  # "cpython", "pypy"
    executable: str  # absolute path; remediation commands run this interpreter
    prefix: str
    base_prefix: str
    virtualenv: bool  # prefix != base_prefix (venv, virtualenv, uv)
    conda: bool  # prefix has conda-meta/
    externally_managed: bool  # PEP 668: `pip install` into it is refused (a distro's Python outside a venv)
    platform: str  # sys.platform: "linux", "win32", "darwin"
    machine: str  # "x86_64", "aarch64", "arm64", "AMD64"
    system: str  # platform.system()
    release: str  # kernel release
    libc: dict[str, str] | None  # {"name": "glibc", "version": "2.36"}; None off Linux
    user_site: str | None  # user site-packages when enabled, else None
    cwd: str  # the directory the check ran in (sys.path[0] of a `python -m` program)
    path: tuple[str, ...]  # the import path searched for distributions and modules, in order
    marker_environment: dict[str, str]  # PEP 508 marker variables, used to evaluate markers for this interpreter

    @classmethod
    def from_reader(cls, r: Reader) -> PythonFacts:
        libc = r.obj("libc", optional=True)
        return cls(
            version=r.req_str("version"), implementation=r.req_str("implementation"),
            executable=r.req_str("executable"), prefix=r.req_str("prefix"), base_prefix=r.req_str("base_prefix"),
            virtualenv=r.flag("virtualenv"), conda=r.flag("conda"),
            externally_managed=r.flag("externally_managed"), platform=r.req_str("platform"),
            machine=r.req_str("machine"), system=r.req_str("system"), release=r.req_str("release"),
            libc=None if libc is None else {"name": libc.req_str("name"), "version": libc.req_str("version")},
            user_site=r.opt_str("user_site"), cwd=r.req_str("cwd"), path=r.str_list("path"),
            marker_environment=r.str_map("marker_environment"),
        )


@dataclass(frozen=True)
class Distribution:
    """One installed distribution (a .dist-info or .egg-info folder on the import path)."""

    name: str  # as written in METADATA (or guessed from the folder name when METADATA is unreadable)
    canonical_name: str  # PEP 503 normalised: "pytorch-lightning"
    version: str  # raw string; may be invalid under PEP 440 (derived fact: invalid-versions)
    location: str  # the sys.path entry that holds it
    metadata_dir: str  # the .dist-info folder itself ("" when unknown)
    requires: tuple[str, ...]  # Requires-Dist lines, unparsed (parsed by derivations with `packaging`)
    requires_python: str | None
    top_level: tuple[str, ...]  # importable top-level names (top_level.txt, else RECORD)
    installer: str | None  # INSTALLER: "pip", "uv", "conda"; None when absent
    editable: bool  # direct_url.json says editable
    problems: tuple[str, ...]  # unreadable or corrupt metadata, in words; empty when healthy

    @classmethod
    def from_reader(cls, r: Reader) -> Distribution:
        name = r.req_str("name")
        return cls(
            name=name, canonical_name=r.opt_str("canonical_name") or canonical_name(name), version=r.req_str("version"),
            location=r.req_str("location"), metadata_dir=r.opt_str("metadata_dir") or "",
            requires=r.str_list("requires"), requires_python=r.opt_str("requires_python"),
            top_level=r.str_list("top_level"), installer=r.opt_str("installer"), editable=r.flag("editable"),
            problems=r.str_list("problems"),
        )


@dataclass(frozen=True)
class TorchBuild:
    """torch's build as recorded in torch/version.py (read as text; torch is never imported for this)."""

    location: str  # the torch package directory
    version: str | None  # __version__: "2.13.0+cpu"; None when version.py is unreadable (see problem)
    cuda: str | None  # CUDA runtime the build targets ("12.8"); None for CPU and ROCm builds
    hip: str | None  # HIP version for ROCm builds; None otherwise
    git_version: str | None
    debug: bool | None
    fields: dict[str, Any]  # every literal assignment in version.py, for fields newer than this schema
    problem: str | None  # why version.py could not be read; None when it was

    @classmethod
    def from_reader(cls, r: Reader) -> TorchBuild:
        fields = {} if r.raw("fields") is None else r.raw("fields")  # `or {}` would accept [] and ""
        if not isinstance(fields, dict):
            raise FactsError(r.file, "expected an object", key=r._path("fields"))
        debug = r.raw("debug")
        return cls(
            location=r.req_str("location"), version=r.opt_str("version"), cuda=r.opt_str("cuda"), hip=r.opt_str("hip"),
            git_version=r.opt_str("git_version"), debug=debug if isinstance(debug, bool) else None,
            fields=dict(fields), problem=r.opt_str("problem"),
        )


@dataclass(frozen=True)
class ModuleFact:
    """Whether a (dotted) module can be found on the import path, found without executing package code."""

    found: bool
    origin: str | None  # file or folder it would be loaded from
    error: str | None = None  # why the search itself failed (the module then counts as unknown)

    @classmethod
    def from_reader(cls, r: Reader) -> ModuleFact:
        return cls(found=r.flag("found"), origin=r.opt_str("origin"), error=r.opt_str("error"))


@dataclass(frozen=True)
class SourceFact:
    """A source file of an installed package (path relative to its import root) and which patterns it contains."""

    path: str | None  # absolute path; None when the file does not exist
    matches: dict[str, bool]  # regex -> found; a pattern absent here was not asked when the snapshot was taken
    error: str | None = None

    @classmethod
    def from_reader(cls, r: Reader) -> SourceFact:
        matches = {} if r.raw("matches") is None else r.raw("matches")
        if not isinstance(matches, dict) or not all(isinstance(v, bool) for v in matches.values()):
            raise FactsError(r.file, "expected an object of booleans", key=r._path("matches"))
        return cls(path=r.opt_str("path"), matches=dict(matches), error=r.opt_str("error"))


@dataclass(frozen=True)
class Facts:
    """One environment. A missing module or source entry means "not asked", which rules treat as unknown."""

    python: PythonFacts
    distributions: tuple[Distribution, ...]  # in import-path order: the first of a name is the one imported
    torch: TorchBuild | None  # None: no importable torch
    modules: dict[str, ModuleFact]
    sources: dict[str, SourceFact]
    env: dict[str, str]  # relevant environment variables; credentials appear as "<redacted>"
    problems: tuple[str, ...]  # collection problems that are not about one distribution
    partial_installs: tuple[str, ...] = ()  # `~name` leftovers of interrupted pip runs in site-packages
    nvml: NvmlFacts | None = None  # the driver and GPUs; None: not collected (GPU predicates are then unknown)
    probes: dict[str, ProbeResult] = field(default_factory=dict)  # live probe results; empty with --static
    envcheck_version: str = ""  # version of envcheck that collected the snapshot
    host: str = ""  # socket.gethostname() of the machine it was collected on; "" when unknown (older snapshots)
    origin: str = "local"  # "local", "python:PATH" or "file:PATH": where these facts came from
    installer: InstallerFacts | None = None  # pip / uv / conda available to change it; None: not recorded (older
    # snapshots), and commands are then written for pip
    _by_name: dict[str, tuple[Distribution, ...]] = field(default_factory=dict, init=False, repr=False,
                                                          compare=False)

    def __post_init__(self) -> None:
        index: dict[str, list[Distribution]] = {}
        for dist in self.distributions:
            index.setdefault(dist.canonical_name, []).append(dist)
        object.__setattr__(self, "_by_name", {k: tuple(v) for k, v in index.items()})

    def installed(self, name: str) -> tuple[Distribution, ...]:
        """Every install of `name` (any spelling), the imported one first; empty when not installed."""
        return self._by_name.get(canonical_name(name), ())

    def active(self, name: str) -> Distribution | None:
        """The install of `name` that `import` would use, or None."""
        found = self._by_name.get(canonical_name(name))
        return found[0] if found else None

    @property
    def names(self) -> Mapping[str, tuple[Distribution, ...]]:
        return self._by_name

    # --- JSON ---------------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        out: dict[str, Any] = {
            "schema": SCHEMA,
            "envcheck_version": self.envcheck_version,
            "host": self.host,
            "python": asdict(self.python),
            # asdict keeps tuples as tuples; the JSON shape (and from_dict) has lists.
            "distributions": [{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(d).items()}
                              for d in self.distributions],
            "torch": None if self.torch is None else asdict(self.torch),
            "modules": {k: asdict(v) for k, v in sorted(self.modules.items())},
            "sources": {k: asdict(v) for k, v in sorted(self.sources.items())},
            "env": dict(sorted(self.env.items())),
            "partial_installs": list(self.partial_installs),
            "installer": None if self.installer is None else asdict(self.installer),
            "nvml": None if self.nvml is None else asdict(self.nvml),
            "probes": {k: asdict(v) for k, v in sorted(self.probes.items())},
            "problems": list(self.problems),
        }
        out["python"]["path"] = list(self.python.path)
        return out

    @classmethod
    def from_dict(cls, data: object, *, file: str = "<facts>", origin: str = "local") -> Facts:
        r = Reader(data, file, "")
        schema = r.raw("schema")
        if schema != SCHEMA:
            raise FactsError(file, f"schema {schema!r} is not supported (this envcheck reads schema {SCHEMA})",
                             key="schema")
        python = r.obj("python")
        assert python is not None
        dists_raw = r.raw("distributions")
        if not isinstance(dists_raw, list):
            raise FactsError(file, "expected a list", key="distributions")
        torch = r.obj("torch", optional=True)
        modules = r.obj("modules", optional=True)
        sources = r.obj("sources", optional=True)
        nvml = r.obj("nvml", optional=True)
        probes = r.obj("probes", optional=True)
        installer = r.obj("installer", optional=True)  # absent from snapshots older than the field
        return cls(
            python=PythonFacts.from_reader(python),
            distributions=tuple(
                Distribution.from_reader(Reader(d, file, f"distributions[{i}]")) for i, d in enumerate(dists_raw)
            ),
            torch=None if torch is None else TorchBuild.from_reader(torch),
            modules={} if modules is None else {
                k: ModuleFact.from_reader(Reader(v, file, f"modules.{k}")) for k, v in modules.data.items()
            },
            sources={} if sources is None else {
                k: SourceFact.from_reader(Reader(v, file, f"sources.{k}")) for k, v in sources.data.items()
            },
            env=r.str_map("env"),
            problems=r.str_list("problems"),
            partial_installs=r.str_list("partial_installs"),
            nvml=None if nvml is None else NvmlFacts.from_reader(nvml),
            probes={} if probes is None else {
                k: ProbeResult.from_reader(Reader(v, file, f"probes.{k}")) for k, v in probes.data.items()
            },
            envcheck_version=r.opt_str("envcheck_version") or "",
            host=r.opt_str("host") or "",
            origin=origin,
            installer=None if installer is None else InstallerFacts.from_reader(installer),
        )

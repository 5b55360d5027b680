"""The Facts snapshot: everything envcheck knows about one environment, as typed, JSON-round-trippable data.

The JSON form is what `envcheck facts` writes and `envcheck check --facts FILE` reads. Its `schema` number changes
whenever a field changes meaning or goes away; the older schemas this envcheck still reads are READABLE_SCHEMAS,
and any other is refused with a clear message rather than misread. envcheck/schemas/facts.schema.json describes
the same format for other tools. Each field below says what it means and what it is when unknown; docs/facts.md
documents every field for users.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from envcheck.facts._reader import Reader
from envcheck.facts.gpus import NvmlFacts
from envcheck.facts.installer import InstallerFacts
from envcheck.facts.native import NativeFacts
from envcheck.facts.network import NetworkFacts
from envcheck.facts.rocm import RocmFacts
from envcheck.facts.toolchain import ToolchainFacts
from envcheck.sources.live._collector import SCHEMA
from envcheck.support.names import canonical_name

if TYPE_CHECKING:
    from envcheck.facts.conda import CondaFacts
    from envcheck.facts.observed import Observation
    from envcheck.facts.probe_results import ProbeResult
    from envcheck.facts.project import ProjectFacts

__all__ = ["READABLE_SCHEMAS", "SCHEMA", "Distribution", "Facts", "ModuleFact", "PythonFacts", "SourceFact",
           "TorchBuild", "canonical_name", "check_schema"]

T = TypeVar("T")
# Schemas this envcheck reads. 1 is 2 plus `distributions[].top_level`, which nothing read; it is now ignored.
# 3 adds `project` (what the checked project declares; 1 and 2 have none), the markers of what a snapshot does not
# know (`distributions_complete`, `distributions[].requires_known`) and `provenance`; a schema 1 or 2 snapshot was
# always collected on the machine, so it knows all of that.
READABLE_SCHEMAS = (1, 2, 3)


@dataclass(frozen=True)
class PythonFacts:
    """The checked interpreter and its platform.

    A snapshot read from a pasted report (`envcheck facts --report`) states only some of these: a text field it
    does not state is "", and `marker_environment` holds only the marker variables it states, so that a marker
    naming another one is unknown rather than evaluated for envcheck's own interpreter.
    """

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
        libc = r.opt_obj("libc")
        return cls(
            version=r.text("version"), implementation=r.text("implementation"),
            executable=r.text("executable"), prefix=r.text("prefix"), base_prefix=r.text("base_prefix"),
            virtualenv=r.flag("virtualenv"), conda=r.flag("conda"),
            externally_managed=r.flag("externally_managed"), platform=r.text("platform"),
            machine=r.text("machine"), system=r.text("system"), release=r.text("release"),
            libc=None if libc is None else {"name": libc.text("name"), "version": libc.text("version")},
            user_site=r.opt_text("user_site"), cwd=r.text("cwd"), path=r.texts("path"),
            marker_environment=r.text_map("marker_environment"),
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
    installer: str | None  # INSTALLER: "pip", "uv", "conda"; None when absent
    editable: bool  # direct_url.json says editable
    problems: tuple[str, ...]  # unreadable or corrupt metadata, in words; empty when healthy
    requires_known: bool = True  # False: `requires` was not stated (a package list read from a report) and is
    # unknown, not empty; the requirement walk then skips this distribution
    unrecorded: str | None = None  # why pip and uv cannot uninstall it: "its RECORD is empty", "it has no RECORD
    # file"; None when RECORD lists its files, or unknown (an .egg-info, a report, a snapshot before the field)
    files_by_name: tuple[str, ...] = ()  # when `unrecorded`: what belongs to it, found by name (its metadata
    # folder, then its top-level packages and modules in `location`): what removing it by hand deletes

    @classmethod
    def from_reader(cls, r: Reader) -> Distribution:
        name = r.text("name")
        return cls(
            name=name, canonical_name=r.opt_text("canonical_name") or canonical_name(name), version=r.text("version"),
            location=r.text("location"), metadata_dir=r.opt_text("metadata_dir") or "",
            requires=r.texts("requires"), requires_python=r.opt_text("requires_python"),
            installer=r.opt_text("installer"), editable=r.flag("editable"), problems=r.texts("problems"),
            requires_known=r.flag("requires_known", default=True), unrecorded=r.opt_text("unrecorded"),
            files_by_name=r.texts("files_by_name"),
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
    # a variant wheel's properties (PEP 825, draft: torch's .dist-info/variant.json, read only in the draft's format
    # v0.0.x): {"label", "schema", "properties": {namespace: {feature: [values]}}, "problem"}; None: no variant wheel
    variant: dict[str, Any] | None = None

    @classmethod
    def from_reader(cls, r: Reader) -> TorchBuild:
        return cls(
            location=r.text("location"), version=r.opt_text("version"), cuda=r.opt_text("cuda"),
            hip=r.opt_text("hip"), git_version=r.opt_text("git_version"), debug=r.opt_flag("debug"),
            fields=r.json_object("fields"), problem=r.opt_text("problem"),
            variant=r.json_object("variant") if r.has("variant") else None,
        )


@dataclass(frozen=True)
class ModuleFact:
    """Whether a (dotted) module can be found on the import path, found without executing package code."""

    found: bool
    origin: str | None  # file or folder it would be loaded from
    error: str | None = None  # why the search itself failed (the module then counts as unknown)

    @classmethod
    def from_reader(cls, r: Reader) -> ModuleFact:
        return cls(found=r.flag("found"), origin=r.opt_text("origin"), error=r.opt_text("error"))


@dataclass(frozen=True)
class SourceFact:
    """A source file of an installed package (path relative to its import root) and which patterns it contains."""

    path: str | None  # absolute path; None when the file does not exist
    matches: dict[str, bool]  # regex -> found; a pattern absent here was not asked when the snapshot was taken
    error: str | None = None

    @classmethod
    def from_reader(cls, r: Reader) -> SourceFact:
        return cls(path=r.opt_text("path"), matches=r.flag_map("matches"), error=r.opt_text("error"))


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
    project: ProjectFacts | None = None  # what the project declares (requirements, lock pins); None: no project
    distributions_complete: bool = True  # False: `distributions` lists only some of what is installed (a report's
    # partial package list), so a name absent from it is unknown rather than not installed
    unknown: tuple[str, ...] = ()  # what this snapshot does not know beyond the fields' own unknowns: "env",
    # "partial_installs", "probes" (those absent), "python.virtualenv", "python.conda", "python.externally_managed"
    provenance: dict[str, str] = field(default_factory=dict)  # fact ("torch.version", "nvml.devices", ...) -> where
    # it was read, for snapshots made from a report ("block 2 (nvidia-smi), lines 14-30"); empty otherwise
    rocm: RocmFacts | None = None  # AMD GPUs from the KFD topology; None: not collected (AMD rules are then unknown)
    network: NetworkFacts | None = None  # the machine's network interfaces; None: not collected (a saved snapshot
    # from before the field, a pasted report), and NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME are then not judged
    toolchain: ToolchainFacts | None = None  # the CUDA toolkit and host compiler that build extensions; None: not
    # collected (snapshots from a report, older envcheck): rules on it are then unknown
    native: NativeFacts | None = None  # native libraries: LD_LIBRARY_PATH's CUDA libraries, ELF version needs,
    # libstdc++, manylinux floors, Windows runtime DLLs; None: not collected
    observed: tuple[Observation, ...] = ()  # failures recognised in error output that came with the facts
    # (`envcheck explain`, a pasted report's traceback); empty: none was given, or none was recognised
    conda: CondaFacts | None = None  # conda's records of the torch stack (pytorch, pytorch-gpu, cuda-version, ...):
    # their build strings and channels; None: no conda environment, or not collected (a report without `conda list`)
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

    def absence_known(self, name: str) -> bool:
        """Whether "`name` is not installed" is a fact: the distribution list is complete, or it lists `name`."""
        return self.distributions_complete or canonical_name(name) in self._by_name

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
            "nvml": None if self.nvml is None else {**asdict(self.nvml),
                                                    "devices": [{**asdict(d), "mig_uuids": list(d.mig_uuids)}
                                                                for d in self.nvml.devices]},
            "probes": {k: asdict(v) for k, v in sorted(self.probes.items())},
            "problems": list(self.problems),
            "project": None if self.project is None else _json_shape(asdict(self.project)),
            "distributions_complete": self.distributions_complete,
            "unknown": list(self.unknown),
            "provenance": dict(sorted(self.provenance.items())),
            "rocm": None if self.rocm is None else {**asdict(self.rocm),
                                                    "devices": [asdict(d) for d in self.rocm.devices]},
            "network": None if self.network is None else {"interfaces": list(self.network.interfaces)},
        }
        if self.toolchain is not None:  # absent (not null) when not collected: older readers ignore what they lack
            out["toolchain"] = asdict(self.toolchain)
        if self.native is not None:
            out["native"] = _json_shape(asdict(self.native))
        if self.observed:
            out["observed"] = [asdict(o) for o in self.observed]
        if self.conda is not None:  # absent (not null) when not collected, as toolchain
            out["conda"] = _json_shape(asdict(self.conda))
        out["python"]["path"] = list(self.python.path)
        return out

    @classmethod
    def from_dict(cls, data: object, *, file: str = "<facts>", origin: str = "local") -> Facts:
        """Read a snapshot in its JSON form; any malformed value is one FactsError naming `file` and the key."""
        r = Reader(data, file)
        check_schema(r)
        return cls(
            python=PythonFacts.from_reader(r.obj("python")),
            distributions=r.list_of("distributions", Distribution.from_reader),
            torch=_optional(r.opt_obj("torch"), TorchBuild.from_reader),
            modules=r.map_of("modules", ModuleFact.from_reader),
            sources=r.map_of("sources", SourceFact.from_reader),
            env=r.text_map("env"),
            problems=r.texts("problems"),
            partial_installs=r.texts("partial_installs"),
            nvml=_optional(r.opt_obj("nvml"), NvmlFacts.from_reader),
            probes=r.map_of("probes", _probe_result),
            envcheck_version=r.opt_text("envcheck_version") or "",
            host=r.opt_text("host") or "",
            origin=origin,
            installer=_optional(r.opt_obj("installer"), InstallerFacts.from_reader),  # absent before the field
            project=_optional(r.opt_obj("project"), _project),  # absent before schema 3
            distributions_complete=r.flag("distributions_complete", default=True),  # absent before schema 3
            unknown=r.texts("unknown"),
            provenance=r.text_map("provenance"),
            rocm=_optional(r.opt_obj("rocm"), RocmFacts.from_reader),  # absent before the field
            network=_optional(r.opt_obj("network"), NetworkFacts.from_reader),  # absent before the field
            toolchain=_optional(r.opt_obj("toolchain"), ToolchainFacts.from_reader),
            native=_optional(r.opt_obj("native"), NativeFacts.from_reader),
            observed=r.list_of("observed", _observation, optional=True),
            conda=_optional(r.opt_obj("conda"), _conda),
        )


def _observation(r: Reader) -> Observation:
    """A failure recognised in error output, read; the class is imported only here and where error output is
    scanned (a check without error output never defines it)."""
    from envcheck.facts.observed import Observation

    return Observation.from_reader(r)


def _probe_result(r: Reader) -> ProbeResult:
    """A live probe's result, read; the class is imported only here and where probes run (a static check, whose
    snapshot has none, never defines it)."""
    from envcheck.facts.probe_results import ProbeResult

    return ProbeResult.from_reader(r)


def _project(r: Reader) -> ProjectFacts:
    """A snapshot's project, read; its classes are imported only here (a check where there is no project and no
    snapshot never imports them)."""
    from envcheck.facts.project import ProjectFacts

    return ProjectFacts.from_reader(r)


def _conda(r: Reader) -> CondaFacts:
    """A snapshot's conda records, read; their classes are imported only here and where conda is found (a pip
    environment's check never imports them)."""
    from envcheck.facts.conda import CondaFacts

    return CondaFacts.from_reader(r)


def _json_shape(value: Any) -> Any:
    """`value` with its tuples as lists, the shape JSON gives it (asdict keeps tuples, and a schema wants arrays)."""
    if isinstance(value, (list, tuple)):
        return [_json_shape(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_shape(v) for k, v in value.items()}
    return value


def check_schema(r: Reader) -> int:
    """The snapshot's schema number, when this envcheck reads it; else one FactsError that says what to do."""
    if not r.has("schema"):
        raise r.error("schema", "missing: not a snapshot written by `envcheck facts`")
    schema = r.integer("schema", minimum=1)
    if schema not in READABLE_SCHEMAS:
        newer = "; it was written by a newer envcheck: upgrade envcheck to read it" if schema > SCHEMA else ""
        raise r.error("schema", f"schema {schema} is not supported (this envcheck reads schemas "
                                f"{READABLE_SCHEMAS[0]} to {READABLE_SCHEMAS[-1]}){newer}")
    return schema


def _optional(r: Reader | None, read: Callable[[Reader], T]) -> T | None:
    return None if r is None else read(r)

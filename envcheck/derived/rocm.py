"""AMD GPUs against a ROCm build of torch: which gfx targets the installed wheel carries kernels for, what
HSA_OVERRIDE_GFX_VERSION makes the runtime report, which device nodes this user may open, and the ROCm build that
runs this machine.

The table (rules/data/rocm-archs.toml) gives each torch release's ROCm variants the targets their wheels can run
(PYTORCH_ROCM_ARCH, less what the bundled rocBLAS lacks); for a build it does not know, the `torch-build` probe's
arch list stands in. A GPU runs a HIP kernel only if the binary has code for exactly its target (no forward
compatibility as with CUDA PTX), so a target absent from the list fails the first kernel with `HIP error: invalid
device function`, or the first matrix multiply with rocBLAS's `Cannot read TensileLibrary.dat`.

Pure: Facts and the parsed tables in, items out. Exported as derived facts (`DERIVATIONS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from envcheck.derived import build_matrix as tb
from envcheck.derived import companions
from envcheck.derived.builds import MOVES_WITH_TORCH
from envcheck.derived.common import TORCH_BUILDS, Derivation, Item, Table, Values, of_facts
from envcheck.facts.rocm import GFX, OVERRIDE, override_target
from envcheck.facts.snapshot import Facts
from envcheck.support.versions import major_minor_text

if TYPE_CHECKING:
    from envcheck.derived.rocm_archs import RocmArchTable
    from envcheck.derived.rocm_build import Build
    from envcheck.facts.amd_gpu import AmdGpu

PLATFORM = "linux-x86_64"  # the only platform PyTorch publishes ROCm wheels for
_TAGGED = frozenset({"torchvision", "torchaudio"})  # companions whose index wheels carry the variant tag
RECOMMENDATION_FIELDS = ("install", "index_url", "recommended", "because", "evidence")
GPU_FIELDS = ("index", "gfx_target", "pci_bus_id", "build_archs", "runs_as", "override", *RECOMMENDATION_FIELDS)


def parse(data: dict[str, Any], file: str) -> RocmArchTable:
    """Validate and parse the table (envcheck/derived/rocm_archs.py, imported only to parse or read it); any mistake
    is one RuleError naming the file and the key."""
    from envcheck.derived import rocm_archs

    return rocm_archs.parse(data, file)


# ------------------------------------------------------------------------------------------ the installed build


def rocm_torch(facts: Facts) -> bool:
    return facts.torch is not None and facts.torch.hip is not None


def installed_build(facts: Facts, table: RocmArchTable) -> Build | None:
    """The targets the installed ROCm torch can run: the table's row for its release and variant tag, else the
    torch-build probe's arch list; None when neither tells (a source build, AMD's own wheels, no probe).

    The table comes first because it also knows what the bundled libraries lack: from ROCm 6.4 the wheels' rocBLAS
    has no gfx900 / gfx906 kernels although torch's own arch list, which the probe reads, still names them."""
    from envcheck.derived.rocm_build import Build  # only where this is asked: a check without a ROCm torch never is

    version = facts.torch.version if facts.torch is not None else None
    try:
        parsed = Version(version) if version else None
    except InvalidVersion:
        parsed = None
    if parsed is not None and parsed.local is not None and len(parsed.release) >= 2:
        recorded = table.archs(f"{parsed.release[0]}.{parsed.release[1]}", parsed.local)
        if recorded is not None:
            return Build(recorded, f"rules/data/rocm-archs.toml for torch {version} (the targets its wheels and "
                                   "their bundled rocBLAS carry)")
    probe = facts.probes.get("torch-build")
    listed: Any = None if probe is None else probe.details.get("arch_list")
    if isinstance(listed, list) and listed and all(isinstance(a, str) for a in listed):
        # ROCm reports targets with their feature flags: "gfx90a:xnack-".
        archs = tuple(dict.fromkeys(a.split(":")[0] for a in listed))
        if all(GFX.fullmatch(a) for a in archs):
            return Build(archs, "the torch-build probe's arch list (a build rules/data/rocm-archs.toml does not know)")
    return None


def _devices(facts: Facts) -> tuple[AmdGpu, ...] | None:
    rocm = facts.rocm
    return rocm.devices if rocm is not None and rocm.devices_known else None


def _env(facts: Facts, name: str) -> str | None:
    return facts.env.get(name)


def _env_known(facts: Facts) -> bool:
    return "env" not in facts.unknown


# ------------------------------------------------------------------------------------------ recommendation


def recommend(facts: Facts, table: RocmArchTable, matrix: tb.BuildMatrix) -> Item | None:
    """The newest ROCm build (the installed release first) whose wheels carry every AMD GPU's own target, for this
    Python; one that needs HSA_OVERRIDE_GFX_VERSION only when none does. None when the GPUs are unknown."""
    devices = _devices(facts)
    if devices is None:
        return None
    targets = tuple(dict.fromkeys(d.gfx_target for d in devices))
    python = ".".join(facts.python.version.split(".")[:2])
    installed = _release_of(facts)
    releases = sorted(matrix.releases, key=lambda r: (r.version != installed, [-p for p in r.version.release]))
    for needs_override in (False, True):
        for release in releases:
            for variant in reversed(tb.variants(matrix, release.version, PLATFORM, python)):
                archs = table.archs(release.series, variant.name) if variant.kind == "rocm" else None
                if archs is not None and all(_runs(t, archs, table, needs_override) for t in targets):
                    return _item(facts, matrix, release, variant, targets, archs, table, needs_override)
    gpus = ", ".join(targets) or "no AMD GPU"
    return {"install": "", "index_url": "", "recommended": "no published ROCm build of torch fits",
            "because": f"No torch release in rules/data/rocm-archs.toml has ROCm wheels for Python {python} with "
                       f"kernels for {gpus}.",
            "evidence": f"the AMD GPUs' gfx targets ({gpus}) and rules/data/rocm-archs.toml"}


def _release_of(facts: Facts) -> Version | None:
    try:
        return Version(Version(facts.torch.version).public) if facts.torch and facts.torch.version else None
    except InvalidVersion:
        return None


def _runs(target: str, archs: tuple[str, ...], table: RocmArchTable, override: bool) -> bool:
    return target in archs or (override and target in table.overrides and table.overrides[target][0] in archs)


def _item(facts: Facts, matrix: tb.BuildMatrix, release: tb.Release, variant: tb.Variant, targets: tuple[str, ...],
          archs: tuple[str, ...], table: RocmArchTable, needs_override: bool) -> Item:
    version = str(release.version)
    made_for = tb.companions(matrix, version)
    install = [f"torch=={version}+{variant.name}"]
    for name in MOVES_WITH_TORCH:
        if facts.active(name) is not None and name in made_for:
            tag = f"+{variant.name}" if name in _TAGGED else ""
            install.append(f"{name}=={made_for[name]}{tag}")
    index = companions.pytorch_index(variant.name)
    because = [f"Its wheels carry kernels for {', '.join(targets)}." if not needs_override else
               "No published build carries kernels for every GPU's own target; this one runs "
               + ", ".join(f"{t} as {table.overrides[t][0]} with {OVERRIDE}={table.overrides[t][1]}"
                           for t in targets if t not in archs) + "."]
    evidence = f"the AMD GPUs' gfx targets ({', '.join(targets)}) and rules/data/rocm-archs.toml"
    if facts.torch is not None and facts.torch.version == f"{version}+{variant.name}":
        # Nothing to install: the installed build is already the best there is.
        return {"install": "", "index_url": "", "recommended": f"the installed torch {version}+{variant.name}, as "
                "no published build does better", "because": " ".join(because), "evidence": evidence}
    if _release_of(facts) == release.version:
        because.insert(0, f"It keeps torch {version} and changes only its build.")
    return {"install": " ".join(install), "index_url": index,
            "recommended": f"torch {version}+{variant.name} from {index}, with the installed companions made for it",
            "because": " ".join(because), "evidence": evidence}


# ------------------------------------------------------------------------------------------ derivations


def devices(facts: Facts) -> list[Item] | None:
    """Every AMD GPU the KFD topology lists; None when it could not be read."""
    found = _devices(facts)
    if found is None:
        return None
    return [{"index": str(d.index), "gfx_target": d.gfx_target, "pci_bus_id": d.pci_bus_id or "?"} for d in found]


def uncovered(facts: Facts, table: RocmArchTable, matrix: tb.BuildMatrix, *, overridable: bool) -> list[Item] | None:
    """The AMD GPUs whose own target the installed ROCm torch lacks while HSA_OVERRIDE_GFX_VERSION is unset: those
    an override can rescue (`overridable`) or those it cannot. [] for other builds; None when unknown."""
    if not rocm_torch(facts):
        return []
    found = _devices(facts)
    build = installed_build(facts, table)
    if found is None or build is None:
        return None
    if _env_known(facts) and _env(facts, OVERRIDE) is not None:
        return []  # the runtime reports the override's target for every GPU: EC1403 / EC1404 judge that
    if not _env_known(facts) and overridable:
        return None  # a pasted report: whether the override that rescues these GPUs is set is not known
    # A GPU no override can rescue has no kernels whatever the environment says, so a report decides it too.
    rec = recommend(facts, table, matrix) or dict.fromkeys(RECOMMENDATION_FIELDS, "")
    out = []
    for gpu in found:
        if gpu.gfx_target in build.archs:
            continue
        runs_as, setting = table.overrides.get(gpu.gfx_target, ("", ""))
        rescued = runs_as in build.archs
        if rescued == overridable:
            out.append(_gpu_item(gpu, build, runs_as if rescued else "", setting if rescued else "", rec))
    return out


def _gpu_item(gpu: AmdGpu, build: Build, runs_as: str, setting: str, rec: Item) -> Item:
    return {"index": str(gpu.index), "gfx_target": gpu.gfx_target, "pci_bus_id": gpu.pci_bus_id or "?",
            "build_archs": " ".join(build.archs), "runs_as": runs_as, "override": setting,
            **{k: rec.get(k, "") for k in RECOMMENDATION_FIELDS}, "evidence": build.evidence}


OVERRIDE_FIELDS = ("value", "target", "build_archs", "gpus", *RECOMMENDATION_FIELDS)


def override_not_in_build(facts: Facts, table: RocmArchTable, matrix: tb.BuildMatrix) -> list[Item] | None:
    """One item when HSA_OVERRIDE_GFX_VERSION is set for a ROCm torch to a target its wheels lack (or to no target
    at all); [] otherwise; None when the build's targets are unknown."""
    if not rocm_torch(facts) or not _env_known(facts):
        return [] if not rocm_torch(facts) else None
    value = _env(facts, OVERRIDE)
    if value is None:
        return []
    build = installed_build(facts, table)
    if build is None:
        return None
    target = override_target(value)
    if target is not None and target in build.archs:
        return []
    rec = recommend(facts, table, matrix) or dict.fromkeys(RECOMMENDATION_FIELDS, "")
    gpus = ", ".join(d.gfx_target for d in _devices(facts) or ()) or "unknown"
    return [{"value": value, "target": target or "none (not three numbers: the runtime ignores it)",
             "build_archs": " ".join(build.archs), "gpus": gpus,
             **{k: rec.get(k, "") for k in RECOMMENDATION_FIELDS}, "evidence": build.evidence}]


def override_on_supported(facts: Facts, table: RocmArchTable) -> list[Item] | None:
    """The AMD GPUs whose own target the installed ROCm torch carries but that HSA_OVERRIDE_GFX_VERSION makes run
    another target's kernels; [] without the variable or a ROCm torch; None when unknown."""
    if not rocm_torch(facts):
        return []
    if not _env_known(facts):
        return None
    value = _env(facts, OVERRIDE)
    target = None if value is None else override_target(value)
    if value is None or target is None:
        return []
    found = _devices(facts)
    build = installed_build(facts, table)
    if found is None or build is None:
        return None
    return [{**_gpu_item(gpu, build, target, value, dict.fromkeys(RECOMMENDATION_FIELDS, "")),
             "install": "", "index_url": ""}
            for gpu in found if gpu.gfx_target in build.archs and gpu.gfx_target != target]


ACCESS_FIELDS = ("device", "access", "problem", "group", "gpus")
_PROBLEM = {"no-permission": "not readable and writable by this user", "missing": "missing"}


def inaccessible(facts: Facts) -> list[Item] | None:
    """/dev/kfd and the GPUs' render nodes that this user cannot open for reading and writing, when a ROCm torch
    would use them; None when unknown."""
    if not rocm_torch(facts):
        return []
    rocm = facts.rocm
    if rocm is None or not rocm.devices_known:
        return None
    if not rocm.devices:
        return []  # no AMD GPU: EC1405 / EC1407 say so
    group = rocm.kfd_group or "render"
    gpus = ", ".join(f"{d.index} ({d.gfx_target})" for d in rocm.devices)
    out = []
    if rocm.kfd_access is None:
        return None
    if rocm.kfd_access != "ok":
        out.append({"device": "/dev/kfd", "access": rocm.kfd_access, "problem": _PROBLEM[rocm.kfd_access],
                    "group": group, "gpus": gpus})
    for gpu in rocm.devices:
        if gpu.render_access not in (None, "ok"):
            out.append({"device": f"the render node of GPU {gpu.index} ({gpu.gfx_target})",
                        "access": gpu.render_access, "problem": _PROBLEM[gpu.render_access], "group": group,
                        "gpus": gpus})
    return out


VISIBLE_FIELDS = ("variable", "value", "entry", "count")
# The ROCm runtime applies ROCR_VISIBLE_DEVICES first; HIP then reads HIP_VISIBLE_DEVICES, or CUDA_VISIBLE_DEVICES
# in its place, whose indices count within the GPUs ROCR_VISIBLE_DEVICES left.
_HIP_VISIBLE = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def visible_out_of_range(facts: Facts) -> list[Item] | None:
    """Entries of ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES (read by HIP for a ROCm torch)
    that name a GPU index the machine does not have; UUID entries are not judged. None when unknown."""
    if not rocm_torch(facts):
        return []
    found = _devices(facts)
    if found is None or not _env_known(facts):
        return None
    out: list[Item] = []
    count = _judge(facts, "ROCR_VISIBLE_DEVICES", len(found), out)
    for name in _HIP_VISIBLE:
        _judge(facts, name, count, out)
    return out


def _judge(facts: Facts, name: str, count: int, out: list[Item]) -> int:
    """Adds `name`'s entries at or above `count` to `out`; returns how many GPUs it leaves visible."""
    value = _env(facts, name)
    if value is None or not value.strip():
        return count
    entries = [e.strip() for e in value.split(",")]
    for entry in entries:
        if entry.isdigit() and int(entry) >= count:
            out.append({"variable": name, "value": value, "entry": entry, "count": str(count)})
    return len([e for e in entries if not e.isdigit() or int(e) < count])


SYSTEM_FIELDS = ("system", "torch_rocm", *RECOMMENDATION_FIELDS)


def system_rocm_other_version(facts: Facts, table: RocmArchTable, matrix: tb.BuildMatrix) -> list[Item] | None:
    """One item when a system ROCm (/opt/rocm) of another major.minor than the ROCm torch was built with is
    installed, with the same release's build for the system's ROCm when PyTorch published one; [] otherwise; None
    when unknown."""
    if not rocm_torch(facts) or facts.torch is None:
        return []
    if facts.rocm is None or facts.rocm.status == "error":
        return None
    system, built = major_minor_text(facts.rocm.rocm_version), major_minor_text(facts.torch.hip)
    if system is None or built is None or system == built:
        return []
    release = _release_of(facts)
    python = ".".join(facts.python.version.split(".")[:2])
    match = next((v for v in (tb.variants(matrix, release, PLATFORM, python) if release else ())
                  if v.kind == "rocm" and major_minor_text(v.name[len("rocm"):]) == system), None)
    empty = {"install": "", "index_url": "", "recommended": f"no torch {release} build for ROCm {system} exists",
             "because": "", "evidence": f"{facts.rocm.rocm_version} in /opt/rocm/.info/version"}
    if match is None or release is None:
        return [{"system": system, "torch_rocm": built, **empty}]
    found = tb.release(matrix, release)
    archs = table.archs(found.series, match.name) if found else None
    targets = tuple(d.gfx_target for d in _devices(facts) or ())
    if found is None or archs is None or not all(t in archs for t in targets):
        # Moving torch to the system's ROCm would lose a GPU (or cannot be judged): say so, install nothing.
        return [{"system": system, "torch_rocm": built, **empty, "recommended": f"no torch {release} build for "
                 f"ROCm {system} carries kernels for {', '.join(targets) or 'these GPUs'}"}]
    item = _item(facts, matrix, found, match, targets, archs, table, False)
    return [{"system": system, "torch_rocm": built, **item,
             "because": f"It is torch {release} built for ROCm {system}, the system's.",
             "evidence": f"{facts.rocm.rocm_version} in /opt/rocm/.info/version and torch's HIP {facts.torch.hip}"}]


def recommended_build(facts: Facts, table: RocmArchTable, matrix: tb.BuildMatrix) -> list[Item] | None:
    """One item, the ROCm build of torch for this machine's AMD GPUs; [] without torch; None when unknown."""
    if facts.torch is None:
        return []
    rec = recommend(facts, table, matrix)
    return None if rec is None else [rec]


# rules/data/rocm-archs.toml, as the derivations read it (`tables[ROCM_ARCHS]`).
ROCM_ARCHS = Table("rocm-archs", parse)


def _rocm_derivations() -> list[Derivation]:
    """AMD GPUs against a ROCm build of torch (envcheck/derived/rocm.py, rules/data/rocm-archs.toml)."""

    def tables(fn: Callable[..., Any], *, matrix: bool = True, **kw: Any) -> Callable[[Values], Any]:
        def compute(derived: Values) -> Any:
            extra = (derived.tables[TORCH_BUILDS],) if matrix else ()
            return fn(derived.facts, derived.tables[ROCM_ARCHS], *extra, **kw)

        return compute

    gpu_doc = ("`index` (the HIP device index), `gfx_target`, `pci_bus_id`, `build_archs` (the build's targets, "
               "space-separated), `runs_as` and `override` (the target an override makes it run as and the "
               "`HSA_OVERRIDE_GFX_VERSION` value; empty when none is safe), `evidence` "
               "(`rules/data/rocm-archs.toml` for the installed release and variant, which knows what the bundled "
               "rocBLAS lacks, else the `torch-build` probe's arch list), and "
               "the `rocm.recommended-build` fields `install`, `index_url`, `recommended`, `because`")
    return [
        Derivation("rocm.devices",
                   "the AMD GPUs of the KFD topology (`rocm` facts): `index`, `gfx_target`, `pci_bus_id`. Unknown "
                   "when the topology could not be read", ("index", "gfx_target", "pci_bus_id"),
                   of_facts(devices)),
        Derivation("rocm.recommended-build",
                   "one item, the ROCm build of torch whose wheels carry kernels for every AMD GPU's target, for "
                   "this Python (the installed release first, then the newest; one that needs "
                   "`HSA_OVERRIDE_GFX_VERSION` only when none has native kernels): `install`, `index_url`, "
                   "`recommended`, `because`, `evidence` (`install` empty when nothing fits or the installed build is "
                   "already the one). Empty without torch; unknown "
                   "without the KFD topology", RECOMMENDATION_FIELDS, tables(recommended_build)),
        Derivation("rocm.gpus-not-in-build",
                   "with a ROCm torch and `HSA_OVERRIDE_GFX_VERSION` unset, the AMD GPUs whose target its wheels "
                   f"lack and no override can stand in for (`HIP error: invalid device function`): {gpu_doc}. "
                   "Unknown when the build's targets or the GPUs are", GPU_FIELDS,
                   tables(uncovered, overridable=False)),
        Derivation("rocm.gpus-needing-override",
                   "the same, for GPUs whose target the wheels lack but whose ISA family's target they carry "
                   f"(`rules/data/rocm-archs.toml` `[override]`): {gpu_doc}", GPU_FIELDS,
                   tables(uncovered, overridable=True)),
        Derivation("rocm.override-not-in-build",
                   "one item when `HSA_OVERRIDE_GFX_VERSION` is set for a ROCm torch to a target its wheels lack, "
                   "or to no target: `value`, `target`, `build_archs`, `gpus` (the GPUs' own targets), `evidence`, "
                   "and the `rocm.recommended-build` fields `install`, `index_url`, `recommended`, `because`",
                   OVERRIDE_FIELDS, tables(override_not_in_build)),
        Derivation("rocm.override-on-supported-gpus",
                   "AMD GPUs whose own target the installed ROCm torch carries but which `HSA_OVERRIDE_GFX_VERSION` "
                   f"makes run another target's kernels: {gpu_doc}", GPU_FIELDS,
                   tables(override_on_supported, matrix=False)),
        Derivation("rocm.devices-inaccessible",
                   "with a ROCm torch and AMD GPUs, `/dev/kfd` and the GPUs' render nodes this user cannot open for "
                   "reading and writing: `device`, `access` (`no-permission` or `missing`), `problem` (the same in "
                   "words), `group` (the group "
                   "owning `/dev/kfd`), `gpus`", ACCESS_FIELDS, of_facts(inaccessible)),
        Derivation("rocm.system-rocm-other-version",
                   "one item when `/opt/rocm` holds a ROCm of another major.minor than the one the ROCm torch was "
                   "built with (`torch.version.hip`): `system`, `torch_rocm` (\"6.4\", \"6.3\"), and the "
                   "`rocm.recommended-build` fields `install`, `index_url`, `recommended`, `because`, `evidence` for "
                   "the same torch release built for the system's ROCm (`install` empty when PyTorch published none, "
                   "or it lacks a GPU's target)", SYSTEM_FIELDS, tables(system_rocm_other_version)),
        Derivation("rocm.visible-devices-out-of-range",
                   "with a ROCm torch, entries of `ROCR_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES` or "
                   "`CUDA_VISIBLE_DEVICES` that name a GPU index beyond the AMD GPUs left visible: `variable`, "
                   "`value`, `entry`, `count`", VISIBLE_FIELDS, of_facts(visible_out_of_range)),
    ]


DERIVATIONS: list[Derivation] = _rocm_derivations()

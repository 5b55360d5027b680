"""`[[tool.envcheck.machines]]`: the machines a project runs on, as its configuration declares them.

```toml
[[tool.envcheck.machines]]
name = "train"                 # required, unique
gpu = ["H100", "sm_90"]        # GPU names (rules/data/gpus.toml) or capabilities; omit for a machine without GPU
driver = "550.54.15"           # the NVIDIA driver; or rocm = "6.2" with gpu = ["gfx942"] for AMD GPUs
python = "3.11"                # required
platform = "linux-x86_64"      # required: as `envcheck recommend --platform`
```

`parse` turns the raw TOML value into DeclaredMachine values; every mistake is one ConfigError naming the file and
the key (`tool.envcheck.machines[1].gpu[0]`), raised through the `error` the configuration reader passes in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from envcheck.derived import nvidia_gpus
from envcheck.derived.build_matrix import PLATFORMS, Capability
from envcheck.errors import ConfigError, EnvcheckError
from envcheck.facts.rocm import gfx_version
from envcheck.support.patterns import lazy

KEYS = ("name", "gpu", "driver", "rocm", "python", "platform")
MAX_MACHINES = 64  # a project deploys to a handful of machine kinds; hundreds are nodes, which `envcheck fleet` checks
_NAME = lazy(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_PYTHON = lazy(r"3\.\d{1,2}t?")
_ROCM = lazy(r"\d{1,2}\.\d{1,2}(\.\d{1,3})?")
ALL = "all"  # `--machine all`: every declared machine; so no machine may be named "all"

Error = Callable[[str, str], ConfigError]


@dataclass(frozen=True)
class DeclaredMachine:
    """One machine the project runs on: what it has, as declared (nothing here was measured)."""

    name: str
    gpus: tuple[tuple[str, Capability], ...]  # NVIDIA GPUs: (the name as listed, or "sm_XY", its capability)
    amd_gpus: tuple[str, ...]  # AMD GPUs by gfx target ("gfx942"), with `rocm`
    driver: str | None  # the NVIDIA driver as written ("550.54.15"); None: not declared (driver rules are unknown)
    rocm: str | None  # the ROCm release of an AMD machine ("6.2")
    python: str  # "3.11"
    platform: str  # one of torch_builds.PLATFORMS
    key: str  # where it is declared: "tool.envcheck.machines[0]"
    file: str  # the configuration file

    def describe(self) -> str:
        """"H100 (9.0), driver 550.54.15, Python 3.11, linux-x86_64"."""
        gpus = [f"{name} ({cap[0]}.{cap[1]})" for name, cap in self.gpus] + list(self.amd_gpus)
        parts = [", ".join(gpus) or "no GPU"]
        if self.driver:
            parts.append(f"driver {self.driver}")
        if self.rocm:
            parts.append(f"ROCm {self.rocm}")
        return ", ".join([*parts, f"Python {self.python}", self.platform])


def _text(table: dict[str, object], field: str, key: str, error: Error, *, required: bool = False) -> str | None:
    value = table.get(field)
    if value is None:
        if required:
            raise error(key, f"missing key '{field}'")
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and field in ("python", "rocm"):
        value = str(value)  # python = 3.12 (a TOML float) means "3.12"
    if not isinstance(value, str) or not value.strip():
        raise error(f"{key}.{field}", f"expected a non-empty string, got {value!r}")
    return value.strip()


def _nvidia(items: list[str], key: str, error: Error,
            table: nvidia_gpus.GpuNames) -> tuple[tuple[str, Capability], ...]:
    out = []
    for i, item in enumerate(items):
        direct = nvidia_gpus.capability_of(item)
        found = nvidia_gpus.lookup(table, item) if direct is None else (f"sm_{direct[0]}{direct[1]}", direct)
        if found is None:
            raise error(f"{key}.gpu[{i}]", f"{item!r} is not a GPU envcheck knows (rules/data/gpus.toml): write its "
                                           "compute capability instead, such as \"sm_86\" or \"8.6\"")
        out.append(found)
    return tuple(out)


def _machine(raw: object, key: str, error: Error, file: str, shown: str) -> DeclaredMachine:
    if not isinstance(raw, dict):
        raise error(key, f"expected a table ([[machines]] with name, gpu, driver, python, platform), got {raw!r}")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise error(f"{key}.{unknown[0]}", f"unknown key (known keys: {', '.join(KEYS)})")
    name = _text(raw, "name", key, error, required=True) or ""
    if not _NAME.fullmatch(name) or name == ALL:
        raise error(f"{key}.name", f"{name!r} is not a machine name: letters, digits, '.', '_' and '-', at most 64, "
                                   f"and not {ALL!r} (`--machine all` means every machine)")
    python = _text(raw, "python", key, error, required=True) or ""
    if not _PYTHON.fullmatch(python):
        raise error(f"{key}.python", f"expected a Python version such as \"3.12\", got {python!r}")
    platform = _text(raw, "platform", key, error, required=True)
    if platform not in PLATFORMS:
        raise error(f"{key}.platform", f"expected one of {', '.join(PLATFORMS)}, got {platform!r}")
    gpu = raw.get("gpu", [])
    items = [gpu] if isinstance(gpu, str) else gpu
    if not isinstance(items, list) or not all(isinstance(g, str) and g.strip() for g in items):
        raise error(f"{key}.gpu", f"expected a GPU name or capability, or a list of them, got {gpu!r}")
    items = [str(g).strip() for g in items]
    driver = _text(raw, "driver", key, error)
    rocm = _text(raw, "rocm", key, error)
    if driver is not None and rocm is not None:
        raise error(f"{key}.rocm", "a machine has an NVIDIA driver or ROCm, not both: declare them as two machines")
    if driver is not None:
        try:
            Version(driver)
        except InvalidVersion:
            raise error(f"{key}.driver", f"expected an NVIDIA driver version such as \"550.54.15\", got {driver!r}"
                        ) from None
    if rocm is not None:
        if not _ROCM.fullmatch(rocm):
            raise error(f"{key}.rocm", f"expected a ROCm release such as \"6.2\", got {rocm!r}")
        if not platform.startswith("linux"):
            raise error(f"{key}.rocm", f"ROCm runs on Linux only, not on {platform}")
        for i, item in enumerate(items):
            if gfx_version(item.lower()) is None:
                raise error(f"{key}.gpu[{i}]", f"expected an AMD GPU's gfx target such as \"gfx942\" (with rocm), "
                                               f"got {item!r}")
        return DeclaredMachine(name, (), tuple(i.lower() for i in items), None, rocm, python, platform, shown, file)
    if items and platform.startswith("macos"):
        raise error(f"{key}.gpu", "macOS has no CUDA: a Mac's GPU is used through MPS; leave `gpu` out")
    nvidia = _nvidia(items, key, error, nvidia_gpus.shipped()) if items else ()
    return DeclaredMachine(name, nvidia, (), driver, None, python, platform, shown, file)


def parse(value: object, error: Error, key: str, file: str, prefix: str = "") -> tuple[DeclaredMachine, ...]:
    """The machines of the `machines` array; `error(key, message)` makes the ConfigError (adding the file's
    `prefix`, "tool.envcheck." in a pyproject.toml, which each machine's `key` carries too)."""
    if not isinstance(value, list) or not value:
        raise error(key, f"expected an array of tables ([[machines]]), got {value!r}")
    if len(value) > MAX_MACHINES:
        raise error(key, f"declares {len(value)} machines, more than {MAX_MACHINES}: declare each kind of machine "
                         "once (`envcheck fleet` checks nodes)")
    machines: list[DeclaredMachine] = []
    for i, raw in enumerate(value):
        machine = _machine(raw, f"{key}[{i}]", error, file, f"{prefix}{key}[{i}]")
        if any(m.name == machine.name for m in machines):
            raise error(f"{key}[{i}].name", f"machine {machine.name!r} is declared twice")
        machines.append(machine)
    return tuple(machines)


def chosen(machines: tuple[DeclaredMachine, ...], names: tuple[str, ...], file: str | None,
           error: Callable[[str], ConfigError]) -> tuple[DeclaredMachine, ...]:
    """The machines `--machine` names (`all`: every one), in declaration order; `error(message)` makes the
    ConfigError for a name not declared, naming the configuration file and its `machines` key."""
    if not machines:
        if file is None:
            raise EnvcheckError("--machine: no configuration file was found, so no machine is declared: add "
                                "[[tool.envcheck.machines]] to pyproject.toml (or [[machines]] to an envcheck.toml)")
        raise error("--machine: no machine is declared: add [[machines]] tables with name, gpu, driver, python and "
                    "platform")
    if ALL in names:
        return machines
    declared = {m.name: m for m in machines}
    unknown = [n for n in dict.fromkeys(names) if n not in declared]
    if unknown:
        raise error(f"--machine {unknown[0]}: no such machine (declared: {', '.join(declared)}; or all)")
    wanted = set(names)
    return tuple(m for m in machines if m.name in wanted)

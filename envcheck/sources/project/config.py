"""Project configuration: `[tool.envcheck]` in pyproject.toml, or the same keys at the top of an envcheck.toml.

`resolve()` finds the file (walking up from the working directory, or the one `--config` names), and `load()`
validates it into a frozen `Config`. Every mistake is one ConfigError naming the file and the key; nothing is
collected before the configuration is known to be good. What the keys mean for a check is `envcheck.rules.policy`'s
business: it turns them into rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envcheck.errors import ConfigError, EnvcheckError
from envcheck.rules.model import FAIL_ON_LEVELS
from envcheck.support import input_files
from envcheck.support.patterns import lazy
from envcheck.support.versions import too_complex

if TYPE_CHECKING:
    from envcheck.machines.declared import DeclaredMachine

ENVCHECK_TOML = "envcheck.toml"
PYPROJECT = "pyproject.toml"
_MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a pyproject.toml is kilobytes; megabytes of one are not a project's
_CAPABILITY = lazy(r"\d+(\.\d+)?")


@dataclass(frozen=True)
class Config:
    """A project's policy and check settings. The defaults are what a project without configuration gets."""

    file: str | None = None  # where it was read from; None: no configuration file
    prefix: str = ""  # "tool.envcheck." in a pyproject.toml: keys are named that way in messages
    require: tuple[str, ...] = ()  # PEP 508 requirements that must be installed and satisfied
    forbid: tuple[str, ...] = ()  # PEP 508 requirements that must not be installed (in that range)
    gpu_min_capability: str | None = None  # "8.0": the lowest acceptable CUDA compute capability
    gpu_min_memory_gib: float | None = None  # the least total memory per GPU, in GiB as NVML reports it
    gpu_count: str | None = None  # a version specifier on the number of GPUs: ">=1"
    gpu_match: str = "all"  # the GPU minimums hold for "all" GPUs or for "any" one of them
    probes_must_pass: tuple[str, ...] = ()  # probe names whose status must be "ok"
    rule_dirs: tuple[Path, ...] = ()  # extra rule directories, absolute (written relative to the file)
    ignore: tuple[tuple[str, str], ...] = ()  # (rule id, prefix or name; the reason it is ignored)
    select: tuple[str, ...] = ()  # only these rules of the pack (and rule-dirs) run
    fail_on: str | None = None  # None: the command line's, else "error"
    machines: tuple[DeclaredMachine, ...] = ()  # the machines the project runs on (`check --machine`)

    def key(self, name: str) -> str:
        """How `name` is spelled in the file: `tool.envcheck.require` in a pyproject.toml."""
        return f"{self.prefix}{name}"

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(self.file or "<configuration>", message, key=self.key(key))


# --- value parsers: each takes the raw TOML value and the Config being built (for file and key in errors) -----

Parser = Callable[[object, Config, str], Any]


def _strings(value: object, cfg: Config, key: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise cfg.error(key, f"expected a list of strings, got {value!r}")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise cfg.error(f"{key}[{i}]", f"expected a non-empty string, got {item!r}")
    return tuple(item.strip() for item in value)


def requirement_problem(text: str) -> str | None:
    """Why `text` is not a PEP 508 requirement (packaging's reason, its first line), or None when it is one."""
    problem = too_complex(text)
    if problem:
        return f"requirement {text if len(text) <= 60 else text[:60] + '…'!r} {problem}"
    try:
        Requirement(text)
    except InvalidRequirement as exc:
        return f"invalid requirement {text!r}: {(str(exc).splitlines() or [''])[0]}"
    return None


def _requirements(value: object, cfg: Config, key: str) -> tuple[str, ...]:
    items = _strings(value, cfg, key)
    for i, text in enumerate(items):
        problem = requirement_problem(text)
        if problem:
            raise cfg.error(f"{key}[{i}]", problem)
    return items


def _capability(value: object, cfg: Config, key: str) -> str:
    # A TOML float (8.0) is accepted as well as a string ("8.0"); 8.6 and "8.6" are the same capability.
    text = str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not _CAPABILITY.fullmatch(text.strip()):
        raise cfg.error(key, f"expected a compute capability such as \"8.0\", got {value!r}")
    text = text.strip()
    return text if "." in text else f"{text}.0"


def _memory(value: object, cfg: Config, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise cfg.error(key, f"expected a positive number of GiB, got {value!r}")
    return float(value)


def _count(value: object, cfg: Config, key: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise cfg.error(key, f"expected a number of GPUs (at least 0), got {value}")
        return f">={value}"
    if isinstance(value, str) and not too_complex(value):
        try:
            if SpecifierSet(value):
                return str(SpecifierSet(value))
        except InvalidSpecifier:
            pass
    raise cfg.error(key, f"expected a number (at least that many GPUs) or a specifier such as \">=2\", got {value!r}")


def _match(value: object, cfg: Config, key: str) -> str:
    if value not in ("all", "any"):
        raise cfg.error(key, f"expected \"all\" or \"any\", got {value!r}")
    return str(value)


def _probes(value: object, cfg: Config, key: str) -> tuple[str, ...]:
    from envcheck.sources.probes.catalog import PROBE_NAMES  # only a configuration that names probes needs them

    names = _strings(value, cfg, key)
    for i, name in enumerate(names):
        if name not in PROBE_NAMES:
            raise cfg.error(f"{key}[{i}]", f"unknown probe {name!r} (probes: {', '.join(PROBE_NAMES)})")
        if name in names[:i]:
            raise cfg.error(f"{key}[{i}]", f"probe {name!r} is listed twice")
    return names


def _rule_dirs(value: object, cfg: Config, key: str) -> tuple[Path, ...]:
    base = Path(cfg.file).resolve().parent if cfg.file else Path.cwd()
    dirs = []
    for i, text in enumerate(_strings(value, cfg, key)):
        if "\0" in text:  # TOML lets a string hold one ("\u0000"); the OS refuses it in every path
            raise cfg.error(f"{key}[{i}]", f"{input_files.shown(text)!r} holds a NUL character, which no path can hold")
        try:
            path = (base / text).resolve()
            # A cloned project's configuration is data: it may point envcheck at rule files of its own tree, never
            # at folders elsewhere on the machine (`--rules DIR` on the command line is the user's own choice).
            if not path.is_relative_to(base):
                raise cfg.error(f"{key}[{i}]", f"{input_files.shown(text)!r} is outside the configuration's folder "
                                               f"({base}); rule directories of a project live inside it (use --rules "
                                               "for others)")
            if not path.is_dir():
                raise cfg.error(f"{key}[{i}]", f"{input_files.shown(text)!r} is not a directory (looked for "
                                               f"{input_files.shown(str(path))})")
        except OSError as exc:  # a name longer than the file system allows, a folder that cannot be searched
            raise cfg.error(f"{key}[{i}]",
                            f"{input_files.shown(text)!r} cannot be used ({exc.strerror or exc})") from None
        dirs.append(path)
    return tuple(dirs)


def _ignore(value: object, cfg: Config, key: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise cfg.error(key, "expected a table of rule -> reason, such as "
                             "{ EC0302 = \"we import only lightning.pytorch\" }: every ignore needs its reason")
    pairs = []
    for rule, reason in value.items():
        if not isinstance(reason, str) or not reason.strip():
            raise cfg.error(f"{key}.{rule}", f"expected the reason this rule is ignored (a non-empty string), "
                                             f"got {reason!r}")
        pairs.append((rule, reason.strip()))
    return tuple(pairs)


def _fail_on(value: object, cfg: Config, key: str) -> str:
    if value not in FAIL_ON_LEVELS:
        raise cfg.error(key, f"expected one of {', '.join(FAIL_ON_LEVELS)}, got {value!r}")
    return str(value)


def _machines(value: object, cfg: Config, key: str) -> tuple[DeclaredMachine, ...]:
    from envcheck.machines.declared import parse  # only a configuration that declares machines reads the GPU table

    return parse(value, cfg.error, key, cfg.file or "<configuration>", cfg.prefix)


# TOML key -> (Config field, parser). The configuration table of docs/usage.md documents each one.
KEYS: dict[str, tuple[str, Parser]] = {
    "require": ("require", _requirements),
    "forbid": ("forbid", _requirements),
    "gpu-min-capability": ("gpu_min_capability", _capability),
    "gpu-min-memory-gib": ("gpu_min_memory_gib", _memory),
    "gpu-count": ("gpu_count", _count),
    "gpu-match": ("gpu_match", _match),
    "probes-must-pass": ("probes_must_pass", _probes),
    "rule-dirs": ("rule_dirs", _rule_dirs),
    "ignore": ("ignore", _ignore),
    "select": ("select", _strings),
    "fail-on": ("fail_on", _fail_on),
    "machines": ("machines", _machines),
}


def from_table(table: dict[str, Any], *, file: str | None = None, prefix: str = "") -> Config:
    """A Config from the keys of `table`; unknown keys and bad values raise ConfigError naming file and key."""
    cfg = Config(file=file, prefix=prefix)
    for key in table:
        if key not in KEYS:
            import difflib

            close = difflib.get_close_matches(key, list(KEYS), n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(KEYS)}"
            raise cfg.error(key, f"unknown key ({hint})")
    values: dict[str, Any] = {}
    for key, (name, parse) in KEYS.items():
        if key in table:
            values[name] = parse(table[key], cfg, key)
    return replace(cfg, **values)


def _read(path: Path) -> dict[str, Any]:
    return input_files.load_toml(path, error=ConfigError, limit=_MAX_CONFIG_BYTES)


def load(path: Path) -> Config:
    """The configuration in `path`: `[tool.envcheck]` of a pyproject.toml, else the file's top-level keys."""
    data = _read(path)
    if path.name != PYPROJECT:
        return from_table(data, file=str(path))
    table = data.get("tool", {}).get("envcheck") if isinstance(data.get("tool"), dict) else None
    if table is None:
        raise ConfigError(str(path), "has no [tool.envcheck] table")
    if not isinstance(table, dict):
        raise ConfigError(str(path), f"expected a table, got {table!r}", key="tool.envcheck")
    return from_table(table, file=str(path), prefix="tool.envcheck.")


def _declares_envcheck(pyproject: Path) -> bool:
    try:
        raw = input_files.read_bytes(pyproject, error=ConfigError, limit=_MAX_CONFIG_BYTES)
    except ConfigError:
        return False  # one that cannot be read is passed over like one without the table
    if b"envcheck" not in raw:  # most pyproject.toml files on the way up never mention it: skip the parse
        return False
    tool = _read(pyproject).get("tool")
    return isinstance(tool, dict) and "envcheck" in tool


def find(start: Path) -> Path | None:
    """The nearest configuration file at or above `start`: in each folder an envcheck.toml, else a pyproject.toml
    with a [tool.envcheck] table (a pyproject.toml without one is passed over, as ruff and others do)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        dedicated = folder / ENVCHECK_TOML
        if dedicated.is_file():
            return dedicated
        pyproject = folder / PYPROJECT
        if pyproject.is_file() and _declares_envcheck(pyproject):
            return pyproject
    return None


def resolve(file: str | Path | None = None, *, no_config: bool = False, start: str | Path | None = None) -> Config:
    """The configuration in effect: `file` if given, none with `no_config`, else the nearest one above `start`
    (default: the working directory), else the defaults."""
    if file is not None and no_config:
        raise EnvcheckError("--config and --no-config exclude each other")
    if no_config:
        return Config()
    if file is not None:
        return load(Path(file))
    found = find(Path(start) if start is not None else Path.cwd())
    return load(found) if found is not None else Config()

"""One base error for everything envcheck reports to a user, one subclass per subsystem.

The CLI catches `EnvcheckError` only and prints its one-line message; anything else is an internal error (exit 3).
"""

from __future__ import annotations


class EnvcheckError(Exception):
    """A problem the user can fix: bad input, bad configuration, an interpreter that cannot be run."""


class RuleError(EnvcheckError):
    """A rule file that cannot be loaded: names the file, the rule id (when known) and the key."""

    def __init__(self, file: str, message: str, *, rule_id: str | None = None, key: str | None = None) -> None:
        self.file = file
        self.rule_id = rule_id
        self.key = key
        self.detail = message
        where = file
        if rule_id:
            where += f": rule {rule_id}"
        if key:
            where += f": key '{key}'"
        super().__init__(f"{where}: {message}")


def check_table_head(data: dict[str, object], file: str, keys: tuple[str, ...], *, schema: bool = True) -> None:
    """The top of a data table (rules/data/*.toml) checked: no key but `keys` (named in that order in the error)
    and, with `schema`, `schema = 1`. Else one RuleError naming `file` and the key. Here, beside RuleError, so that
    the tables' readers need import nothing else."""
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise RuleError(file, f"unknown key (expected {', '.join(keys)})", key=unknown[0])
    if schema and data.get("schema") != 1:
        raise RuleError(file, f"expected schema = 1, got {data.get('schema')!r}", key="schema")


class FactsError(EnvcheckError):
    """A saved facts snapshot that cannot be read: names the file and the key."""

    def __init__(self, file: str, message: str, *, key: str | None = None) -> None:
        self.file = file
        self.key = key
        where = f"{file}: key '{key}'" if key else file
        super().__init__(f"{where}: {message}")


class CollectError(EnvcheckError):
    """Facts could not be collected at all (e.g. `--python` names something that is not a Python interpreter)."""


class ConfigError(EnvcheckError):
    """Project configuration that cannot be used (envcheck.toml, [tool.envcheck], --config): names the file and
    the key, so the one line printed says exactly what to change."""

    def __init__(self, file: str, message: str, *, key: str | None = None) -> None:
        self.file = file
        self.key = key
        self.detail = message
        where = f"{file}: key '{key}'" if key else file
        super().__init__(f"{where}: {message}")

"""`envcheck check --machine NAME`, without the CLI framework: configuration, project, rules, the machines' reports.

The CLI (envcheck/_cli.py) parses the options and writes what `checked` returns; nothing here prints or exits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from envcheck.errors import EnvcheckError
from envcheck.machines.check import MachinesReport, check_machines
from envcheck.machines.declared import chosen

if TYPE_CHECKING:
    from envcheck.api import ProjectOptions


@dataclass(frozen=True)
class Outcome:
    """The machines' reports and the fail-on level in effect."""

    result: MachinesReport
    level: str

    @property
    def failed(self) -> bool:
        return bool(self.result.failing(self.level)) if self.level != "never" else False


def checked(names: Sequence[str], *, project_options: ProjectOptions, config_file: str | None, no_config: bool,
            rule_dirs: Sequence[Path], select: Sequence[str], ignore: Sequence[str], require: Sequence[str],
            forbid: Sequence[str], fail_on: str | None, facts_file: str | None, report_file: str | None,
            no_cache: bool) -> Outcome:
    """Every machine `names` picks (`all`: every declared one), judged on the project's pins."""
    from envcheck._checking import rule_set_for
    from envcheck.api import read_project

    if facts_file is not None or report_file is not None:
        raise EnvcheckError("--machine judges the project's pins for declared machines: it excludes --facts and "
                            "--report, which describe one environment")
    if not project_options.use:
        raise EnvcheckError("--machine reads the project's lock or requirements: it excludes --no-project")
    project = read_project(project_options)
    rules = rule_set_for(config_file, no_config, rule_dirs, select, ignore, require, forbid, project,
                         no_cache=no_cache)
    config = rules.config
    machines = chosen(config.machines, tuple(names), config.file, lambda message: config.error("machines", message))
    level = fail_on or config.fail_on or "error"
    return Outcome(check_machines(machines, project, rules.chosen), level)

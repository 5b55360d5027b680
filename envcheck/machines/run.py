"""`envcheck check --machine NAME`, without the CLI framework: configuration, project, rules, the machines' reports.

The CLI (envcheck/cli/click_cli.py) parses the options and writes what `checked` returns; nothing here prints or exits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envcheck.errors import EnvcheckError
from envcheck.machines.check import MachinesReport, check_machines
from envcheck.machines.declared import chosen

if TYPE_CHECKING:
    from envcheck.pipeline import CheckOptions


@dataclass(frozen=True)
class Outcome:
    """The machines' reports and the fail-on level in effect."""

    result: MachinesReport
    level: str

    @property
    def failed(self) -> bool:
        return bool(self.result.failing(self.level)) if self.level != "never" else False


def checked(names: Sequence[str], options: CheckOptions, fail_on: str | None) -> Outcome:
    """Every machine `names` picks (`all`: every declared one), judged on the project's pins, with the rules
    `options` make (envcheck/pipeline/); `fail_on` as --fail-on."""
    from envcheck.pipeline import rule_set_for
    from envcheck.pipeline.stages import read_project

    if options.facts_file is not None or options.report_file is not None:
        raise EnvcheckError("--machine judges the project's pins for declared machines: it excludes --facts and "
                            "--report, which describe one environment")
    if options.no_project:
        raise EnvcheckError("--machine reads the project's lock or requirements: it excludes --no-project")
    project = read_project(options.project_options(), start=options.project_dir)
    rules = rule_set_for(options, project)
    config = rules.config
    machines = chosen(config.machines, tuple(names), config.file, lambda message: config.error("machines", message))
    return Outcome(check_machines(machines, project, rules.chosen), rules.level(fail_on))

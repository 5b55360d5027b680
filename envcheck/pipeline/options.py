"""`CheckOptions`: what a check reads and how, one frozen dataclass whose fields are the check's options everywhere.

Each field carries, in its metadata, its one-line help and, when the command line offers it, how (`Flag`): the
click options of `envcheck check`, `explain`, `facts` and `fix` are made from these fields (envcheck/cli/
check_options.py), and so are the library call's docstring (`envcheck.check()`, envcheck/api.py) and the table of
docs/options.md (a test keeps it in step). A new option of the check is a field here, and one name in the list of
each command that offers it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from envcheck.facts.probe_statuses import PROBE_TIMEOUT_S

if TYPE_CHECKING:
    from envcheck.pipeline.error_output import ErrorOutput
    from envcheck.pipeline.stages import ProbeOptions, ProjectOptions
    from envcheck.sources.project.config import Config

__all__ = ["CheckOptions", "Flag", "ProgressLine", "described"]

PathLike: TypeAlias = "str | os.PathLike[str]"


class ProgressLine(Protocol):
    """Called as each probe starts, and each second while torch is imported; `clear` when collection is over (the
    CLI's status line on a terminal)."""

    def __call__(self, name: str, index: int, total: int, waited: tuple[float, float] | None = None) -> None: ...

    def clear(self) -> None: ...


@dataclass(frozen=True)
class Flag:
    """How the command line offers a field of `CheckOptions`; envcheck/cli/check_options.py makes the click option
    from it, with the field's name as the parameter's and the field's default as the option's."""

    names: tuple[str, ...]  # the option's spellings: ("--select",)
    metavar: str | None = None
    many: bool = False  # repeatable: the field is a tuple of every value given
    commas: bool = False  # each value may also list several, comma-separated (--select EC01,EC02)
    switch: bool = False  # takes no value: given, the field is the opposite of its default (--no-cache)
    seconds: float | None = None  # a duration in seconds, at least this
    folder: bool = False  # a directory's path (a pathlib.Path)

    @property
    def shown(self) -> str:
        """The option as a reader writes it: `--select ID`."""
        return ", ".join(self.names) + (f" {self.metavar}" if self.metavar else "")


def _option(default: Any, text: str, cli: Flag | None = None) -> Any:
    """A field of `CheckOptions`: its default, its help (a sentence or two), and how the command line offers it."""
    return field(default=default, metadata={"help": text, "cli": cli})


@dataclass(frozen=True)
class CheckOptions:
    """What a check reads and how: the options of `envcheck check`, and the keyword arguments of `envcheck.check()`.

    The defaults are the library's: check the running interpreter, read the configuration and the project found at
    or above `project_dir`, static tier off (the probes run). `command_line()` gives the command line's.
    """

    require: Sequence[str] = _option(
        (), "A PEP 508 requirement that must be installed and satisfied, added to the configuration's `require` (each "
            "becomes a rule EC9901...): 'torch>=2.6'.", Flag(("--require",), "REQ", many=True))
    forbid: Sequence[str] = _option(
        (), "A PEP 508 requirement that must not be installed (in that range), added to the configuration's `forbid`.",
        Flag(("--forbid",), "REQ", many=True))
    config: PathLike | Config | None = _option(
        None, "Read the project's configuration from this file (an envcheck.toml, or a pyproject.toml with "
              "[tool.envcheck]) instead of the nearest one at or above the working directory; the library also takes "
              "an `envcheck.sources.project.config.Config`.", Flag(("--config",), "FILE"))
    no_config: bool = _option(False, "Use no configuration file.", Flag(("--no-config",), switch=True))
    project_dir: PathLike | None = _option(
        None, "Where the configuration and the project are looked for (default: the working directory).")
    python: PathLike | None = _option(
        None, "The interpreter to check (a venv's bin/python); envcheck need not be installed there. The command "
              "line's default: $VIRTUAL_ENV, $CONDA_PREFIX, the project's .venv / venv at or above the working "
              "directory, else envcheck's own interpreter (docs/usage.md: which environment is checked); the "
              "library's: the running interpreter.", Flag(("--python",), "PATH"))
    facts_file: PathLike | None = _option(
        None, "Evaluate a snapshot saved by `envcheck facts -o FILE` instead of collecting.",
        Flag(("--facts",), "FILE"))
    report_file: str | None = _option(
        None, "Evaluate the environment a pasted report describes (collect_env, pip list/freeze, conda list, "
              "nvidia-smi; markdown welcome; `-`: standard input) instead of collecting; what it does not state is "
              "unknown.", Flag(("--report",), "FILE|-"))
    rule_dirs: Sequence[PathLike] = _option(
        (), "An extra directory of rule files.", Flag(("--rules",), "DIR", many=True, folder=True))
    select: Sequence[str] = _option(
        (), "Only these rules: ids, id prefixes (EC01) or names. Replaces the configuration's select; the project's "
            "own policy rules (EC99xx) always run.", Flag(("--select",), "ID", many=True, commas=True))
    ignore: Sequence[str] = _option(
        (), "Skip these rules (same forms as select); adds to the configuration's ignore.",
        Flag(("--ignore",), "ID", many=True, commas=True))
    static: bool = _option(
        False, "Static tier only: packages, torch build, modules, NVML (no probes, no `import torch`).",
        Flag(("--static",), switch=True))
    probe_timeout: float = _option(
        PROBE_TIMEOUT_S, "Kill a probe that has not finished after this long (its process group goes with it); the "
        "same bound holds for the fact collector in another interpreter.",
        Flag(("--probe-timeout",), "SECONDS", seconds=0.5))
    use_cache: bool = _option(
        True, "Reuse what is cached: probe results while the environment is unchanged, the rule pack and the "
              "distributions' metadata while their files are. --no-cache (False) runs and reads everything afresh.",
        Flag(("--no-cache",), switch=True))
    discover: bool = _option(
        False, "Choose the interpreter as the command does (an activated environment, else the project's .venv "
               "found from project_dir, ...), not the running one.")
    no_project: bool = _option(
        False, "Do not read the project's pyproject.toml, requirements.txt, environment.yml or lock (EC98xx).",
        Flag(("--no-project",), switch=True))
    requirements: Sequence[PathLike] = _option(
        (), "Read this requirements file (or lock, or environment.yml) instead of the project's requirements.txt.",
        Flag(("--requirements",), "FILE", many=True))
    extras: Sequence[str] = _option(
        (), "Also check these optional dependencies of the project.", Flag(("--extra",), "NAME", many=True))
    groups: Sequence[str] = _option(
        (), "Also check these dependency groups (PEP 735) of the project.", Flag(("--group",), "NAME", many=True))
    python_named_by: str = _option(
        "the python argument", "How the report's target line names where `python` came from.")
    error_output: ErrorOutput | str | None = _option(
        None, "Error output to explain (a traceback, a CI log; `envcheck explain`): an `envcheck.pipeline.error_output."
              "ErrorOutput(text, name)` or the text. Its failures are recognised with the rules' error signatures "
              "and joined with the facts as evidence; the report's `explained` says what was read and recognised.")

    @classmethod
    def command_line(cls, **given: Any) -> CheckOptions:
        """The options of a command line's check: `given`, the values of the options the command offers (each
        named as its field), and the command's way of choosing the interpreter (discovered as docs/usage.md says,
        unless --python names one)."""
        return cls(discover=True, python_named_by="--python", **given)

    def project_options(self) -> ProjectOptions:
        from envcheck.pipeline.stages import ProjectOptions

        return ProjectOptions(use=not self.no_project, requirements=self.requirements, extras=self.extras,
                              groups=self.groups)

    def probe_options(self, progress: ProgressLine | None = None) -> ProbeOptions:
        from envcheck.pipeline.stages import ProbeOptions

        return ProbeOptions(run=not self.static, timeout_s=self.probe_timeout, use_cache=self.use_cache,
                            progress=progress)


def described() -> Iterator[tuple[dataclasses.Field[Any], str, Flag | None]]:
    """Each field of `CheckOptions` in order, with its help and how the command line offers it (None: it does not)."""
    for f in dataclasses.fields(CheckOptions):
        yield f, f.metadata["help"], f.metadata["cli"]


def markdown_table() -> str:
    """The table of docs/options.md, generated from the fields (a test keeps the page in step): one row per field,
    with the command line's option (or none), its default and its help."""
    rows = []
    for f, text, flag in described():
        option = "—" if flag is None else f"`{flag.shown}`" + (" (repeatable)" if flag.many else "")
        cells = (f"`{f.name}`", option, f"`{f.default!r}`", text)
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(["| `envcheck.check()` keyword | command line | default | meaning |", "|---|---|---|---|",
                      *rows]) + "\n"

"""The check pipeline: its options (`CheckOptions`, one frozen dataclass: options.py) and the one way a check runs
from them (`run`): configuration -> rule set -> interpreter -> facts (collected, with the probes unless static, or
read from a saved snapshot or a pasted report) -> error output explained (recognised and joined with the facts), if
given -> evaluation -> report.

Every entry point builds a `CheckOptions` and calls in here: `envcheck.check()` (api.py), `envcheck check`,
`explain`, `facts` and `fix` (cli/click_cli.py), the click-free `envcheck --static` (cli/plain_cli.py), `recommend`,
`check --machine` (machines/run.py), `envcheck fleet` and the pytest plugin. Those that need part of a check take
the stage they need: `rule_set_for` (the rules), `Check` (the rules, the interpreter and the facts before the
evaluation). The stages themselves (`gather`, `rule_set`, `read_project`, ...) are in stages.py; replay.py answers
a repeated plain static check from its last run (the recording `Check` tells what it collected).

Everything heavy is imported inside the functions, so that importing this module costs next to nothing: the
click-free `envcheck --static` imports it on every run, and a replayed one (replay.py) uses nothing else of it.
`CheckOptions` is looked up in options.py on first use (PEP 562 module `__getattr__`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

if TYPE_CHECKING:
    from envcheck.facts.snapshot import Facts
    from envcheck.pipeline.options import CheckOptions as CheckOptions
    from envcheck.pipeline.options import ProgressLine
    from envcheck.pipeline.replay import Recording
    from envcheck.pipeline.stages import RuleSet
    from envcheck.rules.model import Report, Target
    from envcheck.rules.rule_pack import RulePack
    from envcheck.sources.probes.runner import Started
    from envcheck.sources.project.config import Config
    from envcheck.sources.project.discover import Project

PathLike: TypeAlias = "str | os.PathLike[str]"


def __getattr__(name: str) -> object:
    if name == "CheckOptions":
        from envcheck.pipeline.options import CheckOptions

        return CheckOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _path(value: PathLike | None) -> str | None:
    return None if value is None else os.fspath(value)


def config_for(options: CheckOptions) -> Config:
    """The configuration in effect: the one given, none, or the nearest one at or above `project_dir`."""
    from envcheck.errors import EnvcheckError
    from envcheck.sources.project import config as config_mod
    from envcheck.sources.project.config import Config

    if isinstance(options.config, Config):
        if options.no_config:
            raise EnvcheckError("config and no_config exclude each other")
        return options.config
    return config_mod.resolve(_path(options.config), no_config=options.no_config, start=_path(options.project_dir))


def rule_set_for(options: CheckOptions, project: Any = None) -> RuleSet:
    """The rules of the check: the configuration's and the options' rules, selection and policy, and the rules
    generated from what `project` declares (a `Project` or the `ProjectFacts` of a snapshot)."""
    from pathlib import Path

    from envcheck.pipeline.stages import rule_set

    return rule_set(config_for(options), rule_dirs=[Path(d) for d in options.rule_dirs], select=options.select,
                    ignore=options.ignore, require=options.require, forbid=options.forbid, project=project,
                    use_cache=options.use_cache)


def target_for(options: CheckOptions) -> Target | None:
    """The interpreter to check; None for a saved snapshot or a pasted report, which name their own."""
    from envcheck.pipeline import target as target_mod

    if options.facts_file is not None or options.report_file is not None:
        return None
    if options.python is not None:
        return target_mod.discover(_path(options.python), option=options.python_named_by)
    if options.discover:
        return target_mod.discover(where=target_mod.Surroundings.current(_path(options.project_dir)))
    return target_mod.own()


def _probe_children(options: CheckOptions, recording: Recording | None) -> tuple[Target | None, Started | None]:
    """(the interpreter to check, the probes' children begun for it): begun first, so that the shared child's
    `import torch` overlaps reading the project, loading the rules and collecting the facts (and importing what does
    that). (None, None) where the interpreter cannot be found: the check reports that in its own order."""
    from envcheck.errors import EnvcheckError
    from envcheck.sources.probes import begin_probes

    try:
        target = target_for(options)
    except EnvcheckError:
        return None, None
    python = None if target is None or target.in_process else target.python
    return target, begin_probes(python, recording=recording)


def pasted(source: str) -> tuple[bytes, str]:
    """(the bytes of pasted text, its name): `-` is standard input; a file is read as --facts is (a regular file
    only, not /dev/zero, /dev/null or a FIFO); both bounded by the report readers' limit."""
    import sys

    from envcheck.sources.reports import ReportError
    from envcheck.sources.reports.text import MAX_BYTES
    from envcheck.support import input_files

    if source != "-":
        return input_files.read_bytes(source, error=ReportError, limit=MAX_BYTES), source
    try:
        return sys.stdin.buffer.read(MAX_BYTES + 1), "<stdin>"
    except OSError as exc:
        raise ReportError("<stdin>", f"cannot read it ({exc.strerror or exc})") from None


def from_report(options: CheckOptions, rules: RulePack) -> tuple[Facts, Target]:
    """The facts the pasted report `options.report_file` states, with the failures the `rules`' error signatures
    recognise in it, and the target line that names what was read."""
    from envcheck.derived.nvidia_gpus import GpuNames
    from envcheck.errors import EnvcheckError
    from envcheck.rules.model import Target
    from envcheck.sources.reports import ReportError, read

    assert options.report_file is not None
    if options.python is not None or options.facts_file is not None:
        raise EnvcheckError("--report excludes --python and --facts: the report describes the environment")
    data, name = pasted(options.report_file)
    # A RulePack carries its rules/data/gpus.toml (a rule directory may ship a newer one): GPUs are named by it.
    table = rules.tables.parsed.get("gpus")
    gpu_names = table if isinstance(table, GpuNames) else None
    snapshot, found = read(data, name, [s for rule in rules for s in rule.signatures], gpu_names)
    if not found and not snapshot.observed:
        # Verdicts on nothing would be a pass of what was never read: no verdict, and exit 2 like any input
        # envcheck cannot use (the issue-triage workflow comments nothing on it).
        raise ReportError(name, "nothing envcheck reads was recognised in it (collect_env, pip list or freeze, "
                                "conda list, nvidia-smi, versions, a GPU or an OS named in the text, a known error "
                                "message, ...; docs/reports.md lists them): no verdict")
    what = "; ".join([*(f.where for f in found), *(f"{o.rule_id}'s error message at line {o.line}"
                                                  for o in snapshot.observed)])
    return snapshot, Target(python=snapshot.python.executable, source="snapshot",
                            reason=f"from the report {name}: {what}; what it does not state is unknown "
                                   "(`envcheck facts` run on that machine states it)", in_process=False)


class Check:
    """One check under way: its project, rules and interpreter, and the facts where they were given (a saved
    snapshot, a pasted report); `facts()` gathers the rest, `report()` evaluates.

    Made in the order the command reports errors in: the probes' children begun (they need only the interpreter),
    the project read, the snapshot loaded, the rules, the interpreter. A pasted report describes another machine:
    the working directory's project is not what it ran, so none is read for it.
    """

    def __init__(self, options: CheckOptions, *, recording: Recording | None = None) -> None:
        from envcheck.pipeline.stages import gather, read_project

        self.options = options
        self.recording = recording  # told what was collected: a static check that may be replayed (replay.py)
        self.project: Project | None = None
        self.snapshot: Facts | None = None
        self.target: Target | None = None
        self._started: Started | None = None
        if options.report_file is not None:
            self.rules = rule_set_for(options)
            self.snapshot, self.target = from_report(options, self.rules.every)
            return
        if not options.static and options.facts_file is None:
            self.target, self._started = _probe_children(options, recording)
        try:
            facts_file = _path(options.facts_file)
            self.project = read_project(options.project_options(), start=_path(options.project_dir),
                                        facts_file=facts_file)
            if facts_file is not None:
                self.snapshot = gather((), python=_path(options.python), facts_file=facts_file)
            self.rules = rule_set_for(options, self.project if self.snapshot is None else self.snapshot.project)
            # Discovery reads only the environment variables and files, as it did a moment ago for the probes.
            if self.target is None:
                self.target = target_for(options)
        except BaseException:
            if self._started is not None:
                self._started.close()
            raise

    def facts(self, progress: ProgressLine | None = None) -> Facts:
        """The facts as given, or collected now for every rule (a saved snapshot then serves any selection), with
        the probes' results unless static, and what the project declares."""
        from envcheck.pipeline.stages import gather, with_project

        started, self._started = self._started, None  # a second gathering (`fix` checks again) begins its own
        try:
            if self.snapshot is not None:
                return self.snapshot
            facts = gather(self.rules.every, python=self.target, probes=self.options.probe_options(progress),
                           recording=self.recording, started=started)
            return with_project(facts, self.project)
        finally:
            if progress is not None:
                progress.clear()

    def report(self, facts: Facts) -> Report:
        """The chosen rules' verdicts on `facts`, about the check's interpreter; with the options' error output, the
        failures it shows (recognised with every rule's signatures) joined with the facts as evidence first."""
        from envcheck.pipeline.stages import checked, explained, memo_for
        from envcheck.rules.engine import evaluate

        foreign = None
        summary = ""
        if self.options.error_output is not None:
            facts, foreign, summary = explained(facts, self.rules.every, self.options.error_output)
        memo = None if self.snapshot is not None else memo_for(facts, self.options.use_cache)
        report = checked(evaluate(self.rules.chosen, facts, memo=memo, foreign=foreign), self.target,
                         facts_file=_path(self.options.facts_file), explained=summary)
        if self.snapshot is not None:  # a snapshot is no environment pytest runs in
            return report
        from envcheck.pipeline.target import pytest_plugin_note

        note = pytest_plugin_note(report.target, {d.canonical_name for d in facts.distributions})
        return dataclasses.replace(report, notes=(*report.notes, note)) if note else report


class Checked(NamedTuple):
    """A check's report, and the rules it was made with (their configuration sets the fail-on level)."""

    report: Report
    rules: RuleSet


def run(options: CheckOptions, *, progress: ProgressLine | None = None, recording: Recording | None = None) -> Checked:
    """Run the check `options` describe: its report, with the rules it was made with. `progress` is called as each
    probe starts; `recording`: see `Check`."""
    check = Check(options, recording=recording)
    return Checked(check.report(check.facts(progress)), check.rules)

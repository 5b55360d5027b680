"""The check command's work, without the CLI framework: the rules of a check, the interpreter, the facts, the report.

`envcheck check` (envcheck/_cli.py) and the click-free `envcheck --static` (envcheck/_plain_cli.py) both run a check
of a collected environment through `collected`, so the two cannot drift apart. Everything heavy is imported inside
the functions: importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from envcheck._text import split

if TYPE_CHECKING:
    from envcheck._replay import Recording
    from envcheck.api import ProbeOptions, ProjectOptions, RuleSet
    from envcheck.facts.observed import Observation
    from envcheck.model import Report, Target
    from envcheck.probes.runner import Started


class ProgressLine(Protocol):
    """Called as each probe starts, and each second while torch is imported; `clear` when collection is over (the
    CLI's status line on a terminal)."""

    def __call__(self, name: str, index: int, total: int, waited: tuple[float, float] | None = None) -> None: ...

    def clear(self) -> None: ...


def probe_options(static: bool, timeout: float, no_cache: bool, progress: ProgressLine | None) -> ProbeOptions:
    from envcheck.api import ProbeOptions

    return ProbeOptions(run=not static, timeout_s=timeout, use_cache=not no_cache, progress=progress)


def target_for(python: str | None, facts_file: str | None = None) -> Target | str | None:
    """What `gather` is to collect from: the discovered interpreter, or for --facts what was given (it refuses
    --python beside --facts)."""
    from envcheck.target import discover

    return discover(python) if facts_file is None else python


def rule_set_for(config_file: str | None, no_config: bool, rule_dirs: Sequence[Path], select: Sequence[str],
                 ignore: Sequence[str], require: Sequence[str], forbid: Sequence[str],
                 project: Any = None, *, no_cache: bool = False) -> RuleSet:
    from envcheck import config as config_mod
    from envcheck.api import rule_set

    config = config_mod.resolve(config_file, no_config=no_config)
    return rule_set(config, rule_dirs=rule_dirs, select=split(select), ignore=split(ignore), require=require,
                    forbid=forbid, project=project, use_cache=not no_cache)


def _probe_children(python: str | None, recording: Recording | None) -> tuple[Target | str | None, Started | None]:
    """(the interpreter to check, the probes' children begun for it): begun first, so that the shared child's
    `import torch` overlaps reading the project, loading the rules and collecting the facts (and importing what does
    that). (None, None) where the interpreter cannot be found: the check reports that in its own order."""
    from envcheck.errors import EnvcheckError
    from envcheck.probes import begin_probes

    try:
        target = target_for(python)
    except EnvcheckError:
        return None, None
    python = None if target is None or isinstance(target, str) or target.in_process else target.python
    return target, begin_probes(python, recording=recording)


def collected(project_options: ProjectOptions, *, python: str | None, facts_file: str | None,
              config_file: str | None, no_config: bool, rule_dirs: Sequence[Path], select: Sequence[str],
              ignore: Sequence[str], require: Sequence[str], forbid: Sequence[str], static: bool,
              probe_timeout: float, no_cache: bool, progress: ProgressLine | None,
              recording: Recording | None = None,
              explain: Callable[[RuleSet], Sequence[Observation]] | None = None) -> tuple[Report, RuleSet]:
    """The report of `envcheck check` on a collected environment (or a saved snapshot, --facts), with its rules;
    `recording` is told what was collected (a static check that may be replayed: envcheck/_replay.py);
    `explain`: what error output shows, recognised with the rules' signatures (`envcheck explain`), joined with the
    facts as evidence (envcheck/evidence/join.py)."""
    found, started = (None, None) if static or facts_file is not None else _probe_children(python, recording)
    try:
        from envcheck.api import checked, gather, memo_for, read_project, with_project
        from envcheck.engine import evaluate
        from envcheck.model import Target

        project = read_project(project_options, facts_file=facts_file)
        snapshot = None if facts_file is None else gather((), python=python, facts_file=facts_file)
        rules = rule_set_for(config_file, no_config, rule_dirs, select, ignore, require, forbid,
                             project if snapshot is None else snapshot.project, no_cache=no_cache)
        # Discovery reads only the environment variables and files, as it did a moment ago for the probes.
        target = found if found is not None else target_for(python, facts_file)
    except BaseException:
        if started is not None:
            started.close()
        raise
    try:
        facts = snapshot or with_project(gather(rules.every, python=target,
                                                probes=probe_options(static, probe_timeout, no_cache, progress),
                                                recording=recording, started=started),
                                         project)
    finally:
        if progress is not None:
            progress.clear()
    if explain is not None:
        from envcheck.evidence.join import joined

        facts = joined(facts, explain(rules))
    memo = None if snapshot is not None else memo_for(facts, not no_cache)
    report = checked(evaluate(rules.chosen, facts, memo=memo), target if isinstance(target, Target) else None,
                     facts_file=facts_file)
    return report, rules

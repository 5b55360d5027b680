"""The stages a check is made of (envcheck/pipeline/ runs them in order): the rule set, the project, the
facts (collected or loaded), the error output explained, the report's interpreter. No printing, no exit codes.

Entry points that need one stage alone (`envcheck facts` gathers, `envcheck fleet` takes the rule set) call it here;
everything else goes through the pipeline's `run`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envcheck.errors import EnvcheckError
from envcheck.facts.probe_statuses import PROBE_TIMEOUT_S
from envcheck.facts.snapshot import Facts
from envcheck.rules import policy, rule_pack
from envcheck.rules.conditions import Module, Source
from envcheck.rules.model import Report, Rule, Target
from envcheck.rules.rule_pack import RulePack
from envcheck.sources.live import collect as collect_mod
from envcheck.sources.project.config import Config

if TYPE_CHECKING:
    from envcheck.derived.walk_memo import Memo
    from envcheck.facts.project import ProjectFacts
    from envcheck.pipeline.error_output import ErrorOutput
    from envcheck.pipeline.replay import Recording
    from envcheck.sources.logs.join import Joined
    from envcheck.sources.probes.runner import Progress, Started
    from envcheck.sources.project.discover import Project


def collection_request(rules: Iterable[Rule]) -> dict[str, Any]:
    """The modules and source patterns the rules ask about: the collector looks up exactly these."""
    modules: set[str] = set()
    sources: dict[str, set[str]] = {}
    for rule in rules:
        for condition in (rule.applies, rule.when):
            for leaf in condition.leaves():
                if isinstance(leaf, Module):
                    modules.add(leaf.name)
                elif isinstance(leaf, Source):
                    sources.setdefault(leaf.file, set()).add(leaf.pattern)
    return collect_mod.request_for(modules, sources)


@dataclass(frozen=True)
class ProbeOptions:
    """Whether and how to run the live probes."""

    run: bool = True  # False: the static tier only (--static)
    timeout_s: float = PROBE_TIMEOUT_S  # per probe, and for the collector in another interpreter (--probe-timeout)
    use_cache: bool = True  # False: --no-cache
    progress: Progress | None = None  # called as each probe starts (the CLI draws a line on a terminal)


def gather(rules: Iterable[Rule], *, python: str | Target | None = None, facts_file: str | None = None,
           probes: ProbeOptions = ProbeOptions(run=False), recording: Recording | None = None,
           started: Started | None = None) -> Facts:
    """Facts from a saved snapshot, another interpreter, or this one; with probe results unless `probes.run` is off.

    `python`: None is the running interpreter, a path another one (run in a child process), a `Target` (from
    `envcheck.pipeline.target.discover`) either, as its `in_process` says. A saved snapshot is evaluated as it is: its
    probe results (if any) are the evidence, nothing is re-run. `recording`: see
    `envcheck.sources.live.collect.collect`. `started`: the probes' children, begun by
    `envcheck.sources.probes.begin_probes` (else they are begun here, before the facts are collected).
    """
    if facts_file is not None:
        if python is not None:
            raise EnvcheckError("--facts and --python exclude each other: a snapshot already names its interpreter")
        if started is not None:
            started.close()
        return collect_mod.load(facts_file)
    if isinstance(python, Target):
        python = None if python.in_process else python.python
    if not probes.run:
        if started is not None:
            started.close()
        return collect_mod.collect(collection_request(rules), python=python, use_cache=probes.use_cache,
                                   recording=recording, timeout_s=probes.timeout_s)
    from envcheck.sources.probes import (  # only when probes run: --static never loads the runner
        begin_probes,
        run_probes,
    )

    if started is None:
        started = begin_probes(python, recording=recording)
    try:
        facts = collect_mod.collect(collection_request(rules), python=python, use_cache=probes.use_cache,
                                    recording=recording, timeout_s=probes.timeout_s)
    except BaseException:
        if started is not None:
            started.close()
        raise
    probed = run_probes(facts, timeout_s=probes.timeout_s, use_cache=probes.use_cache, progress=probes.progress,
                        started=started)
    if recording is not None and not probed.cached:
        recording.spoil("the probes ran: their results are evidence of this run, not of the files read")
    return dataclasses.replace(facts, probes=probed.results, problems=facts.problems + probed.problems)


@dataclass(frozen=True)
class ProjectOptions:
    """Which project files to read (docs/usage.md: the project's own requirements)."""

    use: bool = True  # False: --no-project
    requirements: Sequence[str | os.PathLike[str]] = ()  # --requirements: these instead of requirements.txt
    extras: Sequence[str] = ()  # --extra: optional-dependencies to check too
    groups: Sequence[str] = ()  # --group: dependency groups (PEP 735) to check too

    def named(self) -> bool:
        return bool(self.requirements or self.extras or self.groups)


def read_project(options: ProjectOptions = ProjectOptions(), *, start: str | os.PathLike[str] | None = None,
                 facts_file: str | None = None) -> Project | None:
    """The project at or above `start` (default: the working directory), read; None with `options.use` off, or
    for a saved snapshot, which carries its own project."""
    if facts_file is not None:
        if options.named():
            raise EnvcheckError("--requirements, --extra and --group do not apply to --facts: a snapshot carries "
                                "the project it was taken in")
        return None
    if not options.use:
        if options.named():
            raise EnvcheckError("--no-project excludes --requirements, --extra and --group")
        return None
    from envcheck.sources.project.root import find_root

    where = Path(start) if start is not None else Path.cwd()
    if find_root(where) is None and not options.named():
        return None  # no project here: the readers of its files are never imported
    from envcheck.sources.project.discover import discover

    return discover(where, requirements=options.requirements,
                    extras=options.extras, groups=options.groups)


def with_project(facts: Facts, project: Project | None) -> Facts:
    """`facts` with what `project` declares, its lock pins chosen for the checked interpreter's markers."""
    if project is None:
        return facts
    from envcheck.support.versions import marker_env

    return dataclasses.replace(facts, project=project.facts(marker_env(facts)))


@dataclass(frozen=True)
class RuleSet:
    """The rules of one check: facts are collected for `every` rule (a saved snapshot then serves any selection),
    `chosen` are evaluated. Both carry the pack's data tables."""

    every: RulePack
    chosen: RulePack
    config: Config

    def level(self, fail_on: str | None = None) -> str:
        """The lowest severity that fails the check: `fail_on` (--fail-on), else the configuration's, else error."""
        return fail_on or self.config.fail_on or "error"


def rule_set(
    config: Config,
    *,
    rule_dirs: Sequence[Path] = (),
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    require: Sequence[str] = (),
    forbid: Sequence[str] = (),
    project: Project | ProjectFacts | None = None,
    use_cache: bool = True,
) -> RuleSet:
    """The shipped pack, the configuration's and the given rule directories, the project's policy rules, and the
    rules generated from what `project` declares (EC98xx).

    `select` replaces the configuration's `select`; `ignore` adds to its `ignore`. Selection narrows the pack
    and the rule directories: the project's own policy rules (EC99xx) always run unless ignored. A selector that
    matches no rule is an error (a typo must not silently disable a check), named by its configuration key when it
    comes from the configuration.
    """
    pack = rule_pack.load([*config.rule_dirs, *rule_dirs], use_cache=use_cache)
    project_set = policy.rules(config, require=require, forbid=forbid)
    if project is not None:  # rules generated from a project's files: their module is imported only for one
        from envcheck.rules import generated

        project_set = [*project_set, *generated.rules(project)]
    every = pack.only(policy.merge(pack.rules, project_set))
    unknown = rule_pack.unknown_selectors(every, [*select, *ignore])
    if unknown:
        raise EnvcheckError(f"no rule matches {', '.join(repr(u) for u in unknown)} (see `envcheck rule --all`)")
    for i, selector in enumerate(config.select):
        if rule_pack.unknown_selectors(every, [selector]):
            raise config.error(f"select[{i}]", f"no rule matches {selector!r} (see `envcheck rule --all`)")
    for selector, _reason in config.ignore:
        if rule_pack.unknown_selectors(every, [selector]):
            raise config.error(f"ignore.{selector}", f"no rule matches {selector!r} (see `envcheck rule --all`)")
    selectors = list(select) or list(config.select)
    ignores = [*ignore, *(selector for selector, _reason in config.ignore)]
    chosen = pack.only([*rule_pack.select(pack, selectors, ignores), *rule_pack.select(project_set, (), ignores)])
    return RuleSet(every=every, chosen=chosen, config=config)


def explained(facts: Facts, rules: RulePack, error_output: ErrorOutput | str) -> Joined:
    """What the rules are judged on once `error_output` (a str is the text itself) is read with `rules`' error
    signatures: `facts` joined with the failures it shows where the log came from the checked environment, the log's
    own facts beside them where it did not (envcheck.sources.logs.join), and the report's sentence that says what was
    read, what was recognised in it and where it came from."""
    from envcheck.derived.nvidia_gpus import GpuNames
    from envcheck.pipeline.error_output import ErrorOutput
    from envcheck.sources.logs.join import joined
    from envcheck.sources.logs.log import read_log

    if isinstance(error_output, str):
        error_output = ErrorOutput(error_output)
    # GPU names are read through the pack's rules/data/gpus.toml, as a pasted report's are.
    table = rules.tables.parsed.get("gpus")
    log = read_log(error_output.text, error_output.name, [s for rule in rules for s in rule.signatures],
                   table if isinstance(table, GpuNames) else None)
    return joined(facts, log)


def memo_for(facts: Facts, use_cache: bool = True) -> Memo | None:
    """Where the evaluation of collected `facts` remembers its costly derived results between runs (the signed user
    cache, never the checked environment); None with the cache off (--no-cache)."""
    if not use_cache:
        return None
    from envcheck.cache.signed import SignedMemo

    return SignedMemo(avoid=(facts.python.prefix,))


def checked(report: Report, target: Target | None, *, facts_file: str | None = None, explained: str = "") -> Report:
    """`report` with the interpreter it is about: `target`, or for a saved snapshot the interpreter it names; and
    `explained`, what error output was read and recognised (see `explained`)."""
    if target is None and facts_file is not None:
        target = Target(python=report.python, source="snapshot", reason=f"from the snapshot {facts_file}",
                        in_process=False)
    return dataclasses.replace(report, target=target, explained=explained or report.explained)

"""The pytest plugin: `pytest --envcheck` checks the environment before any test runs, and
`@pytest.mark.envcheck(...)` skips a test whose requirement the environment does not meet.

It is registered through the `pytest11` entry point, so pytest loads it in every session where envcheck is
installed. Importing it therefore imports none of envcheck's machinery, and without `--envcheck` or the marker it
does nothing. The environment checked is the one pytest runs in; the project's configuration is found from pytest's
rootdir, as `envcheck` finds it from the working directory.

    pytest --envcheck                   # static tier: stop before the first test if the check fails (exit 1)
    pytest --envcheck --envcheck-probes # the live probes too (seconds; cached between runs)
    pytest --envcheck-explain build.log # the check, with the failures that log shows explained (as `envcheck explain`)

    @pytest.mark.envcheck("EC0301")              # skip while rule EC0301 fires here (ids, prefixes, names)
    @pytest.mark.envcheck(probe="sdpa")          # skip unless the sdpa probe passes (runs it, cached)
    @pytest.mark.envcheck(require="torch>=2.6")  # skip unless torch>=2.6 is installed (also: forbid=...)
"""

from __future__ import annotations

import dataclasses
import sys
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from envcheck.facts.snapshot import Facts
    from envcheck.pipeline import Check
    from envcheck.pipeline.stages import RuleSet
    from envcheck.rules.model import Finding, Report, Rule
    from envcheck.rules.rule_pack import RulePack

MARKER = ("envcheck(*rules, probe=None, require=None, forbid=None): skip the test unless the environment meets it "
          "(envcheck): none of the rules (ids or names) fires, the probes pass, the requirements are installed "
          "and the forbidden ones are not")
_FAIL_ON = ("error", "warning", "info", "never")  # envcheck.rules.model.FAIL_ON_LEVELS, without importing it here
EXIT_FINDINGS = 1  # as `envcheck` itself: the environment fails the check
_MARKER_FILE = "@pytest.mark.envcheck"


class MarkerError(Exception):
    """A malformed @pytest.mark.envcheck: the test errors with this message."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("envcheck", "environment check (envcheck)")
    group.addoption("--envcheck", action="store_true", default=False,
                    help="check the Python environment (envcheck, static tier) before running tests; stop the "
                         "session with exit code 1 if it fails per fail-on")
    group.addoption("--envcheck-probes", action="store_true", default=False,
                    help="with --envcheck: also run envcheck's live probes (imports torch in child processes)")
    group.addoption("--envcheck-explain", metavar="FILE", default=None,
                    help="check the environment as --envcheck does, with the failures that FILE (error output: a "
                         "traceback, a CI log) shows explained as `envcheck explain FILE` explains them: the header "
                         "says what was recognised, and a failure it shows stops the session")
    group.addoption("--envcheck-fail-on", choices=_FAIL_ON, default=None,
                    help="with --envcheck: the lowest severity that stops the session (default: the project's "
                         "fail-on, else error)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    # getattr: config.rootpath is pytest >= 6.1; this module is loaded by every pytest that shares an environment
    # with envcheck, old ones included, so it sticks to what they all have (no config.stash either).
    root = getattr(config, "rootpath", None) or getattr(config, "rootdir", None) or Path.cwd()
    _SESSIONS[config] = _Session(Path(str(root)), explain=config.getoption("envcheck_explain", None))


@pytest.hookimpl(tryfirst=True)  # before the terminal reporter's own sessionstart, so that the header has the tally
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    wanted = config.getoption("envcheck") or config.getoption("envcheck_explain") is not None
    if not wanted or hasattr(config, "workerinput"):  # xdist workers: the controller checks
        return
    from envcheck.errors import EnvcheckError

    state = _SESSIONS[config]
    try:
        report, level = state.session_check(probes=bool(config.getoption("envcheck_probes")),
                                            fail_on=config.getoption("envcheck_fail_on"))
    except EnvcheckError as exc:
        raise pytest.UsageError(f"envcheck: {exc}") from None
    failing = report.at_or_above(level)
    if failing:
        # pytest prints an exit's message twice this early (on stderr, and again at the end of the terminal
        # report): the block goes out once here, the exit carries one line.
        sys.stderr.write(_summary(failing, level) + "\n")
        noun = "problem" if len(failing) == 1 else "problems"
        pytest.exit(f"envcheck: the environment fails the check ({len(failing)} {noun} at --fail-on {level}); no "
                    "test was run", returncode=EXIT_FINDINGS)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = _SESSIONS.get(config)
    return state.header if state is not None else None


def pytest_runtest_setup(item: pytest.Item) -> None:
    marks = list(item.iter_markers(name="envcheck"))
    if not marks:
        return
    from envcheck.errors import ConfigError, EnvcheckError

    problem = None
    try:
        reasons = _SESSIONS[item.config].unmet(marks)
    except ConfigError as exc:  # in the marker's own arguments, or in the project's configuration file
        text = f"{exc.key}: {exc.detail}" if exc.file == _MARKER_FILE else str(exc)
        problem, reasons = f"{_MARKER_FILE}: {text}", []
    except (MarkerError, EnvcheckError) as exc:
        problem, reasons = f"{_MARKER_FILE}: {exc}", []
    if problem is not None:  # outside the except block: the test's error is this one line, not a chained traceback
        pytest.fail(problem, pytrace=False)
    if reasons:
        _skip("; ".join(reasons))


def _skip(reason: str) -> None:
    # As pytest's own skipif does, report the skip at the test, not at this line of the plugin.
    try:
        exc = pytest.skip.Exception(reason, _use_item_location=True)
    except TypeError:  # pragma: no cover - a pytest without the keyword: the skip is reported here instead
        exc = pytest.skip.Exception(reason)
    raise exc


def _summary(failing: Sequence[Finding], level: str) -> str:
    from envcheck.support.output_text import shell

    noun = "problem" if len(failing) == 1 else "problems"
    lines = [f"envcheck found {len(failing)} {noun} at --fail-on {level} in this environment; no test was run"]
    for f in failing:
        lines.append(f"  {f.rule_id} {f.name}: {f.summary}")
        if f.fix:
            lines.append(f"      fix: {f.fix}")
        lines += [f"      $ {shell(argv)}" for argv in f.commands]
    lines.append("Run `envcheck` for the full report (why, references), or leave out --envcheck to run anyway.")
    return "\n".join(lines)


def _strings(value: object, what: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) and i for i in items):
        raise MarkerError(f"{what} must be a string or a list of strings, got {value!r}")
    return list(items)


class _Session:
    """What one pytest session knows: the project's rules and the facts, each collected once and only if needed."""

    def __init__(self, rootpath: Path, explain: str | None = None) -> None:
        self.rootpath = rootpath
        self.explain = explain  # error output to explain (--envcheck-explain FILE)
        self.header: list[str] | None = None
        self._check: Check | None = None
        self._facts: Facts | None = None
        self._verdicts: dict[tuple[str, ...], list[Finding]] = {}

    def check(self) -> Check:
        """The check of the interpreter pytest runs in (envcheck/pipeline/), with the configuration found from
        pytest's rootdir; static: the probes a session or a marker asks for are run on their own (`facts`). The
        project's files are not read (no EC98xx): the tests check what they import, not the project's pins. With
        --envcheck-explain, the log is read now and explained by the check's report (envcheck/pipeline/)."""
        if self._check is None:
            from envcheck.pipeline import Check, CheckOptions

            error_output = None
            if self.explain is not None:
                from envcheck.pipeline import pasted
                from envcheck.pipeline.error_output import ErrorOutput
                from envcheck.sources.reports.text import decode

                data, name = pasted(self.explain)
                error_output = ErrorOutput(decode(data, name), name)
            self._check = Check(CheckOptions(project_dir=self.rootpath, static=True, no_project=True,
                                             error_output=error_output))
        return self._check

    def rules(self) -> RuleSet:
        return self.check().rules

    def facts(self, probes: Iterable[str] = ()) -> Facts:
        """The static facts of this interpreter, with the results of `probes` (run now, or taken from the cache)."""
        from envcheck.sources.probes import run_probes

        if self._facts is None:
            self._facts = self.check().facts()
        wanted = [p for p in dict.fromkeys(probes) if p not in self._facts.probes]
        if wanted:
            results = run_probes(self._facts, wanted).results
            self._facts = dataclasses.replace(self._facts, probes={**self._facts.probes, **results})
        return self._facts

    def session_check(self, *, probes: bool, fail_on: str | None) -> tuple[Report, str]:
        from envcheck.report.common import tally
        from envcheck.sources.probes.catalog import PROBE_NAMES

        check = self.check()
        report = check.report(self.facts(PROBE_NAMES if probes else ()))
        self.header = [f"envcheck: {tally(report)} ({'with probes' if probes else 'static'}) — {report.python}"]
        if report.explained:
            self.header.append(f"envcheck: explained {report.explained}")
        return report, check.rules.level(fail_on)

    def _marker_rules(self, marks: Sequence[pytest.Mark]) -> RulePack:
        from envcheck.rules import policy, rule_pack
        from envcheck.sources.probes.catalog import PROBE_NAMES
        from envcheck.sources.project.config import from_table

        every = self.rules().every
        chosen: list[Rule] = []
        probe_names: list[str] = []
        require: list[str] = []
        forbid: list[str] = []
        for mark in marks:
            unknown = sorted(set(mark.kwargs) - {"probe", "require", "forbid"})
            if unknown:
                raise MarkerError(f"unknown argument {unknown[0]!r} (use rule ids, probe=, require=, forbid=)")
            for wanted in _strings(list(mark.args), "rules"):
                found = rule_pack.select(every, [wanted])  # an id, an id prefix or a name, as --select takes
                if not found:
                    raise MarkerError(f"no rule {wanted!r} (see `envcheck rule --all`)")
                chosen += found
            for name in _strings(mark.kwargs.get("probe", []), "probe"):
                if name not in PROBE_NAMES:
                    raise MarkerError(f"no probe {name!r} (probes: {', '.join(PROBE_NAMES)})")
                probe_names.append(name)
            require += _strings(mark.kwargs.get("require", []), "require")
            forbid += _strings(mark.kwargs.get("forbid", []), "forbid")
        # The marker's own policy, validated as a configuration file's would be (a bad requirement is one line).
        marker_policy = from_table({"require": require, "forbid": forbid,
                                    "probes-must-pass": list(dict.fromkeys(probe_names))}, file=_MARKER_FILE)
        return every.only([*dict.fromkeys(chosen), *policy.rules(marker_policy)])

    def unmet(self, marks: Sequence[pytest.Mark]) -> list[str]:
        """Why the environment does not meet the markers (empty when it does): the summaries of what fired."""
        from envcheck.rules.conditions.machine import Probe
        from envcheck.rules.engine import evaluate
        from envcheck.rules.model import Status

        key = tuple(repr((m.args, sorted(m.kwargs.items()))) for m in marks)
        if key not in self._verdicts:
            rules = self._marker_rules(marks)
            # The probes these rules read run now (cached by environment), whatever --envcheck-probes says: a
            # marker that asks about a probe wants its answer, not "unknown".
            probes = [leaf.name for r in rules for c in (r.applies, r.when) for leaf in c.leaves()
                      if isinstance(leaf, Probe)]
            report = evaluate(rules, self.facts(probes))
            self._verdicts[key] = [f for f in report.findings if f.status.is_finding or f.status is Status.ERROR]
        return [f"envcheck {f.rule_id}: {f.summary if f.status is not Status.ERROR else f.detail}"
                for f in self._verdicts[key]]


_SESSIONS: weakref.WeakKeyDictionary[pytest.Config, _Session] = weakref.WeakKeyDictionary()

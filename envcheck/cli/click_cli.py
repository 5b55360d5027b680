"""The command line: parse options, call the library, pick a reporter, write, map the result to an exit code.

Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or configuration error, 3 internal error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envcheck.cli.check_options import CHECKING, POLICY, PROJECT, SOURCES, offer, option_of
from envcheck.cli.output import EXIT_CLEAN, EXIT_FINDINGS, exit_code
from envcheck.cli.output import clip as _clip
from envcheck.cli.output import use_color as _use_color
from envcheck.cli.output import write as _write
from envcheck.errors import EnvcheckError
from envcheck.report.interface import DocFormat, ProbeFormat, ReportFormat
from envcheck.rules.model import FAIL_ON_LEVELS
from envcheck.support.output_text import ProgressLine
from envcheck.version import __version__

# Only what the options themselves need is imported above: `--help`, `--version` and `rule` never load the checking
# machinery (api, engine, collector, conditions, config, reporters); each command imports what it runs.
if TYPE_CHECKING:
    from envcheck.pipeline import CheckOptions
    from envcheck.remedy.fix_steps import Step
    from envcheck.rules.model import Report
    from envcheck.rules.rule_file import RuleFile



def _fleet() -> click.Command:
    from envcheck.cli.fleet_cli import fleet

    return fleet


def _recommend() -> click.Command:
    from envcheck.cli.recommend_cli import recommend

    return recommend


# Commands imported only when looked up (by name, or for the command list of --help): the fleet group lives with
# the fleet code, and every other command starts without it.
_LAZY_COMMANDS: dict[str, Callable[[], click.Command]] = {"fleet": _fleet, "recommend": _recommend}


class _Commands(dict[str, click.Command]):
    """The command table, with the lazy commands imported and added the first time one is looked up."""

    def __missing__(self, name: str) -> click.Command:
        if name not in _LAZY_COMMANDS:
            raise KeyError(name)
        command = self[name] = _LAZY_COMMANDS[name]()
        return command

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or name in _LAZY_COMMANDS

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default  # noqa: SIM401 - dict.get would skip __missing__


class _Group(click.Group):
    """`envcheck [OPTIONS]` means `envcheck check [OPTIONS]`; user errors exit 2, bugs exit 3, never a traceback."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0].startswith("-") and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands(self.commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_LAZY_COMMANDS})

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort):
            raise
        except click.ClickException as exc:  # usage errors echo values back: a 100,000-character one is clipped
            exc.message = _clip(exc.message)  # type: ignore[misc]  # Final in the stubs, a plain attribute
            raise
        except (Exception, KeyboardInterrupt) as exc:  # the last line of defence: a bug is exit 3, not a traceback
            code = exit_code(exc)
            if code is None:
                raise
            raise click.exceptions.Exit(code) from None


class _ProgressLine(ProgressLine):
    """The probes' status line (envcheck.support.output_text.ProgressLine), written through click."""

    def _echo(self, text: str) -> None:
        click.echo(text, err=True, nl=False)


_fail_on_option = click.option(
    "--fail-on", type=click.Choice(FAIL_ON_LEVELS), default=None,
    help="Lowest severity that makes the exit code 1 (default: the configuration's fail-on, else error).",
)
_format_option = click.option("--format", "fmt", type=click.Choice(ReportFormat.names()), default="text",
                              show_default=True)
_output_option = click.option("-o", "--output", metavar="FILE",
                              help="Write the report to FILE instead of standard output.")
_verbose_option = click.option("-v", "--verbose", is_flag=True, help="Also list passed, n/a and skipped rules.")
_color_option = click.option("--color/--no-color", default=None, help="Colour the text report (default: on a "
                             "terminal, unless NO_COLOR is set).")


_MIN_MAX_BYTES = 1000  # --max-bytes: room for the title and the line saying what was cut


def _also(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[tuple[ReportFormat, str]]:
    pairs = []
    for value in values:
        fmt, sep, file = value.partition("=")
        if not sep or fmt not in ReportFormat.names() or not file:
            raise click.BadParameter(f"expected FORMAT=FILE with FORMAT one of {', '.join(ReportFormat.names())}, "
                                     f"got {value!r}", ctx=ctx, param=param)
        pairs.append((ReportFormat(fmt), file))
    return pairs


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envcheck")
def cli() -> None:
    """Check this Python environment for known PyTorch / CUDA incompatibilities, with the commands that fix them.

    Without a command, runs `envcheck check`.
    """


@cli.command()
@_format_option
@_output_option
@click.option("--also", "also", multiple=True, metavar="FORMAT=FILE", callback=_also,
              help="Also write the report in FORMAT to FILE (repeatable): --also junit=envcheck.xml.")
@_fail_on_option
@offer(*CHECKING, *SOURCES, *POLICY, *PROJECT)
@_verbose_option
@_color_option
@click.option("--max-bytes", "max_bytes", type=click.IntRange(min=_MIN_MAX_BYTES), metavar="N",
              help="Cut the markdown report to at most N bytes, after a whole problem, saying what was left out "
                   "(a GitHub comment holds 65,536 characters).")
@click.option("--machine", "machines", multiple=True, metavar="NAME|all",
              help="Judge what the project pins (its lock, else its pinned requirements) for a machine declared "
                   "in the configuration ([[tool.envcheck.machines]]), without that machine: one report per "
                   "machine (repeatable; `all`: every one). The local environment is not checked.")
def check(options: CheckOptions, fmt: str, output: str | None, also: list[tuple[str, str]], fail_on: str | None,
          verbose: bool, color: bool | None, machines: tuple[str, ...],
          max_bytes: int | None) -> None:
    """Check the environment and print a verdict per rule (the default command)."""
    from envcheck.pipeline import run

    if max_bytes is not None and (machines or ReportFormat.MARKDOWN not in (fmt, *(f for f, _ in also))):
        raise click.UsageError("--max-bytes cuts the markdown report: use it with --format markdown or "
                               "--also markdown=FILE, without --machine")
    if machines:
        _check_machines(machines, options, fail_on, fmt, output, also, verbose, color)
    report, rules = run(options, progress=_ProgressLine())
    _write(_rendered(report, fmt, _use_color(color, output), verbose, max_bytes), output)
    for extra_fmt, extra_file in also:
        _write(_rendered(report, extra_fmt, False, verbose, max_bytes), extra_file)
    raise click.exceptions.Exit(EXIT_FINDINGS if report.at_or_above(rules.level(fail_on)) else EXIT_CLEAN)


def _rendered(report: Report, fmt: str, color: bool, verbose: bool, max_bytes: int | None) -> str:
    """The report in `fmt`; markdown cut to `max_bytes` (envcheck/report/markdown.py) when that is given."""
    if max_bytes is not None and fmt == ReportFormat.MARKDOWN:
        from envcheck.report import markdown

        return markdown.render(report, verbose=verbose, max_bytes=max_bytes)
    from envcheck.report import render

    return render(report, fmt, color=color, verbose=verbose)


def _check_machines(names: tuple[str, ...], options: CheckOptions, fail_on: str | None, fmt: str,
                    output: str | None, also: list[tuple[str, str]], verbose: bool, color: bool | None) -> None:
    """`check --machine`: each declared machine judged on the project's pins (envcheck/machines/); exits."""
    from envcheck.machines.report import render as render_machines
    from envcheck.machines.run import checked as machines_checked

    outcome = machines_checked(names, options, fail_on)
    _write(render_machines(outcome.result, fmt, color=_use_color(color, output), verbose=verbose,
                           fail_on=outcome.level), output)
    for extra_fmt, extra_file in also:
        _write(render_machines(outcome.result, extra_fmt, verbose=verbose, fail_on=outcome.level), extra_file)
    raise click.exceptions.Exit(EXIT_FINDINGS if outcome.failed else EXIT_CLEAN)


def _error_output(source: str) -> tuple[str, str]:
    """(the text of `source`, its name): a file, or `-` for standard input when it is piped, read as a report is."""
    from envcheck.pipeline import pasted
    from envcheck.sources.reports.text import decode

    if source == "-" and (sys.stdin is None or sys.stdin.isatty()):
        raise click.UsageError("explain reads error output from FILE, or from standard input when it is piped: "
                               "`python train.py 2>&1 | envcheck explain`")
    data, name = pasted(source)
    return decode(data, name), name


@cli.command()
@click.argument("source", metavar="[FILE|-]", default="-")
@_format_option
@_output_option
@_fail_on_option
@offer(*CHECKING, *SOURCES, *POLICY, *PROJECT)
@_verbose_option
@_color_option
def explain(options: CheckOptions, source: str, fmt: str, output: str | None, fail_on: str | None, verbose: bool,
            color: bool | None) -> None:
    """Explain error output (a traceback, a CI log) for this environment: the failures it shows, their cause, the
    lines and facts that show it, and the fix; then the rest of the check. Same formats and exit codes as check.

    `python train.py 2>&1 | envcheck explain`, or `envcheck explain build.log`.
    """
    import dataclasses

    from envcheck.pipeline import run
    from envcheck.pipeline.error_output import ErrorOutput
    from envcheck.report import render

    if options.report_file == "-" and source == "-":
        raise click.UsageError("explain: standard input cannot be both the error output and --report")
    text, name = _error_output(source)
    report, rules = run(dataclasses.replace(options, error_output=ErrorOutput(text, name)), progress=_ProgressLine())
    _write(render(report, fmt, color=_use_color(color, output), verbose=verbose), output)
    raise click.exceptions.Exit(EXIT_FINDINGS if report.at_or_above(rules.level(fail_on)) else EXIT_CLEAN)


@cli.command()
@click.option("-o", "--output", metavar="FILE", help="Write the snapshot to FILE instead of standard output.")
@offer("static", "probe_timeout", "use_cache", "python", "report_file", "rule_dirs", "config", "no_config", *PROJECT)
def facts(options: CheckOptions, output: str | None) -> None:
    """Print the facts snapshot (JSON) that `envcheck check --facts FILE` can evaluate elsewhere."""
    import json

    from envcheck.derived.derive import Derived
    from envcheck.pipeline import Check

    # The configuration's rule directories decide what is collected (the modules and files their rules read).
    check = Check(options)
    snapshot = check.facts(_ProgressLine())
    data = snapshot.to_dict()
    # Derived facts are recomputed whenever a snapshot is read; they are written out for the human reader only,
    # and so is how the interpreter was chosen (a snapshot's `check --facts` names the snapshot instead; a pasted
    # report's target line is no interpreter that was found).
    data["derived"] = Derived(snapshot, check.rules.every.tables).all()
    if options.report_file is None and check.target is not None:
        data["target"] = check.target.to_dict()
    _write(json.dumps(data, indent=2, ensure_ascii=False) + "\n", output)


@cli.command()
@click.argument("ids", nargs=-1, metavar="[ID|PREFIX|NAME]...")
@click.option("--all", "show_all", is_flag=True, help="Document every rule of the pack.")
@click.option("--fleet", "show_fleet", is_flag=True, help="Document every fleet check (EC10xx, `envcheck fleet`).")
@click.option("--format", "fmt", type=click.Choice(DocFormat.names()), default="text", show_default=True)
@option_of("rule_dirs")
def rule(ids: tuple[str, ...], show_all: bool, show_fleet: bool, fmt: str, rule_dirs: tuple[Path, ...]) -> None:
    """Explain rules and fleet checks: what each detects, why it matters, how to fix it, and its references.

    Rules and checks are named as --select names them: an id, an id prefix (`EC01` is every EC01xx rule) or a name.
    """
    import json

    from envcheck.fleet import checkdoc
    from envcheck.fleet.checks import CHECKS
    from envcheck.fleet.checks import matches as fleet_matches
    from envcheck.report.ruledoc import render as render_rules
    from envcheck.rules import registry, rule_pack

    files = rule_pack.load_files([rule_pack.builtin_rules_dir(), *rule_dirs])
    every = [r for f in files for r in f.rules]
    # One line, as every other error of the command line: click's usage block would repeat the synopsis for a typo.
    if not ids and not show_all and not show_fleet:
        raise EnvcheckError("rule: name a rule (e.g. `envcheck rule EC0201`) or pass --all")
    unknown = [u for u in rule_pack.unknown_selectors(every, ids) if not any(fleet_matches(c, [u]) for c in CHECKS)]
    if unknown:  # the rules this folder's configuration and project generate (EC99xx, EC98xx), read only for them
        made = _generated_rules(Path.cwd())
        if made:
            files = [*files, made]
            every = [*every, *made.rules]
            unknown = rule_pack.unknown_selectors(every, unknown)
    if unknown:
        kinds = {prefix for u in unknown if (prefix := registry.reserved_for(u))}
        raise EnvcheckError(f"no rule {', '.join(repr(u) for u in unknown)}" + (" here" if kinds else "")
                            + "".join(f"; {p}xx are {registry.RESERVED[p]}" for p in sorted(kinds))
                            + " (see `envcheck rule --all`)")
    chosen = every if show_all else (rule_pack.select(every, ids) if ids else [])
    chosen_ids = {r.id for r in chosen}
    files = [f for f in files if any(r.id in chosen_ids for r in f.rules)]
    fleet = [c for c in CHECKS if show_fleet or (ids and fleet_matches(c, ids))]
    doc = DocFormat(fmt)
    if doc is DocFormat.JSON:
        data = [*(json.loads(render_rules(files, chosen, doc)) if chosen else []), *checkdoc.dicts(fleet)]
        click.echo(json.dumps(data, indent=2, ensure_ascii=False) + "\n", nl=False)
        return
    parts = [render_rules(files, chosen, doc)] if chosen else []
    if fleet:
        parts.append(checkdoc.markdown(fleet) if doc is DocFormat.MARKDOWN else checkdoc.text(fleet))
    click.echo("\n".join(parts), nl=False)


def _generated_rules(folder: Path) -> RuleFile | None:
    """The rules a check in `folder` generates (envcheck/rules/registry.py): its configuration's policy (EC99xx) and
    its project's rules (EC98xx), as one documented group; None where there are none."""
    from envcheck.pipeline import config_for
    from envcheck.pipeline.options import CheckOptions
    from envcheck.pipeline.stages import read_project
    from envcheck.rules import generated, policy, registry
    from envcheck.rules.rule_file import RuleFile

    config = config_for(CheckOptions(project_dir=folder))
    made = (*policy.rules(config), *generated.rules(read_project(start=folder)))
    if not made:
        return None
    return RuleFile(path=folder, area="project", title="Rules this project generates",
                    description=f"{registry.POLICY}xx are {registry.RESERVED[registry.POLICY]}; "
                                f"{registry.PROJECT}xx are {registry.RESERVED[registry.PROJECT]}.", rules=made)


@cli.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--format", "fmt", type=click.Choice(ProbeFormat.names()), default="text", show_default=True)
@option_of("probe_timeout")
@option_of("use_cache")
@option_of("python")
def probe(names: tuple[str, ...], fmt: str, probe_timeout: float, use_cache: bool, python: str | None) -> None:
    """Run the live probes (or the named ones) and show what each found, case by case."""
    from envcheck.pipeline.stages import gather
    from envcheck.pipeline.target import discover
    from envcheck.report.probes import render as render_probes
    from envcheck.rules import rule_pack
    from envcheck.sources.probes import run_probes
    from envcheck.sources.probes.catalog import PROBE_NAMES

    unknown = [n for n in names if n not in PROBE_NAMES]
    if unknown:
        raise EnvcheckError(f"no probe {', '.join(map(repr, unknown))} (probes: {', '.join(PROBE_NAMES)})")
    target = discover(python)
    snapshot = gather(rule_pack.load(()), python=target)
    progress = _ProgressLine()
    try:
        probed = run_probes(snapshot, names or PROBE_NAMES, timeout_s=probe_timeout, use_cache=use_cache,
                            progress=progress)
    finally:
        progress.clear()
    for problem in probed.problems:
        click.echo(f"envcheck: {problem}", err=True)
    if fmt != ProbeFormat.JSON:
        click.echo(target.line())
    click.echo(render_probes(probed.results, fmt, from_cache=probed.cached), nl=False)


def _run_plan(steps: Sequence[Step]) -> tuple[Step, str] | None:
    """Run each step, its output going straight to the terminal; the first that fails, and how, or None.

    Each runs in a process group of its own, held by the guard (envcheck/sources/probes/children.py): Ctrl-C or a signal
    that ends envcheck ends it and all it started (SIGTERM first, so that the installer can clean up, then SIGKILL). No
    time bound: downloading a CUDA torch can legitimately take half an hour. A bare program name is looked up on
    PATH's absolute entries only, as consent.py vetted it, and `python -m MODULE` runs without the working folder on
    sys.path (fix_mod.as_run)."""
    from envcheck.remedy import fix as fix_mod
    from envcheck.sources.probes.children import GRACE_S, Spawned, which
    from envcheck.support.output_text import shell

    for i, step in enumerate(steps, 1):
        click.echo(f"[{i}/{len(steps)}] $ {shell(step.argv)}")
        sys.stdout.flush()
        argv = fix_mod.as_run(step.argv)
        if argv and os.sep not in argv[0] and not (os.altsep and os.altsep in argv[0]):
            found = which(argv[0])
            if found is None:
                return step, f"cannot be run ({argv[0]} is not found on PATH's absolute entries)"
            argv = (found, *argv[1:])
        try:
            child = Spawned(argv, stdin=None, stdout=None, stderr=None, grace_s=GRACE_S)
        except OSError as exc:
            return step, f"cannot be run ({exc.strerror or exc})"
        try:
            code = child.wait()
        finally:
            child.close()
        if code != 0:
            return step, f"exited {code}"
    return None


@cli.command()
@click.option("--dry-run", is_flag=True, help="Show the plan and change nothing.")
@click.option("-y", "--yes", is_flag=True, help="Run the plan without asking (for CI and scripts).")
@click.option("--allow-other", is_flag=True,
              help="Also run commands that are not pip / uv pip / conda commands for the checked interpreter, and "
                   "installer commands of project rules that name an index, a path or a requirements file.")
@_fail_on_option
@offer(*CHECKING, *POLICY, *PROJECT)
def fix(options: CheckOptions, dry_run: bool, yes: bool, allow_other: bool, fail_on: str | None) -> None:
    """Run the commands that fix the problems found (after showing them and asking), then check again."""
    from envcheck.pipeline import Check
    from envcheck.remedy import fix as fix_mod
    from envcheck.report.common import tally
    from envcheck.rules.rule_pack import shipped
    from envcheck.support.output_text import shell

    check = Check(options)
    rules, target = check.rules, check.target
    level = rules.level(fail_on)
    assert target is not None  # fix takes no --facts or --report: an interpreter was found
    click.echo(target.line())

    gathered = []  # the facts of each check: the plan describes its steps with the first

    def check_now() -> Report:
        facts = check.facts(_ProgressLine())
        gathered.append(facts)
        return check.report(facts)

    before = check_now()
    todo = before.at_or_above(level)
    if not todo:
        click.echo(f"envcheck fix: nothing to fix at --fail-on {level} ({tally(before)})")
        raise click.exceptions.Exit(EXIT_CLEAN)
    # A project's rule directories and the rules made from its files may not choose an index or a path unasked.
    outside = {rule.id for rule in rules.every if not shipped(rule)}
    plan = fix_mod.plan(todo, before.python, before.installer, facts=gathered[0], outside_pack=outside)
    click.echo(fix_mod.render_plan(plan, allow_other=allow_other), nl=False)
    steps = plan.runnable(allow_other)
    if dry_run:
        click.echo("dry run: nothing was changed")
        raise click.exceptions.Exit(EXIT_CLEAN)
    if not steps:
        click.echo("envcheck fix: no command to run; the fixes above are to be done by hand")
        raise click.exceptions.Exit(EXIT_FINDINGS)
    if not yes:
        if not sys.stdin.isatty():
            raise EnvcheckError("fix: refusing to change the environment without consent: standard input is not a "
                                "terminal, so nobody can answer; pass --yes to run the plan, or --dry-run to only "
                                "show it")
        if not click.confirm(f"Run {len(steps)} command{'s' if len(steps) != 1 else ''}?", default=False):
            click.echo("nothing was changed")
            raise click.exceptions.Exit(EXIT_FINDINGS)
    failed = _run_plan(steps)
    if failed is not None:
        click.echo(f"envcheck fix: stopped: `{shell(failed[0].argv)}` {failed[1]}; the commands after it did not "
                   "run", err=True)
    import importlib

    importlib.invalidate_caches()  # the in-process collector must see what the commands installed
    after = check_now()
    from envcheck.report.outcome import render_outcome

    click.echo(render_outcome(before, after), nl=False)
    raise click.exceptions.Exit(EXIT_FINDINGS if failed is not None or after.at_or_above(level) else EXIT_CLEAN)




def main(argv: Sequence[str] | None = None) -> None:
    """The CLI, as tests and embedders call it: exits through SystemExit, leaves the process as it found it."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="envcheck")


def console() -> None:
    """The `envcheck` command and `python -m envcheck`: `main`, then nothing but the interpreter's exit."""
    try:
        main()
    finally:
        # Everything still alive is about to be torn down with the interpreter: moving it out of the collector's
        # reach spares the final collections (about 25 ms of a 250 ms static check, measured in bench/). Only
        # here: in a process that goes on (pytest, an embedding program) it would keep garbage alive for good.
        import gc

        gc.freeze()

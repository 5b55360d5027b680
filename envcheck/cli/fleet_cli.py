"""`envcheck fleet`: one report for many machines, from a torchrun job or from saved snapshots.

    torchrun --nproc-per-node 8 -m envcheck fleet [--static]    every rank collects, rank 0 prints the report
    envcheck fleet merge facts-*.json                           the same report from `envcheck facts -o` files

Exit codes: 0 clean; 1 a finding at or above --fail-on (in any environment, or a fleet check), or an incomplete
fleet (a node that delivered no facts, whatever --fail-on says); 2 usage or configuration error; 3 internal error.
Ranks other than 0 print nothing and exit 0. Only click and light modules are imported here: the root CLI imports
this module on every start, and torch is imported only when a torchrun worker gathers.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from envcheck.cli.output import EXIT_CLEAN, EXIT_FINDINGS, Seconds, split, use_color, write
from envcheck.facts.probe_statuses import PROBE_TIMEOUT_S
from envcheck.report.interface import FleetFormat
from envcheck.rules.model import FAIL_ON_LEVELS

if TYPE_CHECKING:
    from envcheck.pipeline import CheckOptions
    from envcheck.pipeline.stages import RuleSet

F = TypeVar("F", bound=Callable[..., Any])


def _report_options(fn: F) -> F:
    """The options `fleet` and `fleet merge` share: what to evaluate and how to print it."""
    for option in reversed([
        click.option("--format", "fmt", type=click.Choice(FleetFormat.names()), default="text", show_default=True),
        click.option("-o", "--output", metavar="FILE", help="Write the report to FILE instead of standard output."),
        click.option("--fail-on", type=click.Choice(FAIL_ON_LEVELS), default=None,
                     help="Lowest severity that makes the exit code 1 (default: the configuration's fail-on, else "
                          "error); an incomplete fleet always does."),
        click.option("--select", multiple=True, metavar="ID",
                     help="Only these rules (ids, id prefixes or names); the project's policy rules (EC99xx) always "
                          "run."),
        click.option("--ignore", multiple=True, metavar="ID",
                     help="Skip these rules or fleet checks (EC10xx); repeatable or comma-separated; adds to the "
                          "configuration's ignore."),
        click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
                     help="An extra directory of rule files (repeatable); it must exist on every node."),
        click.option("--config", "config_file", metavar="FILE",
                     help="Read the project's configuration from FILE instead of the nearest envcheck.toml or "
                          "pyproject.toml with [tool.envcheck]; it must exist on every node."),
        click.option("--no-config", is_flag=True, help="Use no configuration file."),
        click.option("--require", multiple=True, metavar="REQ",
                     help="A PEP 508 requirement every node must satisfy, added to the configuration's `require`."),
        click.option("--forbid", multiple=True, metavar="REQ",
                     help="A PEP 508 requirement no node may have installed, added to `forbid`."),
        click.option("-v", "--verbose", is_flag=True, help="Also list passed, n/a and skipped rules."),
        click.option("--color/--no-color", default=None, help="Colour the text report (default: on a terminal)."),
    ]):
        fn = option(fn)
    return fn


def _options(select: tuple[str, ...], ignore: tuple[str, ...], rule_dirs: tuple[Path, ...], config_file: str | None,
             no_config: bool, require: tuple[str, ...], forbid: tuple[str, ...], **probing: Any) -> CheckOptions:
    """What `fleet` and `fleet merge` evaluate, from the options they share (`probing`: fleet's static,
    probe_timeout and use_cache), as `envcheck check` reads them."""
    from envcheck.pipeline.options import CheckOptions

    return CheckOptions.command_line(select=tuple(split(select)), ignore=tuple(split(ignore)), rule_dirs=rule_dirs,
                                     config=config_file, no_config=no_config, require=require, forbid=forbid,
                                     **probing)


def _rules(options: CheckOptions) -> tuple[RuleSet, list[str]]:
    """The rule set `check` would use, and the ignore entries (options and configuration) for fleet checks.

    An ignore entry may name fleet checks, rules, or both (a prefix such as "EC"); each part gets the entries
    that name something of it, and an entry that names nothing is an error, as for `check`.
    """
    from envcheck.fleet import checks
    from envcheck.pipeline import config_for
    from envcheck.pipeline.stages import rule_set
    from envcheck.rules import rule_pack

    config = config_for(options)
    rule_dirs = [Path(d) for d in options.rule_dirs]
    every = rule_set(dataclasses.replace(config, ignore=(), select=()), rule_dirs=rule_dirs,
                     require=options.require, forbid=options.forbid).every

    def for_rules(selector: str) -> bool:
        return not rule_pack.unknown_selectors(every, [selector])

    def for_fleet(selector: str) -> bool:
        return any(checks.matches(c, [selector]) for c in checks.CHECKS)

    unknown = [i for i in options.select if not for_rules(i)]
    unknown += [i for i in options.ignore if not for_rules(i) and not for_fleet(i)]
    if unknown:
        raise click.UsageError(f"no rule or fleet check matches {', '.join(map(repr, unknown))}")
    for selector, _reason in config.ignore:
        if not for_rules(selector) and not for_fleet(selector):
            raise config.error(f"ignore.{selector}", f"no rule or fleet check matches {selector!r}")
    rule_config = dataclasses.replace(config, ignore=tuple(e for e in config.ignore if for_rules(e[0])))
    rules = rule_set(rule_config, rule_dirs=rule_dirs, select=options.select,
                     ignore=[i for i in options.ignore if for_rules(i)], require=options.require,
                     forbid=options.forbid)
    fleet_ignores = [i for i in [*options.ignore, *(s for s, _ in config.ignore)] if for_fleet(i)]
    return rules, fleet_ignores


def _emit(report: Any, fmt: str, output: str | None, color: bool | None, verbose: bool, fail_on: str) -> None:
    from envcheck.fleet.report import render

    write(render(report, fmt, color=use_color(color, output), verbose=verbose), output)
    raise click.exceptions.Exit(EXIT_FINDINGS if report.failing(fail_on) else EXIT_CLEAN)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@_report_options
@click.option("--static", is_flag=True, help="Static tier only on every rank (no probes).")
@click.option("--probe-timeout", type=Seconds(0.5), default=PROBE_TIMEOUT_S, show_default=True, metavar="SECONDS",
              help="Kill a probe that has not finished after this long.")
@click.option("--no-cache", is_flag=True, help="Run the probes even if cached results match.")
@click.option("--gather-timeout", type=Seconds(1.0), default=300.0, show_default=True,
              metavar="SECONDS", help="Report the ranks whose facts have not arrived this long after the start as "
              "failed (each rank reports its own collection as timed out at 90% of it).")
@click.pass_context
def fleet(ctx: click.Context, fmt: str, output: str | None, fail_on: str | None, select: tuple[str, ...],
          ignore: tuple[str, ...], rule_dirs: tuple[Path, ...], config_file: str | None, no_config: bool,
          require: tuple[str, ...], forbid: tuple[str, ...], verbose: bool, color: bool | None, static: bool,
          probe_timeout: float, no_cache: bool, gather_timeout: float) -> None:
    """Check every node of a torchrun job; rank 0 prints one report that groups identical nodes.

    Start it like the training job: `torchrun --nproc-per-node 8 ... -m envcheck fleet` (under Slurm,
    `srun torchrun ...`). Each rank collects the facts of its interpreter and probes its own GPU; the facts are
    gathered through torch.distributed's rendezvous store. See docs/fleet.md.
    """
    if ctx.invoked_subcommand is not None:
        return
    from envcheck.fleet import distributed
    from envcheck.fleet import merge as merge_mod

    options = _options(select, ignore, rule_dirs, config_file, no_config, require, forbid, static=static,
                       probe_timeout=probe_timeout, use_cache=not no_cache)
    probes = options.probe_options()
    env = distributed.RankEnv.from_environ(os.environ)
    if env.rank != 0:
        # Ranks other than 0 load the configuration and rules inside the collection, so that a node with a broken
        # rule directory or configuration is reported by rank 0 as failed instead of ending the job.
        outcome = distributed.run(lambda: _rules(options)[0].every.rules, probes, gather_timeout)
        if outcome.warning:
            click.echo(f"envcheck fleet: {outcome.warning}", err=True)
        raise click.exceptions.Exit(EXIT_CLEAN)
    rules, fleet_ignores = _rules(options)
    gathered = distributed.run(lambda: rules.every.rules, probes, gather_timeout)
    report = merge_mod.build(gathered.members, gathered.facts, rules.chosen, expected=gathered.expected,
                             stopped=gathered.stopped, ignore_checks=fleet_ignores)
    _emit(report, fmt, output, color, verbose, rules.level(fail_on))


@fleet.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@_report_options
def merge(files: tuple[str, ...], fmt: str, output: str | None, fail_on: str | None, select: tuple[str, ...],
          ignore: tuple[str, ...], rule_dirs: tuple[Path, ...], config_file: str | None, no_config: bool,
          require: tuple[str, ...], forbid: tuple[str, ...], verbose: bool, color: bool | None) -> None:
    """The fleet report from snapshots saved by `envcheck facts -o FILE`, one per node.

    For example, under Slurm: `srun --ntasks-per-node 1 envcheck facts -o facts-%N.json`, then
    `envcheck fleet merge facts-*.json`. A node is named by the host name its snapshot records, else by the file
    name; a file that cannot be read is a node that failed.
    """
    from envcheck.fleet import merge as merge_mod

    rules, fleet_ignores = _rules(_options(select, ignore, rule_dirs, config_file, no_config, require, forbid))
    members, facts = merge_mod.load_members(files)
    report = merge_mod.build(members, facts, rules.chosen, expected=len(files), ignore_checks=fleet_ignores)
    _emit(report, fmt, output, color, verbose, rules.level(fail_on))

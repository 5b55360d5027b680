"""`envcheck fleet`: one report for many machines, from a torchrun job or from saved snapshots.

    torchrun --nproc-per-node 8 -m envcheck fleet [--static]    every rank collects, rank 0 prints the report
    envcheck fleet merge facts-*.json                           the same report from `envcheck facts -o` files

Exit codes: 0 clean; 1 a finding at or above --fail-on (in any environment, or a fleet check), or an incomplete
fleet (a node that delivered no facts, whatever --fail-on says); 2 usage or configuration error; 3 internal error.
Ranks other than 0 print nothing and exit 0. Only click and light modules are imported here: the root CLI imports
this module on every start, and torch is imported only when a torchrun worker gathers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from envcheck.model import FAIL_ON_LEVELS
from envcheck.report.interface import FleetFormat

if TYPE_CHECKING:
    from envcheck.rules import RulePack

EXIT_CLEAN, EXIT_FINDINGS = 0, 1
F = TypeVar("F", bound=Callable[..., Any])


def _report_options(fn: F) -> F:
    """The options `fleet` and `fleet merge` share: what to evaluate and how to print it."""
    for option in reversed([
        click.option("--format", "fmt", type=click.Choice(FleetFormat.names()), default="text", show_default=True),
        click.option("-o", "--output", metavar="FILE", help="Write the report to FILE instead of standard output."),
        click.option("--fail-on", type=click.Choice(FAIL_ON_LEVELS), default="error", show_default=True,
                     help="Lowest severity that makes the exit code 1 (an incomplete fleet always does)."),
        click.option("--select", multiple=True, metavar="ID", help="Only these rules (ids, id prefixes or names)."),
        click.option("--ignore", multiple=True, metavar="ID",
                     help="Skip these rules or fleet checks (EC10xx); repeatable or comma-separated."),
        click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
                     help="An extra directory of rule files (repeatable); it must exist on every node."),
        click.option("-v", "--verbose", is_flag=True, help="Also list passed, n/a and skipped rules."),
        click.option("--color/--no-color", default=None, help="Colour the text report (default: on a terminal)."),
    ]):
        fn = option(fn)
    return fn


def _split(values: Sequence[str]) -> list[str]:
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


def _rules(rule_dirs: Sequence[Path], select: Sequence[str], ignore: Sequence[str]
           ) -> tuple[RulePack, RulePack, list[str]]:
    """(every rule, the chosen ones, the --ignore entries meant for fleet checks). Unknown selectors are an error."""
    from envcheck import rules as rules_mod
    from envcheck.fleet import checks

    every = rules_mod.load(rule_dirs)
    selectors, ignores = _split(select), _split(ignore)
    fleet_ignores = [i for i in ignores if any(checks.matches(c, [i]) for c in checks.CHECKS)]
    unknown = [u for u in rules_mod.unknown_selectors(every, selectors + ignores) if u not in fleet_ignores]
    if unknown:
        raise click.UsageError(f"no rule or fleet check matches {', '.join(map(repr, unknown))}")
    return every, every.only(rules_mod.select(every, selectors, ignores)), fleet_ignores


def _emit(report: Any, fmt: str, output: str | None, color: bool | None, verbose: bool, fail_on: str) -> None:
    from envcheck.errors import EnvcheckError
    from envcheck.fleet.report import render

    use_color = color if color is not None else (not output and not os.environ.get("NO_COLOR")
                                                 and sys.stdout.isatty())
    text = render(report, fmt, color=use_color, verbose=verbose)
    if output is None or output == "-":
        click.echo(text, nl=False, color=True)
    else:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise EnvcheckError(f"--output {output}: cannot write ({exc.strerror or exc})") from None
    raise click.exceptions.Exit(EXIT_FINDINGS if report.failing(fail_on) else EXIT_CLEAN)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@_report_options
@click.option("--static", is_flag=True, help="Static tier only on every rank (no probes).")
@click.option("--probe-timeout", type=click.FloatRange(min=0.5), default=120.0, show_default=True, metavar="SECONDS",
              help="Kill a probe that has not finished after this long.")
@click.option("--no-cache", is_flag=True, help="Run the probes even if cached results match.")
@click.option("--gather-timeout", type=click.FloatRange(min=1.0), default=300.0, show_default=True,
              metavar="SECONDS", help="Report the ranks whose facts have not arrived this long after the start as "
              "failed (each rank reports its own collection as timed out at 90% of it).")
@click.pass_context
def fleet(ctx: click.Context, fmt: str, output: str | None, fail_on: str, select: tuple[str, ...],
          ignore: tuple[str, ...], rule_dirs: tuple[Path, ...], verbose: bool, color: bool | None, static: bool,
          probe_timeout: float, no_cache: bool, gather_timeout: float) -> None:
    """Check every node of a torchrun job; rank 0 prints one report that groups identical nodes.

    Start it like the training job: `torchrun --nproc-per-node 8 ... -m envcheck fleet` (under Slurm,
    `srun torchrun ...`). Each rank collects the facts of its interpreter and probes its own GPU; the facts are
    gathered through torch.distributed's rendezvous store. See docs/fleet.md.
    """
    if ctx.invoked_subcommand is not None:
        return
    from envcheck import rules as rules_mod
    from envcheck.api import ProbeOptions
    from envcheck.fleet import distributed
    from envcheck.fleet import merge as merge_mod

    probes = ProbeOptions(run=not static, timeout_s=probe_timeout, use_cache=not no_cache)
    env = distributed.RankEnv.from_environ(os.environ)
    if env.rank != 0:
        # Ranks other than 0 load the rules inside the collection, so that a node with a broken rule directory
        # is reported by rank 0 as failed instead of ending the job.
        outcome = distributed.run(lambda: rules_mod.load(rule_dirs).rules, probes, gather_timeout)
        if outcome.warning:
            click.echo(f"envcheck fleet: {outcome.warning}", err=True)
        raise click.exceptions.Exit(EXIT_CLEAN)
    every, chosen, fleet_ignores = _rules(rule_dirs, select, ignore)
    gathered = distributed.run(lambda: every.rules, probes, gather_timeout)
    report = merge_mod.build(gathered.members, gathered.facts, chosen, expected=gathered.expected,
                         stopped=gathered.stopped, ignore_checks=fleet_ignores)
    _emit(report, fmt, output, color, verbose, fail_on)


@fleet.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@_report_options
def merge(files: tuple[str, ...], fmt: str, output: str | None, fail_on: str, select: tuple[str, ...],
          ignore: tuple[str, ...], rule_dirs: tuple[Path, ...], verbose: bool, color: bool | None) -> None:
    """The fleet report from snapshots saved by `envcheck facts -o FILE`, one per node.

    For example, under Slurm: `srun --ntasks-per-node 1 envcheck facts -o facts-%N.json`, then
    `envcheck fleet merge facts-*.json`. A node is named by the host name its snapshot records, else by the file
    name; a file that cannot be read is a node that failed.
    """
    from envcheck.fleet import merge as merge_mod

    _every, chosen, fleet_ignores = _rules(rule_dirs, select, ignore)
    members, facts = merge_mod.load_members(files)
    report = merge_mod.build(members, facts, chosen, expected=len(files), ignore_checks=fleet_ignores)
    _emit(report, fmt, output, color, verbose, fail_on)

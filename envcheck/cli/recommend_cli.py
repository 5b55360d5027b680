"""`envcheck recommend`: the torch-family install for this machine, a described one, or a saved snapshot.

Thin: parses options, gathers the facts (static tier only: the recommendation reads NVML, the platform, Python
and what is installed), calls envcheck.remedy.recommend, prints. Exit 0 with a recommendation (the installed build
included, when nothing needs to change), 1 when no build fits.
"""

from __future__ import annotations

from pathlib import Path

import click

from envcheck.derived.build_matrix import PLATFORMS


@click.command()
@click.option("--gpu", "gpu", multiple=True, metavar="NAME",
              help="A GPU of the machine, by name (\"RTX 5090\", \"H100\") or capability (sm_120, 12.0); "
                   "repeatable. Replaces the GPUs NVML sees.")
@click.option("--capability", multiple=True, metavar="X.Y", help="A GPU by its compute capability; repeatable.")
@click.option("--driver", metavar="VERSION", help="The NVIDIA driver version (570.86.10).")
@click.option("--python", "python_version", metavar="X.Y", help="The Python version to install for (3.12).")
@click.option("--platform", type=click.Choice(PLATFORMS), help="The platform to install for.")
@click.option("--facts", "facts_file", metavar="FILE", help="Plan for a snapshot saved by `envcheck facts -o`.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="An extra rule directory, whose data/ tables replace the shipped ones.")
@click.option("--machine", "machines", multiple=True, metavar="NAME|all",
              help="A machine declared in the configuration ([[tool.envcheck.machines]]): the pins that suit it, "
                   "keeping the project's pinned torch release where a build of it fits (repeatable; `all`: every "
                   "one, and one set of pins for all of them where one can).")
@click.option("--config", "config_file", metavar="FILE", help="The configuration that declares the machines "
              "(default: the nearest envcheck.toml or pyproject.toml with [tool.envcheck]).")
def recommend(gpu: tuple[str, ...], capability: tuple[str, ...], driver: str | None, python_version: str | None,
              platform: str | None, facts_file: str | None, fmt: str, rule_dirs: tuple[Path, ...],
              machines: tuple[str, ...], config_file: str | None) -> None:
    """Print the torch build (and companions) to install: for the checked environment on this machine, a saved
    snapshot (--facts), or a machine described by --gpu/--capability, --driver, --python and --platform. The
    command is written for the environment's installer (pip or uv); a machine described in full, with no
    snapshot, gets a pip command for the Python that is to have torch."""
    # Imported here: every other command's start-up (the static tier's budget) does not pay for the planner.
    from envcheck.pipeline import Check, CheckOptions, rule_set_for
    from envcheck.remedy import recommend as recommend_mod

    if machines:
        _for_machines(machines, fmt, rule_dirs, config_file, bool(gpu or capability or driver or python_version
                                                                  or platform or facts_file))
    described = recommend_mod.describe_from(gpu, capability, driver, python_version, platform)
    # The shipped pack and --rules alone (their data tables are what is planned with), the static tier, the
    # interpreter chosen as `envcheck check` chooses it: the project's configuration and files play no part.
    options = CheckOptions(facts_file=facts_file, rule_dirs=rule_dirs, no_config=True, no_project=True, static=True,
                           discover=True, python_named_by="--python")
    wholly_described = bool((gpu or capability) and python_version and platform and facts_file is None)
    if wholly_described:
        facts, tables = None, rule_set_for(options).every.tables
    else:
        check = Check(options)
        facts, tables = check.facts(), check.rules.every.tables
    plan = recommend_mod.plan(facts, described, tables)
    click.echo(recommend_mod.render_text(plan) if fmt == "text" else recommend_mod.render_json(plan), nl=False)
    raise click.exceptions.Exit(0 if plan.recommendation.choice is not None else 1)


def _for_machines(names: tuple[str, ...], fmt: str, rule_dirs: tuple[Path, ...], config_file: str | None,
                  described: bool) -> None:
    """`recommend --machine`: the pins for declared machines (envcheck/machines/recommend.py); exits 0 when every
    machine has a build, else 1."""
    from envcheck.derived.tables import TORCH_BUILDS
    from envcheck.errors import EnvcheckError
    from envcheck.machines import recommend as machines_recommend
    from envcheck.machines.declared import chosen
    from envcheck.machines.pins import pins_for
    from envcheck.pipeline import CheckOptions, config_for
    from envcheck.rules import rule_pack
    from envcheck.sources.project.discover import discover as discover_project

    if described:
        raise EnvcheckError("--machine takes the machine from the configuration: it excludes --gpu, --capability, "
                            "--driver, --python, --platform and --facts")
    config = config_for(CheckOptions(config=config_file))
    machines = chosen(config.machines, names, config.file, lambda message: config.error("machines", message))
    project = discover_project(Path.cwd())
    matrix = rule_pack.load(rule_dirs).tables[TORCH_BUILDS]
    pins = {m.name: None if project is None else pins_for(project, m) for m in machines}
    recs, together, groups = machines_recommend.plan(matrix, machines, pins)
    render = machines_recommend.render_text if fmt == "text" else machines_recommend.render_json
    click.echo(render(machines, recs, together, groups), nl=False)
    raise click.exceptions.Exit(0 if all(r.choice is not None for r in recs) else 1)

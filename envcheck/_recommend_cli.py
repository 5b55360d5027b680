"""`envcheck recommend`: the torch-family install for this machine, a described one, or a saved snapshot.

Thin: parses options, gathers the facts (static tier only: the recommendation reads NVML, the platform, Python
and what is installed), calls envcheck.recommend, prints. Exit 0 with a recommendation (the installed build
included, when nothing needs to change), 1 when no build fits.
"""

from __future__ import annotations

from pathlib import Path

import click

from envcheck.torch_builds import PLATFORMS


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
def recommend(gpu: tuple[str, ...], capability: tuple[str, ...], driver: str | None, python_version: str | None,
              platform: str | None, facts_file: str | None, fmt: str, rule_dirs: tuple[Path, ...]) -> None:
    """Print the torch build (and companions) to install: for the checked environment on this machine, a saved
    snapshot (--facts), or a machine described by --gpu/--capability, --driver, --python and --platform. The
    command is written for the environment's installer (pip or uv); a machine described in full, with no
    snapshot, gets a pip command for the Python that is to have torch."""
    # Imported here: every other command's start-up (the static tier's budget) does not pay for the planner.
    from envcheck import recommend as recommend_mod
    from envcheck import rules as rules_mod
    from envcheck.api import gather
    from envcheck.target import discover

    described = recommend_mod.describe_from(gpu, capability, driver, python_version, platform)
    pack = rules_mod.load(rule_dirs)
    wholly_described = bool((gpu or capability) and python_version and platform and facts_file is None)
    facts = None
    if not wholly_described:
        facts = gather(pack.rules, python=discover(None) if facts_file is None else None, facts_file=facts_file)
    plan = recommend_mod.plan(facts, described, pack.tables)
    click.echo(recommend_mod.render_text(plan) if fmt == "text" else recommend_mod.render_json(plan), nl=False)
    raise click.exceptions.Exit(0 if plan.recommendation.choice is not None else 1)

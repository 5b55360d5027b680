"""envcheck: check a PyTorch environment against known incompatibilities before anything crashes.

The library entry point is `envcheck.check()`; importing the package imports nothing else (the function imports
the machinery when it is called), so an install script pays for envcheck only when it uses it.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing typing alone would triple the cost of `import envcheck`. Type checkers
# treat any constant named TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

    from envcheck.config import Config
    from envcheck.model import Report

__version__ = "0.1.0"

__all__ = ["__version__", "check"]


def check(
    *,
    require: Sequence[str] = (),
    forbid: Sequence[str] = (),
    config: str | os.PathLike[str] | Config | None = None,
    no_config: bool = False,
    project_dir: str | os.PathLike[str] | None = None,
    python: str | os.PathLike[str] | None = None,
    facts_file: str | os.PathLike[str] | None = None,
    rule_dirs: Sequence[str | os.PathLike[str]] = (),
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    static: bool = False,
    probe_timeout: float = 120.0,
    use_cache: bool = True,
) -> Report:
    """Check a Python environment and return the verdicts; the library form of `envcheck check`.

    ```python
    import envcheck

    report = envcheck.check(require=["torch>=2.6"], forbid=["apex"])
    problems = report.at_or_above("error")  # the findings that make `envcheck` exit 1
    for finding in problems:
        print(finding.rule_id, finding.summary, *map(" ".join, finding.commands), sep="\\n  ")
    ```

    Args:
        require: PEP 508 requirements that must be installed and satisfied, added to the configuration's
            `require` (each becomes a rule EC9901...).
        forbid: PEP 508 requirements that must not be installed (in that range), added to `forbid`.
        config: a configuration file (an envcheck.toml, or a pyproject.toml with `[tool.envcheck]`), or a
            `envcheck.config.Config`. Default: the nearest one at or above `project_dir`.
        no_config: use no configuration file at all.
        project_dir: where the search for a configuration file starts (default: the working directory).
        python: check this interpreter instead of the running one (envcheck need not be installed there).
        facts_file: evaluate a snapshot saved by `envcheck facts -o FILE` instead of collecting.
        rule_dirs: extra directories of rule files.
        select: only these rules of the pack (ids, id prefixes or names); replaces the configuration's `select`.
            The project's policy rules always run.
        ignore: skip these rules; added to the configuration's `ignore`.
        static: the static tier only: no live probes (no `import torch`); a fraction of a second.
        probe_timeout: seconds before a probe (and everything it started) is killed.
        use_cache: reuse cached probe results when the environment has not changed.

    Returns:
        The `envcheck.model.Report`: one `Finding` per rule (or per item), with `status`, `summary`, `fix` and
        `commands` (argv tuples for the checked interpreter). `report.at_or_above(level)` lists the findings at or
        above a severity ("error", "warning", "info"); `report.counts()` tallies the verdicts.

    Raises:
        envcheck.errors.EnvcheckError: bad input (`ConfigError` names the configuration file and key).
    """
    from envcheck.api import check as run_check  # deferred: `import envcheck` stays cheap

    return run_check(require=require, forbid=forbid, config=config, no_config=no_config, project_dir=project_dir,
                     python=python, facts_file=facts_file, rule_dirs=rule_dirs, select=select, ignore=ignore,
                     static=static, probe_timeout=probe_timeout, use_cache=use_cache)

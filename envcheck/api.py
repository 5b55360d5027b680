"""The check as a library call: `check()`, which `envcheck.check()` (the package-level function) resolves to.

No printing, no exit codes. The module is named `api` so that the function and a submodule never share the name
`envcheck.check`. The check itself is the pipeline's (envcheck/pipeline/): its options, `CheckOptions`, and `run`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envcheck.model import Report
    from envcheck.pipeline import CheckOptions


def check(options: CheckOptions | None = None, /, **overrides: Any) -> Report:
    """Check a Python environment and return the verdicts; the library form of `envcheck check`.

    ```python
    import envcheck

    report = envcheck.check(require=["torch>=2.6"], forbid=["apex"])
    problems = report.at_or_above("error")  # the findings that make `envcheck` exit 1
    for finding in problems:
        print(finding.rule_id, finding.summary, *map(" ".join, finding.commands), sep="\\n  ")
    ```

    The options are an `envcheck.pipeline.CheckOptions` (default: all its defaults), with `overrides`, keyword
    arguments named as its fields, replacing some: `envcheck.check(options, static=True)`. The fields:

        require: PEP 508 requirements that must be installed and satisfied, added to the configuration's
            `require` (each becomes a rule EC9901...).
        forbid: PEP 508 requirements that must not be installed (in that range), added to `forbid`.
        config: a configuration file (an envcheck.toml, or a pyproject.toml with `[tool.envcheck]`), or a
            `envcheck.config.Config`. Default: the nearest one at or above `project_dir`.
        no_config: use no configuration file at all.
        project_dir: where the search for a configuration file starts (default: the working directory).
        python: check this interpreter instead of the running one (envcheck need not be installed there).
        discover: choose the interpreter as the `envcheck` command does (`envcheck.target`: an activated
            environment, else the project's `.venv` found from `project_dir`, ...). Off by default: a library
            call checks the interpreter it runs in, unless `python` names another.
        facts_file: evaluate a snapshot saved by `envcheck facts -o FILE` instead of collecting.
        report_file: evaluate the environment a pasted report describes (collect_env, pip list, nvidia-smi, ...;
            `-` reads standard input) instead of collecting.
        rule_dirs: extra directories of rule files.
        select: only these rules of the pack (ids, id prefixes or names); replaces the configuration's `select`.
            The project's policy rules always run.
        ignore: skip these rules; added to the configuration's `ignore`.
        static: the static tier only: no live probes (no `import torch`); a fraction of a second.
        probe_timeout: seconds before a probe (and everything it started) is killed.
        use_cache: reuse cached probe results when the environment has not changed, and the cached rule pack and
            distribution metadata while their files are unchanged (False: --no-cache).
        no_project: do not read the project's files (found at or above `project_dir`): its pyproject.toml
            dependencies, requirements.txt, environment.yml and lock are then not checked (EC98xx).
        requirements: requirements files (or lock files) to read instead of the project's requirements.txt.
        extras: optional-dependencies of the project to check too.
        groups: dependency groups (PEP 735) of the project to check too.
        error_output: error output to explain, as `envcheck explain` does: an
            `envcheck.pipeline.stages.ErrorOutput(text, name)`, or the text itself. The failures it shows are
            recognised with the rules' error signatures and joined with the facts; `report.explained` says what
            was read and recognised.

    Returns:
        The `envcheck.model.Report`: one `Finding` per rule (or per item), with `status`, `summary`, `fix` and
        `commands` (argv tuples for the checked interpreter); `report.target` says which interpreter that was
        and how it was chosen. `report.at_or_above(level)` lists the findings at or
        above a severity ("error", "warning", "info"); `report.counts()` tallies the verdicts.

    Raises:
        envcheck.errors.EnvcheckError: bad input (`ConfigError` names the configuration file and key;
            `envcheck.target.TargetError` when `discover` finds nothing it may check).
        TypeError: a keyword argument that names no option.
    """
    from envcheck.pipeline import CheckOptions, run

    return run(dataclasses.replace(options or CheckOptions(), **overrides)).report

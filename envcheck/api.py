"""The check as a library call: `check()`, which `envcheck.check()` (the package-level function) resolves to.

No printing, no exit codes. The module is named `api` so that the function and a submodule never share the name
`envcheck.check`. The check itself is the pipeline's (envcheck/pipeline/): its options, `CheckOptions`, and `run`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envcheck.pipeline import CheckOptions
    from envcheck.rules.model import Report


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

{fields}

    Returns:
        The `envcheck.rules.model.Report`: one `Finding` per rule (or per item), with `status`, `summary`, `fix` and
        `commands` (argv tuples for the checked interpreter); `report.target` says which interpreter that was
        and how it was chosen. `report.at_or_above(level)` lists the findings at or
        above a severity ("error", "warning", "info"); `report.counts()` tallies the verdicts.

    Raises:
        envcheck.errors.EnvcheckError: bad input (`ConfigError` names the configuration file and key;
            `envcheck.pipeline.target.TargetError` when `discover` finds nothing it may check).
        TypeError: a keyword argument that names no option.
    """
    from envcheck.pipeline import run
    from envcheck.pipeline.options import CheckOptions

    return run(dataclasses.replace(options or CheckOptions(), **overrides)).report


def fields_doc() -> str:
    """The list of fields in `check`'s docstring: each field of CheckOptions with its help, as help() shows them."""
    import textwrap

    from envcheck.pipeline.options import described

    return "\n".join(textwrap.fill(f"{f.name}: {text}", width=112, initial_indent=" " * 8,
                                    subsequent_indent=" " * 12) for f, text, _flag in described())


# The fields are listed from their own help (envcheck/pipeline/options.py), as the command line's options are.
check.__doc__ = (check.__doc__ or "").replace("{fields}", fields_doc())

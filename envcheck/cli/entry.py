"""The `envcheck` command and `python -m envcheck`.

`envcheck --version` is answered here, before the CLI framework is imported (which costs several times the
interpreter's own start): install scripts and bug reports ask for it often. The answer is byte for byte what the
CLI prints (click's version option: "envcheck, version X"). The check in its plain forms (`envcheck`, `envcheck
--static`, pre-commit's form) runs without the framework too (envcheck/cli/plain_cli.py); anything else goes to the CLI.
"""

from __future__ import annotations

import gc
import sys


def console() -> None:
    """Run the CLI on sys.argv; exits through SystemExit like it."""
    # One short process that builds some hundred thousand objects meant to live as long as it does (modules, the
    # rule pack, the facts) and drops almost none: the collector's passes over them found nothing to free and were
    # 3% of a static check's instructions (mypy raises its threshold for the same reason). Library callers and the
    # pytest plugin keep their own settings.
    gc.set_threshold(100_000, 50, 50)
    if sys.argv[1:] == ["--version"]:
        from envcheck.version import __version__

        sys.stdout.write(f"envcheck, version {__version__}\n")
        sys.stdout.flush()
        return
    from envcheck.cli.plain_cli import applies

    if applies(sys.argv[1:]):
        from envcheck.cli.plain_cli import run

        try:
            code = run(sys.argv[1:])
        finally:
            gc.freeze()  # as the CLI's console(): the interpreter's teardown follows, nothing need be collected
        raise SystemExit(code)
    from envcheck.cli.click_cli import console as cli_console

    cli_console()

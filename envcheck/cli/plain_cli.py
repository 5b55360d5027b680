"""The check in its plain forms, run without click: `envcheck`, `envcheck check`, `envcheck --static` and `envcheck
check --static`, every other option at its default.

These are what pre-commit hooks, install scripts and people type, over and over, and the CLI framework was about a
tenth of a static check (bench/README.md); a repeated check is answered from its last run while nothing it read has
changed (envcheck/pipeline/replay.py). It runs the same check as `envcheck check` (envcheck/pipeline/) and answers byte
for byte as the CLI does, the probes' status line on a terminal included: the report on standard output, exit 0
clean, 1 findings at or above the configuration's fail-on (else error), 2 for a configuration or usage error, 3 for a
bug, 130 when interrupted. The error paths end through the CLI's own (envcheck/cli/output.py's `exit_code`, which
imports click: only a failed check pays for it).

It is taken only where click would write to the standard streams as they are: not on Windows (click writes to its
console through its own stream), not with an ASCII-encoded standard output (click re-wraps that one), not while a
shell asks for completions (`_ENVCHECK_COMPLETE`). Anywhere else, and for any other argument list, the CLI runs.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import sys

TYPE_CHECKING = False  # not typing's: this is the path pre-commit takes on every commit
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from envcheck.pipeline.replay import Recording

__all__ = ["FORMS", "applies", "run"]

FORMS = ((), ("check",), ("--static",), ("check", "--static"))


def _plain_text_stream(stream: object) -> bool:
    encoding = getattr(stream, "encoding", None)
    if stream is None or not encoding or getattr(stream, "errors", None) is None:
        return False
    try:
        return codecs.lookup(encoding).name != "ascii"
    except LookupError:
        return True  # click's own test (is_ascii_encoding) calls such an encoding not ASCII either


def applies(argv: Sequence[str]) -> bool:
    """Whether `argv` (without the program name) is a check this module runs, here, as the CLI would."""
    return (tuple(argv) in FORMS and sys.platform != "win32" and "_ENVCHECK_COMPLETE" not in os.environ
            and _plain_text_stream(sys.stdout) and _plain_text_stream(sys.stderr))


def _check(recording: Recording | None, static: bool) -> tuple[str, int, list[Path]]:
    """The report's text, the exit code, and the rule directories the pack was made of."""
    from envcheck.pipeline import run
    from envcheck.pipeline.options import CheckOptions
    from envcheck.report import render
    from envcheck.rules.rule_pack import builtin_rules_dir
    from envcheck.support.output_text import ProgressLine, printable, use_color

    # Every option at the command line's default: the options click would pass for this argument list.
    options = CheckOptions.command_line(static=static)
    report, rules = run(options, progress=ProgressLine(), recording=recording)
    text = printable(render(report, "text", color=use_color(None, None), verbose=False),
                     getattr(sys.stdout, "encoding", None))
    code = 1 if report.at_or_above(rules.level()) else 0
    return text, code, [builtin_rules_dir(), *rules.config.rule_dirs]


def _write(text: str) -> None:
    sys.stdout.write(text)  # what click.echo(text, nl=False, color=True) does on such a stream
    sys.stdout.flush()


def run(argv: Sequence[str] = ("--static",)) -> int:
    """The exit code of the check `argv` (one of FORMS), its report written; errors reported as the CLI reports
    them. The report of the last run is written again while nothing it read has changed
    (envcheck/pipeline/replay.py)."""
    from envcheck.pipeline import replay

    try:
        replayed = replay.replayed(argv)
        if replayed is not None:
            _write(replayed[0])
            return replayed[1]
        recording = replay.Recording.start(argv)
        try:
            text, code, rule_dirs = _check(recording, static="--static" in argv)
        finally:
            if recording is not None:
                recording.stop()
        _write(text)
        if recording is not None:
            # Keeping the answer is a shortcut for the next run, never a failure of this one.
            with contextlib.suppress(Exception):
                recording.store(text, code, rule_dirs)
        return code
    except (Exception, KeyboardInterrupt) as exc:  # the last line of defence, as in the CLI: a bug is exit 3
        from envcheck.cli.output import exit_code  # imports click: only a failed check pays for it

        failed = exit_code(exc)
        if failed is None:
            raise
        return failed

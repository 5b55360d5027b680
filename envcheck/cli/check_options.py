"""The click options of a check, made from the fields of `CheckOptions` (envcheck/pipeline/options.py).

`offer(*names)` gives a command the options of those fields, each with its field's name, default and help, and hands
the command their values as one argument, `options: CheckOptions`, built as the command line builds it
(`CheckOptions.command_line`). Nothing travels through click's context: what the command declares is what it gets.
The option groups below are the names the commands share; a command lists the groups and fields it offers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from envcheck.cli.output import Seconds, split
from envcheck.pipeline.options import CheckOptions, Flag, described

__all__ = ["CHECKING", "POLICY", "PROJECT", "SOURCES", "fields_offered", "offer", "option_of"]

F = TypeVar("F", bound=Callable[..., Any])

# The groups of options the commands share, in the order --help lists them.
CHECKING = ("select", "ignore", "static", "probe_timeout", "use_cache", "python")  # which rules, how facts are had
SOURCES = ("facts_file", "report_file")  # facts given instead of collected
POLICY = ("rule_dirs", "config", "no_config", "require", "forbid")  # the rules and the project's policy
PROJECT = ("requirements", "extras", "groups", "no_project")  # the project's own files

_FIELDS = {f.name: (f, text, flag) for f, text, flag in described()}


def option_of(name: str) -> Callable[[F], F]:
    """The click option of the field `name` of CheckOptions: its flag, its default and its help, the parameter
    named as the field."""
    f, text, flag = _FIELDS[name]
    if flag is None:
        raise ValueError(f"CheckOptions.{name} is not offered on the command line")
    kwargs: dict[str, Any] = {"metavar": flag.metavar, "help": text + _repeat(flag)}
    if flag.switch:
        kwargs.update(is_flag=True, flag_value=not f.default, default=f.default)
    elif flag.many:
        kwargs.update(multiple=True)
    else:
        kwargs.update(default=f.default)
    if flag.seconds is not None:
        kwargs.update(type=Seconds(flag.seconds), show_default=True)
    if flag.folder:
        kwargs.update(type=click.Path(file_okay=False, path_type=Path))
    return click.option(*flag.names, name, **kwargs)


def _repeat(flag: Flag) -> str:
    if flag.commas:
        return " Repeatable or comma-separated."
    return " Repeatable." if flag.many else ""


def _value(name: str, given: Any) -> Any:
    """A field's value from its option's: a repeatable one as a tuple, comma-separated values split."""
    flag = _FIELDS[name][2]
    if flag is not None and flag.commas:
        return tuple(split(given))
    return tuple(given) if flag is not None and flag.many else given


def offer(*names: str) -> Callable[[F], F]:
    """Decorate a command with the options of these CheckOptions fields; the command is called with their values as
    `options` (a CheckOptions) instead of one argument each."""
    unknown = [n for n in names if n not in _FIELDS]
    if unknown:
        raise ValueError(f"no CheckOptions field {unknown}")

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def with_options(*args: Any, **kwargs: Any) -> Any:
            given = {name: _value(name, kwargs.pop(name)) for name in names}
            return command(*args, options=CheckOptions.command_line(**given), **kwargs)

        made: Any = with_options
        for name in reversed(names):
            made = option_of(name)(made)
        made.offered = names  # what the command offers, for the tests that follow each option to the check
        return made  # type: ignore[no-any-return]

    return decorate


def fields_offered(command: click.Command) -> tuple[str, ...]:
    """The CheckOptions fields a command offers (`offer`), in order."""
    return tuple(getattr(command.callback, "offered", ()))

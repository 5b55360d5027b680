"""Every `envcheck COMMAND --option` that the README, the docs, the rule pack and envcheck's own messages tell a
user to type exists: the command in the click group (a plain `envcheck --flag` is `envcheck check`), each option
on that command. A command that was renamed or never existed (`envcheck plan`) fails here, not in a user's shell.

What counts as a command a user types: an inline code span (between backticks) that starts with `envcheck`,
`python -m envcheck` or `-m envcheck`, and in the fenced shell blocks of markdown (```sh, ```console, ```bash) every
line that runs envcheck. Prose that mentions envcheck ("envcheck checks ...") is not a command.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
import tomllib

from envcheck.cli.click_cli import cli

ROOT = Path(__file__).resolve().parent.parent
_SPAN = re.compile(r"`([^`\n]+)`")
# `envcheck` as a program: at the start, after a pipe or `-m`; never `envcheck-ml`, `envcheck.check` or a path.
_INVOCATION = re.compile(r"(?:^|[|;]\s*|(?:python3?|\{python\}|\S*/python)\s+-m\s+|^-m\s+)envcheck(?=\s|$)")
_FENCE = re.compile(r"^```(\w*)")
_SHELL_FENCES = {"sh", "console", "bash", "shell", "text"}
# Where a command line ends: a pipe, a redirection, another command, a comment.
_END = re.compile(r"\s(?:\||>|2>|&&|;|#)")
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
# Code spans that start with envcheck but are names, not commands: each says what it is.
_NOT_COMMANDS = {"machine NAME": "a JUnit testsuite's name in a --machine report (docs/project.md)"}


@dataclass(frozen=True)
class Named:
    """A command line as a document names it: where (file and line) and the words after `envcheck`."""

    where: str
    words: str


def _invocations(text: str, where: str) -> Iterator[Named]:
    for match in _INVOCATION.finditer(text):
        rest = text[match.end():]
        end = _END.search(rest)
        yield Named(where, (rest[:end.start()] if end else rest).strip())


def _markdown(path: Path) -> Iterator[Named]:
    fence: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.relative_to(ROOT)}:{number}"
        opened = _FENCE.match(line.strip())
        if opened:
            fence = None if fence is not None else opened.group(1)
            continue
        if fence is None:
            for span in _SPAN.findall(line):
                yield from _invocations(span, where)
        elif fence in _SHELL_FENCES:
            command = line.strip().removeprefix("$ ")
            yield from _invocations(command, where)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _spans(text: str, where: str) -> Iterator[Named]:
    for span in _SPAN.findall(text):
        yield from _invocations(span, where)


def _rule_files() -> Iterator[Named]:
    for path in sorted((ROOT / "rules").glob("*.toml")):
        for text in _strings(tomllib.loads(path.read_text(encoding="utf-8"))):
            yield from _spans(text, str(path.relative_to(ROOT)))


def _package_strings() -> Iterator[Named]:
    """The string constants of envcheck's modules: messages, help texts and docstrings users read."""
    for path in sorted((ROOT / "envcheck").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield from _spans(node.value, f"{path.relative_to(ROOT)}:{node.lineno}")


def named_commands() -> list[Named]:
    """Every envcheck command line named in the README, CONTRIBUTING, docs/, the rule pack and the package."""
    docs = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [named for path in docs if path.is_file() for named in _markdown(path)]
    return [*found, *_rule_files(), *_package_strings()]


def _options(command: click.Command) -> set[str]:
    ctx = click.Context(command)
    return {opt for param in command.get_params(ctx) for opt in (*param.opts, *param.secondary_opts)}


def problems(named: Named) -> list[str]:
    """What in this command line does not exist: the command, or an option of it. Empty when all of it does."""
    if named.words in _NOT_COMMANDS:
        return []
    words = named.words.split()
    command: click.Command = cli
    path = ["envcheck"]
    while isinstance(command, click.Group) and words and re.fullmatch(r"[a-z][a-z-]*", words[0]):
        ctx = click.Context(command)
        sub = command.get_command(ctx, words[0])
        if sub is None:
            if command is cli:
                return [f"{named.where}: `envcheck {words[0]}` is no envcheck command"]
            break  # an argument of the group's default, such as a rule name
        command, path, words = sub, [*path, words[0]], words[1:]
    known = _options(command)
    if command is cli:  # `envcheck --static` is `envcheck check --static`
        check = cli.get_command(click.Context(cli), "check")
        assert check is not None
        known |= _options(check)
    options = [opt for word in words for opt in _OPTION.findall(word.lstrip("[("))[:1]
               if word.lstrip("[(").startswith("-")]
    return [f"{named.where}: `{' '.join(path)}` has no option {opt}" for opt in options if opt not in known]


def test_documents_name_envcheck_commands_at_all() -> None:
    """The scan finds what it is meant to: the README's commands, the rule pack's and the package's messages."""
    wheres = {named.where.split(":")[0] for named in named_commands()}
    assert "README.md" in wheres
    assert any(where.startswith("rules/") for where in wheres)
    assert any(where.startswith("envcheck/") for where in wheres)


def test_every_named_command_and_option_exists() -> None:
    """No README line, doc, rule text or message tells a user to run a command or option envcheck does not have."""
    assert [problem for named in named_commands() for problem in problems(named)] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("run `envcheck plan` on that machine", ["x: `envcheck plan` is no envcheck command"], id="plan"),
        pytest.param("`envcheck check --no-such-flag`", ["x: `envcheck check` has no option --no-such-flag"],
                     id="option"),
        pytest.param("`python -m envcheck --statc`", ["x: `envcheck` has no option --statc"], id="plain-form"),
        pytest.param("`envcheck fleet merge --gather-timeout 5 a.json`",
                     ["x: `envcheck fleet merge` has no option --gather-timeout"], id="subcommand-option"),
        pytest.param("`envcheck recommend [--gpu NAME\\|--capability X.Y] --driver V`", [], id="choices"),
        pytest.param("`envcheck --python python` and `python train.py 2>&1 | envcheck explain -v`", [], id="pipe"),
        pytest.param("envcheck plans nothing; `envcheck-ml` and `envcheck.check()`", [], id="prose"),
    ],
)
def test_the_checker_itself(text: str, expected: list[str]) -> None:
    """The check can fail: a made-up command, or an option its command lacks, is named with the place it came from."""
    assert [problem for named in _spans(text, "x") for problem in problems(named)] == expected

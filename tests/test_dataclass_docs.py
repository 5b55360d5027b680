"""Every dataclass in envcheck's process has a docstring: without one, `dataclasses` writes it from
`inspect.signature(cls)`, which on first use compiles the tokenizer's regular expressions (about 5 ms on the static
path, for a text nobody reads). CONTRIBUTING.md, "Risky to touch"."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from _sources import in_process_sources


def _undocumented(sources: Iterable[tuple[str, str]]) -> list[str]:
    """`file: Class` for each class decorated with a dataclass decorator and without a docstring."""
    found = []
    for relative, text in sources:
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.ClassDef)
                    and any("dataclass" in ast.unparse(d) for d in node.decorator_list)
                    and ast.get_docstring(node) is None):
                found.append(f"{relative}: {node.name}")
    return found


def test_every_dataclass_has_a_docstring() -> None:
    assert _undocumented((relative, path.read_text("utf-8")) for relative, path in in_process_sources()) == []


def test_the_guard_finds_an_undocumented_dataclass() -> None:
    source = ("from dataclasses import dataclass\n\n@dataclass(frozen=True, slots=True)\nclass Bare:\n    a: int\n\n"
              "@dataclass(frozen=True)\nclass Told:\n    '''Told.'''\n    a: int\n")
    assert _undocumented([("x.py", source)]) == ["x.py: Bare"]

"""envcheck/support/patterns.py: a lazy pattern answers as the compiled one does, and compiles only when used; and
no envcheck module compiles a text pattern at import."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from _sources import in_process_sources

from envcheck.support import patterns
from envcheck.support.patterns import lazy


@pytest.mark.parametrize(("source", "flags", "text"), [
    (r"(\d+)\.(\d+)", 0, "torch 2.5.1 and 2.6"),
    (r"^lib(cudnn|nccl)\.so\.\d+$", 0, "libnccl.so.2"),
    (r"undefined symbol: (\S+)", re.IGNORECASE, "ImportError: UNDEFINED SYMBOL: _ZN3c10"),
    (r"x*", 0, ""),
])
def test_a_lazy_pattern_answers_as_re_compile_does(source: str, flags: int, text: str) -> None:
    eager, deferred = re.compile(source, flags), lazy(source, flags)
    for _ in range(2):  # the first call compiles; the second goes to the compiled pattern's own methods
        for method in ("match", "fullmatch", "search"):
            got, want = getattr(deferred, method)(text), getattr(eager, method)(text)
            assert (got and got.group(0), got and got.groups()) == (want and want.group(0), want and want.groups())
        assert deferred.findall(text) == eager.findall(text)
        assert [m.span() for m in deferred.finditer(text)] == [m.span() for m in eager.finditer(text)]
        assert deferred.split(text) == eager.split(text)
        assert deferred.sub("#", text) == eager.sub("#", text)
        assert deferred.subn(lambda m: "#", text, 1) == eager.subn(lambda m: "#", text, 1)
    got, want = deferred.search(text, 1, 3), eager.search(text, 1, 3)  # pos and endpos passed on
    assert (got and got.span()) == (want and want.span())
    assert (deferred.pattern, deferred.flags) == (eager.pattern, eager.flags)


def test_a_lazy_pattern_compiles_on_first_use_not_before() -> None:
    broken = lazy("(unclosed")  # would raise at import were it compiled there
    assert broken.pattern == "(unclosed"
    with pytest.raises(re.error):
        broken.search("text")


def _module_level_compiles(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for statement in tree.body:  # only what runs at import: module-level statements, not functions' bodies
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in ast.walk(statement):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args
                    and not (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, bytes))):
                found.append(node.lineno)
    return found


def test_no_module_compiles_a_text_pattern_at_import() -> None:
    # A check imports ~100 modules and uses about a quarter of their patterns; `lazy` keeps the rest off its time.
    offenders = {relative: lines for relative, path in in_process_sources()
                 if (lines := _module_level_compiles(path))}
    assert offenders == {}, f"use envcheck.support.patterns.lazy instead of re.compile at module level: {offenders}"


def test_the_check_finds_a_module_level_compile(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('import re\n_X = re.compile(r"a")\n_B = re.compile(rb"b")\n\n\ndef f():\n'
                      '    return re.compile("c")\n', encoding="utf-8")
    assert _module_level_compiles(module) == [2]


def test_every_lazy_pattern_in_envcheck_compiles() -> None:
    # A pattern is compiled on first use, so a typo would surface only on its path: compile them all here.
    import importlib
    import pkgutil

    import envcheck

    found = []
    for info in pkgutil.walk_packages(envcheck.__path__, "envcheck."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            items = value if isinstance(value, tuple) else (value,)
            for item in items:
                for candidate in (item if isinstance(item, tuple) else (item,)):
                    if isinstance(candidate, patterns.LazyPattern):
                        found.append(candidate)
    assert len(found) > 100  # nearly all of them are module-level names; a few sit in module-level tuples
    for pattern in found:
        assert pattern.flags >= 0  # compiles it (re.error otherwise)

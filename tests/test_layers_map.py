"""The layer map of CONTRIBUTING.md ("The layers") checked against the code: no import cycles, and no module of the
lower layers importing the command line, the reporters or the remedies. Every import counts: at module level, inside
a function (a lazy import is a dependency all the same) and under TYPE_CHECKING."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "envcheck"

# What the lower layers are, and what they must not import (CONTRIBUTING.md says the same in words; a test below
# reads it there).
LOWER = ("facts", "derived", "conditions", "evidence", "engine")
UPPER = ("cli", "report", "remedy")

# Upward imports that stay, each with its reason. The test fails when one goes away, so that this list shrinks.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    """Every module of envcheck/ by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The envcheck modules an import statement loads: `from a.b import c` is a.b.c where c is a module, else a.b."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the module's package upward
            package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module:
            yield name


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] = {t for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                         for t in _imported(module, node)}
    return graph


GRAPH = _graph()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _in(module: str, parts: tuple[str, ...]) -> bool:
    return any(module == f"envcheck.{p}" or module.startswith(f"envcheck.{p}.") for p in parts)


def test_the_graph_holds_lazy_and_type_only_imports() -> None:
    """The graph is made of every import: the pipeline's stages are imported inside its functions, the replay's
    Recording under TYPE_CHECKING; a graph of module-level imports alone would miss both."""
    assert "envcheck.pipeline.stages" in GRAPH["envcheck.pipeline"]
    assert "envcheck.pipeline.replay" in GRAPH["envcheck.pipeline"]
    assert len(MODULES) > 100


def test_the_cycle_finder_finds_a_cycle() -> None:
    """A cycle through three modules is reported as one component (so an empty answer means no cycle)."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    """No module imports, directly or through others, a module that imports it back."""
    assert _cycles(GRAPH) == []


def test_lower_layers_import_no_command_line_report_or_remedy() -> None:
    """No module in facts/, derived/, conditions/, evidence/ or engine.py imports cli/, report/ or remedy/, but for
    the named exceptions, each of which is still needed."""
    upward = {(m, t) for m, targets in GRAPH.items() if _in(m, LOWER) for t in targets if _in(t, UPPER)}
    assert upward == set(EXCEPTIONS)


def test_the_command_line_package_imports_nothing() -> None:
    """envcheck/cli/__init__.py imports nothing, so that `envcheck --version` and the plain check stay free of click
    (cli/entry.py is imported through it)."""
    assert GRAPH["envcheck.cli"] == set()


def test_the_root_keeps_its_shape() -> None:
    """At most 14 modules at the root of envcheck/: the library's face and the core; the rest lives in packages."""
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= 14, root


def _layers_section() -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    return text.split("## The layers", 1)[1].split("\n## ", 1)[0]


def test_the_documented_map_names_every_package_and_root_module() -> None:
    """CONTRIBUTING.md's layer map places every package and root module of envcheck/ (a new one must be placed)."""
    section = _layers_section()
    names = [f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()]
    names += [p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert [n for n in sorted(names) if not re.search(rf"(?<![\w/]){re.escape(n)}", section)] == []


@pytest.mark.parametrize(("words", "parts"), [
    pytest.param("lower", LOWER, id="lower-layers"),
    pytest.param("upper", UPPER, id="upper-layers"),
])
def test_the_documented_rule_is_the_tested_one(words: str, parts: tuple[str, ...]) -> None:
    """The rule CONTRIBUTING.md states ("No module in ... imports ...") names the packages this test checks."""
    rule = re.search(r"No module in (.+?) imports (.+?)[(.;]", " ".join(_layers_section().split()))
    assert rule is not None
    stated = rule.group(1 if words == "lower" else 2)
    assert sorted(re.findall(r"`(\w+)(?:/|\.py)`", stated)) == sorted(parts)

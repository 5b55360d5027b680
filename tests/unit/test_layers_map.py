"""The layer map of CONTRIBUTING.md ("The layers") checked against the code: no import cycles, and every import runs
from a row of the map to the same row or one above it, but for the one named exception (and none from support/).
Every import counts: at module level, inside a function (a lazy import is a dependency all the same) and under
TYPE_CHECKING. The rows are read from the map itself, so the map and the code cannot drift apart."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "envcheck"

# The import that runs up, with its reason (CONTRIBUTING.md names it too). At most one; the test fails when it goes
# away, so that this shrinks to nothing.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("envcheck.sources.project.config", "envcheck.machines.declared"):
        "a configuration's [[tool.envcheck.machines]] is validated where the configuration is read, with the GPU table",
}


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


def _layers_section() -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    return text.split("## The layers", 1)[1].split("\n## ", 1)[0]


def _rows() -> list[set[str]]:
    """The map's rows, top (lowest layer) first: in the section's last code block (the first is the listing of the
    stages), the rows are parted by lines holding only `|`, and a row places each path it names outside
    parentheses: a package or one inside one (`derived/`, `rules/conditions/`), or a module (`rules/engine.py`)."""
    block = _layers_section().split("```")[-2]
    outside, depth = [], 0
    for char in block:  # drop what parentheses hold (a package's modules, described): it may span lines
        depth += char == "("
        if not depth:
            outside.append(char)
        depth -= char == ")" and depth > 0
    rows = re.split(r"\n\s*\|\s*\n", "".join(outside))
    return [set(re.findall(r"(?<![\w/.])((?:\w+/)+|(?:\w+/)*\w+\.py)(?![\w/])", row)) for row in rows]


ROWS = _rows()


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


def _path(module: str) -> str:
    """A module's path inside envcheck/: `rules/engine.py`; a package's is its `__init__.py`."""
    return MODULES[module].relative_to(PACKAGE).as_posix()


def _entry(module: str) -> str | None:
    """The longest path of the map that holds a module: its own (`rules/engine.py`) or a package's above it."""
    path = _path(module)
    held = [name for row in ROWS for name in row if path == name or (name.endswith("/") and path.startswith(name))]
    return max(held, key=len, default=None)


def _rank(module: str) -> int:
    """The row of the map a module sits in, by the longest path that holds it; the package itself
    (envcheck/__init__.py, the library's face) sits with the entry points, in the last row."""
    if module == "envcheck":
        return len(ROWS) - 1
    name = _entry(module)
    assert name is not None, f"{_path(module)} is not in CONTRIBUTING.md's layer map"
    return next(i for i, row in enumerate(ROWS) if name in row)


def _upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(m, t) for m, targets in graph.items() for t in targets if _rank(t) > _rank(m)}


def test_imports_run_up_the_map_but_one() -> None:
    """Every import runs to the same row of the map or a row above it (a lower layer), but for the named exception,
    which is still needed."""
    assert len(EXCEPTIONS) <= 1
    assert _upward(GRAPH) == set(EXCEPTIONS)


def test_support_imports_nothing_above_it() -> None:
    """support/ is what anything may import: it imports only itself, errors.py and version.py."""
    below = {"envcheck.errors", "envcheck.version"}
    assert {(m, t) for m, targets in GRAPH.items() if m.startswith("envcheck.support") for t in targets
            if not t.startswith("envcheck.support") and t not in below} == set()


def test_an_import_from_a_lower_row_up_is_found() -> None:
    """The rule can fail: an import of the command line by the engine, or of the snapshot by support/, is upward."""
    graph = {"envcheck.rules.engine": {"envcheck.cli.output"}, "envcheck.support.versions": {"envcheck.facts.snapshot"},
             "envcheck.cli.output": {"envcheck.rules.engine"}}
    assert _upward(graph) == {("envcheck.rules.engine", "envcheck.cli.output"),
                              ("envcheck.support.versions", "envcheck.facts.snapshot")}


def test_the_command_line_package_imports_nothing() -> None:
    """envcheck/cli/__init__.py imports nothing, so that `envcheck --version` and the plain check stay free of click
    (cli/entry.py is imported through it)."""
    assert GRAPH["envcheck.cli"] == set()


def test_the_root_keeps_its_shape() -> None:
    """At most 8 modules at the root of envcheck/: the entry points, errors and the version; the rest lives in the
    package of its stage."""
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= 8, root


def test_the_documented_map_places_every_module() -> None:
    """CONTRIBUTING.md's layer map places every module of envcheck/ (a new package or root module must be placed); a
    package that only groups others (`sources/`, `rules/`) imports nothing and needs no place of its own."""
    unplaced = [_path(m) for m in MODULES if m != "envcheck" and _entry(m) is None
                and (GRAPH[m] or any(m in targets for targets in GRAPH.values()))]
    assert unplaced == []
    grouping = [_path(m) for m in MODULES if m != "envcheck" and _entry(m) is None]
    assert sorted(grouping) == ["rules/__init__.py", "sources/__init__.py"]


def test_the_listing_of_the_stages_names_every_package() -> None:
    """The listing above the map names every package at the root of envcheck/ and every source of facts."""
    listing = _layers_section().split("```")[1]
    packages = [p for p in [*PACKAGE.iterdir(), *(PACKAGE / "sources").iterdir()] if (p / "__init__.py").is_file()]
    assert [p.name for p in packages if not re.search(rf"(?<![\w/]){p.name}/", listing)] == []


def test_the_map_places_each_name_once() -> None:
    """Each package and root module sits in one row of the map, the lowest first and the entry points last."""
    placed = [name for row in ROWS for name in row]
    assert len(placed) == len(set(placed)), placed
    assert {"version.py", "errors.py", "support/"} == ROWS[0]
    assert {"cli/", "__main__.py"} <= ROWS[-1]


@pytest.mark.parametrize(("importer", "imported"), list(EXCEPTIONS), ids=lambda name: name)
def test_the_documented_exception_is_the_tested_one(importer: str, imported: str) -> None:
    """CONTRIBUTING.md names the import that runs up ("One import runs up ..."), as this test allows it."""
    words = " ".join(_layers_section().split())
    stated = re.search(r"One import runs up(.+?)\. None runs up from `support/`", words)
    assert stated is not None
    for module in (importer, imported):
        assert f"`{'/'.join(module.split('.')[1:])}.py`" in stated.group(1)

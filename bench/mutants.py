"""A small mutation run: how many single-point changes to a module its tests notice.

Each mutant changes one place of the module's syntax tree (a comparison flipped, `and` for `or`, a constant or a
string literal changed, a `not` dropped, an arithmetic operator swapped, a statement replaced by `pass`). The
module is written back with `ast.unparse` into a copy of the checkout (the working tree is never touched), and the
chosen test files run there against it, one mutant at a time, stopping at the first failure. A mutant the tests
pass is a survivor: printed with its line and change, for a reader to judge (some change nothing observable).

    python bench/mutants.py envcheck/rules/engine.py -t tests/test_engine.py --sample 40
    python bench/mutants.py envcheck/support/specifiers.py -t tests/test_specifiers.py --all
    python bench/mutants.py envcheck/rules/engine.py -t tests/test_engine.py --index 93 --index 95   # those two again

Docstrings, annotations and `__all__` are not mutated (changing them changes no behaviour). The copy's unmutated
module, unparsed the same way, must pass the tests first, else nothing is measured. Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWAP_CMP: dict[type, type] = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
                              ast.GtE: ast.Gt, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn,
                              ast.NotIn: ast.In}
SWAP_BIN: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.BitOr: ast.BitAnd,
                              ast.BitAnd: ast.BitOr, ast.Mod: ast.Mult}


def _skipped(tree: ast.Module) -> set[int]:
    """ids of the nodes never mutated: docstrings, annotations, `__all__`."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value,
                                                                                            ast.Constant):
            skip.update(id(n) for n in ast.walk(body[0]))
        annotations = [getattr(node, "returns", None), getattr(node, "annotation", None)]
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            annotations.append(node)
        for sub in annotations:
            if sub is not None:
                skip.update(id(n) for n in ast.walk(sub))
    return skip


def _points(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    """Every (node, kind) that one mutant may change, in a stable order."""
    skip = _skipped(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            yield from ((node, f"cmp{i}") for i, op in enumerate(node.ops) if type(op) in SWAP_CMP)
        elif isinstance(node, ast.BoolOp):
            yield node, "boolop"
        elif isinstance(node, ast.BinOp) and type(node.op) in SWAP_BIN:
            yield node, "binop"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "not"
        elif isinstance(node, ast.Constant) and node.value is not None and not isinstance(node.value, bytes) \
                and node.value is not Ellipsis:
            yield node, "const"
        if isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.Return, ast.If, ast.Continue, ast.Raise)):
            yield node, "drop"


def _mutate(node: ast.AST, kind: str) -> str:
    """Change `node` in place; a short description of the change."""
    before = ast.unparse(node)[:70]
    if kind.startswith("cmp"):
        assert isinstance(node, ast.Compare)
        i = int(kind[3:])
        node.ops[i] = SWAP_CMP[type(node.ops[i])]()
    elif kind == "boolop":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif kind == "binop":
        assert isinstance(node, ast.BinOp)
        node.op = SWAP_BIN[type(node.op)]()
    elif kind == "not":
        assert isinstance(node, ast.UnaryOp)
        node.__class__, node.__dict__ = ast.Call, {"func": ast.Name("bool", ast.Load()), "args": [node.operand],
                                                   "keywords": []}
    elif kind == "const":
        assert isinstance(node, ast.Constant)
        value = node.value
        node.value = (not value if isinstance(value, bool) else value + 1 if isinstance(value, (int, float))
                      else (value + "XX" if value else "XX") if isinstance(value, str) else 0)
    else:  # drop: the statement becomes `pass`
        node.__class__, node.__dict__ = ast.Pass, {"lineno": getattr(node, "lineno", 0)}
    return f"{kind.rstrip('0123456789')}: {before!r} -> {ast.unparse(node)[:70]!r}"


def mutant(source: str, index: int) -> tuple[str, int, str]:
    """(mutated source, line, description) of mutant `index` of `source`."""
    tree = ast.parse(source)
    node, kind = list(_points(tree))[index]
    line = getattr(node, "lineno", 0)
    what = _mutate(node, kind)
    return ast.unparse(ast.fix_missing_locations(tree)), line, what


def _copy(tmp: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tmp / name)
    return tmp


def _passes(copy: Path, tests: list[str], timeout: float) -> bool:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "not slow", *tests]
    try:
        return subprocess.run(cmd, cwd=copy, env=env, capture_output=True, timeout=timeout).returncode == 0
    except subprocess.TimeoutExpired:
        return False  # a mutant that hangs is noticed (killed by the timeout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("module", help="the module to mutate, relative to the checkout")
    parser.add_argument("-t", "--tests", action="append", required=True, help="a test file to run (repeatable)")
    parser.add_argument("--sample", type=int, default=40, help="how many mutants, drawn at random (default 40)")
    parser.add_argument("--all", action="store_true", help="every mutant, not a sample")
    parser.add_argument("--seed", type=int, default=35, help="the sample's seed (the same mutants each run)")
    parser.add_argument("--index", type=int, action="append", help="only this mutant, by its #number (repeatable)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds one mutant's tests may take")
    args = parser.parse_args()
    source = (ROOT / args.module).read_text(encoding="utf-8")
    total = len(list(_points(ast.parse(source))))
    chosen = (list(range(total)) if args.all else args.index if args.index else
              sorted(random.Random(args.seed).sample(range(total), min(args.sample, total))))
    with tempfile.TemporaryDirectory(prefix="envcheck-mutants-") as tmp:
        copy = _copy(Path(tmp))
        target = copy / args.module
        target.write_text(ast.unparse(ast.parse(source)), encoding="utf-8")
        if not _passes(copy, args.tests, args.timeout):
            print(f"the unmutated {args.module} fails these tests: nothing measured", file=sys.stderr)
            return 2
        survivors: list[str] = []
        start = time.monotonic()
        for n, index in enumerate(chosen, 1):
            text, line, what = mutant(source, index)
            target.write_text(text, encoding="utf-8")
            if _passes(copy, args.tests, args.timeout):
                survivors.append(f"  #{index} line {line}: {what}")
                print(f"[{n}/{len(chosen)}] SURVIVED #{index} line {line}: {what}", flush=True)
            else:
                print(f"[{n}/{len(chosen)}] killed #{index}", flush=True)
    killed = len(chosen) - len(survivors)
    print(f"\n{args.module}: {killed}/{len(chosen)} killed ({killed / len(chosen):.0%}) of {total} possible, "
          f"{time.monotonic() - start:.0f} s")
    print("survivors:", *survivors, sep="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

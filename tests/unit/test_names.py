"""envcheck/support/names.py: the one `canonical_name`, and the programs that run in the checked interpreter (the
collector, the probe child) made from their source with it spliced in, since envcheck cannot be imported there."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from envcheck.sources.live import _collector
from envcheck.sources.probes.runner import child_source
from envcheck.support.names import IMPORT_LINE, canonical_name, inline

COLLECTOR = Path(_collector.__file__)


@pytest.mark.parametrize("name", ["torch", "Pytorch_Lightning", "zope.interface", "a--b__c..d", "A-_.B", "-x-",
                                  "NVIDIA-CUDA-RUNTIME-CU12", "ruamel.yaml.clib", "", "_"])
def test_canonical_name_is_packagings(name: str) -> None:
    """PEP 503 as packaging writes it, runs of separators included."""
    assert canonical_name(name) == canonicalize_name(name)


@pytest.mark.parametrize("source", [
    pytest.param(lambda: inline(COLLECTOR.read_text(encoding="utf-8")), id="collector"),
    pytest.param(child_source, id="probe-child"),
])
def test_the_standalone_programs_hold_canonical_name_and_import_nothing_of_envcheck(source: object) -> None:
    """The programs written for the checked interpreter import no envcheck module, define canonical_name once, and
    parse as Python 3.8 (the oldest interpreter they run in)."""
    assert callable(source)
    text = source()
    tree = ast.parse(text, feature_version=(3, 8))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert [m for m in imported if m.split(".")[0] == "envcheck"] == []
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "canonical_name"] == [
        "canonical_name"]


def test_the_spliced_collector_runs_standalone(tmp_path: Path) -> None:
    """The collector's program, loaded by an interpreter that cannot import envcheck (-I: no user site, no
    PYTHONPATH; run from an empty folder), normalises names with the spliced function."""
    program = tmp_path / "collector.py"
    program.write_text(inline(COLLECTOR.read_text(encoding="utf-8")), encoding="utf-8")
    code = ("import runpy, sys; names = runpy.run_path(sys.argv[1], run_name='collector'); "
            "print('envcheck' in sys.modules, names['canonical_name']('Pytorch__Lightning.Bolts'))")
    out = subprocess.run([sys.executable, "-I", "-c", code, str(program)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60, check=False)
    assert (out.returncode, out.stdout) == (0, "False pytorch-lightning-bolts\n"), out.stderr


def test_a_program_without_the_import_line_is_refused() -> None:
    """inline() is told a program that does not import canonical_name as it expects, rather than writing it as is."""
    with pytest.raises(ValueError, match="does not import canonical_name"):
        inline("import os\n")
    assert inline(IMPORT_LINE).count("def canonical_name(") == 1

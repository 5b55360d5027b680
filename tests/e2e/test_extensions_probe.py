"""The extension-imports probe with real compiled extensions, built here with the system's C compiler.

Each test writes real distributions (dist-info with RECORD and Requires-Dist, and a compiled module) into a folder
on the child's PYTHONPATH, runs the probe through the runner in the interpreter of the real torch CPU build, and
evaluates the pack's rules on the result: a module that links a symbol nothing defines raises the loader's own
`undefined symbol`, one that aborts in its init function really kills its process.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _fakes import build_facts, dist_dict, torch_dict, write_dist, write_tree
from _torch import clean_env

from envcheck.facts.probe_results import ProbeResult
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Status
from envcheck.sources.probes.runner import RunOptions, run

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("cc") is None,
                                reason="builds ELF extension modules with the system's C compiler")

_GOOD = """
#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "%(name)s", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_%(name)s(void) { return PyModule_Create(&def); }
"""
# Calls a function that no library defines: linked with -shared (undefined symbols allowed), the loader refuses it
# at import with `undefined symbol: envcheck_symbol_from_another_torch`, as it refuses an extension built for
# another torch.
_UNDEFINED = """
#include <Python.h>
extern int envcheck_symbol_from_another_torch(void);
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "%(name)s", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_%(name)s(void) { envcheck_symbol_from_another_torch(); return PyModule_Create(&def); }
"""
_ABORTS = """
#include <Python.h>
#include <stdlib.h>
PyMODINIT_FUNC PyInit_%(name)s(void) { abort(); return NULL; }
"""


def _build_config(python: str) -> tuple[str, str]:
    """(include directory, extension suffix) of `python`."""
    out = subprocess.run([python, "-c", "import json, sysconfig; print(json.dumps([sysconfig.get_paths()['include'], "
                                        "sysconfig.get_config_var('EXT_SUFFIX')]))"],
                         capture_output=True, text=True, check=True, env=clean_env())
    include, suffix = json.loads(out.stdout)
    return include, suffix


def _extension(site: Path, python: str, dist: str, module: str, source: str, requires: tuple[str, ...],
               package_init: str | None = None) -> None:
    """A distribution `dist` whose RECORD lists a compiled top-level module `module` (and, with `package_init`,
    a package `<module>_pkg` whose __init__.py is that code)."""
    include, suffix = _build_config(python)
    c_file = site.parent / f"{module}.c"
    c_file.write_text(source % {"name": module}, encoding="utf-8")
    target = site / f"{module}{suffix}"
    subprocess.run(["cc", "-shared", "-fPIC", f"-I{include}", str(c_file), "-o", str(target)], check=True,
                   capture_output=True)
    record = [target.name]
    if package_init is not None:
        write_tree(site, {f"{module}_pkg/__init__.py": package_init})
        record.append(f"{module}_pkg/__init__.py")
    write_dist(site, dist, "1.0", requires=requires, record=record)


def _probe(python: str, site: Path) -> ProbeResult:
    results = run(["extension-imports"], RunOptions(python=python, env=clean_env({"PYTHONPATH": str(site)}),
                                                    timeout_s=300))
    return results["extension-imports"]


def _verdicts(result: ProbeResult, *dists: str) -> dict[str, list[str]]:
    """rule id -> the summaries of its findings, for the pack evaluated on the probe's result."""
    facts = build_facts(dists=[dist_dict(n, "1.0") for n in dists] + [dist_dict("torch", "2.13.0+cpu")],
                        torch=torch_dict("2.13.0+cpu", cuda=None))
    facts = dataclasses.replace(facts, probes={"extension-imports": result})
    report = evaluate(rule_pack.load(), facts)
    out: dict[str, list[str]] = {}
    for finding in report.findings:
        if finding.status in (Status.FAIL, Status.WARN, Status.INFO) and finding.rule_id.startswith("EC11"):
            out.setdefault(finding.rule_id, []).append(finding.summary)
    return out


@pytest.fixture
def ext_site(tmp_path: Path) -> Path:
    path = tmp_path / "ext-site"
    path.mkdir()
    return path


def test_undefined_symbol_names_the_distribution(torch_python: str, ext_site: Path) -> None:
    """An extension linking a symbol the loaded libraries lack is reported by EC1101 with the loader's message."""
    _extension(ext_site, torch_python, "fake-attn", "fake_attn_cuda", _UNDEFINED, ("torch",))
    result = _probe(torch_python, ext_site)
    assert result.details["background"] is False  # asked alone: nothing to overlap with
    # Nor is torch imported in the child then: one importer imports everything in turn, torch once, rather than one
    # per distribution each holding its own torch.
    assert result.details["lanes"] == 1
    case = result.cases["fake-attn"]
    assert case["status"] == "error"
    assert "undefined symbol: envcheck_symbol_from_another_torch" in case["message"]
    found = _verdicts(result, "fake-attn")
    assert list(found) == ["EC1101"]
    assert "fake-attn 1.0 does not load (undefined symbol; torch 2.13.0+cpu)" in found["EC1101"][0]


def test_a_crash_costs_only_its_own_distribution(torch_python: str, ext_site: Path) -> None:
    """An extension that aborts at import is `crashed` (SIGABRT); a healthy one after it still imports."""
    _extension(ext_site, torch_python, "aborts-ext", "aborts_ext", _ABORTS, ("numpy",))
    _extension(ext_site, torch_python, "zz-good-ext", "zz_good_ext", _GOOD, ("numpy>=1",))
    result = _probe(torch_python, ext_site)
    assert result.cases["aborts-ext"]["status"] == "crashed"
    assert result.cases["aborts-ext"]["error_class"] == "SIGABRT"
    assert result.cases["zz-good-ext"]["status"] == "ok"
    assert list(_verdicts(result, "aborts-ext", "zz-good-ext")) == ["EC1105"]


def test_unregistered_operator_with_real_torch(torch_python: str, ext_site: Path) -> None:
    """A package registering a fake kernel for an operator its library never defined gets torch's own error."""
    init = ("import torch\n"
            "@torch.library.register_fake('envcheck_missing::nms')\n"
            "def _meta(x):\n    return x\n")
    _extension(ext_site, torch_python, "fakevision", "fakevision", _GOOD, ("torch",), package_init=init)
    result = _probe(torch_python, ext_site)
    case = result.cases["fakevision"]
    assert case["status"] == "error", case
    assert case["module"] == "fakevision_pkg"
    assert "envcheck_missing::nms" in case["message"]
    assert list(_verdicts(result, "fakevision")) == ["EC1102"]


def test_healthy_and_unrelated_distributions(torch_python: str, ext_site: Path) -> None:
    """Healthy extensions give no finding; one that builds on neither torch nor NumPy is not imported at all."""
    _extension(ext_site, torch_python, "good-ext", "good_ext", _GOOD, ("numpy", "torch>=2; extra == 'gpu'"))
    _extension(ext_site, torch_python, "plain-ext", "plain_ext", _UNDEFINED, ("requests",))
    _extension(ext_site, torch_python, "optional-ext", "optional_ext", _UNDEFINED, ("torch; extra == 'gpu'",))
    result = _probe(torch_python, ext_site)
    assert result.status == "ok"
    assert set(result.cases) == {"good-ext"}
    assert result.cases["good-ext"]["status"] == "ok"
    assert _verdicts(result, "good-ext") == {}


# A module that fails at import, and names where NumPy's C API table lives, as the NumPy headers it was built
# against make `import_array()` name it (kept in the binary by its use in the module's docstring).
_NUMPY_TABLE = """
#include <Python.h>
extern int envcheck_symbol_from_another_torch(void);
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "%%(name)s", "%s", -1, NULL};
PyMODINIT_FUNC PyInit_%%(name)s(void) { envcheck_symbol_from_another_torch(); return PyModule_Create(&def); }
"""


def test_numpy_extensions_built_against_numpy_2_are_not_imported(torch_python: str, ext_site: Path) -> None:
    """With NumPy 2 installed, an extension on NumPy alone whose module names NumPy 2's C API location cannot hit
    the NumPy 1.x ABI break and is left out (named in the details); one built against NumPy 1.x's headers, and a
    torch extension, are still imported."""
    _extension(ext_site, torch_python, "np2-ext", "np2_ext", _NUMPY_TABLE % "numpy._core._multiarray_umath",
               ("numpy>=1.22",))
    _extension(ext_site, torch_python, "np1-ext", "np1_ext", _NUMPY_TABLE % "numpy.core._multiarray_umath",
               ("numpy>=1.22",))
    _extension(ext_site, torch_python, "torch-np2-ext", "torch_np2_ext",
               _NUMPY_TABLE % "numpy._core._multiarray_umath", ("torch", "numpy"))
    result = _probe(torch_python, ext_site)
    numpy_major = subprocess.run([torch_python, "-c", "import numpy; print(numpy.__version__.split('.')[0])"],
                                 capture_output=True, text=True, check=True, env=clean_env()).stdout.strip()
    assert numpy_major == "2", "the torch test interpreter is expected to have NumPy 2"
    assert result.details["numpy2_built"] == ["np2-ext"]
    assert set(result.cases) == {"np1-ext", "torch-np2-ext"}
    assert all(case["status"] == "error" for case in result.cases.values())


def test_forked_importers_keep_crash_isolation(torch_python: str, ext_site: Path) -> None:
    """Run with the other probes, the importers are forked from the child that imported torch: an extension that
    aborts is still its own `crashed` case, the one after it still imports, and the probes after it keep their
    results."""
    _extension(ext_site, torch_python, "aborts-torch-ext", "aborts_torch_ext", _ABORTS, ("torch",))
    _extension(ext_site, torch_python, "zz-fake-attn", "zz_fake_attn", _UNDEFINED, ("torch",))
    results = run(["torch-build", "extension-imports", "safetensors"],
                  RunOptions(python=torch_python, env=clean_env({"PYTHONPATH": str(ext_site)}), timeout_s=300))
    result = results["extension-imports"]
    # Forked right after torch was imported, they imported while the other probes ran; after the crash the rest of
    # that distribution went to a new importer forked from the same clean copy (not from the child, which by then
    # had run the other probes).
    assert (result.details["importer"], result.details["background"]) == ("fork", True)
    assert result.cases["aborts-torch-ext"]["status"] == "crashed"
    assert result.cases["aborts-torch-ext"]["error_class"] == "SIGABRT"
    assert "undefined symbol: envcheck_symbol_from_another_torch" in result.cases["zz-fake-attn"]["message"]
    assert results["torch-build"].status == "ok"
    assert results["safetensors"].status == "ok"
    assert list(_verdicts(result, "aborts-torch-ext", "zz-fake-attn")) == ["EC1101", "EC1105"]


# Imports only when another import runs at the same time: each module marks its arrival and waits (up to 60 s) for
# the other's mark, so a run that imports one distribution after the other times out on the first.
_RENDEZVOUS = """
import os, time
here = os.path.dirname(os.path.dirname(__file__))
open(os.path.join(here, "%(me)s.arrived"), "w").close()
for _ in range(6000):
    if os.path.exists(os.path.join(here, "%(other)s.arrived")):
        break
    time.sleep(0.01)
else:
    raise RuntimeError("imported alone")
"""


def test_distributions_import_side_by_side(torch_python: str, ext_site: Path) -> None:
    """Each distribution gets an importer of its own and at least two run at once, so a slow import (torchvision's
    pulls in torch._dynamo) does not wait for the others: two extensions that each wait for the other's import to
    begin both import."""
    for me, other in (("meet-a", "meet-b"), ("meet-b", "meet-a")):
        module = me.replace("-", "_")
        _extension(ext_site, torch_python, me, module, _GOOD, ("torch",),
                   package_init=_RENDEZVOUS % {"me": me, "other": other})
    results = run(["torch-build", "extension-imports"],
                  RunOptions(python=torch_python, env=clean_env({"PYTHONPATH": str(ext_site)}), timeout_s=300))
    result = results["extension-imports"]
    assert result.details["lanes"] >= 2
    for name in ("meet-a", "meet-b"):
        assert result.cases[name]["status"] == "ok", result.cases[name]
        assert result.cases[name]["import_s"] >= 0

"""Which modules the extension-imports probe imports, and which of its recorded failures are about a distribution:
a compiled file that is a library, not a module (torchaudio's lib/_torchaudio.abi3.so, loaded by
torch.ops.load_library), and per-CUDA-major variant folders (cuda-core's cuda/core/cu12 and cu13) are not imported
by name; a real failure behind them still is reported.

The real-import tests build real shared objects with the system's C compiler and run the probe through the runner
in this interpreter (the probe needs no torch for distributions that build on NumPy)."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from _fakes import build_facts, dist_dict, torch_dict, write_dist, write_tree
from _torch import clean_env

from envcheck.derived import extensions
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.snapshot import Facts
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Status
from envcheck.sources.probes import _child
from envcheck.sources.probes.runner import RunOptions, run

_needs_cc = pytest.mark.skipif(sys.platform != "linux" or shutil.which("cc") is None,
                               reason="builds ELF shared objects with the system's C compiler")

_MODULE = """
#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "%(name)s", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_%(name)s(void) { return PyModule_Create(&def); }
"""
_BROKEN_MODULE = """
#include <Python.h>
extern int envcheck_symbol_from_another_torch(void);
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "%(name)s", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_%(name)s(void) { envcheck_symbol_from_another_torch(); return PyModule_Create(&def); }
"""
# A library of operators that its package loads with ctypes (as torchaudio's goes to torch.ops.load_library): no
# PyInit_ function, whatever its file name says.
_LIBRARY = "int envcheck_ops_registered(void) { return 1; }\n"
_BROKEN_LIBRARY = ("extern int envcheck_symbol_from_another_torch(void);\n"
                   "int envcheck_ops_registered(void) { return envcheck_symbol_from_another_torch(); }\n")
# A package that imports the variant folder for the CUDA it finds and takes over its namespace, as cuda-core 1.2's
# cuda/core/__init__.py does (`globals().update(versioned_mod.__dict__)`, __path__ included).
_VARIANT_PICKER = """import importlib
_versioned = importlib.import_module(".cu13", __package__)
globals().update(_versioned.__dict__)
from {package}._impl import *  # noqa
"""
_LOADS_LIBRARY = """import ctypes, os
_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "lib", "_ops.abi3.so"))
assert _lib.envcheck_ops_registered() == 1
"""


def _compile(source: str, target: Path) -> None:
    include = sysconfig.get_paths()["include"]
    c_file = target.with_name(target.name.split(".", 1)[0] + ".c")
    c_file.write_text(source, encoding="utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-shared", "-fPIC", f"-I{include}", str(c_file), "-o", str(target)], check=True,
                   capture_output=True)
    c_file.unlink()


def _ext_suffix() -> str:
    return str(sysconfig.get_config_var("EXT_SUFFIX"))


def _variant_dist(site: Path, package: str, cu13_source: str) -> None:
    """A distribution `package` with the per-CUDA-major folders cu12/ and cu13/ of one module `_impl`."""
    suffix = _ext_suffix()
    write_tree(site, {f"{package}/__init__.py": _VARIANT_PICKER.format(package=package),
                      f"{package}/cu12/__init__.py": "", f"{package}/cu13/__init__.py": ""})
    _compile(_MODULE % {"name": "_impl"}, site / package / "cu12" / f"_impl{suffix}")
    _compile(cu13_source % {"name": "_impl"}, site / package / "cu13" / f"_impl{suffix}")
    write_dist(site, package.replace("_", "-"), "1.0", requires=("numpy",),
               record=[f"{package}/__init__.py", f"{package}/cu12/__init__.py", f"{package}/cu12/_impl{suffix}",
                       f"{package}/cu13/__init__.py", f"{package}/cu13/_impl{suffix}"])


def _library_dist(site: Path, package: str, library_source: str) -> None:
    """A distribution `package` whose lib/_ops.abi3.so is a library its __init__ loads, beside a real nested
    module lib/_real."""
    suffix = _ext_suffix()
    write_tree(site, {f"{package}/__init__.py": _LOADS_LIBRARY, f"{package}/lib/__init__.py": ""})
    _compile(library_source, site / package / "lib" / "_ops.abi3.so")
    _compile(_MODULE % {"name": "_real"}, site / package / "lib" / f"_real{suffix}")
    write_dist(site, package.replace("_", "-"), "1.0", requires=("numpy",),
               record=[f"{package}/__init__.py", f"{package}/lib/__init__.py", f"{package}/lib/_ops.abi3.so",
                       f"{package}/lib/_real{suffix}"])


def _modules(site: Path, name: str) -> list[str]:
    dist = next(d for d in importlib.metadata.distributions(path=[str(site)]) if d.metadata["Name"] == name)
    return _child._ext_modules(dist)[0]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "ext-site"
    path.mkdir()
    return path


# --- which modules the probe imports ---------------------------------------------------------------------------


@_needs_cc
def test_a_library_with_a_module_suffix_is_not_imported_as_a_module(site: Path) -> None:
    """lib/_ops.abi3.so exports no PyInit__ops: the package and its real nested module are imported, it is not."""
    _library_dist(site, "audiolike", _LIBRARY)
    assert _modules(site, "audiolike") == ["audiolike", "audiolike.lib._real"]


@_needs_cc
def test_per_cuda_variant_folders_give_way_to_the_package_above_them(site: Path) -> None:
    """cu12/ and cu13/ are not imported by name; the package that picks one is."""
    _variant_dist(site, "percuda", _MODULE)
    assert _modules(site, "percuda") == ["percuda"]


@pytest.mark.parametrize(("folder", "variant"), [
    pytest.param("cu12", True, id="cu12"), pytest.param("cu118", True, id="cu118"),
    pytest.param("ops_cu13", True, id="suffix"), pytest.param("cuda", False, id="cuda"),
    pytest.param("cu", False, id="bare-cu"), pytest.param("cub", False, id="cub"),
])
def test_cuda_variant_folder_names(folder: str, variant: bool) -> None:
    """Folders named for one CUDA major, alone or as a suffix, are variants; other names are not."""
    assert _child._cuda_variant(folder) is variant


def test_an_unreadable_file_is_left_to_the_import(tmp_path: Path) -> None:
    """A compiled file that cannot be read is imported, and the import decides."""
    assert _child._defines_module(str(tmp_path / "missing.abi3.so"), "missing")


# --- real imports through the probe ----------------------------------------------------------------------------


def _probe(site: Path) -> ProbeResult:
    results = run(["extension-imports"], RunOptions(python=sys.executable, env=clean_env({"PYTHONPATH": str(site)}),
                                                    timeout_s=120))
    return results["extension-imports"]


def _ec11(result: ProbeResult, *dists: str) -> dict[str, list[str]]:
    facts = build_facts(dists=[dist_dict(n, "1.0") for n in dists] + [dist_dict("torch", "2.11.0+cu130")],
                        torch=torch_dict("2.11.0+cu130", cuda="13.0"))
    report = evaluate(rule_pack.load(), dataclasses.replace(facts, probes={"extension-imports": result}))
    out: dict[str, list[str]] = {}
    for finding in report.findings:
        if finding.status in (Status.FAIL, Status.WARN, Status.INFO) and finding.rule_id.startswith("EC11"):
            out.setdefault(finding.rule_id, []).append(finding.summary)
    return out


@_needs_cc
def test_healthy_library_and_variant_layouts_import_cleanly(site: Path) -> None:
    """A package that loads a suffixed library with ctypes and one that picks its CUDA variant import without a
    finding."""
    _library_dist(site, "audiolike", _LIBRARY)
    _variant_dist(site, "percuda", _MODULE)
    result = _probe(site)
    assert result.status == "ok"
    assert {name: (case["status"], case["modules"]) for name, case in result.cases.items()} == {
        "audiolike": ("ok", ["audiolike", "audiolike.lib._real"]), "percuda": ("ok", ["percuda"])}
    assert _ec11(result, "audiolike", "percuda") == {}


@_needs_cc
def test_real_failures_behind_a_library_or_a_variant_are_still_reported(site: Path) -> None:
    """A library that does not load and a CUDA variant that does not load fail their package's import: each is an
    undefined-symbol finding (EC1101), named by its distribution."""
    _library_dist(site, "audiolike", _BROKEN_LIBRARY)
    _variant_dist(site, "percuda", _BROKEN_MODULE)
    result = _probe(site)
    assert {name: case["module"] for name, case in result.cases.items()} == {"audiolike": "audiolike",
                                                                              "percuda": "percuda"}
    assert all("undefined symbol: envcheck_symbol_from_another_torch" in case["message"]
               for case in result.cases.values())
    found = _ec11(result, "audiolike", "percuda")
    assert list(found) == ["EC1101"] and len(found["EC1101"]) == 2


# --- failures recorded by earlier probes -----------------------------------------------------------------------


def _recorded(case: dict[str, Any], cuda: str | None = "13.0") -> Facts:
    facts = build_facts(dists=[dist_dict("torch", "2.11.0"), dist_dict(case["name"], "1.0")],
                        torch=torch_dict("2.11.0", cuda=cuda))
    result = ProbeResult("ok", cases={case["name"]: {k: v for k, v in case.items() if k != "name"}})
    return dataclasses.replace(facts, probes={"extension-imports": result})


_TORCHAUDIO_LIB = {"name": "torchaudio", "status": "error", "error_class": "ImportError",
                   "message": "dynamic module does not define module export function (PyInit__torchaudio)",
                   "module": "torchaudio.lib._torchaudio"}
_CU12 = {"name": "cuda-core", "status": "error", "error_class": "ModuleNotFoundError",
         "message": "No module named 'cuda.core.cu12'", "module": "cuda.core.cu12._context"}


@pytest.mark.parametrize(("case", "cuda"), [
    pytest.param(_TORCHAUDIO_LIB, "13.0", id="library-not-module"),
    pytest.param(_CU12, "13.0", id="cu12-folder-on-cuda-13"),
    pytest.param(_CU12, None, id="cu12-folder-on-cpu-torch"),
    pytest.param({**_CU12, "message": "No module named 'cuda.core.cu118'", "module": "cuda.core.cu118._x"}, "12.8",
                 id="cu118-folder-on-cuda-12"),
])
def test_recorded_failures_about_the_chosen_module_are_not_findings(case: dict[str, Any], cuda: str | None) -> None:
    """A snapshot's failure that only says the probe tried a non-module is no failure of the distribution."""
    facts = _recorded(case, cuda)
    for kind in ("other", "missing-library", "undefined-symbol"):
        assert extensions.import_failures(facts, kind) == []


@pytest.mark.parametrize(("case", "cuda"), [
    pytest.param({**_CU12, "message": "No module named 'cuda.core.cu13'", "module": "cuda.core.cu13._context"},
                 "13.0", id="the-stacks-own-variant-missing"),
    pytest.param({**_CU12, "message": "No module named 'cuda.bindings'", "module": "cuda.core._context"}, "13.0",
                 id="a-dependency-missing"),
    pytest.param({**_CU12, "message": "No module named 'cupy_cu12'", "module": "fastops._C"}, None,
                 id="a-variant-named-dependency-missing"),
    pytest.param({**_TORCHAUDIO_LIB, "message": "initialization failed"}, "13.0", id="a-module-that-raises"),
])
def test_other_recorded_import_errors_stay_findings(case: dict[str, Any], cuda: str | None) -> None:
    """A missing dependency, the stack's own CUDA variant, or a module's own error is still reported."""
    assert [i["name"] for i in extensions.import_failures(_recorded(case, cuda), "other") or []] == [case["name"]]

"""A static check imports only what it runs: no probe machinery, no fix planner for a clean report, no difflib, and
neither the readers of a project's files where there is no project nor conda's records where conda installed
nothing (each module of frozen dataclasses costs its classes' creation on every run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _fakes import FIXTURES, dist_dict, facts_dict, nvml_dict, torch_dict

from envcheck.sources.project.root import find_root

CLEAN = str(FIXTURES / "clean-cuda-venv.json")
UNUSED = ("envcheck.sources.probes", "envcheck.remedy.commands.planner", "envcheck.remedy.fix", "envcheck.fleet",
          "difflib", "logging.handlers")
# What a project's files are read with (sources/project/root.py alone tells whether there is a project), and conda's
# records.
PROJECT_READERS = ("envcheck.sources.project.discover", "envcheck.sources.project.locks",
                   "envcheck.sources.project.pixi", "envcheck.sources.project.requirements", "envcheck.rules.generated",
                   "envcheck.facts.project")
CONDA = ("envcheck.facts.conda",)
# Classes only some checks use, each in a small module imported where it is used (bench/README.md, "Fewer classes on
# the static path"): a probe's result, a GPU (NVIDIA's, AMD's), a CUDA library on LD_LIBRARY_PATH, conda's torch and
# a conda-forge build, a ROCm torch's build, where a rule was written, a rule file, a requirement policy declares,
# error output, a pip install taken apart and the torch it plans for, the uv and conda found, a fix plan's steps.
# A class is named by module and name where its name is not unique in envcheck.
SOMETIMES = ("ProbeResult", "GpuDevice", "AmdGpu", "SharedLibrary", "CondaTorch", "NativeBuild",
             "envcheck.derived.rocm_build:Build", "Where", "RuleFile", "Declared", "ErrorOutput", "PipInstall",
             "TorchVariant", "Found", "Step", "InstallGroup")
# The classes of the pack's data tables that a check reads only for GPUs named in a report or a log, AMD GPUs, a ROCm
# torch or a torch conda installed: a cached pack decodes a table when a derivation first reads it
# (envcheck/cache/pack_data.py).
TABLES_SOMETIMES = ("GpuNames", "AmdGpuNames", "RocmArchTable", "CondaForgeTable", "CondaForgeRelease")
# Of those, what no static check of a cached pack without a configuration uses, whatever the machine: probes, a rule
# parsed, a rule file read, a policy, error output.
NEVER_STATIC = ("ProbeResult", "Where", "RuleFile", "Declared", "ErrorOutput")


def _modules_after_check(args: list[str], cwd: Path | None = None) -> list[str]:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from envcheck.cli.click_cli import cli\n"
        f"result = CliRunner().invoke(cli, {args!r})\n"
        "assert result.exit_code in (0, 1), result.output\n"  # 1: the checked interpreter may have findings
        "print(' '.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=cwd)
    return proc.stdout.split()


def _dataclasses_after_check(args: list[str], cwd: Path | None = None) -> set[str]:
    """"module:Name" of every dataclass an envcheck module loaded by the check defines."""
    code = (
        "import dataclasses, sys\n"
        "from click.testing import CliRunner\n"
        "from envcheck.cli.click_cli import cli\n"
        f"result = CliRunner().invoke(cli, {args!r})\n"
        "assert result.exit_code in (0, 1), result.output\n"
        "for name, module in list(sys.modules.items()):\n"
        "    for obj in vars(module).values() if name.startswith('envcheck') else ():\n"
        "        if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == name:\n"
        "            print(f'{name}:{obj.__qualname__}')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=cwd)
    return set(proc.stdout.split())


def _named(defined: set[str], names: tuple[str, ...]) -> list[str]:
    """The classes of `defined` that `names` name: "Name" wherever it is defined, or "module:Name"."""
    return sorted(d for d in defined if d in names or d.partition(":")[2] in names)


def _among(loaded: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [m for m in loaded if m.startswith(prefixes)]


def test_a_clean_check_from_the_cached_pack_imports_nothing_it_does_not_run() -> None:
    """With the rule pack cached (a second run), a clean check loads no probe, planner, fix or fleet module, and a
    snapshot without a project or conda records loads neither's classes."""
    args = ["check", "--facts", CLEAN, "--no-config", "--fail-on", "never"]
    _modules_after_check(args)  # the first run validates the pack and caches it
    loaded = _modules_after_check(args)
    assert "envcheck.rules.engine" in loaded
    assert _among(loaded, UNUSED) == []
    assert _among(loaded, PROJECT_READERS + CONDA) == []


def test_a_static_check_where_there_is_no_project_imports_none_of_its_readers(tmp_path: Path) -> None:
    """The static check of this interpreter from a folder with no project file at or above it: the project's readers
    and generated rules are never imported. Beside it, the same check in a project imports them (the control: the
    deferral still reads a project)."""
    bare = tmp_path / "bare"
    bare.mkdir()
    assert find_root(bare) is None, f"{bare} is inside a project: the test needs a temporary folder outside one"
    args = ["check", "--static", "--no-config", "--fail-on", "never"]
    loaded = _modules_after_check(args, cwd=bare)
    assert "envcheck.sources.project.root" in loaded  # it did look for a project
    assert _among(loaded, PROJECT_READERS) == []

    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "1"\ndependencies = ["click"]\n')
    loaded = _modules_after_check(args, cwd=project)
    assert _among(loaded, ("envcheck.sources.project.discover", "envcheck.rules.generated",
                           "envcheck.facts.project")) == ["envcheck.facts.project", "envcheck.rules.generated",
                                                          "envcheck.sources.project.discover"]


def test_a_static_check_without_error_output_never_defines_its_observations(tmp_path: Path) -> None:
    """The static check of this interpreter, its pack cached: no error output, so the class of a recognised failure
    (facts/observed.py) is never defined."""
    args = ["check", "--static", "--no-config", "--fail-on", "never"]
    _modules_after_check(args, cwd=tmp_path)  # the first run caches the pack (parsing it scans the examples)
    loaded = _modules_after_check(args, cwd=tmp_path)
    assert "envcheck.sources.live.raw" in loaded  # the control: it did collect
    assert _among(loaded, ("envcheck.facts.observed",)) == []


def test_a_static_check_defines_no_class_it_does_not_use(tmp_path: Path) -> None:
    """The static check of this interpreter, its pack cached, with no configuration: no probe's result, no rule
    parsed or rule file read, no policy, no error output, so none of their classes is defined. The control: the
    run defines the classes it does use (the pack's rules, the facts)."""
    args = ["check", "--static", "--no-config", "--fail-on", "never"]
    _modules_after_check(args, cwd=tmp_path)  # the first run caches the pack
    defined = _dataclasses_after_check(args, cwd=tmp_path)
    assert {"envcheck.rules.model:Rule", "envcheck.facts.snapshot:Facts"} <= defined
    assert _named(defined, NEVER_STATIC) == []


def test_a_check_of_a_cpu_machine_defines_none_of_the_classes_only_some_checks_use(tmp_path: Path) -> None:
    """A snapshot of a CPU machine (pip's torch 2.5.1+cpu, no NVIDIA driver, nothing on LD_LIBRARY_PATH, no
    probes) whose check finds nothing to fix, its pack cached: none of the classes that GPUs, conda, ROCm, probes,
    error output, a policy, rule files, a fix plan or the tables of GPU names and conda-forge's builds need is
    defined, whichever machine runs the test. The control: the snapshot was read (its facts' classes are defined)."""
    snapshot = tmp_path / "cpu.json"
    torch = torch_dict("2.5.1+cpu", cuda=None)
    snapshot.write_text(json.dumps(facts_dict(dists=[dist_dict("torch", "2.5.1+cpu")], torch=torch,
                                              nvml=nvml_dict(status="no-driver", driver=None, cuda=None))))
    args = ["check", "--facts", str(snapshot), "--no-config", "--fail-on", "never"]
    _modules_after_check(args, cwd=tmp_path)  # the first run caches the pack
    defined = _dataclasses_after_check(args, cwd=tmp_path)
    assert {"envcheck.facts.snapshot:TorchBuild", "envcheck.facts.gpus:NvmlFacts"} <= defined
    assert _named(defined, SOMETIMES + TABLES_SOMETIMES) == []

#!/usr/bin/env python3
"""Check the distributions that `python -m build` wrote, as a user gets them: CI's smoke job, the release workflow
and CONTRIBUTING.md's check after a build all run this one script.

    python .ci/verify_dist.py DIST_DIR [--torch | --torch-python PATH]

1. DIST_DIR holds one wheel and one sdist of envcheck-ml at envcheck/version.py's version, and `twine check
   --strict` passes both (twine must be installed for the interpreter that runs this script).
2. The wheel holds exactly the package's files besides its .dist-info: every file under envcheck/ (the modules, the
   JSON schemas, py.typed, the child sources that the probes and the collector run in the checked interpreter) and
   every file under rules/ as envcheck/_rules/ (the rule files and the data tables of rules/data/). The sdist holds
   each of them at its source path. The expected list is read from the source tree beside this script, never
   written down, so a new rule file or table is expected as soon as it exists.
3. The wheel alone is installed (its dependencies from the configured index) into a fresh venv in a temporary
   folder and run from there, so the checkout cannot be imported: `envcheck --version`, `envcheck rule EC0401`,
   `envcheck rule --all`, `envcheck` and `python -m envcheck --static` on their own venv, static checks (text and
   JSON) and `envcheck facts` of another fresh venv, and, with --torch or --torch-python, a full check (the probes
   run) of an interpreter with the CPU build of torch. --torch makes that venv as the test suite does
   (TORCH_REQUIREMENT; ENVCHECK_TEST_TORCH_INDEX_URL names PyTorch's CPU index).

Exit status: 0 when every check passed; 1 at the first that failed, with one line saying what; 2 on bad usage.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "envcheck_ml"  # the normalized name in the files' names (PEP 427, PEP 625)
# The same torch as the test suite's torch_python fixture (tests/_torch.py; a test keeps the two equal).
TORCH_REQUIREMENT = "torch==2.13.0+cpu"
BIN = "Scripts" if os.name == "nt" else "bin"
_TIMEOUT_S = 1800  # a guard against a hung install, not a timing assertion
_NOT_SHIPPED = frozenset({".pyc", ".pyo"})
# Kinds of data the wheel must have (a source tree without any is not this project's): paths inside the wheel.
_SCHEMA = r"envcheck/schemas/[^/]+\.json"
_RULE_FILE = r"envcheck/_rules/[^/]+\.toml"
_DATA_TABLE = r"envcheck/_rules/data/[^/]+\.toml"


class Failed(Exception):
    """A check that did not pass; the message says what was wrong."""


def source_version(root: Path = ROOT) -> str:
    """`__version__` in envcheck/version.py: the version's one source (pyproject.toml's [tool.hatch.version])."""
    text = (root / "envcheck" / "version.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    if match is None:
        raise Failed("envcheck/version.py has no `__version__ = \"...\"` line")
    return match.group(1)


def _tree(folder: Path) -> list[str]:
    """The files under `folder` that a build ships, relative to it: no byte code, no __pycache__."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix not in _NOT_SHIPPED)


def expected_wheel_files(root: Path = ROOT) -> frozenset[str]:
    """What the wheel must hold besides its .dist-info: envcheck/ as it is, rules/ as envcheck/_rules/ (the place
    envcheck/support/resources.py reads the shipped pack from)."""
    files = {f"envcheck/{name}" for name in _tree(root / "envcheck")}
    files |= {f"envcheck/_rules/{name}" for name in _tree(root / "rules")}
    # A walk from the wrong folder, or a tree that lost a kind of data, must not make an empty list that passes.
    for needed in ("envcheck/__init__.py", "envcheck/sources/probes/_child.py", "envcheck/sources/live/_collector.py",
                   "envcheck/py.typed"):
        if needed not in files:
            raise Failed(f"{root} has no {needed[len('envcheck/'):]} under envcheck/: not an envcheck source tree")
    for kind, pattern in (("JSON schema", _SCHEMA), ("rule file", _RULE_FILE), ("data table", _DATA_TABLE)):
        if not any(re.fullmatch(pattern, name) for name in files):
            raise Failed(f"{root} has no {kind} ({pattern}): not an envcheck source tree")
    return frozenset(files)


def check_wheel_files(names: Iterable[str], version: str, root: Path = ROOT) -> str:
    """Raise Failed unless `names` (a wheel's members) are exactly the expected files plus the .dist-info; else
    return a one-line account of what the wheel holds."""
    dist_info = f"{DISTRIBUTION}-{version}.dist-info/"
    names = set(names)
    shipped = {n for n in names if not n.startswith(dist_info)}
    expected = expected_wheel_files(root)
    missing, stray = sorted(expected - shipped), sorted(shipped - expected)
    problems = [f"missing from the wheel: {', '.join(missing)}"] if missing else []
    problems += [f"in the wheel but not in the package: {', '.join(stray)}"] if stray else []
    if f"{dist_info}METADATA" not in names:
        problems.append(f"the wheel has no {dist_info}METADATA")
    if problems:
        raise Failed("; ".join(problems))

    def count(pattern: str) -> int:
        return sum(1 for name in expected if re.fullmatch(pattern, name))

    return (f"{len(names)} files: {count(r'envcheck/(?!_rules/).+')} under envcheck/ ({count(_SCHEMA)} schemas, "
            f"the probes' and the collector's child sources), {count(_RULE_FILE)} rule files, "
            f"{count(_DATA_TABLE)} data tables, {len(names) - len(shipped)} in {dist_info}")


def check_sdist_files(names: Iterable[str], root: Path = ROOT) -> None:
    """Raise Failed unless the sdist's members (relative to its top folder) hold the package, the rule pack and
    pyproject.toml at their source paths: what a build from the sdist needs."""
    needed = {f"envcheck/{n}" for n in _tree(root / "envcheck")} | {f"rules/{n}" for n in _tree(root / "rules")}
    missing = sorted((needed | {"pyproject.toml"}) - set(names))
    if missing:
        raise Failed(f"missing from the sdist: {', '.join(missing)}")


def find_dists(dist_dir: Path, version: str) -> tuple[Path, Path]:
    """The wheel and the sdist of `version` in `dist_dir`; Failed unless there is exactly one of each and nothing
    else (the release uploads the whole folder)."""
    wheel = dist_dir / f"{DISTRIBUTION}-{version}-py3-none-any.whl"
    sdist = dist_dir / f"{DISTRIBUTION}-{version}.tar.gz"
    found = sorted(p.name for p in dist_dir.iterdir()) if dist_dir.is_dir() else []
    if found != sorted([wheel.name, sdist.name]):
        raise Failed(f"{dist_dir} should hold exactly {wheel.name} and {sdist.name} (the version in "
                     f"envcheck/version.py); it holds {', '.join(found) or 'nothing'}")
    return wheel, sdist


def _run(argv: Sequence[str], cwd: Path, env: dict[str, str], codes: Sequence[int] = (0,)) -> str:
    """Run `argv`; its standard output, or Failed naming the command, the exit code and the output's tail."""
    try:
        proc = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=_TIMEOUT_S,
                              check=False, stdin=subprocess.DEVNULL, encoding="utf-8", errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Failed(f"`{' '.join(argv)}`: {exc}") from exc
    if proc.returncode not in codes:
        tail = (proc.stdout + proc.stderr).strip()[-3000:]
        raise Failed(f"`{' '.join(argv)}` exited {proc.returncode}:\n{tail}")
    return proc.stdout


def _clean_env(cache: Path) -> dict[str, str]:
    """This environment without anything that could make the install import the checkout or check another
    environment; envcheck's cache in a folder of its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "CONDA_PREFIX")
           and not k.startswith("ENVCHECK_")}
    env.update({"PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "ENVCHECK_CACHE_DIR": str(cache),
                "PYTHONUTF8": "1"})
    return env


def _venv(path: Path, cwd: Path, env: dict[str, str]) -> Path:
    _run([sys.executable, "-m", "venv", str(path)], cwd, env)
    return path / BIN / ("python.exe" if os.name == "nt" else "python")


def rule_ids(root: Path = ROOT) -> frozenset[str]:
    """The rule ids that rules/*.toml declare (`id = "EC0401"` lines)."""
    return frozenset(match for path in (root / "rules").glob("*.toml")
                     for match in re.findall(r'^id = "(EC\d{4})"$', path.read_text(encoding="utf-8"), re.MULTILINE))


def check_json_report(text: str, python: Path, *, full: bool, root: Path = ROOT) -> str:
    """Raise Failed unless `text` is a JSON report of `python` with a verdict for every rule of the pack and no
    collection problem; a full check must also have run every probe (nothing skipped, no error)."""
    try:
        report: dict[str, Any] = json.loads(text)
    except ValueError as exc:
        raise Failed(f"the JSON report is not JSON ({exc}): {text[:300]!r}") from exc
    if Path(report["target"]["python"]) != python:
        raise Failed(f"the report checked {report['target']['python']}, not {python}")
    missing = sorted(rule_ids(root) - {f["id"] for f in report["findings"]})
    if missing:
        raise Failed(f"the report has no verdict for {', '.join(missing)}: the installed rule pack is not the source's")
    if report["collection_problems"]:
        raise Failed(f"collection problems: {report['collection_problems']}")
    summary: dict[str, int] = report["summary"]
    if summary["error"] or (full and summary["skipped"]):
        raise Failed(f"the full check did not run every rule (summary {summary}): "
                     f"{[(f['id'], f['detail']) for f in report['findings'] if f['status'] in ('error', 'skipped')]}")
    return ", ".join(f"{count} {status}" for status, count in summary.items() if count)


def install_and_run(wheel: Path, version: str, torch_python: Path | None, make_torch: bool) -> None:
    """Install the wheel alone into a fresh venv outside the checkout and run it the ways a user does."""
    with tempfile.TemporaryDirectory(prefix="envcheck-verify-") as tmp:
        work = Path(tmp)
        env = _clean_env(work / "cache")
        python = _venv(work / "installed", work, env)
        _run([str(python), "-m", "pip", "install", "--quiet", str(wheel.resolve())], work, env)
        where = _run([str(python), "-c", "import envcheck; print(envcheck.__file__)"], work, env).strip()
        if not Path(where).resolve().is_relative_to((work / "installed").resolve()):
            raise Failed(f"envcheck was imported from {where}, not from the fresh venv")
        _say(f"installed {wheel.name} alone into a fresh venv: envcheck imports from {where}")
        envcheck = str(work / "installed" / BIN / "envcheck")

        out = _run([envcheck, "--version"], work, env).strip()
        if out != f"envcheck, version {version}":
            raise Failed(f"`envcheck --version` said {out!r}, expected 'envcheck, version {version}'")
        _say(f"envcheck --version: {out}")
        out = _run([envcheck, "rule", "EC0401"], work, env)
        if not out.startswith("EC0401 gpu-architecture-not-in-torch-build"):
            raise Failed(f"`envcheck rule EC0401` said {out[:200]!r}")
        _say("envcheck rule EC0401: the rule's documentation")
        listed = set(re.findall(r"^(EC\d{4}) ", _run([envcheck, "rule", "--all"], work, env), re.MULTILINE))
        if listed != rule_ids():
            raise Failed(f"`envcheck rule --all` lists {len(listed)} rules, rules/*.toml declares {len(rule_ids())}")
        _say(f"envcheck rule --all: all {len(listed)} rules of rules/*.toml")

        out = _run([envcheck], work, env, codes=(0, 1))
        _say(f"envcheck (its own interpreter, found with nothing activated): {out.strip().splitlines()[-1]}")
        out = _run([str(python), "-m", "envcheck", "--static"], work, env, codes=(0, 1))
        _say(f"python -m envcheck --static: {out.strip().splitlines()[-1]}")

        checked = _venv(work / "checked", work, env)
        out = _run([envcheck, "--static", "--python", str(checked)], work, env, codes=(0, 1))
        if f"checked {checked}" not in out:
            raise Failed(f"`envcheck --static --python {checked}` did not say it checked that interpreter:\n{out}")
        _say(f"envcheck --static --python <a fresh venv>: {out.strip().splitlines()[-1]}")
        out = _run([envcheck, "check", "--static", "--no-cache", "--format", "json", "--python", str(checked)],
                   work, env, codes=(0, 1))
        _say(f"envcheck check --static --format json --python <a fresh venv>: "
             f"{check_json_report(out, checked, full=False)}")
        try:
            facts = json.loads(_run([envcheck, "facts", "--python", str(checked)], work, env))
        except ValueError as exc:
            raise Failed(f"`envcheck facts` did not print JSON: {exc}") from exc
        _say(f"envcheck facts --python <a fresh venv>: a snapshot with {len(facts)} sections")

        if make_torch:
            torch_python = _venv(work / "torch", work, env)
            index = os.environ.get("ENVCHECK_TEST_TORCH_INDEX_URL")
            _run([str(torch_python), "-m", "pip", "install", "--quiet", "--only-binary=:all:",
                  *(["--extra-index-url", index] if index else []), TORCH_REQUIREMENT, "numpy", "safetensors"],
                 work, env)
            _say(f"made a venv with {TORCH_REQUIREMENT}, numpy and safetensors")
        if torch_python is not None:
            out = _run([envcheck, "check", "--no-cache", "--format", "json", "--python", str(torch_python)],
                       work, env, codes=(0, 1))
            _say(f"envcheck check --format json --python <the CPU-torch venv> (probes run): "
                 f"{check_json_report(out, torch_python, full=True)}")


def _say(line: str) -> None:
    sys.stdout.write(f"ok: {line}\n")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="verify_dist.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("dist_dir", type=Path, help="the folder `python -m build --outdir` wrote")
    torch = parser.add_mutually_exclusive_group()
    torch.add_argument("--torch", action="store_true", help=f"make a venv with {TORCH_REQUIREMENT} and check it fully")
    torch.add_argument("--torch-python", type=Path, help="fully check this interpreter (it has the CPU build of torch)")
    args = parser.parse_args(argv)
    try:
        version = source_version()
        wheel, sdist = find_dists(args.dist_dir, version)
        _say(f"{args.dist_dir}: {wheel.name}, {sdist.name} (envcheck/version.py says {version})")
        if importlib.util.find_spec("twine") is None:
            raise Failed(f"twine is not installed for {sys.executable}: {sys.executable} -m pip install twine")
        _run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], ROOT, dict(os.environ))
        _say("twine check --strict: both pass")
        with zipfile.ZipFile(wheel) as zf:
            _say(f"the wheel holds the package's files and no others: {check_wheel_files(zf.namelist(), version)}")
        with tarfile.open(sdist) as tf:
            check_sdist_files(str(PurePosixPath(*PurePosixPath(m.name).parts[1:])) for m in tf.getmembers()
                              if m.isfile())
        _say("the sdist holds the package, the rule pack and pyproject.toml")
        install_and_run(wheel, version, args.torch_python.absolute() if args.torch_python else None, args.torch)
    except Failed as exc:
        sys.stderr.write(f"FAILED: {exc}\n")
        return 1
    _say("every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

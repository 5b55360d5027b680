"""`envcheck.check()` for install scripts, and the one-liner `python -m envcheck --require ... --forbid ...`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _fakes import FIXTURES

import envcheck
from envcheck.errors import ConfigError, EnvcheckError
from envcheck.rules.model import Report, Status

CONFLICT = str(FIXTURES / "torchvision-pin-conflict.json")
ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_import_envcheck_imports_nothing_else(tmp_path: Path) -> None:
    """`import envcheck` loads no other envcheck module and neither typing nor packaging: install scripts pay
    for the check only when they call it."""
    proc = _python("import sys, envcheck; print(sorted(m for m in sys.modules if m.split('.')[0] in "
                   "('envcheck', 'typing', 'packaging', 'click')))", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['envcheck']"


def test_check_returns_a_report_with_policy_verdicts() -> None:
    """check(require=..., forbid=...) evaluates the pack plus those requirements on the facts given."""
    report = envcheck.check(facts_file=CONFLICT, no_config=True, require=["torch>=2.6"], forbid=["torchvision"])
    assert isinstance(report, Report)
    by_id = {f.rule_id: f for f in report.findings}
    assert by_id["EC9901"].status is Status.PASS  # 2.13.0+cpu
    assert by_id["EC9950"].status is Status.FAIL
    assert by_id["EC9950"].commands == (("/opt/venv/bin/python", "-m", "pip", "uninstall", "-y", "torchvision"),)
    assert {f.rule_id for f in report.at_or_above("error")} == {"EC0702", "EC9950"}


def test_check_reads_the_project_configuration(tmp_path: Path) -> None:
    """The configuration is found from project_dir (or named with config=); a bad one raises ConfigError."""
    (tmp_path / "pyproject.toml").write_text('[tool.envcheck]\nforbid = ["torch"]\n', encoding="utf-8")
    found = envcheck.check(facts_file=CONFLICT, project_dir=tmp_path)
    assert [f.rule_id for f in found.at_or_above("error") if f.area == "project"] == ["EC9950"]
    named = envcheck.check(facts_file=CONFLICT, config=tmp_path / "pyproject.toml", select=["EC02"])
    assert {f.rule_id[:4] for f in named.findings} == {"EC02", "EC99"}
    (tmp_path / "pyproject.toml").write_text('[tool.envcheck]\nforbid = "torch"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"key 'tool\.envcheck\.forbid': expected a list of strings"):
        envcheck.check(facts_file=CONFLICT, project_dir=tmp_path)


def test_check_errors_are_envcheck_errors() -> None:
    """Bad input raises EnvcheckError, never prints and never exits."""
    with pytest.raises(EnvcheckError, match="no rule matches 'EC0999'"):
        envcheck.check(facts_file=CONFLICT, no_config=True, select=["EC0999"])


def test_check_takes_an_options_object_and_overrides() -> None:
    """check(options, **overrides): the options' fields as given, the keywords replacing them; a keyword that
    names no option is a TypeError."""
    from envcheck.pipeline import CheckOptions

    options = CheckOptions(facts_file=CONFLICT, no_config=True, select=["EC0702"])
    assert [f.rule_id for f in envcheck.check(options).findings] == ["EC0702"]
    narrowed = envcheck.check(options, select=["EC02"], forbid=["torchvision"])
    assert {f.rule_id[:4] for f in narrowed.findings} == {"EC02", "EC99"}
    assert options.select == ["EC0702"]  # the options object is left as it was
    with pytest.raises(TypeError, match="static_tier"):
        envcheck.check(options, static_tier=True)


def test_check_reads_a_pasted_report() -> None:
    """report_file: the environment a pasted report describes, named by the report's target line."""
    report = envcheck.check(report_file=str(FIXTURES / "reports" / "torch-2.6-rtx5090d.txt"), no_config=True)
    assert report.target is not None and report.target.source == "snapshot"
    assert report.target.reason.startswith("from the report ")


def test_check_stays_a_function_after_the_library_module_is_imported() -> None:
    """Importing envcheck.api (as the CLI does) leaves envcheck.check the function: no submodule shares its name."""
    import inspect

    import envcheck.api

    assert inspect.isfunction(envcheck.check)
    report = envcheck.check(facts_file=CONFLICT, no_config=True, select=["EC0702"])
    assert [f.status for f in report.findings] == [Status.FAIL]
    assert envcheck.pipeline.stages.gather is not None


def test_check_live_static_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """In a fresh process: the function works on its first and second call, on this very interpreter."""
    code = ("import envcheck\n"
            "for _ in range(2):\n"
            "    r = envcheck.check(static=True, no_config=True, require=['pytest'], forbid=['no-such-dist-x'])\n"
            "    print(sorted((f.rule_id, f.status.value) for f in r.findings if f.area == 'project'))\n"
            "print(r.python)\n")
    proc = _python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    first, second, python = proc.stdout.splitlines()
    assert first == second == "[('EC9901', 'pass'), ('EC9950', 'pass')]"
    assert python == sys.executable


def test_python_m_envcheck_one_liner(tmp_path: Path) -> None:
    """`python -m envcheck --require ... --forbid ...` exits 1 naming what is missing and what is forbidden."""
    # --select EC99: only the policy rules, so that whatever else this environment has cannot change the answer.
    proc = subprocess.run([sys.executable, "-m", "envcheck", "--static", "--select", "EC99", "--require", "pytest>=7",
                           "--require",
                           "no-such-dist-x>=1", "--forbid", "pytest", "--format", "json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr
    found = {f["id"]: f for f in json.loads(proc.stdout)["findings"] if f["area"] == "project"}
    assert {i: f["status"] for i, f in found.items()} == {"EC9901": "pass", "EC9902": "fail", "EC9950": "fail"}
    assert found["EC9902"]["summary"] == "the project requires no-such-dist-x>=1; found no-such-dist-x (not installed)"
    ok = subprocess.run([sys.executable, "-m", "envcheck", "--static", "--select", "EC99", "--require", "pytest>=7"],
                        cwd=tmp_path,
                        capture_output=True, text=True, timeout=120, check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr

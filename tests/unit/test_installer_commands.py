"""Commands for the environment's installer (envcheck/remedy/commands/installers.py): pip, uv pip, conda remove,
ensurepip, by hand."""

from __future__ import annotations

from typing import Any

import pytest
from _fakes import build_facts, dist_dict, facts_dict

from envcheck.facts.snapshot import Facts
from envcheck.remedy import fix as fix_mod
from envcheck.remedy.commands.installers import choose, for_environment
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Finding, Severity, Status

PY = "/opt/venv/bin/python"
PREFIX = "/opt/venv"
PIP = (PY, "-m", "pip")
UV = "uv"


def _facts(installer: dict[str, Any] | None, *, conda_prefix: bool = False, **kwargs: Any) -> Facts:
    data = facts_dict(python={"conda": conda_prefix}, **kwargs)
    if installer is not None:
        data["installer"] = {"pip": True, "ensurepip": True, "uv_venv": None, "uv": None, "conda": None,
                             "conda_owned": {}, **installer}
    return Facts.from_dict(data, file="<test>")


PIP_VENV = {"pip": True, "uv": UV}
UV_VENV = {"pip": False, "uv_venv": "0.13.9", "uv": UV}
SEEDED_UV_VENV = {"pip": True, "uv_venv": "0.13.9", "uv": UV}
NO_PIP = {"pip": False, "uv": "/home/me/.local/bin/uv"}
UV_VENV_NO_UV = {"pip": True, "uv_venv": "0.13.9", "uv": None}
BARE = {"pip": False, "uv": None, "ensurepip": True}
NOTHING = {"pip": False, "uv": None, "ensurepip": False}


@pytest.mark.parametrize(("installer", "argv", "expected"), [
    pytest.param(None, (*PIP, "install", "numpy<2"), [(*PIP, "install", "numpy<2")], id="old-snapshot-pip"),
    pytest.param(PIP_VENV, (*PIP, "install", "numpy<2"), [(*PIP, "install", "numpy<2")], id="pip-venv"),
    pytest.param(UV_VENV, (*PIP, "install", "numpy<2"), [(UV, "pip", "install", "--python", PY, "numpy<2")],
                 id="uv-venv"),
    pytest.param(UV_VENV, (*PIP, "uninstall", "-y", "apex"), [(UV, "pip", "uninstall", "--python", PY, "apex")],
                 id="uv-uninstall-has-no-y"),
    pytest.param(SEEDED_UV_VENV, (*PIP, "install", "x"), [(UV, "pip", "install", "--python", PY, "x")],
                 id="uv-venv-with-pip-still-uv"),
    pytest.param(NO_PIP, (*PIP, "install", "x"), [("/home/me/.local/bin/uv", "pip", "install", "--python", PY, "x")],
                 id="no-pip-uv-by-path"),
    pytest.param(UV_VENV_NO_UV, (*PIP, "install", "x"), [(*PIP, "install", "x")], id="uv-venv-no-uv-pip-inside"),
    pytest.param(BARE, (*PIP, "install", "x"), [(PY, "-m", "ensurepip"), (*PIP, "install", "x")],
                 id="bootstrap-pip"),
    pytest.param(UV_VENV, (*PIP, "install", "-I", "--no-input", "--disable-pip-version-check", "--force-reinstall",
                           "--no-deps", "torch==2.13.0+cpu", "--index-url", "https://download.pytorch.org/whl/cpu"),
                 [(UV, "pip", "install", "--python", PY, "--reinstall", "--force-reinstall", "--no-deps",
                   "torch==2.13.0+cpu", "--index-url", "https://download.pytorch.org/whl/cpu")], id="uv-options"),
    pytest.param(UV_VENV, ("/usr/bin/python3", "-m", "pip", "install", "x"),
                 [("/usr/bin/python3", "-m", "pip", "install", "x")], id="another-interpreter-untouched"),
    pytest.param(UV_VENV, (PY, "-m", "venv", "/tmp/v"), [(PY, "-m", "venv", "/tmp/v")], id="not-pip-untouched"),
    pytest.param(UV_VENV, (*PIP, "download", "x"), [(PY, "-m", "ensurepip"), (*PIP, "download", "x")],
                 id="subcommand-uv-lacks"),
])
def test_pip_command_for_installer(installer: dict[str, Any] | None, argv: tuple[str, ...],
                                   expected: list[tuple[str, ...]]) -> None:
    """A rule's `python -m pip` command becomes what the environment's installer runs."""
    rendered = for_environment([argv], _facts(installer))
    assert list(rendered.commands) == expected
    assert rendered.by_hand == ""


def test_ensurepip_comes_once_before_every_pip_command() -> None:
    """Two pip commands in an environment without pip or uv share one ensurepip step, placed first."""
    rendered = for_environment([(*PIP, "uninstall", "-y", "a"), (*PIP, "install", "b")], _facts(BARE))
    assert rendered.commands == ((PY, "-m", "ensurepip"), (*PIP, "uninstall", "-y", "a"), (*PIP, "install", "b"))


def test_nothing_to_install_with_means_by_hand() -> None:
    """Without pip, uv or ensurepip no command is printed; the by-hand text names the pip command to run later."""
    rendered = for_environment([(*PIP, "install", "numpy<2")], _facts(NOTHING))
    assert rendered.commands == ()
    assert "make pip or uv available" in rendered.by_hand
    assert f"{PY} -m pip install 'numpy<2'" in rendered.by_hand


def _conda(**changes: Any) -> Facts:
    installer = {"pip": True, "conda": "conda", "conda_owned": {"torch": "pytorch", "numpy": "numpy"}, **changes}
    return _facts(installer, conda_prefix=True)


@pytest.mark.parametrize(("facts", "argv", "expected"), [
    pytest.param(_conda(), (*PIP, "uninstall", "-y", "torch"), [("conda", "remove", "-p", PREFIX, "-y", "pytorch")],
                 id="conda-owned"),
    pytest.param(_conda(), (*PIP, "uninstall", "-y", "Torch", "apex"),
                 [("conda", "remove", "-p", PREFIX, "-y", "pytorch"), (*PIP, "uninstall", "-y", "apex")],
                 id="split"),
    pytest.param(_conda(), (*PIP, "uninstall", "-y", "apex"), [(*PIP, "uninstall", "-y", "apex")], id="pip-owned"),
    pytest.param(_conda(), (*PIP, "install", "numpy<2"), [(*PIP, "install", "numpy<2")], id="installs-stay-pip"),
    pytest.param(_conda(conda=None), (*PIP, "uninstall", "-y", "torch"), [(*PIP, "uninstall", "-y", "torch")],
                 id="no-conda-found"),
    pytest.param(_conda(), (*PIP, "uninstall", "-y", "-r", "req.txt"), [(*PIP, "uninstall", "-y", "-r", "req.txt")],
                 id="requirements-file-left-to-pip"),
    pytest.param(_conda(pip=False, uv="uv"), (*PIP, "uninstall", "-y", "numpy", "apex"),
                 [("conda", "remove", "-p", PREFIX, "-y", "numpy"), ("uv", "pip", "uninstall", "--python", PY, "apex")],
                 id="conda-and-uv"),
])
def test_conda_removes_what_conda_installed(facts: Facts, argv: tuple[str, ...],
                                             expected: list[tuple[str, ...]]) -> None:
    """An uninstall of a distribution conda installed is `conda remove -p PREFIX -y NAME` with conda's name."""
    assert list(for_environment([argv], facts).commands) == expected


def test_conda_removal_asked_twice_is_one_transaction() -> None:
    """pip needs one uninstall per duplicated copy; conda removes the package once."""
    argv = (*PIP, "uninstall", "-y", "torch")
    assert for_environment([argv, argv], _conda()).commands == (("conda", "remove", "-p", PREFIX, "-y", "pytorch"),)


@pytest.mark.parametrize(("installer", "conda_prefix", "expected"), [
    pytest.param(None, False, "pip (this snapshot does not record the installer)", id="old"),
    pytest.param(PIP_VENV, False, "pip (pip is installed in the environment)", id="pip"),
    pytest.param(UV_VENV, False, "uv pip (the environment was made by uv 0.13.9 and has no pip)", id="uv"),
    pytest.param(UV_VENV_NO_UV, False, "pip (pip is installed in the environment; uv 0.13.9 made it, but no uv was "
                 "found)", id="uv-missing"),
    pytest.param({"pip": True, "conda": "mamba", "conda_owned": {"torch": "pytorch"}}, True,
                 "pip (pip is installed in the environment); mamba removes the 1 distribution conda installed",
                 id="conda"),
])
def test_installer_is_described(installer: dict[str, Any] | None, conda_prefix: bool, expected: str) -> None:
    """The report's installer line says which installer the commands use and why."""
    assert choose(_facts(installer, conda_prefix=conda_prefix)).describe() == expected


def test_findings_carry_uv_commands_and_the_report_names_the_installer() -> None:
    """Evaluating the real rule pack in a uv venv gives uv commands, and the report says uv pip is used."""
    facts = _facts(UV_VENV, dists=[dist_dict("torchvision", "0.28.0+cpu", "pillow>=5.3.0")])
    report = evaluate(rule_pack.load(), facts)
    (missing,) = [f for f in report.findings if f.rule_id == "EC0102" and f.status is Status.FAIL]
    assert missing.commands == ((UV, "pip", "install", "--python", PY, "pillow>=5.3.0"),)
    assert report.installer.startswith("uv pip")


def test_by_hand_text_joins_the_fix_when_nothing_can_run() -> None:
    """Where no installer can run, the finding has no command and its fix says what to do by hand."""
    facts = _facts(NOTHING, dists=[dist_dict("torchvision", "0.28.0+cpu", "pillow>=5.3.0")])
    (missing,) = [f for f in evaluate(rule_pack.load(), facts).findings if f.rule_id == "EC0102"]
    assert missing.commands == ()
    assert missing.fix.startswith("Install the missing requirement into the checked interpreter. No command")


def test_plan_runs_ensurepip_first_and_once() -> None:
    """`envcheck fix` treats ensurepip as an installer step and runs it before removals and installs."""
    ensure = (PY, "-m", "ensurepip")
    findings = [
        Finding("EC0102", "a", Severity.ERROR, Status.FAIL, "s", commands=(ensure, (*PIP, "install", "b"))),
        Finding("EC0301", "c", Severity.ERROR, Status.FAIL, "s", commands=(ensure, (*PIP, "uninstall", "-y", "d"))),
    ]
    plan = fix_mod.plan(findings, PY, "pip, after ensurepip (...)")
    assert [s.argv for s in plan.steps] == [ensure, (*PIP, "uninstall", "-y", "d"), (*PIP, "install", "b")]
    assert not plan.held_back(allow_other=False)
    assert "installer: pip, after ensurepip" in fix_mod.render_plan(plan, allow_other=False)


def test_plan_merges_uv_installs_and_runs_conda_removals_first() -> None:
    """uv installs from two findings merge into one; a conda removal runs before them."""
    findings = [
        Finding("EC0102", "a", Severity.ERROR, Status.FAIL, "s", commands=((UV, "pip", "install", "--python", PY,
                                                                            "numpy"),)),
        Finding("EC0103", "b", Severity.ERROR, Status.FAIL, "s",
                commands=(("conda", "remove", "-p", PREFIX, "-y", "pytorch"),
                          (UV, "pip", "install", "--python", PY, "pillow"))),
    ]
    steps = [s.argv for s in fix_mod.plan(findings, PY).steps]
    assert steps == [("conda", "remove", "-p", PREFIX, "-y", "pytorch"),
                     (UV, "pip", "install", "--python", PY, "numpy", "pillow")]


def test_build_facts_without_installer_reads_as_none() -> None:
    """A snapshot from before the installer field still loads; its installer is unknown (None)."""
    assert build_facts().installer is None

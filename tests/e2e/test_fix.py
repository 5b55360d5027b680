"""`envcheck fix`: the plan (pure), consent and opt-ins (CLI), and a real pin conflict fixed in a real venv."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _fakes import facts_dict
from _torch import clean_env
from _venvs import VenvMaker
from click.testing import CliRunner, Result
from test_real_env import make_wheel

from envcheck.cli.click_cli import cli
from envcheck.facts.snapshot import Facts
from envcheck.remedy import fix as fix_mod
from envcheck.report.outcome import render_outcome
from envcheck.rules.model import Finding, Report, Severity, Status

PY = "/opt/venv/bin/python"
PIP = (PY, "-m", "pip")
ENVCHECK = Path(sys.executable).parent / "envcheck"
_TIMEOUT_S = 600  # a guard against a hung pip or venv, never a timing assertion


def _f(rule_id: str, *commands: Sequence[str], fix: str = "do it", **kwargs: Any) -> Finding:
    return Finding(rule_id=rule_id, name=f"rule-{rule_id.lower()}", severity=Severity.ERROR, status=Status.FAIL,
                   summary=kwargs.pop("summary", f"problem {rule_id}"), fix=fix,
                   commands=tuple(tuple(c) for c in commands), **kwargs)


def argvs(plan: fix_mod.Plan) -> list[tuple[str, ...]]:
    return [s.argv for s in plan.steps]


# --- the plan --------------------------------------------------------------------------------------------------


def test_same_command_from_two_findings_runs_once() -> None:
    """Two findings asking for the same command get one step, credited to both."""
    plan = fix_mod.plan([_f("EC0301", (*PIP, "uninstall", "-y", "apex")),
                         _f("EC0310", (*PIP, "uninstall", "-y", "apex"))], PY)
    assert [(s.argv, s.rules) for s in plan.steps] == [((*PIP, "uninstall", "-y", "apex"), ("EC0301", "EC0310"))]


def test_a_command_repeated_on_purpose_keeps_its_count() -> None:
    """EC0103 uninstalls twice (pip removes one copy per call): both stay, even when another finding asks once."""
    twice = _f("EC0103", (*PIP, "uninstall", "-y", "numpy"), (*PIP, "uninstall", "-y", "numpy"),
               (*PIP, "install", "--no-deps", "numpy==1.26.4"))
    once = _f("EC9950", (*PIP, "uninstall", "-y", "numpy"))
    assert argvs(fix_mod.plan([once, twice], PY)) == [
        (*PIP, "uninstall", "-y", "numpy"), (*PIP, "uninstall", "-y", "numpy"),
        (*PIP, "install", "--no-deps", "numpy==1.26.4"),
    ]


def test_uninstalls_run_before_installs() -> None:
    """An install is never followed by another finding's uninstall: removals first, each group in finding order."""
    plan = fix_mod.plan([_f("EC0101", (*PIP, "install", "torch==2.6.0")),
                         _f("EC0301", (*PIP, "uninstall", "-y", "apex")),
                         _f("EC0105", (*PIP, "uninstall", "-y", "weird"), (*PIP, "install", "weird"))], PY)
    assert argvs(plan) == [(*PIP, "uninstall", "-y", "apex"), (*PIP, "uninstall", "-y", "weird"),
                           (*PIP, "install", "torch==2.6.0", "weird")]


def test_installs_with_the_same_flags_merge_into_one_resolution() -> None:
    """pip installs of the checked interpreter merge when their flags match; requirements keep their order and
    duplicates go; two requirements of one distribution become one, the pin that meets both."""
    plan = fix_mod.plan([_f("EC0101", (*PIP, "install", "torch==2.6.0")),
                         _f("EC0303", (*PIP, "install", "numpy<2")),
                         _f("EC0306", (*PIP, "install", "torch>=2.4")),
                         _f("EC0501", (*PIP, "install", "--force-reinstall", "torch==2.6.0")),
                         _f("EC0502", (*PIP, "install", "torch==2.6.0"))], PY)
    assert [(s.argv, s.rules) for s in plan.steps] == [
        ((*PIP, "install", "torch==2.6.0", "numpy<2"), ("EC0101", "EC0502", "EC0303", "EC0306")),
        ((*PIP, "install", "--force-reinstall", "torch==2.6.0"), ("EC0501",)),
    ]


def test_one_requirement_per_distribution_with_the_range_every_finding_accepts() -> None:
    """Five requirers' ranges of numpy (a layered NumPy 1.x under a NumPy 2 stack) are one requirement, tightened."""
    reqs = ("numpy>=2.0", "numpy<2.6,>=2.0", "numpy>=2.1", "numpy>=2.0.0", "numpy>=2")
    plan = fix_mod.plan([_f("EC0101", (*PIP, "install", r)) for r in reqs], PY)
    assert argvs(plan) == [(*PIP, "install", "numpy<2.6,>=2.1")]
    assert plan.conflicts == ()


def test_requirements_no_version_meets_are_left_out_and_said() -> None:
    """`numpy<2` and `numpy>=2.1` in one merged install: numpy is left out, the rest runs, and the plan says why."""
    plan = fix_mod.plan([_f("EC0303", (*PIP, "install", "numpy<2")), _f("EC0101", (*PIP, "install", "numpy>=2.1")),
                         _f("EC0102", (*PIP, "install", "safetensors"))], PY)
    assert argvs(plan) == [(*PIP, "install", "safetensors")]
    assert plan.conflicts == ("no numpy release meets numpy<2 (EC0303) and numpy>=2.1 (EC0101) "
                              "together, so no command installs numpy: decide which finding to follow, then check "
                              "again",)
    assert "  -  no numpy release meets numpy<2" in fix_mod.render_plan(plan, allow_other=False)


def test_two_installs_that_disagree_on_a_distribution_both_go() -> None:
    """A reinstall of the broken torchvision and the install of the right one (different indexes, so never merged)
    cannot both run: neither does, and the plan names both."""
    index = ("--index-url", "https://download.pytorch.org/whl/cu130")
    plan = fix_mod.plan([_f("EC0702", (*PIP, "install", "--no-deps", "torchvision==0.26.0+cu130", *index)),
                         _f("EC0103", (*PIP, "uninstall", "-y", "torchvision"),
                            (*PIP, "install", "--no-deps", "torchvision==0.20.0+cu130", *index))], PY)
    assert argvs(plan) == [(*PIP, "uninstall", "-y", "torchvision")]
    [line] = plan.conflicts
    assert line.startswith("no torchvision release meets torchvision==0.26.0+cu130 (EC0702) and "
                           "torchvision==0.20.0+cu130 (EC0103) together")


def test_installs_that_agree_across_commands_are_kept_as_they_are() -> None:
    """An exact pin from one finding and a range another accepts it in stay in their own commands."""
    index = ("--index-url", "https://download.pytorch.org/whl/cpu")
    plan = fix_mod.plan([_f("EC0702", (*PIP, "install", "--no-deps", "torchvision==0.28.0+cpu", *index)),
                         _f("EC0101", (*PIP, "install", "torchvision>=0.20"))], PY)
    assert argvs(plan) == [(*PIP, "install", "--no-deps", "torchvision==0.28.0+cpu", *index),
                           (*PIP, "install", "torchvision>=0.20")]


def test_a_report_says_when_its_items_want_no_common_version() -> None:
    """One rule whose items want numpy<2 and numpy>=2: the report's merged command leaves numpy out and its fix
    says that no version fits."""
    from envcheck.report.groups import Problem

    findings = [_f("EC0101", (*PIP, "install", r), summary=f"x requires {r}") for r in ("numpy<2", "numpy>=2")]
    problem = Problem.of(findings, PY)
    assert problem.commands == ()
    assert problem.fixes[-1].startswith("no numpy release meets numpy<2 (EC0101) and numpy>=2 (EC0101) together")


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param((*PIP, "install", "--index-url", "https://download.pytorch.org/whl/cu124", "torch"),
                     id="option-with-a-value"),
        pytest.param((*PIP, "install", "-r", "requirements.txt"), id="requirements-file"),
        pytest.param((*PIP, "install", "./vendor/pkg"), id="local-path"),
        pytest.param((*PIP, "install", "--extra-index-url=https://x.org", "a"), id="option-equals-value"),
    ],
)
def test_commands_that_are_not_plain_requirements_run_alone(argv: tuple[str, ...]) -> None:
    """An install with an option that takes a value, or an argument that is not PEP 508, is never merged."""
    plan = fix_mod.plan([_f("EC0101", (*PIP, "install", "numpy<2")), _f("EC0102", argv),
                         _f("EC0103", (*PIP, "install", "safetensors"))], PY)
    assert argvs(plan) == [(*PIP, "install", "numpy<2", "safetensors"), argv]


@pytest.mark.parametrize(
    ("argv", "installer", "runs_without_opt_in"),
    [
        pytest.param((*PIP, "install", "x"), "pip", True, id="pip-of-the-checked-interpreter"),
        pytest.param(("/usr/bin/python3", "-m", "pip", "install", "x"), None, False, id="pip-of-another"),
        pytest.param(("uv", "pip", "install", "x"), "uv", True, id="uv-pip"),
        pytest.param(("/home/me/.local/bin/uv", "pip", "uninstall", "x"), "uv", True, id="uv-by-path"),
        pytest.param(("conda", "install", "-y", "-c", "conda-forge", "x"), "conda", True, id="conda"),
        pytest.param(("micromamba", "remove", "-y", "x"), "conda", True, id="micromamba"),
        pytest.param((PY, "-m", "venv", ".venv"), None, False, id="venv"),
        pytest.param(("rm", "-rf", "/opt/venv/lib/~orch"), None, False, id="rm"),
    ],
)
def test_only_installer_commands_run_without_opt_in(argv: tuple[str, ...], installer: str | None,
                                                    runs_without_opt_in: bool) -> None:
    """pip of the checked interpreter, uv pip and conda run; anything else waits for --allow-other."""
    plan = fix_mod.plan([_f("EC0101", argv)], PY)
    (step,) = plan.steps
    assert step.installer == installer
    assert (plan.runnable(False) == (step,)) is runs_without_opt_in
    assert plan.runnable(True) == (step,)
    assert plan.held_back(False) == (() if runs_without_opt_in else (step,))


def test_uv_is_pointed_at_the_checked_interpreter() -> None:
    """uv pip without --python would install into whatever venv is active: the plan adds --python PYTHON."""
    plan = fix_mod.plan([_f("EC0101", ("uv", "pip", "install", "a")), _f("EC0102", ("uv", "pip", "install", "b")),
                         _f("EC0103", ("uv", "pip", "install", "--python", "/other/python", "c"))], PY)
    assert argvs(plan) == [("uv", "pip", "install", "--python", PY, "a", "b"),
                           ("uv", "pip", "install", "--python", "/other/python", "c")]


def _found(tmp_path: Path, **installer: str | None) -> Facts:
    """Facts of the venv at PY where envcheck found pip and the given uv / conda."""
    data = facts_dict()
    data["installer"] = {"pip": True, "ensurepip": True, "uv_venv": None, "uv": None, "conda": None,
                         "conda_owned": {}, **installer}
    return Facts.from_dict(data, file=str(tmp_path / "facts.json"))


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n", encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.mark.posix  # symbolic links and a `#!` script as executables
def test_only_the_installer_envcheck_found_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the facts, conda and uv commands are installer steps only when their executable is the very file
    envcheck found (PATH and links resolved): a project's ./conda or ./bin/uv waits for --allow-other, and says so."""
    conda = _executable(tmp_path / "opt" / "conda" / "bin" / "conda")
    uv = _executable(tmp_path / "home" / ".local" / "bin" / "uv")
    (tmp_path / "linked-conda").symlink_to(conda)
    project = tmp_path / "project"
    _executable(project / "conda")
    _executable(project / "bin" / "uv")
    monkeypatch.chdir(project)
    monkeypatch.setenv("PATH", f"{conda.parent}{os.pathsep}{os.environ['PATH']}")
    facts = _found(tmp_path, conda="conda", uv=str(uv))
    cases = {("conda", "remove", "-y", "x"): "conda", (str(conda), "remove", "-y", "x"): "conda",
             (str(tmp_path / "linked-conda"), "remove", "-y", "x"): "conda", (str(uv), "pip", "install", "x"): "uv",
             ("./conda", "install", "-y", "x"): None, (str(project / "conda"), "install", "-y", "x"): None,
             ("./bin/uv", "pip", "install", "x"): None, ("uv", "pip", "install", "x"): None}  # not the uv found
    for argv, installer in cases.items():
        (step,) = fix_mod.plan([_f("EC0101", argv)], PY, facts=facts).steps
        assert step.installer == installer, argv
        assert step.needs_opt_in is (installer is None), argv
    (held,) = fix_mod.plan([_f("EC0101", ("./conda", "install", "-y", "x"))], PY, facts=facts).steps
    assert held.held == f"not an installer command: ./conda is not the conda envcheck found ({conda})"


@pytest.mark.parametrize(
    ("args", "held"),
    [
        pytest.param(("install", "-U", "a>=1", "b[x]"), "", id="requirements-by-name"),
        pytest.param(("uninstall", "-y", "a"), "", id="uninstall"),
        pytest.param(("install", "--no-deps", "torch==2.13.0+cpu", "--index-url", "https://download.pytorch.org/whl/cpu"),
                     "", id="pytorch-index"),
        pytest.param(("install", "--index-url", "https://pypi.example/simple", "a"), "passes --index-url to pip",
                     id="index-url"),
        pytest.param(("install", "-i", "https://download.pytorch.org/whl/../../evil", "a"), "passes -i to pip",
                     id="not-quite-pytorch"),
        pytest.param(("install", "--extra", "https://x.example", "a"), "passes --extra to pip", id="abbreviated"),
        pytest.param(("install", "--find-links=/tmp/w", "a"), "passes --find-links=/tmp/w to pip", id="find-links"),
        pytest.param(("install", "--trusted-host", "x.example", "a"), "passes --trusted-host to pip",
                     id="trusted-host"),
        pytest.param(("install", "-Ue", "."), "passes -Ue to pip", id="clustered-editable"),
        pytest.param(("install", "-r", "requirements.txt"), "passes -r to pip", id="requirements-file"),
        pytest.param(("install", "a @ git+https://x.example/a.git"), "installs 'a @ git+https://x.example/a.git', "
                     "which is not a requirement by name", id="vcs"),
        pytest.param(("install", "./vendor/a"), "installs './vendor/a'", id="path"),
    ],
)
def test_project_rules_may_not_choose_where_pip_installs_from(args: tuple[str, ...], held: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A pip command that only rules from outside the pack ask for runs unasked only with requirements by name,
    harmless flags and the PyTorch index; anything else is held with the reason. The pack's own rules are not held."""
    monkeypatch.delenv("ENVCHECK_TORCH_INDEX_BASE", raising=False)
    argv = (*PIP, *args)
    (step,) = fix_mod.plan([_f("EC5001", argv)], PY, outside_pack={"EC5001"}).steps
    assert step.installer == "pip"
    assert held in step.held and bool(step.held) is bool(held)
    assert step.held.startswith("a rule from outside envcheck's pack ") or not held
    assert fix_mod.plan([_f("EC5001", argv)], PY).runnable(False)  # a rule of the pack
    # The pack asking for the same command makes it the pack's.
    both = fix_mod.plan([_f("EC0102", argv), _f("EC5001", argv)], PY, outside_pack={"EC5001"})
    assert both.runnable(False) == both.steps


def test_project_conda_commands_are_vetted_too(tmp_path: Path) -> None:
    """A project rule's conda command naming a channel is held; envcheck's own `conda remove -p PREFIX` is not."""
    facts = _found(tmp_path, conda="conda")
    removal = ("conda", "remove", "-p", "/opt/venv", "-y", "pytorch")
    channel = ("conda", "install", "-y", "-c", "evil", "x")
    spec = ("conda", "install", "-y", "chan::x")
    steps = fix_mod.plan([_f("EC5001", removal, channel, spec)], PY, facts=facts, outside_pack={"EC5001"}).steps
    assert [(s.argv, s.held) for s in steps] == [
        (removal, ""), (channel, "a rule from outside envcheck's pack passes -c to conda"),
        (spec, "a rule from outside envcheck's pack installs 'chan::x', which is not a requirement by name")]


def test_findings_without_commands_are_listed_by_hand() -> None:
    """A finding with only a `fix` text is in the plan's by-hand list, and the text plan says so."""
    manual = _f("EC0104", fix="Delete the damaged folder /x.dist-info.")
    plan = fix_mod.plan([manual, _f("EC0101", (*PIP, "install", "a"))], PY)
    assert plan.by_hand == (manual,)
    text = fix_mod.render_plan(plan, allow_other=False)
    assert text.splitlines() == [
        f"envcheck fix: 1 command for {PY}",
        f"  1. {PY} -m pip install a    (EC0101)",
        "       why: EC0101 problem EC0101",
        "by hand (no command to run):",
        "  -  EC0104 rule-ec0104: Delete the damaged folder /x.dist-info.",
    ]


def test_outcome_lists_fixed_remaining_and_new() -> None:
    """Before/after: both tallies, then what went away, what remains and what appeared."""
    def report(*findings: Finding) -> Report:
        return Report(findings=findings, python=PY, origin="local", envcheck_version="0.1.0")

    gone, stays = _f("EC0101", summary="pin broken"), _f("EC0301", summary="apex")
    appeared = _f("EC0102", summary="x missing")
    text = render_outcome(report(gone, stays), report(stays, appeared))
    assert text.splitlines() == [
        "before: 2 errors; 0 passed, 0 n/a", "after:  2 errors; 0 passed, 0 n/a",
        "fixed (1):", "  ✓ EC0101 rule-ec0101: pin broken",
        "remaining (1):", "  ✗ EC0301 rule-ec0301: apex",
        "new (1):", "  ! EC0102 rule-ec0102: x missing",
    ]


# --- the command, with rules whose commands are harmless -------------------------------------------------------

RULE = ('[[rule]]\nid = "{id}"\nname = "{name}"\nseverity = "error"\nsummary = "{name} fires"\nwhy = "w"\n'
        'fix = "f"\nreferences = ["https://example.org"]\nwhen = {{ python = ">=3" }}\ncommands = [{commands}]\n')


def _rules(tmp_path: Path, **rules: str) -> Path:
    """A rule directory: one always-firing rule per keyword (id EC98.. by position), with the given commands."""
    directory = tmp_path / "rules"
    directory.mkdir(exist_ok=True)
    text = "".join(RULE.format(id=f"EC98{i}0", name=name, commands=commands)
                   for i, (name, commands) in enumerate(rules.items(), start=1))
    (directory / "fixes.toml").write_text(text, encoding="utf-8")
    return directory


def _writes(name: str) -> str:
    return f'["{{python}}", "-c", "open(\'{name}\', \'w\').close()"]'


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.posix  # the plan shows sys.executable as is: shlex quotes a Windows path
def test_dry_run_shows_and_changes_nothing(workdir: Path) -> None:
    """--dry-run prints the plan (installer commands and held-back ones) and runs nothing."""
    rules = _rules(workdir, **{"needs-pip": '["{python}", "-m", "pip", "install", "no-such-dist-x"]',
                               "needs-other": _writes("ran")})
    result = run("fix", "--dry-run", "--static", "--no-config", "--rules", str(rules), "--select", "EC98")
    assert result.exit_code == 0, result.output
    assert f"  1. {sys.executable} -m pip install no-such-dist-x    (EC9810)" in result.output
    assert f"not run without --allow-other:\n  -  {sys.executable} -c " in result.output
    assert "       not an installer command\n" in result.output
    assert result.output.rstrip().endswith("dry run: nothing was changed")
    assert not (workdir / "ran").exists()


def test_without_a_terminal_or_yes_it_refuses(workdir: Path) -> None:
    """No --yes and no terminal to ask on: exit 2 with one line saying why and what to pass; nothing runs."""
    rules = _rules(workdir, **{"needs-other": _writes("ran")})
    result = run("fix", "--allow-other", "--static", "--no-config", "--rules", str(rules), "--select", "EC98")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "envcheck: error: fix: refusing to change the environment without consent: standard input is not a "
        "terminal, so nobody can answer; pass --yes to run the plan, or --dry-run to only show it")
    assert not (workdir / "ran").exists()


def test_nothing_to_fix(workdir: Path) -> None:
    """When no finding reaches --fail-on, fix says so and exits 0 without a plan."""
    rules = _rules(workdir, **{"needs-other": _writes("ran")})
    result = run("fix", "--static", "--no-config", "--rules", str(rules), "--select", "EC98", "--fail-on", "never")
    checked, said = result.output.splitlines()
    assert checked.startswith("checked ") and result.exit_code == 0
    assert said.startswith("envcheck fix: nothing to fix at --fail-on never")


def test_other_commands_need_allow_other(workdir: Path) -> None:
    """With --yes but without --allow-other a non-installer command is held back; with it, it runs."""
    rules = _rules(workdir, **{"needs-other": _writes("ran")})
    args = ("fix", "--yes", "--static", "--no-config", "--rules", str(rules), "--select", "EC98")
    held = run(*args)
    assert held.exit_code == 1 and "no command to run" in held.output
    assert not (workdir / "ran").exists()
    allowed = run(*args, "--allow-other")
    assert (workdir / "ran").exists()
    assert allowed.exit_code == 1  # the rule fires whatever the command did: it remains
    assert "remaining (1):\n  ✗ EC9810 needs-other: needs-other fires" in allowed.output


def test_a_note_is_not_a_remaining_problem(workdir: Path) -> None:
    """An info note that the check still gives after the fix is listed as a note (`i`), never as "✗ remaining":
    it is information, not a problem; the error beside it, which its command did not cure, remains."""
    rules = _rules(workdir, **{"needs-other": _writes("ran")})
    text = (rules / "fixes.toml").read_text(encoding="utf-8")
    note = RULE.format(id="EC9830", name="a-note", commands=_writes("noted")).replace('"error"', '"info"')
    (rules / "fixes.toml").write_text(text + note, encoding="utf-8")
    result = run("fix", "--yes", "--allow-other", "--static", "--no-config", "--rules", str(rules), "--select",
                 "EC98")
    assert (workdir / "ran").exists()
    assert result.exit_code == 1, result.output
    outcome = result.output[result.output.index("before: "):]
    assert "remaining (1):\n  ✗ EC9810 needs-other: needs-other fires\n" in outcome
    assert "notes (1):\n  i EC9830 a-note: a-note fires\n" in outcome
    assert "✗ EC9830" not in outcome and "! EC9830" not in outcome


def test_only_the_shipped_pack_is_shipped(tmp_path: Path) -> None:
    """rules.shipped: every rule of the pack is; a rule directory's and the policy's (EC99xx) are not."""
    from envcheck.pipeline.stages import rule_set
    from envcheck.rules import rule_pack
    from envcheck.sources.project import config as config_mod

    ruleset = rule_set(config_mod.Config(require=("a",)), rule_dirs=[_rules(tmp_path, **{"mine": ""})])
    assert {r.id for r in ruleset.every if not rule_pack.shipped(r)} == {"EC9810", "EC9901"}
    assert all(rule_pack.shipped(r) for r in rule_pack.load())


@pytest.mark.posix  # a `#!` script named conda
def test_a_project_script_named_conda_is_not_run_unasked(workdir: Path) -> None:
    """A cloned project's own rule directory (rule-dirs) asking for `./conda install`: `fix --yes` shows it as
    waiting for --allow-other and does not run the project's script; with --allow-other it runs."""
    conda = workdir / "conda"
    conda.write_text("#!/bin/sh\ntouch ran-by-conda-script\n", encoding="utf-8")
    conda.chmod(0o755)
    rules = _rules(workdir, **{"wants-conda": '["./conda", "install", "-y", "x"]',
                               "wants-index": '["{python}", "-m", "pip", "install", "--index-url", '
                                              '"http://127.0.0.1:9/simple", "no-such-dist-x"]'})
    (workdir / "pyproject.toml").write_text(f'[tool.envcheck]\nrule-dirs = ["{rules.name}"]\nselect = ["EC98"]\n',
                                            encoding="utf-8")
    held = run("fix", "--yes", "--static")
    assert held.exit_code == 1, held.output
    assert "not run without --allow-other:\n  -  ./conda install -y x    (EC9810)\n       not an installer command: " \
           "./conda is not the conda envcheck found" in held.output
    assert "http://127.0.0.1:9/simple    (EC9820)\n       a rule from outside envcheck's pack passes --index-url " \
           "to pip\n" in held.output
    assert "no command to run" in held.output and "[1/" not in held.output
    assert not (workdir / "ran-by-conda-script").exists()
    allowed = run("fix", "--yes", "--static", "--allow-other", "--select", "EC9810")
    assert allowed.exit_code == 1, allowed.output
    assert (workdir / "ran-by-conda-script").exists()


@pytest.mark.posix  # the plan shows sys.executable as is: shlex quotes a Windows path
def test_stops_at_the_first_failing_command(workdir: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A failing command stops the plan: it is reported with its exit code, and the commands after it do not run."""
    rules = _rules(workdir, **{"fails": '["{python}", "-c", "raise SystemExit(3)"]', "after": _writes("ran")})
    result = CliRunner().invoke(cli, ["fix", "--yes", "--allow-other", "--static", "--no-config", "--rules",
                                      str(rules), "--select", "EC98"], catch_exceptions=False)
    assert result.exit_code == 1
    assert not (workdir / "ran").exists()
    assert f"envcheck fix: stopped: `{sys.executable} -c 'raise SystemExit(3)'` exited 3; the commands after it " \
           "did not run" in result.output
    assert "before: 2 errors" in result.output and "remaining (2):" in result.output


def test_on_a_terminal_it_asks_and_no_means_no(tmp_path: Path) -> None:
    """The installed console script on a real terminal asks first: no changes nothing, yes runs the plan."""
    pty = pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")
    rules = _rules(tmp_path, **{"needs-other": _writes("ran")})
    for answer, code, ran in (("n", 1, False), ("y", 1, True)):
        primary, secondary = pty.openpty()
        try:
            os.write(primary, f"{answer}\n".encode())
            proc = subprocess.run([ENVCHECK, "fix", "--allow-other", "--static", "--no-config", "--rules", rules,
                                   "--select", "EC98"], stdin=secondary, capture_output=True, text=True,
                                  cwd=tmp_path, env=clean_env({"NO_COLOR": "1"}), timeout=120, check=False)
        finally:
            os.close(primary)
            os.close(secondary)
        assert proc.returncode == code, proc.stdout + proc.stderr
        assert "Run 1 command? [y/N]" in proc.stdout
        assert (tmp_path / "ran").exists() is ran
        assert ("nothing was changed" in proc.stdout) is not ran


# --- for real: a venv with a violated pin, fixed by the console script ------------------------------------------


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Wheels: fakevision pins faketorch==2.6.0; faketorch 2.13.0 and 2.6.0; fakeaddon, which a project requires."""
    folder = tmp_path_factory.mktemp("fix-wheels")
    for name, version, requires in (("fakevision", "0.21.0", ["faketorch==2.6.0"]), ("faketorch", "2.13.0", []),
                                    ("faketorch", "2.6.0", []), ("fakeaddon", "1.0", [])):
        make_wheel(folder, name, version, requires)
    return folder


def _venv_with_conflict(path: Path, fakes: Path, venv_maker: VenvMaker) -> Path:
    """A real venv where fakevision 0.21.0 sits next to faketorch 2.13.0 (installed --no-deps, as pins break)."""
    python = venv_maker.make(path, env=clean_env())
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-index", "--find-links", fakes, "--no-deps",
                    "fakevision==0.21.0", "faketorch==2.13.0"], check=True, timeout=_TIMEOUT_S, env=clean_env(),
                   capture_output=True)
    return python


def _envcheck(*args: str | Path, cwd: Path, fakes: Path) -> subprocess.CompletedProcess[str]:
    # Offline: pip finds the fake wheels instead of an index; the commands themselves are run unchanged.
    env = clean_env({"NO_COLOR": "1", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(fakes)})
    return subprocess.run([ENVCHECK, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_fix_yes_fixes_a_pin_conflict_for_real(tmp_path: Path, fakes: Path, venv_maker: VenvMaker) -> None:
    """`envcheck fix --yes --python VENV` merges the pin fix and a project requirement into one real pip install,
    prints before/after, and the next `envcheck` of that venv exits 0."""
    python = _venv_with_conflict(tmp_path / "venv", fakes, venv_maker)
    proc = _envcheck("fix", "--yes", "--static", "--no-config", "--python", python, "--require", "fakeaddon",
                     cwd=tmp_path, fakes=fakes)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"  1. {python} -m pip install faketorch==2.6.0 fakeaddon    (EC0101, EC9901)" in out
    assert f"[1/1] $ {python} -m pip install faketorch==2.6.0 fakeaddon" in out
    assert "before: 2 errors;" in out and "after:  no problems;" in out
    assert "fixed (2):" in out and "EC0101 requirement-version-conflict: fakevision 0.21.0 requires " \
                                   "faketorch==2.6.0, but faketorch 2.13.0 is installed" in out
    recheck = _envcheck("--static", "--no-config", "--python", python, "--require", "fakeaddon", cwd=tmp_path,
                        fakes=fakes)
    assert recheck.returncode == 0, recheck.stdout + recheck.stderr
    versions = subprocess.run([python, "-c", "import faketorch, fakeaddon; print(faketorch.__version__)"],
                              capture_output=True, text=True, check=False, timeout=60)
    assert versions.stdout.strip() == "2.6.0"


@pytest.mark.slow
def test_fix_reports_a_failing_pip_and_changes_nothing_after_it(tmp_path: Path, fakes: Path,
                                                                venv_maker: VenvMaker) -> None:
    """A pip install that cannot succeed stops the plan with exit 1; the re-check shows the problems remain."""
    python = _venv_with_conflict(tmp_path / "venv", fakes, venv_maker)
    proc = _envcheck("fix", "--yes", "--static", "--no-config", "--python", python, "--require", "fake-absent>=1",
                     cwd=tmp_path, fakes=fakes)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"envcheck fix: stopped: `{python} -m pip install faketorch==2.6.0 'fake-absent>=1'` exited 1" \
        in proc.stderr
    assert "remaining (2):" in proc.stdout and "fixed" not in proc.stdout


def test_step_effect_says_what_it_keeps_and_changes() -> None:
    """With the facts, a companion step keeps torch and names the replacement; a torch move names both moves."""
    from _fakes import build_facts, dist_dict, torch_dict

    facts = build_facts(dists=[dist_dict("torch", "2.13.0+cpu"),
                               dist_dict("torchvision", "0.20.0", "torch==2.5.0"), dist_dict("mylib", "1.0")],
                        torch=torch_dict("2.13.0+cpu", cuda=None))
    py = facts.python.executable
    index = ("--index-url", "https://download.pytorch.org/whl/cpu")
    companion = _f("EC0702", (py, "-m", "pip", "install", "--no-deps", "torchvision==0.28.0+cpu", *index),
                   summary="torchvision 0.20.0 requires torch==2.5.0")
    moving = _f("EC0101", (py, "-m", "pip", "install", "torch<2.10", "torchvision", *index))
    steps = fix_mod.plan([companion, moving], py, facts=facts).steps
    assert [s.effect for s in steps] == [
        "keeps torch 2.13.0+cpu; replaces torchvision 0.20.0 with 0.28.0+cpu",
        "replaces torch 2.13.0+cpu with a release of torch<2.10; replaces torchvision 0.20.0 with the release the "
        "resolver picks"]
    text = fix_mod.render_plan(fix_mod.plan([companion], py, facts=facts), allow_other=False)
    assert "       keeps torch 2.13.0+cpu; replaces torchvision 0.20.0 with 0.28.0+cpu\n" in text
    assert "       why: EC0702 torchvision 0.20.0 requires torch==2.5.0\n" in text

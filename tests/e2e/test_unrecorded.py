"""Fixes that fix: a distribution whose RECORD lists nothing is removed by name (pip cannot uninstall it), and
metadata pip fails on is removed before any pip command, which would otherwise stop with a traceback."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _fakes import EXT_SUFFIX, collect_facts, dist_dict, facts_dict, write_dist, write_tree
from _index import StandIn, serve, write_index
from _venvs import VenvMaker

from envcheck.facts.snapshot import Facts
from envcheck.remedy import fix as fix_mod
from envcheck.remedy.commands.installers import for_environment
from envcheck.rules.model import Finding, Severity, Status

PY = "/opt/venv/bin/python"
SITE = "/opt/venv/lib/python3.11/site-packages"
PIP = (PY, "-m", "pip")
APEX_FILES = [f"{SITE}/apex-0.1.dist-info", f"{SITE}/apex", f"{SITE}/amp_C{EXT_SUFFIX}"]
UNREADABLE = "METADATA is not valid UTF-8 (invalid start byte)"


def _facts(*dists: dict[str, Any], platform: str = "linux", installer: dict[str, Any] | None = None) -> Facts:
    data = facts_dict(dists=dists, python={"platform": platform})
    if installer is not None:
        data["installer"] = {"pip": True, "ensurepip": True, "uv_venv": None, "uv": None, "conda": None,
                             "conda_owned": {}, **installer}
    return Facts.from_dict(data, file="<test>")


def _apex(**changes: Any) -> dict[str, Any]:
    return dist_dict("apex", "0.1", unrecorded="its RECORD is empty", files_by_name=APEX_FILES, **changes)


# --- the collector ---------------------------------------------------------------------------------------------


def _apex_site(site: Path, record: list[str] | None) -> None:
    """NVIDIA apex as `setup.py install` leaves it: a package, a top-level extension module, top_level.txt."""
    write_tree(site, {"apex/__init__.py": "", "apex/normalization/__init__.py": "", f"amp_C{EXT_SUFFIX}": b"\x7fELF"})
    write_dist(site, "apex", "0.1", top_level=["apex", "amp_C", "missing_ext", "../../etc"], record=record)


@pytest.mark.parametrize(("record", "why"), [
    pytest.param([], "its RECORD is empty", id="empty"),
    pytest.param(None, "it has no RECORD file", id="missing"),
])
def test_a_dist_without_record_lists_its_files_by_name(site: Path, record: list[str] | None, why: str) -> None:
    """An empty or missing RECORD is `unrecorded`, with the metadata folder and each top-level name that exists
    as a package or module; a name that is not an identifier (`../../etc`) is never a path."""
    _apex_site(site, record)
    (dist,) = collect_facts(site).distributions
    assert dist.unrecorded == why
    assert dist.files_by_name == (str(site / "apex-0.1.dist-info"), str(site / "apex"),
                                  str(site / f"amp_C{EXT_SUFFIX}"))


def test_a_recorded_dist_is_not_unrecorded(site: Path) -> None:
    """A RECORD that lists files is pip's to uninstall: nothing more is collected."""
    _apex_site(site, ["apex/__init__.py"])
    (dist,) = collect_facts(site).distributions
    assert dist.unrecorded is None and dist.files_by_name == ()


def test_shared_names_are_left_alone(site: Path) -> None:
    """A namespace folder (no __init__.py) and a name another distribution's top_level.txt lists are not this
    distribution's alone: they are not listed for removal."""
    write_tree(site, {"nvidia/cudnn/__init__.py": "", "common/__init__.py": "", "own/__init__.py": ""})
    write_dist(site, "nvidia-thing", "1.0", top_level=["nvidia", "common", "own"], record=[])
    write_dist(site, "other", "2.0", top_level=["common"], record=["common/__init__.py"])
    thing = next(d for d in collect_facts(site).distributions if d.name == "nvidia-thing")
    assert thing.files_by_name == (str(site / "nvidia_thing-1.0.dist-info"), str(site / "own"))


def test_the_fact_survives_the_metadata_cache(site: Path, tmp_path: Path) -> None:
    """Read again from the collector's cache, the fact is the same; emptying RECORD afterwards is seen."""
    _apex_site(site, ["apex/__init__.py"])
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    request = {"cache_dir": str(cache)}
    assert collect_facts(site, request=request).distributions[0].unrecorded is None
    (site / "apex-0.1.dist-info" / "RECORD").write_text("", encoding="utf-8")
    assert collect_facts(site, request=request).distributions[0].unrecorded == "its RECORD is empty"
    assert collect_facts(site, request=request).distributions[0].files_by_name[0].endswith("apex-0.1.dist-info")


# --- the commands ----------------------------------------------------------------------------------------------


def test_uninstall_of_an_unrecorded_dist_removes_it_by_name() -> None:
    """`pip uninstall -y apex` becomes `rm -rf` of its files, and the fix says why."""
    rendered = for_environment([(*PIP, "uninstall", "-y", "apex", "six")], _facts(_apex(), dist_dict("six", "1.0")))
    assert rendered.commands == (("rm", "-rf", *APEX_FILES), (*PIP, "uninstall", "-y", "six"))
    assert "pip and uv cannot uninstall apex 0.1 in" in rendered.by_hand
    assert "No files were found to uninstall" in rendered.by_hand and "--allow-other" in rendered.by_hand


def test_uv_gets_the_removal_too() -> None:
    """uv also removes only what RECORD lists ("Uninstalled 1 package", and it stays): no `uv pip uninstall`."""
    uv = {"pip": False, "uv_venv": "0.13.9", "uv": "uv"}
    rendered = for_environment([(*PIP, "uninstall", "-y", "apex")], _facts(_apex(), installer=uv))
    assert rendered.commands == (("rm", "-rf", *APEX_FILES),)


def test_on_windows_the_paths_are_given_to_delete_by_hand() -> None:
    """No `rm` on Windows: no command, and the fix names every path."""
    rendered = for_environment([(*PIP, "uninstall", "-y", "apex")], _facts(_apex(), platform="win32"))
    assert rendered.commands == ()
    assert f"delete its files by hand instead: {', '.join(APEX_FILES)}" in rendered.by_hand


def test_each_uninstall_of_a_duplicate_targets_its_own_copy() -> None:
    """EC0103 uninstalls once per copy: the first copy (recorded) is pip's, the second (unrecorded) is removed by
    name."""
    first = dist_dict("apex", "0.2")
    second = _apex(location="/home/me/.local/lib/python3.11/site-packages")
    rendered = for_environment([(*PIP, "uninstall", "-y", "apex")] * 2, _facts(first, second))
    assert rendered.commands == ((*PIP, "uninstall", "-y", "apex"), ("rm", "-rf", *APEX_FILES))


def _corrupt(problem: str) -> dict[str, Any]:
    return dist_dict("ecbar", "2.0", problems=[problem])


@pytest.mark.parametrize(("problem", "argvs", "removed"), [
    pytest.param(UNREADABLE, [(*PIP, "uninstall", "-y", "ecfoo"), (*PIP, "install", "ecfoo")], True,
                 id="undecodable-stops-every-pip-command"),
    pytest.param(UNREADABLE, [(*PIP, "uninstall", "-y", "ecfoo")], True, id="undecodable-uninstall"),
    pytest.param("METADATA has no Version", [(*PIP, "install", "ecfoo")], True, id="no-version-install"),
    pytest.param("METADATA has no Version", [(*PIP, "uninstall", "-y", "ecfoo")], False, id="no-version-uninstall"),
    pytest.param("no METADATA file", [(*PIP, "install", "ecfoo")], False, id="missing-metadata-is-skipped-by-pip"),
    pytest.param(UNREADABLE, [(PY, "-m", "venv", "/tmp/v")], False, id="no-pip-command"),
])
def test_metadata_pip_fails_on_is_removed_first(problem: str, argvs: list[tuple[str, ...]], removed: bool) -> None:
    """The metadata folder pip fails on is deleted before the first pip command, and the fix says why; metadata
    pip only warns about is left to EC0104."""
    rendered = for_environment(argvs, _facts(dist_dict("ecfoo", "1.0-custom"), _corrupt(problem)))
    folder = f"{SITE}/ecbar-2.0.dist-info"
    assert rendered.commands == ((("rm", "-rf", folder),) if removed else ()) + tuple(argvs)
    assert ("pip fails on the metadata of ecbar" in rendered.by_hand) is removed


def test_uv_does_not_fail_on_it() -> None:
    """uv reads past an undecodable METADATA: its commands are not preceded by a removal."""
    uv = {"pip": False, "uv_venv": "0.13.9", "uv": "uv"}
    rendered = for_environment([(*PIP, "install", "ecfoo")], _facts(_corrupt(UNREADABLE), installer=uv))
    assert rendered.commands == (("uv", "pip", "install", "--python", PY, "ecfoo"),)


# --- envcheck fix ----------------------------------------------------------------------------------------------


def _finding(rule_id: str, commands: tuple[tuple[str, ...], ...]) -> Finding:
    return Finding(rule_id=rule_id, name="x", severity=Severity.WARNING, status=Status.WARN, summary=rule_id,
                   commands=commands)


def test_fix_holds_the_removal_and_the_pip_steps_behind_it() -> None:
    """Without --allow-other the removal waits, and so do the pip steps that would fail before it; with it, the
    removal runs first."""
    facts = _facts(dist_dict("ecfoo", "1.0-custom"), _corrupt(UNREADABLE), dist_dict("six", "1.0"))
    rm = ("rm", "-rf", f"{SITE}/ecbar-2.0.dist-info")
    findings = [_finding("EC0102", ((*PIP, "install", "numpy"),)),
                _finding("EC0105", (rm, (*PIP, "uninstall", "-y", "ecfoo"), (*PIP, "install", "ecfoo")))]
    plan = fix_mod.plan(findings, PY, facts=facts)
    assert plan.runnable(allow_other=False) == ()
    assert all("waits for `rm -rf " in s.held for s in plan.held_back(allow_other=False) if s.argv != rm)
    assert [s.argv for s in plan.runnable(allow_other=True)] == [
        rm, (*PIP, "uninstall", "-y", "ecfoo"), (*PIP, "install", "numpy", "ecfoo")]


def test_fix_runs_a_removal_by_name_only_with_allow_other() -> None:
    """`rm -rf` of an unrecorded distribution is not an installer command: it waits for --allow-other, and it is
    a removal, run before the installs."""
    rm = ("rm", "-rf", *APEX_FILES)
    plan = fix_mod.plan([_finding("EC1117", ((*PIP, "install", "six"),)), _finding("EC0310", (rm,))], PY,
                        facts=_facts(_apex()))
    assert [s.argv for s in plan.runnable(allow_other=False)] == [(*PIP, "install", "six")]
    assert [s.held for s in plan.held_back(allow_other=False)] == ["not an installer command"]
    assert [s.argv for s in plan.runnable(allow_other=True)] == [rm, (*PIP, "install", "six")]


# --- real pip, real venvs --------------------------------------------------------------------------------------


def _venv(tmp_path: Path, venv_maker: VenvMaker) -> tuple[Path, Path]:
    """A `python -m venv` with its bundled pip: (its python, its site-packages)."""
    python = venv_maker.make(tmp_path / "venv")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    return python, Path(site)


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600, check=False,
                          stdin=subprocess.DEVNULL)


def _printed(python: Path, env: dict[str, str], cwd: Path, rule: str) -> list[str]:
    proc = _run([sys.executable, "-m", "envcheck", "check", "--static", "--no-cache", "--python", str(python),
                 "--format", "json", "--fail-on", "never"], env, cwd)
    assert proc.returncode == 0, proc.stderr
    found = [f for f in json.loads(proc.stdout)["findings"] if f["id"] == rule and f["status"] == "warn"]
    assert len(found) == 1, proc.stdout
    return [c["shell"] for c in found[0]["commands"]]


def _clean(python: Path, env: dict[str, str], cwd: Path) -> None:
    proc = _run([sys.executable, "-m", "envcheck", "check", "--static", "--no-cache", "--python", str(python),
                 "--fail-on", "info"], env, cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """pip without the user's configuration, and a home of the test's own."""
    from _torch import clean_env

    return clean_env({"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_NO_CACHE_DIR": "1",
                      "HOME": str(tmp_path)})


@pytest.mark.slow
@pytest.mark.posix
def test_real_pip_cannot_uninstall_it_and_the_printed_command_can(tmp_path: Path, env: dict[str, str],
                                                                   venv_maker: VenvMaker) -> None:
    """apex with an empty RECORD: the real `pip uninstall -y apex` says "No files were found to uninstall" and
    leaves it; envcheck prints `rm -rf` of its files instead, which, run as printed, leaves a clean re-check."""
    python, site = _venv(tmp_path, venv_maker)
    _apex_site(site, [])
    pip = _run([str(python), "-m", "pip", "uninstall", "-y", "apex"], env, tmp_path)
    assert "No files were found to uninstall" in pip.stdout + pip.stderr
    assert (site / "apex" / "__init__.py").exists()
    printed = _printed(python, env, tmp_path, "EC0310")
    assert printed == [shlex.join(["rm", "-rf", str(site / "apex-0.1.dist-info"), str(site / "apex"),
                                   str(site / f"amp_C{EXT_SUFFIX}")])]
    for line in printed:
        assert _run(shlex.split(line), env, tmp_path).returncode == 0
    _clean(python, env, tmp_path)


@pytest.mark.slow
@pytest.mark.posix
def test_ec0105_commands_run_where_pip_fails_on_other_metadata(tmp_path: Path, env: dict[str, str],
                                                               venv_maker: VenvMaker) -> None:
    """ecfoo has version 1.0-custom (EC0105) and ecbar's METADATA is not UTF-8: the real pip stops with a
    traceback on the rule's own `pip uninstall` / `pip install`; the commands envcheck prints, run as printed,
    fix it and the re-check is clean."""
    root = write_index(tmp_path / "index", [StandIn("ecfoo", "1.0"), StandIn("ecbar", "2.0")])
    with serve(root, tmp_path / "cache") as index:
        env = {**{k: v for k, v in env.items() if k != "PIP_NO_INDEX"}, "PIP_INDEX_URL": index.url,
               "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        python, site = _venv(tmp_path, venv_maker)
        assert _run([str(python), "-m", "pip", "install", "ecfoo", "ecbar"], env, tmp_path).returncode == 0
        metadata = site / "ecfoo-1.0.dist-info" / "METADATA"
        metadata.write_text(metadata.read_text(encoding="utf-8").replace("Version: 1.0", "Version: 1.0-custom"),
                            encoding="utf-8")
        (site / "ecbar-2.0.dist-info" / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: ecbar\n"
                                                               b"Version: 2.0\nSummary: \xff\xfe\n")
        for argv in (["uninstall", "-y", "ecfoo"], ["install", "ecfoo"]):  # what EC0105 printed before
            pip = _run([str(python), "-m", "pip", *argv], env, tmp_path)
            assert pip.returncode != 0 and "UnicodeDecodeError" in pip.stderr, pip.stdout + pip.stderr
        printed = _printed(python, env, tmp_path, "EC0105")
        assert printed[0] == shlex.join(["rm", "-rf", str(site / "ecbar-2.0.dist-info")])
        for line in printed:
            proc = _run(shlex.split(line), env, tmp_path)
            assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"
        _clean(python, env, tmp_path)

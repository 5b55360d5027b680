"""The release tools in .ci/: verify_dist.py (what the wheel and the sdist must hold, read from the source tree, and
its reading of the installed envcheck's reports) and release_notes.py (the tag against the version, the CHANGELOG
section that becomes the GitHub release's notes). The built wheel itself is checked in tests/e2e/test_packaging.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _ci import release_notes, verify_dist

ROOT = Path(__file__).resolve().parents[2]
VERSION = verify_dist.source_version()
DIST_INFO = f"envcheck_ml-{VERSION}.dist-info/"
EXPECTED = verify_dist.expected_wheel_files(ROOT)


# --- what the wheel must hold ---------------------------------------------------------------------------------------


def test_expected_wheel_files_are_the_package_and_the_rule_pack() -> None:
    """Every file under envcheck/ is expected at its path and every file under rules/ under envcheck/_rules/: the
    rule files, the data tables, the JSON schemas and both child sources among them; no byte code."""
    package = {p.relative_to(ROOT).as_posix() for p in (ROOT / "envcheck").rglob("*.py")
               if "__pycache__" not in p.parts}
    rules = {f"envcheck/_rules/{p.relative_to(ROOT / 'rules').as_posix()}" for p in (ROOT / "rules").rglob("*.toml")}
    schemas = {p.relative_to(ROOT).as_posix() for p in (ROOT / "envcheck" / "schemas").glob("*.json")}
    assert package | rules | schemas <= EXPECTED
    for needed in ("envcheck/sources/probes/_child.py", "envcheck/sources/live/_collector.py", "envcheck/py.typed",
                   "envcheck/_rules/data/cuda-driver.toml", "envcheck/schemas/report.schema.json"):
        assert needed in EXPECTED
    assert not [n for n in EXPECTED if "__pycache__" in n or n.endswith(".pyc") or n.startswith(("rules/", "tests/"))]


def _tree(root: Path, files: list[str]) -> Path:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("", encoding="utf-8")
    return root


_MINIMAL = ["envcheck/__init__.py", "envcheck/py.typed", "envcheck/sources/probes/_child.py",
            "envcheck/sources/live/_collector.py", "envcheck/schemas/report.schema.json", "rules/a.toml",
            "rules/data/table.toml"]


def test_expected_files_follow_the_tree_not_a_list(tmp_path: Path) -> None:
    """A new file in the tree is expected at once; byte code and __pycache__ are not."""
    root = _tree(tmp_path, [*_MINIMAL, "envcheck/new.py", "rules/data/new-table.toml", "envcheck/__pycache__/x.pyc",
                            "envcheck/stale.pyc"])
    assert verify_dist.expected_wheel_files(root) == {
        "envcheck/__init__.py", "envcheck/py.typed", "envcheck/sources/probes/_child.py",
        "envcheck/sources/live/_collector.py", "envcheck/schemas/report.schema.json", "envcheck/new.py",
        "envcheck/_rules/a.toml", "envcheck/_rules/data/table.toml", "envcheck/_rules/data/new-table.toml",
    }


@pytest.mark.parametrize("absent, says", [
    pytest.param("rules/data/table.toml", "data table", id="no-data-tables"),
    pytest.param("envcheck/schemas/report.schema.json", "JSON schema", id="no-schemas"),
    pytest.param("rules/a.toml", "rule file", id="no-rule-files"),
    pytest.param("envcheck/sources/probes/_child.py", "probes/_child.py", id="no-probe-child"),
])
def test_a_source_tree_without_a_kind_of_data_is_refused(tmp_path: Path, absent: str, says: str) -> None:
    """A tree missing a whole kind of shipped data (or walked from the wrong folder) gives no list that could pass."""
    root = _tree(tmp_path, [n for n in _MINIMAL if n != absent])
    with pytest.raises(verify_dist.Failed, match=re.escape(says)):
        verify_dist.expected_wheel_files(root)


def _wheel_names(drop: str = "", add: str = "") -> set[str]:
    names = EXPECTED | {f"{DIST_INFO}{n}" for n in ("METADATA", "WHEEL", "RECORD", "entry_points.txt")}
    return {n for n in names if not (drop and n.startswith(drop))} | ({add} - {""})


def test_a_complete_wheel_passes_and_is_counted() -> None:
    """A wheel of exactly the package's files and its .dist-info passes; the account counts rules and tables."""
    account = verify_dist.check_wheel_files(_wheel_names(), VERSION, ROOT)
    tables = len(list((ROOT / "rules" / "data").glob("*.toml")))
    assert f"{len(EXPECTED) + 4} files: " in account
    assert f"{len(list((ROOT / 'rules').glob('*.toml')))} rule files, {tables} data tables" in account


@pytest.mark.parametrize("drop, add, says", [
    pytest.param("envcheck/_rules/data/", "", "missing from the wheel: envcheck/_rules/data/", id="no-rules-data"),
    pytest.param("envcheck/_rules/", "", "missing from the wheel: envcheck/_rules/", id="no-rule-pack"),
    pytest.param("envcheck/schemas/", "", "missing from the wheel: envcheck/schemas/", id="no-schemas"),
    pytest.param("envcheck/sources/probes/_child.py", "", "missing from the wheel: envcheck/sources/probes/_child.py",
                 id="no-child"),
    pytest.param("envcheck/sources/live/_collector.py", "", "envcheck/sources/live/_collector.py", id="no-collector"),
    pytest.param("", "tests/test_cli.py", "in the wheel but not in the package: tests/test_cli.py", id="tests"),
    pytest.param("", "envcheck/__pycache__/api.cpython-312.pyc", "not in the package: envcheck/__pycache__/",
                 id="byte-code"),
    pytest.param("", "rules/gpu.toml", "not in the package: rules/gpu.toml", id="rules-at-the-top"),
    pytest.param(DIST_INFO + "METADATA", "", "no envcheck_ml-", id="no-metadata"),
])
def test_a_wheel_that_lacks_or_adds_files_is_refused(drop: str, add: str, says: str) -> None:
    """The wheel check fails, naming the files, when package data is missing or anything else is shipped."""
    with pytest.raises(verify_dist.Failed, match=re.escape(says)):
        verify_dist.check_wheel_files(_wheel_names(drop, add), VERSION, ROOT)


def test_the_sdist_must_hold_the_sources_and_pyproject() -> None:
    """An sdist without pyproject.toml, or without a data table, cannot build the wheel: refused, naming it."""
    complete = {n.replace("envcheck/_rules/", "rules/") for n in EXPECTED} | {"pyproject.toml", "README.md"}
    verify_dist.check_sdist_files(iter(complete), ROOT)  # a one-shot iterable, as the script passes it
    for absent in ("pyproject.toml", "rules/data/cuda-driver.toml"):
        with pytest.raises(verify_dist.Failed, match=re.escape(absent)):
            verify_dist.check_sdist_files(complete - {absent}, ROOT)


@pytest.mark.parametrize("files, ok", [
    pytest.param([f"envcheck_ml-{VERSION}-py3-none-any.whl", f"envcheck_ml-{VERSION}.tar.gz"], True, id="both"),
    pytest.param([f"envcheck_ml-{VERSION}-py3-none-any.whl"], False, id="no-sdist"),
    pytest.param(["envcheck_ml-0.0.0-py3-none-any.whl", "envcheck_ml-0.0.0.tar.gz"], False, id="another-version"),
    pytest.param([f"envcheck_ml-{VERSION}-py3-none-any.whl", f"envcheck_ml-{VERSION}.tar.gz", "notes.md"], False,
                 id="a-stray-file"),
])
def test_dist_holds_one_wheel_and_one_sdist_of_the_version(tmp_path: Path, files: list[str], ok: bool) -> None:
    """The dist folder (uploaded whole) holds exactly the wheel and the sdist of envcheck/version.py's version."""
    _tree(tmp_path, files)
    if ok:
        assert [p.name for p in verify_dist.find_dists(tmp_path, VERSION)] == files
    else:
        with pytest.raises(verify_dist.Failed, match="should hold exactly"):
            verify_dist.find_dists(tmp_path, VERSION)


# --- reading the installed envcheck's reports ------------------------------------------------------------------------


def _report(python: str, *, skipped: int = 0, error: int = 0, drop: str = "", problems: int = 0) -> str:
    ids = sorted(verify_dist.rule_ids(ROOT) - {drop})
    findings: list[dict[str, Any]] = [{"id": i, "status": "pass", "detail": ""} for i in ids]
    for finding in findings[:skipped]:
        finding["status"] = "skipped"
    return json.dumps({
        "target": {"python": python}, "collection_problems": ["x"] * problems, "findings": findings,
        "summary": {"fail": 0, "warn": 0, "info": 0, "pass": len(ids) - skipped, "n/a": 0, "skipped": skipped,
                    "error": error},
    })


@pytest.mark.parametrize("text, full, says", [
    pytest.param(_report("/v/bin/python"), True, None, id="full-clean"),
    pytest.param(_report("/v/bin/python", skipped=6), False, None, id="static-skips-the-probe-rules"),
    pytest.param(_report("/v/bin/python", skipped=6), True, "did not run every rule", id="full-with-skips"),
    pytest.param(_report("/v/bin/python", error=1), False, "did not run every rule", id="an-error"),
    pytest.param(_report("/v/bin/python", drop="EC0401"), False, "no verdict for EC0401", id="rule-missing"),
    pytest.param(_report("/other/bin/python"), False, "not /v/bin/python", id="another-interpreter"),
    pytest.param(_report("/v/bin/python", problems=1), False, "collection problems", id="collection-problem"),
    pytest.param("{\\u000a}", False, "not JSON", id="not-json"),
])
def test_a_report_is_accepted_only_when_every_rule_ran(text: str, full: bool, says: str | None) -> None:
    """A report passes when it checked the given interpreter, has a verdict for every rule of rules/*.toml and no
    collection problem; a full check must also have skipped nothing."""
    python = Path("/v/bin/python")
    if says is None:
        assert "pass" in verify_dist.check_json_report(text, python, full=full, root=ROOT)
    else:
        with pytest.raises(verify_dist.Failed, match=re.escape(says)):
            verify_dist.check_json_report(text, python, full=full, root=ROOT)


def test_the_full_check_uses_the_test_suites_torch() -> None:
    """--torch installs the same CPU build of torch as the torch_python fixture, whose outcomes the tests assert."""
    from _torch import TORCH_REQUIREMENT

    assert verify_dist.TORCH_REQUIREMENT == TORCH_REQUIREMENT


def test_the_script_fails_on_an_empty_dist_folder(tmp_path: Path) -> None:
    """Run as CI runs it, the script exits 1 with one line when the folder has no distributions."""
    proc = subprocess.run([sys.executable, str(ROOT / ".ci" / "verify_dist.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("FAILED: ") and "should hold exactly" in proc.stderr
    assert proc.stdout == ""


# --- the tag, the version and the release notes ---------------------------------------------------------------------

CHANGELOG = """\
# Changelog

## [Unreleased]

### Added
- Something not yet released.

## [0.2.0] - 2026-03-01

### Added
- The second release.

## [0.1.0] - 2026-01-31

### Added
- The first release.

### Fixed
- A bug.

[Unreleased]: https://github.com/envcheck-ml/envcheck/compare/v0.2.0...HEAD
[0.2.0]: https://github.com/envcheck-ml/envcheck/compare/v0.1.0...v0.2.0
"""


@pytest.mark.parametrize("version, notes", [
    pytest.param("0.2.0", "### Added\n- The second release.\n", id="between-sections"),
    pytest.param("0.1.0", "### Added\n- The first release.\n\n### Fixed\n- A bug.\n", id="before-the-links"),
    pytest.param("Unreleased", "### Added\n- Something not yet released.\n", id="unreleased-by-its-name"),
])
def test_the_changelog_section_of_a_version(version: str, notes: str) -> None:
    """The notes are the section's body: no heading, no next section, no link definitions, no blank ends."""
    assert release_notes.changelog_section(CHANGELOG, version) == notes


@pytest.mark.parametrize("text, version, says", [
    pytest.param(CHANGELOG, "0.3.0", "no `## [0.3.0]` section", id="no-section"),
    pytest.param(CHANGELOG, "0.1", "no `## [0.1]` section", id="a-prefix-is-not-the-version"),
    pytest.param("## [0.3.0] - 2026-04-01\n\n## [0.2.0]\n- x\n", "0.3.0", "section is empty", id="empty"),
])
def test_a_missing_or_empty_section_is_refused(text: str, version: str, says: str) -> None:
    """Releasing a version the CHANGELOG does not describe fails before anything is built."""
    with pytest.raises(release_notes.Failed, match=re.escape(says)):
        release_notes.changelog_section(text, version)


@pytest.mark.parametrize("tag, ok", [
    pytest.param("v1.2.3", True, id="v-and-the-version"),
    pytest.param("1.2.3", False, id="no-v"),
    pytest.param("v1.2.4", False, id="another-version"),
    pytest.param("v1.2", False, id="shorter"),
    pytest.param("v1.2.3rc1", False, id="a-pre-release-of-it"),
])
def test_the_tag_must_be_v_and_the_version(tag: str, ok: bool) -> None:
    """The tag is `v` + envcheck/version.py's __version__, exactly."""
    if ok:
        release_notes.check_tag(tag, "1.2.3")
    else:
        with pytest.raises(release_notes.Failed, match="does not match"):
            release_notes.check_tag(tag, "1.2.3")


def test_the_release_notes_script_checks_the_tag_first(tmp_path: Path) -> None:
    """Run as the release workflow runs it, a tag that is not the version exits 1 and prints no notes."""
    proc = subprocess.run([sys.executable, str(ROOT / ".ci" / "release_notes.py"), "v999.0.0"],
                          capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == f"FAILED: the tag v999.0.0 does not match envcheck/version.py's __version__ {VERSION} " \
                          f"(expected v{VERSION})\n"
    assert proc.stdout == ""


# --- what the README tells users to reference ------------------------------------------------------------------------


def test_readme_hooks_and_action_reference_the_release_tag() -> None:
    """The README's pre-commit `rev` and Action `uses:`, and the examples in .pre-commit-hooks.yaml and action.yml,
    name the tag of the version in envcheck/version.py; a git-URL install names that tag or none (the main
    branch)."""
    tag = f"v{VERSION}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^\s*rev: (\S+)$", readme, re.MULTILINE)) == {tag}
    assert set(re.findall(r"uses: envcheck-ml/envcheck@(\S+)", readme)) == {tag}
    refs = re.findall(r"git\+https://github\.com/envcheck-ml/envcheck(\S*)", readme)  # the main branch, or the tag
    assert refs and set(refs) <= {"", f"@{tag}"}
    assert f"#     rev: {tag}\n" in (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert f"#   - uses: envcheck-ml/envcheck@{tag}\n" in (ROOT / "action.yml").read_text(encoding="utf-8")

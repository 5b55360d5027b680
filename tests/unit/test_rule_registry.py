"""One registry of the kinds of rule (envcheck/rules/registry.py): the pack keeps out of the reserved ranges, each
generated kind and the fleet checks keep to their own, and `envcheck rule` documents every kind a check in the folder
would report, or says which kind an id it cannot find belongs to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.fleet.checks import CHECKS
from envcheck.rules import generated, policy, registry, rule_pack
from envcheck.sources.project.config import from_table
from envcheck.sources.project.discover import discover

PROJECT = """\
[project]
name = "demo"
version = "1"
dependencies = ["click>=99"]

[tool.envcheck]
require = ["torch>=2.4"]
forbid = ["apex"]
"""


def test_the_pack_uses_no_reserved_id() -> None:
    pack = rule_pack.load(use_cache=False)
    assert [r.id for r in pack.rules if registry.reserved_for(r.id)] == []


def test_each_made_kind_keeps_to_its_range(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT, encoding="utf-8")
    config = from_table({"require": ["torch>=2.4"], "forbid": ["apex"]}, file=str(tmp_path / "pyproject.toml"),
                        prefix="tool.envcheck.")
    made = {"policy": policy.rules(config), "project": generated.rules(discover(tmp_path))}
    assert made["policy"] and made["project"]
    assert {registry.reserved_for(r.id) for r in made["policy"]} == {registry.POLICY}
    assert {registry.reserved_for(r.id) for r in made["project"]} == {registry.PROJECT}
    assert {registry.reserved_for(c.id) for c in CHECKS} == {registry.FLEET}


@pytest.mark.parametrize(("selector", "prefix"), [("EC9801", "EC98"), ("ec99", "EC99"), ("EC1001", "EC10"),
                                                  ("EC0201", None), ("EC9", None), ("project-forbid-apex", None)])
def test_a_selector_names_its_reserved_range(selector: str, prefix: str | None) -> None:
    assert registry.reserved_for(selector) == prefix


def test_envcheck_rule_documents_what_the_folders_project_generates(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["rule", "EC99", "EC9801", "EC0201", "--format", "json"])
    assert result.exit_code == 0, result.output
    ids = [entry["id"] for entry in json.loads(result.output)]
    assert ids == ["EC0201", "EC9901", "EC9950", "EC9801"]
    by_name = CliRunner().invoke(cli, ["rule", "project-forbid-apex"])
    assert by_name.exit_code == 0 and by_name.output.startswith("EC9950 project-forbid-apex")
    markdown = CliRunner().invoke(cli, ["rule", "EC98", "--format", "markdown"])
    assert "## Rules this project generates" in markdown.output and "### EC9801" in markdown.output


def test_envcheck_rule_says_which_kind_an_absent_id_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no project: nothing is generated here
    result = CliRunner().invoke(cli, ["rule", "EC9801", "EC1099", "no-such-rule"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "no rule 'EC9801', 'EC1099', 'no-such-rule' here" in result.output
    assert "EC10xx are fleet checks" in result.output and "EC98xx are rules generated from a project's" in result.output
    assert "EC99xx" not in result.output


def test_a_pack_rule_needs_no_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder's configuration is read only for an id the pack and the fleet checks do not have: a broken one
    does not stop `envcheck rule EC0201`, and is reported for an id only it could make."""
    (tmp_path / "pyproject.toml").write_text("[tool.envcheck]\nrequire = 3\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["rule", "EC0201"]).exit_code == 0
    broken = CliRunner().invoke(cli, ["rule", "EC9901"])
    assert broken.exit_code == 2 and "require" in broken.output and "pyproject.toml" in broken.output

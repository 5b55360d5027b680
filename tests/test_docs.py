"""Generated documentation stays in step with the rule pack."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from envcheck import rules as rules_mod
from envcheck._cli import cli

RULES_MD = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
REGENERATE = "envcheck rule --all --format markdown > docs/rules.md"


def test_rules_md_is_current() -> None:
    """docs/rules.md is exactly `envcheck rule --all --format markdown`; when stale, the failure says how to fix it."""
    result = CliRunner().invoke(cli, ["rule", "--all", "--format", "markdown"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    current = RULES_MD.read_text(encoding="utf-8") if RULES_MD.is_file() else ""
    assert current == result.output, f"docs/rules.md is stale: regenerate it with `{REGENERATE}`"


def test_rules_md_documents_every_rule() -> None:
    """Every rule of the shipped pack has its own section in the generated documentation."""
    text = RULES_MD.read_text(encoding="utf-8")
    missing = [r.id for r in rules_mod.load() if f"### {r.id}\n" not in text]
    assert not missing, f"docs/rules.md lacks {missing}: regenerate it with `{REGENERATE}`"

"""Documentation stays in step with the code: the generated rule pages, the predicates and the derived facts."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.derived.derive import DERIVATIONS, markdown_table
from envcheck.rules import rule_pack
from envcheck.rules.conditions import PREDICATES

RULES_MD = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
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
    missing = [r.id for r in rule_pack.load() if f"### {r.id}\n" not in text]
    assert not missing, f"docs/rules.md lacks {missing}: regenerate it with `{REGENERATE}`"


RULE_LANGUAGE_MD = RULES_MD.parent / "rule-language.md"


def test_rule_language_documents_every_predicate_and_derived_fact() -> None:
    """docs/rule-language.md has a table row for every leaf predicate and names every derived fact."""
    text = RULE_LANGUAGE_MD.read_text(encoding="utf-8")
    assert [p for p in sorted(PREDICATES) if f"\n| `{p}` |" not in text] == []
    assert [d for d in sorted(DERIVATIONS) if f"`{d}`" not in text] == []


def test_rule_language_derived_facts_table_is_generated() -> None:
    """The derived-facts table of docs/rule-language.md is exactly what DERIVATIONS' docs generate, and every
    item field a rule may use is named in its fact's doc."""
    text = RULE_LANGUAGE_MD.read_text(encoding="utf-8")
    start, end = "<!-- derived-facts:", "<!-- /derived-facts -->"
    block = text[text.index(start):text.index(end)].split("\n", 1)[1]
    regenerate = ("replace the table between the derived-facts markers with the output of `python -c \"from "
                  "envcheck.derived.derive import markdown_table; print(markdown_table(), end='')\"`")
    assert block == markdown_table(), f"docs/rule-language.md is stale: {regenerate}"
    assert {d.name: [f for f in d.fields if f"`{f}`" not in d.doc] for d in DERIVATIONS.values()} == {
        d: [] for d in DERIVATIONS}

"""Where a rule's condition (or any key of a rule file) was written, for the error that names it. Imported where rules
are parsed: a check whose pack comes from its cache never defines the class."""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.errors import RuleError


@dataclass(frozen=True)
class Where:
    """Where a condition was written, for error messages."""

    file: str
    rule_id: str | None
    key: str

    def at(self, sub: str) -> Where:
        # A rule's own top-level keys start from an empty key: "name", not ".name".
        return Where(self.file, self.rule_id, f"{self.key}.{sub}" if self.key else sub)

    def error(self, message: str) -> RuleError:
        return RuleError(self.file, message, rule_id=self.rule_id, key=self.key)

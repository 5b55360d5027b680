"""What error output showed: one `Observation` per line that a rule's error signature recognised.

A failure usually reaches someone as text (a traceback, a CI log, an issue body), and that text is evidence about
the environment it ran in: torch's own warning names the GPU's capability and the build's architectures, an
undefined symbol names the extension and the torch it was built for. envcheck/sources/logs/ finds these lines; the
snapshot carries them (`Facts.observed`), and the engine turns each into its rule's finding, with the line as the
evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envcheck.facts._reader import Reader

__all__ = ["Observation"]


@dataclass(frozen=True)
class Observation:
    """One recognised failure: which rule's signature matched, where, the text, and what it stated."""

    rule_id: str  # the rule whose signature matched: "EC0401"
    signature: int  # which of that rule's signatures (0-based, in the rule file's order)
    line: int  # 1-based line number in the text that was read
    text: str  # the matched lines as written (clipped), for the evidence
    captures: dict[str, str] = field(default_factory=dict)  # the pattern's named groups that matched
    facts: dict[str, str] = field(default_factory=dict)  # what the text states about the environment, normalised:
    # "gpu.capability" -> "7.0", "driver.cuda" -> "11.4", "torch.arch_list" -> "sm_75 sm_80", "python.version" -> ...
    source: str = ""  # what was read: "stdin", a file name, "block 3 of the report"

    def where(self) -> str:
        return f"{self.source}, line {self.line}" if self.source else f"line {self.line}"

    @classmethod
    def from_reader(cls, r: Reader) -> Observation:
        return cls(rule_id=r.text("rule_id"), signature=r.integer("signature", minimum=0),
                   line=r.integer("line", minimum=1), text=r.text("text"), captures=r.text_map("captures"),
                   facts=r.text_map("facts"), source=r.opt_text("source") or "")

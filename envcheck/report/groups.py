"""A rule's findings read together: when one rule fires for several items (nine missing requirements of one
distribution), a person reads the items as a list, the why and the fix once, and one merged command.

The merge is `envcheck fix`'s own (`fix.plan`), so the command a report shows is the one `envcheck fix` runs, and a
requirement the merge leaves out (no version meets every item's) is said in the fix.
The JSON report keeps one finding per item: it is the machine format.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby

from envcheck.report.common import command_lines, problems
from envcheck.rules.model import Finding, Report, Severity, Status
from envcheck.support.output_text import shell


def _distinct(texts: Iterable[str]) -> tuple[str, ...]:
    """The non-empty texts, each once, in first-seen order."""
    return tuple(dict.fromkeys(t for t in texts if t))


# A rule's why, fix and evidence are shown once for all its items, and differ only where an item's name is in them:
# 10,000 conflicting requirements would print 10,000 fixes. The first few are shown, then how many more there are.
SHOWN_TEXTS = 3
# The items a markdown, JUnit or GitHub report lists under one rule (the text report shows 10 unless -v).
LISTED = 50


def _capped(texts: tuple[str, ...], what: str) -> tuple[str, ...]:
    if len(texts) <= SHOWN_TEXTS:
        return texts
    return (*texts[:SHOWN_TEXTS], f"… and {len(texts) - SHOWN_TEXTS} more {what}, one per item (--format json "
                                  "has each item's)")


@dataclass(frozen=True)
class Problem:
    """The findings of one rule with one status (a `foreach` rule: one per item), in the engine's order."""

    findings: tuple[Finding, ...]  # at least one
    commands: tuple[tuple[str, ...], ...]  # every finding's commands, merged as `envcheck fix` merges them
    conflicts: tuple[str, ...] = ()  # requirements the merge left out: no version meets every item's

    @classmethod
    def of(cls, findings: Sequence[Finding], python: str) -> Problem:
        from envcheck.remedy import fix  # only a report with problems needs the fix planner's merge

        merged = fix.plan(findings, python)
        return cls(tuple(findings), tuple(step.argv for step in merged.steps), merged.conflicts)

    def command_lines(self, argv: tuple[str, ...], width: int) -> list[str]:
        """`argv` shell-quoted for display: one line for a single finding's command (as a script greps it), and
        continued over lines of `width` for a command merged from several items, which grows with them."""
        return command_lines(argv, width) if len(self.findings) > 1 else [shell(argv)]

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def rule_id(self) -> str:
        return self.first.rule_id

    @property
    def name(self) -> str:
        return self.first.name

    @property
    def status(self) -> Status:
        return self.first.status

    @property
    def severity(self) -> Severity:
        return self.first.severity

    @property
    def summaries(self) -> tuple[str, ...]:
        """One line per item."""
        return tuple(f.summary for f in self.findings)

    # A rule's why and fix hold item placeholders only where the item changes them; the same text is shown once.
    @property
    def whys(self) -> tuple[str, ...]:
        return _capped(_distinct(f.why for f in self.findings), "reasons")

    @property
    def fixes(self) -> tuple[str, ...]:
        return (*_capped(_distinct(f.fix for f in self.findings), "fixes"),
                *_capped(_distinct(self.conflicts), "requirements no command can meet"))

    @property
    def evidence(self) -> tuple[str, ...]:
        return _capped(_distinct(f.evidence for f in self.findings), "pieces of evidence")

    def listed(self, limit: int = LISTED) -> list[str]:
        """The items' summaries, at most `limit` of them, then a line saying how many more there are."""
        more = len(self.findings) - limit
        return [*self.summaries[:limit], *([f"… and {more} more (--format json lists every one)"] if more > 0
                                            else [])]

    @property
    def details(self) -> tuple[str, ...]:
        """For a rule that could not be evaluated: what went wrong."""
        return _distinct(f.detail for f in self.findings)

    @property
    def references(self) -> tuple[str, ...]:
        return _distinct(r for f in self.findings for r in f.references)


def grouped(report: Report) -> list[Problem]:
    """The report's problems (common.problems, in its order), one Problem per rule and status."""
    return [Problem.of(list(group), report.python)
            for _, group in groupby(problems(report), key=lambda f: (f.status, f.rule_id))]

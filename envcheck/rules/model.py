"""The domain: severities, verdicts, rules, findings and the report. Plain frozen data; no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envcheck.rules.conditions import Condition
    from envcheck.rules.signatures import Signature


class Severity(str, Enum):
    """How bad a rule's hazard is when its condition holds."""

    ERROR = "error"  # the project will crash or compute wrong results
    WARNING = "warning"  # likely trouble, or trouble under common conditions
    INFO = "info"  # worth knowing; never fails a check by default

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]


class Status(str, Enum):
    """The verdict of one rule (or one item of a `foreach` rule) on one environment."""

    FAIL = "fail"  # condition true, severity error
    WARN = "warn"  # condition true, severity warning
    INFO = "info"  # condition true, severity info
    PASS = "pass"  # noqa: S105 - a verdict, not a password. The rule applies and its condition is false
    NA = "n/a"  # the rule does not apply (e.g. the package it is about is not installed)
    SKIPPED = "skipped"  # a fact the rule needs is unknown; `missing` names it
    ERROR = "error"  # the rule could not be evaluated; `detail` says why. Reported, never fatal

    @property
    def is_finding(self) -> bool:
        return self in (Status.FAIL, Status.WARN, Status.INFO)


FINDING_STATUS = {Severity.ERROR: Status.FAIL, Severity.WARNING: Status.WARN, Severity.INFO: Status.INFO}

# `--fail-on` levels: the lowest severity whose findings make the exit code 1.
FAIL_ON_LEVELS = ("error", "warning", "info", "never")


@dataclass(frozen=True)
class Rule:
    """One known hazard, loaded from a TOML file under rules/ (see docs/rule-language.md)."""

    id: str  # stable code, never reused: "EC0301"
    name: str  # kebab-case, states the bad thing: "apex-fused-rmsnorm-breaks-fp16-t5"
    severity: Severity
    summary: str  # the problem in one line; may hold {placeholders}
    why: str  # the mechanism, in two or three sentences
    fix: str  # the action, in words
    commands: tuple[tuple[str, ...], ...]  # argv templates: ("{python}", "-m", "pip", "uninstall", "-y", "apex")
    references: tuple[str, ...]  # upstream issues and docs
    applies: Condition  # false -> n/a
    when: Condition  # true -> finding; false -> pass
    foreach: str | None  # a list-valued derived fact: one verdict per item, templates see {item.KEY}
    area: str  # the rule file's stem: "dependencies", "libraries", ...
    file: str  # where it was loaded from, for error messages
    signatures: tuple[Signature, ...] = ()  # the messages its failure produces (envcheck/rules/signatures.py)
    evidence_only: bool = False  # no condition on facts: only error output shows it (n/a without a match)
    plan: str | None = None  # a plan fact (PLANS): the install that fixes a finding; `fix` and `commands` see its
    # one item as {plan.KEY}. It never decides a verdict: where it is unknown, the finding stands with
    # `fix_without_plan` and without the commands that name it
    fix_without_plan: str = ""  # the fix in words where the plan is unknown or empty; given exactly with `plan`
    # (url, item field, values): a reference cited only for the findings whose item has one of the values
    scoped_references: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # Rules whose facts also cause the failures this rule's signatures recognise (a torchvision that pins another
    # torch fails with the same message as one built for another torch): where the checked environment's facts
    # contradict this rule but fire one of these for the package the message names, that one explains the message.
    explained_by: tuple[str, ...] = ()

    def references_for(self, item: dict[str, str] | None) -> tuple[str, ...]:
        """The references about a finding of this rule for `item`: every one, but for an item those scoped to other
        items' values (the threads about torchaudio are not cited for a torchvision finding)."""
        if item is None or not self.scoped_references:
            return self.references
        scopes: dict[str, list[bool]] = {}
        for url, key, values in self.scoped_references:
            scopes.setdefault(url, []).append(item.get(key, "") in values)
        return tuple(url for url in self.references if all(scopes.get(url, [True])))


@dataclass(frozen=True)
class Finding:
    """A verdict of one rule, rendered for the checked interpreter."""

    rule_id: str
    name: str
    severity: Severity
    status: Status
    summary: str
    why: str = ""
    fix: str = ""
    commands: tuple[tuple[str, ...], ...] = ()  # argv, placeholders filled in
    references: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # for SKIPPED: the unknown facts
    detail: str = ""  # for ERROR: what went wrong
    item: dict[str, str] | None = None  # for `foreach` rules: the item this verdict is about
    area: str = ""
    evidence: str = ""  # which facts decided, when a rule weighs several (a probe, else a version range)
    observed: bool = False  # error output that came with the facts shows it (envcheck explain, check --report)


# How the checked interpreter was chosen (`Target.source`), in the order envcheck tries them
# (envcheck/pipeline/target.py).
TARGET_SOURCES = ("python-option", "virtual-env", "conda-env", "uv-project-environment", "pdm-python",
                  "project-venv", "conda-base", "self", "snapshot")


@dataclass(frozen=True)
class Target:
    """The interpreter a check is about, and how it was chosen (envcheck/pipeline/target.py decides)."""

    python: str  # its executable: what the facts describe and what the fix commands run
    source: str  # one of TARGET_SOURCES
    reason: str  # the choice in words, paths under the working directory shortened: "from ./.venv"
    in_process: bool  # True: the interpreter envcheck runs in, whose facts are collected in-process

    def line(self) -> str:
        """The report's header: `checked /proj/.venv/bin/python: from ./.venv`."""
        return f"checked {self.python}: {self.reason}"

    def to_dict(self) -> dict[str, str | bool]:
        return {"python": self.python, "source": self.source, "reason": self.reason, "in_process": self.in_process}


@dataclass(frozen=True)
class Report:
    """Every verdict of one check, in rule-id order."""

    findings: tuple[Finding, ...]
    python: str  # the checked interpreter's executable
    origin: str  # where the facts came from: "local", "python:PATH", "file:PATH"
    envcheck_version: str
    collection_problems: tuple[str, ...] = field(default=())
    installer: str = ""  # which installer the commands use and why, in words (envcheck/remedy/commands/installers.py)
    target: Target | None = None  # which interpreter was checked and why; None where nobody chose (fleet nodes)
    project: str = ""  # the project files read, in words: "/p: pyproject.toml, uv.lock"; "" when none
    explained: str = ""  # `envcheck explain`: the error output read and what was recognised in it, in words
    unseen: tuple[str, ...] = ()  # what the verdicts could not see, a sentence each (envcheck/rules/unseen.py): "torch
    # is not installed here, so 60 rules about torch were not checked"; the tally says it
    notes: tuple[str, ...] = ()  # about using envcheck with this environment, a sentence each, shown above the
    # tally (envcheck.pipeline.target.pytest_plugin_note: the pytest plugin out of pytest's reach)

    def count(self, status: Status) -> int:
        return sum(1 for f in self.findings if f.status is status)

    def counts(self) -> dict[str, int]:
        return {s.value: self.count(s) for s in Status}

    def at_or_above(self, fail_on: str) -> list[Finding]:
        """Findings that make the check fail under `--fail-on fail_on`."""
        if fail_on == "never":
            return []
        floor = Severity(fail_on).rank
        return [f for f in self.findings if f.status.is_finding and f.severity.rank >= floor]

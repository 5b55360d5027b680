"""One file of the rule pack as envcheck/rules/rule_pack.py reads it (`load_file`), for the docs and `envcheck rule`.
Imported where rule files are read: a check whose pack comes from its cache never defines the class."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from envcheck.rules.model import Rule


@dataclass(frozen=True)
class RuleFile:
    """One file of the pack: its area (the file's stem), a title for the docs, and its rules."""

    path: Path
    area: str
    title: str
    description: str
    rules: tuple[Rule, ...]

"""A requirement the project's policy declares (`require`, `forbid`) and where it was declared, as
envcheck/rules/policy.py writes its rules from it. Imported only where something is declared: most checks never
define the class."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.requirements import Requirement


@dataclass(frozen=True)
class Declared:
    """One requirement and where it was declared: a configuration file's key, or a command-line option."""

    requirement: Requirement
    text: str
    file: str  # the Rule's file: the configuration file, or "<command line>"
    where: str  # in words, for `why`: "tool.envcheck.require in /p/pyproject.toml", "--require"

"""What envcheck/remedy/commands/planner.py takes a finding's pip install command apart into (`PipInstall`), and the
installed torch's release and variant it plans for (`TorchVariant`). Imported only where a command is a pip install
of the checked interpreter: a check whose findings install nothing never defines these classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.version import Version


@dataclass(frozen=True)
class PipInstall:
    """A pip install command, taken apart."""

    head: tuple[str, ...]  # PYTHON -m pip install
    flags: tuple[str, ...]  # options without a value, in order
    index: tuple[str, ...]  # index options with their values
    reqs: tuple[Requirement, ...]
    others: tuple[str, ...]  # arguments that are not requirements (a path, `-r FILE`): the command is left alone


@dataclass(frozen=True)
class TorchVariant:
    """The installed torch's release and variant."""

    text: str  # "2.13.0+cpu"
    release: Version  # 2.13.0
    tag: str | None  # "cpu"; None for a torch from PyPI
    index: str | None  # the variant's index; None: the configured one

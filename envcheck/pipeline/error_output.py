"""Error output given to a check to explain (`CheckOptions.error_output`, `envcheck explain`, `check --log`). Imported
where there is some: a check without error output never defines the class."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorOutput:
    """Error output to explain (a traceback, a CI log, `envcheck explain`): its text, and the name the report gives
    it (a file's name, `<stdin>`)."""

    text: str
    name: str = "error output"

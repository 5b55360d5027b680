"""The steps of an `envcheck fix` plan (envcheck/remedy/fix.py): one command and why it runs (`Step`), and the
installs of one head and flag set merged into one (`InstallGroup`). Imported where a plan has commands: a report
whose findings have none (or a clean one) never defines these classes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One command of the plan."""

    argv: tuple[str, ...]
    installer: str | None  # "pip", "uv", "conda", "ensurepip"; None: not an installer (runs only with --allow-other)
    removes: bool  # an uninstall / remove: runs before every install
    rules: tuple[str, ...]  # the rule ids of the findings that asked for it
    why: tuple[str, ...] = ()  # "EC0702 torchvision 0.20.0 requires torch==2.5.0, ...": the findings, in one line each
    effect: str = ""  # what it keeps and what it changes, from the facts: "keeps torch 2.13.0+cpu; replaces ..."
    held: str = ""  # why it waits for --allow-other: "not an installer command", "passes --index-url", ...

    @property
    def needs_opt_in(self) -> bool:
        return self.installer is None or bool(self.held)


@dataclass
class InstallGroup:
    """The installs of one head and flag set, merged into the step at `index` of the plan."""

    index: int
    requirements: dict[str, None]  # dicts as ordered sets: a plan of thousands of findings merges in linear time
    rules: dict[str, None]
    why: dict[str, None]
    merged: bool = False  # a second install joined: the step is rewritten

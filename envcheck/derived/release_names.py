"""The derived fact `imports.missing-from-release` (EC1903): failed imports in error output, judged against which
releases of the library have the name (envcheck/derived/release_table.py, and its data,
rules/data/release-names.json).

Every check evaluates EC1903, and nearly none has error output: this module is what they import, and it only asks
whether the error output showed a failed import. The table, its reader and the judgement are imported, and the file
read, only when it did.
"""

from __future__ import annotations

from envcheck.derived.common import Derivation, Item, Values

__all__ = ["DERIVATIONS", "RULE_ID", "missing_names"]

RULE_ID = "EC1903"  # the rule whose signatures recognise a failed import (rules/framework-errors.toml)


def _judged(derived: Values) -> list[Item]:
    if not any(o.rule_id == RULE_ID for o in derived.facts.observed):
        return []

    def compute() -> list[Item]:
        from envcheck.derived.release_table import judged

        return [{key: item[key] for key in _FIELDS} for item in judged(derived, RULE_ID)]  # in the declared order

    return derived.once("imports.judged", compute)


def missing_names(derived: Values) -> list[Item]:
    """The failed imports that the release installed or stated (or, unknown, any but some releases) explains."""
    return [i for i in _judged(derived) if i["skew"] == "yes"]


def not_the_release(derived: Values) -> list[Item]:
    """The failed imports no release change explains: the installed release has the name, no release ever had it,
    a stray folder stands in for the library, or the table has no verdict."""
    return [i for i in _judged(derived) if i["skew"] == "no"]


_FIELDS = ("library", "module", "name", "qualified", "first", "removed", "version", "importer", "install", "summary",
           "why", "fix", "line", "skew")
_ITEMS = ("`library`, `module`, `name`, `qualified`, `first` (the release that added it, empty when it is older than "
          "the releases read), `removed` (empty when still there), `version` (the installed or stated release, "
          "empty when unknown), `importer` (the package whose import failed, from the traceback's path), `install` "
          "(the requirement that has it, empty when no release change fixes it), `summary`, `why`, `fix`, `line`, "
          "`skew`. Empty without error output: rules/data/release-names.json is read only then")
DERIVATIONS = [
    Derivation("imports.missing-from-release",
               "the failed imports that error output shows (EC1903's signatures: `cannot import name`, `module 'P' "
               "has no attribute`, `No module named 'P.sub'`) of a library in rules/data/release-names.json whose "
               "installed or stated release lacks the name, or whose release is unknown while only some releases "
               f"have it: {_ITEMS}", _FIELDS, missing_names, judges_output=True),
    Derivation("imports.not-the-release",
               "the same failed imports where no release change is the fix: the installed release has the name, no "
               "release read ever had it (a typo, another library), a folder without code stands in for the "
               f"library (`unknown location`), or the table lists no names of that module: {_ITEMS}", _FIELDS,
               not_the_release),
]

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


def missing_names(derived: Values) -> list[Item]:
    if not any(o.rule_id == RULE_ID for o in derived.facts.observed):
        return []
    from envcheck.derived.release_table import judged

    return judged(derived, RULE_ID)


DERIVATIONS = [
    Derivation("imports.missing-from-release",
               "the failed imports that error output shows (EC1903's signatures: `cannot import name`, `module 'P' "
               "has no attribute`, `No module named 'P.sub'`) of a library in rules/data/release-names.json, each "
               "judged against the releases that have the name: `library`, `module`, `name`, `qualified`, `first` "
               "(the release that added it, empty when it is older than the releases read), `removed` (empty when "
               "still there), `version` (the installed or stated release, empty when unknown), `importer` (the "
               "package whose import failed, from the traceback's path), `install` (the requirement that has it, "
               "empty when no release change fixes it), `summary`, `why`, `fix`, `line`. Empty without error "
               "output: the file is read only then",
               ("library", "module", "name", "qualified", "first", "removed", "version", "importer", "install",
                "summary", "why", "fix", "line"), missing_names, judges_output=True),
]

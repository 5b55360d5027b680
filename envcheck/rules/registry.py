"""Every kind of rule, in one place: what makes the rules of each id range, and where they are documented.

A check's findings come from rules of four kinds. The rule pack (rules/*.toml, and the directories `--rules` and
`[tool.envcheck] rules` add) holds every id outside the reserved ranges below; the other three are made by envcheck:
the project's policy (EC99xx) from its `[tool.envcheck]`, the project rules (EC98xx) from the project's files, and
the fleet checks (EC10xx), which compare the machines `envcheck fleet` gathers. `envcheck rule ID` documents each
kind: the pack's and the fleet checks' always, the generated ones where the folder's configuration and project make
them (`envcheck rule EC99` in a project documents its policy).
"""

from __future__ import annotations

FLEET = "EC10"
PROJECT = "EC98"
POLICY = "EC99"

# The reserved ranges: id prefix -> what makes its rules, said when a selector finds none of them here.
RESERVED: dict[str, str] = {
    FLEET: "fleet checks, which compare the machines of `envcheck fleet` (docs/fleet.md)",
    PROJECT: "rules generated from a project's requirements and lock (docs/project.md)",
    POLICY: "rules generated from a project's [tool.envcheck] policy (docs/policy.md)",
}


def reserved_for(selector: str) -> str | None:
    """The reserved range of a selector that is an id or id prefix in one (`EC9801`, `EC99`): its prefix; None for
    the pack's ids and for names."""
    return next((prefix for prefix in RESERVED if selector.upper().startswith(prefix)), None)

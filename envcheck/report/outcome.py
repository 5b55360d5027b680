"""`envcheck fix`'s last words: the check before and after the plan ran, compared (the plan itself is
envcheck/remedy/fix.py's)."""

from __future__ import annotations

from envcheck.report.common import problems, tally
from envcheck.rules.model import Finding, Report, Status


def _key(f: Finding) -> tuple[str, tuple[tuple[str, str], ...]]:
    return f.rule_id, tuple(sorted((f.item or {}).items()))


def render_outcome(before: Report, after: Report) -> str:
    """Before and after: the tallies, then the problems that went away, the ones that remain and any new ones, and
    last the notes the check still gives. A note (an `info` finding) is information, not a problem: it is never
    listed as remaining or new, and one that went away is fixed like any finding."""
    old, new = problems(before), problems(after)
    old_keys, new_keys = {_key(f) for f in old}, {_key(f) for f in new}
    notes = [f for f in new if f.status is Status.INFO]
    new = [f for f in new if f.status is not Status.INFO]
    lines = [f"before: {tally(before)}", f"after:  {tally(after)}"]
    for title, mark, shown in (("fixed", "✓", [f for f in old if _key(f) not in new_keys]),
                               ("remaining", "✗", [f for f in new if _key(f) in old_keys]),
                               ("new", "!", [f for f in new if _key(f) not in old_keys]),
                               ("notes", "i", notes)):
        if shown:
            lines.append(f"{title} ({len(shown)}):")
            lines += [f"  {mark} {f.rule_id} {f.name}: {f.summary}" for f in shown]
    return "\n".join(lines) + "\n"

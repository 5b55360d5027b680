"""`envcheck fix`'s last words: the check before and after the plan ran, compared (the plan itself is
envcheck/remedy/fix.py's)."""

from __future__ import annotations

from envcheck.model import Finding, Report
from envcheck.report.common import problems, tally


def _key(f: Finding) -> tuple[str, tuple[tuple[str, str], ...]]:
    return f.rule_id, tuple(sorted((f.item or {}).items()))


def render_outcome(before: Report, after: Report) -> str:
    """Before and after: the tallies, then the problems that went away, the ones that remain and any new ones."""
    old, new = problems(before), problems(after)
    old_keys, new_keys = {_key(f) for f in old}, {_key(f) for f in new}
    lines = [f"before: {tally(before)}", f"after:  {tally(after)}"]
    for title, mark, shown in (("fixed", "✓", [f for f in old if _key(f) not in new_keys]),
                               ("remaining", "✗", [f for f in new if _key(f) in old_keys]),
                               ("new", "!", [f for f in new if _key(f) not in old_keys])):
        if shown:
            lines.append(f"{title} ({len(shown)}):")
            lines += [f"  {mark} {f.rule_id} {f.name}: {f.summary}" for f in shown]
    return "\n".join(lines) + "\n"

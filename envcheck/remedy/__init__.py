"""Remedies: the commands a finding prints, and what `envcheck fix` and `envcheck recommend` do with them.

- templates.py: placeholders in a rule's summary, why, fix and commands, and their rendering;
- commands.py: commands for the installer the checked environment has (pip, `uv pip`, conda removals, by hand);
- planner.py: the torch-family planner (a torch or companion install rewritten to keep what works);
- fix.py: `envcheck fix`, the pure part: findings -> an ordered, deduplicated plan of commands;
- consent.py: which commands of a plan run without --allow-other;
- recommend.py: what-if planning, the torch-family install for this machine, a described one, or a snapshot.
"""

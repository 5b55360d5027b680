"""Remedies: what `envcheck fix` and `envcheck recommend` do with the commands findings carry
(envcheck/remedy/commands/).

- fix.py: `envcheck fix`, the pure part: findings -> an ordered, deduplicated plan of commands;
- consent.py: which commands of a plan run without --allow-other;
- recommend.py: what-if planning, the torch-family install for this machine, a described one, or a snapshot.
"""

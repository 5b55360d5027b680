"""The rules: what is checked, and the engine that checks it.

- rule_pack.py: the shipped pack (rules/*.toml and its data tables) and rule directories, loaded and validated;
- model.py: rules, findings and the report; conditions/: the condition language; signatures.py (with bounded.py and
  captures.py): the error messages a rule's failure prints and what they state; templates.py: the placeholders of
  a rule's text and commands;
- policy.py (EC99xx, from `[tool.envcheck]`) and generated.py (EC98xx, from the project's files): rules generated
  from what a project declares, merged with the pack;
- engine.py: pure, pack + facts -> report; unseen.py: what the verdicts did not see.

The fleet checks (EC10xx), rules of their own kind that compare machines, are in envcheck/fleet/checks.py.

Importing this package imports none of them.
"""

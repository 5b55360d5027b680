"""The project being checked: what it declares (pyproject.toml, requirements files, setup.cfg, a conda
environment.yml) and what its lock pins (uv.lock, pylock.toml, poetry.lock, pdm.lock).

discover.py finds and reads the files into a `ProjectFacts` (envcheck/facts/project.py); requirements.py reads
requirements files, locks.py lock files; envcheck/derived/project.py compares the declarations with an
environment's Facts (the derived facts `project.unmet` and `project.lock-drift`), and envcheck/rules/generated.py
writes the generated rules EC9801 and EC9802 that report them through the engine like any other rule; config.py
reads `[tool.envcheck]` (pyproject.toml or envcheck.toml); errors.py is the errors of reading them.
"""

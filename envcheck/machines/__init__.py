"""The machines a project deploys to, judged without them: `[[tool.envcheck.machines]]` in the configuration.

declared.py reads and validates the declarations; pins.py reads what the project pins (its lock, else its pinned
requirements); facts.py builds the Facts snapshot each machine would have from those pins, so that the engine and
the rule pack judge it like any other snapshot; check.py evaluates every machine and turns each finding's commands
(written for a local environment) into the change to the project's pins; report.py renders the per-machine
reports; recommend.py answers `envcheck recommend --machine`.
"""

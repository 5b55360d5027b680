"""The machines a project deploys to, judged without them: `[[tool.envcheck.machines]]` in the configuration.

The data flow, one module a step: declared.py reads and validates the declarations; pins.py reads what the project
would install on a machine (its lock, narrowed to that machine by lockpins.py, else its pinned requirements);
facts.py builds the Facts snapshot the machine would have from those pins, so that the engine and the rule pack
judge it like any other snapshot; check.py evaluates every machine and says each finding for it, its commands
(written for a local environment) turned into changes to the pins by fixes.py; report.py renders the per-machine
reports; recommend.py answers `envcheck recommend --machine`; run.py is `check --machine` without the CLI.
"""

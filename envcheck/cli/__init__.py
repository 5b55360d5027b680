"""The command line: the `envcheck` command, its plain fast path and what its commands share.

- entry.py: the console entry point (`envcheck`, `python -m envcheck`): `--version` and the plain check without
  importing click, everything else through click;
- click_cli.py: every command and option (click), each a thin layer over the library;
- plain_cli.py: the plain forms of the check (`envcheck`, `envcheck --static`, ...) run without click, printing
  byte for byte what click_cli.py prints for them (a repeated one answered by envcheck/pipeline/replay.py);
- recommend_cli.py: `envcheck recommend`; fleet_cli.py: `envcheck fleet` (its library is envcheck/fleet/);
- output.py: what every command shares for its output (comma-separated values, colour, writing a report).

This package's `__init__` imports nothing, so that `envcheck --version` and the plain check stay free of click.
"""

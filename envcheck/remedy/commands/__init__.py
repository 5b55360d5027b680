"""The commands a finding prints, written for this environment. Pure: facts in, text and argv out.

The engine writes each finding's commands as it makes the finding, so these sit below it (the layer map in
CONTRIBUTING.md); what is done with the commands afterwards (`envcheck fix`, `envcheck recommend`) is in remedy/.

- installers.py: commands for the installer the checked environment has (pip, `uv pip`, conda removals, by hand);
- planner.py: the torch-family planner (a torch or companion install rewritten to keep what works).
"""

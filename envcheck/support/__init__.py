"""Shared support: reading input files and versions, and writing output text, without the CLI framework.

- input_files.py: the one way envcheck reads an input file (regular, bounded, UTF-8, bounded depth);
- toml.py: tomllib, or tomli on Python 3.10;
- resources.py: where the shipped rule pack lives;
- versions.py: reading versions, requirements and markers with `packaging`;
- requirement.py: a fast reading of simple Requires-Dist lines;
- specifiers.py: several requirements of one distribution read as one;
- output_text.py: text for output without click: colour, what a stream can carry, quoted text made inert, clipped
  messages, the probes' status line, and `shell()` (a command shell-quoted as reports and `envcheck fix` show it).

Anything may import these; they import nothing above facts/snapshot.py.
"""

"""Error logs: what error output shows about the environment it came from.

- log.py, messages.py: error output read as a pasted report is, and the messages the rules' signatures recognise in
  any text (the signatures themselves are part of the rules: envcheck/rules/signatures.py);
- origin.py: whether the log came from the checked environment, another one, or one it cannot be tied to;
- join.py: the log joined with the facts of the environment it is explained for.
"""

"""Derived facts: the rule-side computations over a facts snapshot that a declarative rule cannot express.

- derive.py: the registry of derived facts (`DERIVATIONS`) and `Derived`, their lazy per-snapshot values;
- tables.py: the data tables of rules/data/, read and validated with the rule pack;
- gpu_compat.py, companions.py, system_libs.py, attention.py: the computations, pure functions of the facts
  (and of a table where they need one);
- common.py: what several of them share.

Nothing here opens a file while a snapshot is evaluated: the tables arrive already parsed, with the rule pack.
"""

from __future__ import annotations

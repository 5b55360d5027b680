"""Reading environments from text people paste into issues: `envcheck facts --report` and `check --report`.

text.py decodes the input and cuts it into blocks (markdown fences and the text between them); detect.py finds the
outputs each block holds (one module per tool: collect_env, pip_list, conda_list, nvidia_smi); build.py turns
what they state into one Facts snapshot that says what is unknown and where each fact came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from envcheck.evidence.signatures import Signature, scan
from envcheck.facts.snapshot import Facts
from envcheck.intake.build import facts_of
from envcheck.intake.detect import recognise
from envcheck.intake.errors import found_of
from envcheck.intake.found import Found
from envcheck.intake.text import ReportError, blocks, decode

__all__ = ["ReportError", "read_report", "recognised"]


def recognised(data: bytes, file: str) -> list[Found]:
    """Every output recognised in the report `data`, in input order."""
    return [found for block in blocks(decode(data, file)) for found in recognise(block)]


def read_report(data: bytes, file: str, signatures: Iterable[Signature] = ()) -> Facts:
    """The facts a pasted report states, with the failures `signatures` recognise in its error output (and what
    those state); ReportError for input that is not text or is too large."""
    text = decode(data, file)
    founds = [found for block in blocks(text) for found in recognise(block)]
    observed = scan(text, signatures, source=file)
    stated = found_of(observed)
    facts = facts_of([*founds, *([] if stated is None else [stated])], file)
    return dataclasses.replace(facts, observed=tuple(observed)) if observed else facts

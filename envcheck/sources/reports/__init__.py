"""Reading environments from text people paste into issues: `envcheck facts --report` and `check --report`.

text.py decodes the input and cuts it into blocks (markdown fences and the text between them); detect.py finds the
outputs each block holds (one module per tool: collect_env, pip_list, conda_list, nvidia_smi, ...) and what the free
text around them states (prose/); build.py turns what they state into one Facts snapshot that says what is unknown
and where each fact came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from envcheck.derived.nvidia_gpus import GpuNames
from envcheck.facts.snapshot import Facts
from envcheck.rules.signatures import Signature
from envcheck.sources.logs.messages import recognised
from envcheck.sources.reports.build import NOTHING_READ, facts_of
from envcheck.sources.reports.detect import recognise_all
from envcheck.sources.reports.errors import found_of
from envcheck.sources.reports.found import Found
from envcheck.sources.reports.text import ReportError, blocks, decode

__all__ = ["ReportError", "read", "read_report", "read_text"]

def read(data: bytes, file: str, signatures: Iterable[Signature] = (),
         gpu_names: GpuNames | None = None) -> tuple[Facts, list[Found]]:
    """(the facts a pasted report states, the outputs recognised in it in input order), with the failures
    `signatures` recognise in its error output (and what those state); GPU names are read through `gpu_names` (the
    rule pack's rules/data/gpus.toml; the shipped one by default). ReportError for input that is not text or is too
    large. The report is decoded and read once: the snapshot and the line naming what was read both come from it."""
    return read_text(decode(data, file), file, signatures, gpu_names)


def read_text(text: str, file: str, signatures: Iterable[Signature] = (),
              gpu_names: GpuNames | None = None, beside: Sequence[Found] = ()) -> tuple[Facts, list[Found]]:
    """`read`, of text already decoded; `beside`: what else the text states, read by the caller (ranked after the
    outputs and error messages)."""
    founds = [*recognise_all(blocks(text)), *beside]
    observed = recognised(text, signatures, source=file)
    stated = found_of(observed)
    facts = facts_of([*founds, *([] if stated is None else [stated])], file, gpu_names)
    if not observed:
        return facts, founds
    # A recognised error message is something read, even when it states no fact of its own.
    return dataclasses.replace(facts, observed=tuple(observed),
                               problems=tuple(p for p in facts.problems if p != NOTHING_READ)), founds


def read_report(data: bytes, file: str, signatures: Iterable[Signature] = (),
                gpu_names: GpuNames | None = None) -> Facts:
    """The facts a pasted report states (`read`, without the outputs recognised)."""
    return read(data, file, signatures, gpu_names)[0]

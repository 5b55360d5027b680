"""Reading environments from text people paste into issues: `envcheck facts --report` and `check --report`.

text.py decodes the input and cuts it into blocks (markdown fences and the text between them); detect.py finds the
outputs each block holds (one module per tool: collect_env, pip_list, conda_list, nvidia_smi, ...) and what the free
text around them states (prose/); build.py turns what they state into one Facts snapshot that says what is unknown
and where each fact came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from envcheck.derived.nvidia_gpus import GpuNames
from envcheck.evidence.signatures import Signature, scan
from envcheck.facts.snapshot import Facts
from envcheck.intake.build import NOTHING_READ, facts_of
from envcheck.intake.detect import recognise_all
from envcheck.intake.errors import found_of
from envcheck.intake.found import Found
from envcheck.intake.text import ReportError, blocks, decode
from envcheck.support.patterns import lazy

__all__ = ["ReportError", "read", "read_report", "read_text", "scannable"]

# A markdown quote's markers at the start of a line ("> ", "> > "): a message quoted in an issue is the same message.
_QUOTED = lazy(r"(?m)^[ \t]{0,3}(?:>[ \t]?){1,8}")


def scannable(text: str) -> str:
    """`text` as error signatures read it: markdown quote markers taken off each line, the lines kept (a match's
    line number is the line in `text`)."""
    return _QUOTED.sub("", text) if ">" in text else text


def read(data: bytes, file: str, signatures: Iterable[Signature] = (),
         gpu_names: GpuNames | None = None) -> tuple[Facts, list[Found]]:
    """(the facts a pasted report states, the outputs recognised in it in input order), with the failures
    `signatures` recognise in its error output (and what those state); GPU names are read through `gpu_names` (the
    rule pack's rules/data/gpus.toml; the shipped one by default). ReportError for input that is not text or is too
    large. The report is decoded and read once: the snapshot and the line naming what was read both come from it."""
    return read_text(decode(data, file), file, signatures, gpu_names)


def read_text(text: str, file: str, signatures: Iterable[Signature] = (),
              gpu_names: GpuNames | None = None) -> tuple[Facts, list[Found]]:
    """`read`, of text already decoded."""
    founds = recognise_all(blocks(text))
    observed = scan(scannable(text), signatures, source=file)
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

"""Which outputs a block holds, each recognised by its own markers, in a fixed order; then what the free text
around them states (envcheck/sources/reports/prose/), read from the lines no tool's output holds."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from envcheck.sources.reports import collect_env, conda_list, ds_report, hf_env, nvidia_smi, pip_list, prose
from envcheck.sources.reports.found import Found
from envcheck.sources.reports.text import Block
from envcheck.support.patterns import lazy

__all__ = ["FORMATS", "recognise", "recognise_all"]

# The lines Block.where names: "block 2 (pip list, lines 14-80)".
_LINES = lazy(r"lines (\d{1,9})-(\d{1,9})\)$")

# (name, recognises the block, reads it). Several may match one block: an unfenced issue body is one block.
FORMATS: tuple[tuple[str, Callable[[Block], bool], Callable[[Block], Found]], ...] = (
    ("collect_env", collect_env.recognise, collect_env.parse),
    ("hf env", hf_env.recognise, hf_env.parse),
    ("ds_report", ds_report.recognise, ds_report.parse),
    ("nvidia-smi", nvidia_smi.recognise_table, nvidia_smi.parse_table),
    ("nvidia-smi -q", nvidia_smi.recognise_query, nvidia_smi.parse_query),
    ("conda list", conda_list.recognise, conda_list.parse),
    ("pip list", pip_list.recognise_list, pip_list.parse_list),
    ("pip freeze", pip_list.recognise_freeze, pip_list.parse_freeze),
)


def recognise(block: Block) -> list[Found]:
    """What `block` states, one Found per output recognised in it (none: prose, or an output not read)."""
    out: list[Found] = []
    for name, matches, parse in FORMATS:
        if name in ("pip list", "pip freeze") and any(f.fmt in ("conda list", "pip list") for f in out):
            # A conda list's rows also look like a selection of `name version` lines, and a block holding one
            # table is not also a freeze: each list is read once, as what its header says.
            continue
        if matches(block):
            out.append(parse(block))
    return out


def recognise_all(blocks: Sequence[Block]) -> list[Found]:
    """Every output the blocks hold, in input order, then one Found for what the rest of the text states (prose:
    sentences, lists, tables, install commands), which reads no line a tool's output holds."""
    out = [found for block in blocks for found in recognise(block)]
    claimed: set[int] = set()
    for found in out:
        span = _LINES.search(found.where)
        if span is not None:
            claimed.update(range(int(span.group(1)), int(span.group(2)) + 1))
    text = prose.read(blocks, claimed)
    return out if text is None else [*out, text]

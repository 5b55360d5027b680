"""Which outputs a block holds, each recognised by its own markers, in a fixed order."""

from __future__ import annotations

from collections.abc import Callable

from envcheck.intake import collect_env, conda_list, ds_report, hf_env, nvidia_smi, pip_list
from envcheck.intake.found import Found
from envcheck.intake.text import Block

__all__ = ["FORMATS", "recognise"]

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

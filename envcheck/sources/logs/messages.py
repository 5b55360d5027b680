"""Error messages in pasted text, whatever surrounds them: what the rules' error signatures recognise in a report or
a log once the ways people paste are taken off.

A message reaches an issue quoted in markdown ("> RuntimeError: ...", "> > ..."), which is taken off each line;
broken over two lines: by a terminal at its width, or by hand, with the rest on the next line after one space
(``flash_attn_2_cuda...so: undefined`` then `` symbol: _ZN3c10...``), each such pair of lines read again as one
line; or escaped inside a JSON string (a notebook's error output: `\"c:\\Users\\...\\fbgemm.dll\"`, `\n`
between lines), each such line read again unescaped. A message found only in a second reading is reported at the
line it came from, once. Line numbers stay those of the text.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_right
from collections.abc import Iterable
from itertools import pairwise

from envcheck.facts.observed import Observation
from envcheck.rules.signatures import Signature, scan
from envcheck.support.patterns import lazy

__all__ = ["TERMINAL_WIDTHS", "escaped_lines", "recognised", "scannable", "wrapped_pairs"]

# A markdown quote's markers at the start of a line ("> ", "> > "): a message quoted in an issue is the same message.
_QUOTED = lazy(r"(?m)^[ \t]{0,3}(?:>[ \t]?){1,8}")
# A JSON string's escapes: a quote, a backslash, a slash, and the line breaks and tabs it writes as two characters.
_ESCAPE = lazy(r'\\(["\\/nrt])')
_UNESCAPED = {"n": "\n", "r": "", "t": "\t"}
# The widths terminals wrap at by default or by common choice (Windows' console 120, xterm's 80, ...): a line of
# exactly one of these, followed by more text, was most likely cut there.
TERMINAL_WIDTHS = frozenset({80, 100, 120, 132, 140, 150, 160, 180, 200, 220, 240})


def scannable(text: str) -> str:
    """`text` as error signatures read it: markdown quote markers taken off each line, the lines kept (a match's
    line number is the line in `text`)."""
    return _QUOTED.sub("", text) if ">" in text else text


def wrapped_pairs(text: str) -> list[tuple[int, str]]:
    """(0-based number of the first line, the two lines as one) for each line that looks broken in two: it fills a
    terminal's width exactly and the next line goes on without indentation, or it ends in a word and the next line
    goes on after exactly one space. Linear in `text`."""
    lines = text.split("\n")
    out = []
    for number, (line, following) in enumerate(pairwise(lines)):
        line = line.rstrip("\r")
        if not line or not following.strip():
            continue
        cut = len(line) in TERMINAL_WIDTHS and not following[0].isspace()
        by_hand = (following[0] == " " and len(following) > 1 and not following[1].isspace()
                   and (line[-1].isalnum() or line[-1] in "_:"))
        if cut or by_hand:
            out.append((number, line + following.rstrip("\r")))
    return out


def escaped_lines(text: str) -> list[tuple[int, str]]:
    """(0-based line number, the line unescaped) for each line that holds a JSON string's escaped quotes or
    backslashes, or several escaped line breaks; an unescaped line may hold several lines. Linear in `text`."""
    out = []
    for number, line in enumerate(text.split("\n")):
        if '\\"' in line or "\\\\" in line or line.count("\\n") > 1:
            out.append((number, _ESCAPE.sub(lambda m: _UNESCAPED.get(m[1], m[1]), line)))
    return out


def _again(pieces: list[tuple[int, str]], signatures: tuple[Signature, ...], source: str,
           seen: set[tuple[str, int, int]]) -> list[Observation]:
    """What the signatures recognise in `pieces` (line number, text read again) that `seen` (rule, signature,
    line) does not already hold, at the piece's line; `seen` is updated."""
    firsts: list[int] = []  # the 1-based line of the scanned text each piece starts at
    at = 1
    for _number, piece in pieces:
        firsts.append(at)
        at += piece.count("\n") + 1
    out = []
    for observation in scan("\n".join(piece for _, piece in pieces), signatures, source=source):
        line = pieces[bisect_right(firsts, observation.line) - 1][0] + 1
        # A message already found on this line (or, for a broken pair, on its second line) is that finding.
        if not {(observation.rule_id, observation.signature, n) for n in (line, line + 1)} & seen:
            out.append(dataclasses.replace(observation, line=line))
            seen.add((observation.rule_id, observation.signature, line))
    return out


def recognised(text: str, signatures: Iterable[Signature], source: str = "") -> list[Observation]:
    """Every line of `text` a signature recognises (envcheck/rules/signatures.py's `scan`), quoting taken off,
    and the messages only a line broken in two or escaped in a JSON string shows, at its line; in input order."""
    signatures = tuple(signatures)
    text = scannable(text)
    observed = scan(text, signatures, source=source)
    seen = {(o.rule_id, o.signature, o.line) for o in observed}
    extra = []
    for pieces in (wrapped_pairs(text), escaped_lines(text)):
        if pieces:
            extra += _again(pieces, signatures, source, seen)
    return sorted([*observed, *extra], key=lambda o: o.line) if extra else observed

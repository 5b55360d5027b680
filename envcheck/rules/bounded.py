"""The loader's proof that a signature's pattern is matched in bounded time by Python's backtracking `re`.

A backtracking matcher explodes in two ways, and both need a repetition that can split the same text in more than
one way:

- exponentially, when a repetition's body can match one text in several ways: `(a+)+`, `(?:\\w|\\w\\w)*`,
  `(?:ab|a|b)*`. Refused outright: what a quantifier repeats more than once must match any text in one way at
  most, and never nothing: one character or class (`\\w{1,40}`), or a group whose alternatives begin with
  different characters and whose own repetitions the next character closes (`(?:(?:sm|compute)_\\d\\d ){0,12}`).
- polynomially, when repetitions follow one another and the text they cover can be split between them in many
  ways: `\\w*\\w*x`, `.*:.*:`. A repetition is *open* when the text right after it may begin with a character it
  repeats: the matcher then tries each of its lengths (up to the whole window) with the rest of the pattern. One
  that the next character closes (`\\d{1,5}\\.`, `[^']{1,80}'`) is tried at one length only, and one followed by
  literal text (`[^\\n]{0,200}?python`) only where that text can begin. The ways multiply along the pattern
  (alternatives add; one that begins with its own characters is the only one tried past them), and a pattern
  whose ways exceed MAX_PATHS is refused.

The steps are counted the same way: each repetition's own (it takes characters and gives them back), each of its
ways times the rest's, a lookaround's added where it stands; the part from which the match can no longer fail (an
optional last line) is counted once, since reaching it ends the match; and every start before the anchor
(MAX_BEFORE + 1, or only those where the pattern's first text can begin) pays the rest. A pattern whose steps on
one window exceed MAX_STEPS is refused. What is left costs at most MAX_STEPS per line holding its anchor,
whatever the line holds: the scan stays linear in the log, and in practice a line costs microseconds (the bound
is far above it: an adversarial line built for the shipped pack's costliest pattern takes about 2 ms).

Backreferences and conditional groups are refused (no bound holds for them). Lookarounds are allowed: their body
obeys the same rules, and it counts as part of what follows a repetition (`\\w+(?!x)` is open). Character sets are
compared on a sample alphabet (ASCII, every character the pattern names and its neighbours, and non-ASCII letters,
digits and spaces), which can only make a repetition look open, never closed, where the sample holds a character
both sides accept. Random patterns built from these parts, run on adversarial text, took at most about 20 ns per
counted step (bench/scan.py's figures are of the real pack).
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

if sys.version_info >= (3, 11):
    from re import _compiler as sre_compile
    from re import _parser as sre_parse
else:  # pragma: no cover - 3.10
    import sre_compile
    import sre_parse

__all__ = ["MAX_PATHS", "MAX_STEPS", "Unbounded", "paths"]

# The most ways the matcher may try to split one start's text among the open repetitions. The shipped pack's
# largest is about 74,000 (EC0401's first signature: its optional last line searches up to 2,000 characters for
# "The current PyTorch install supports", then reads the arch list with `[ \w]*\w`); the next is about 7,800.
MAX_PATHS = 100_000
# The most steps (a character compared, a length given back) matching one line's window may take, at every start
# before the anchor: a bound, far above what a line costs in practice (tens of microseconds), that refuses the
# patterns whose cost has none worth the name. The shipped pack's largest is about 175 million (EC0816: a library
# name of up to 200 characters before `lib`, at each of 301 starts, then a path of up to 200 before `python`).
MAX_STEPS = 400_000_000
_ONE_CHAR = {"LITERAL", "NOT_LITERAL", "IN", "ANY"}
_ZERO_WIDTH = {"AT"}
# Non-ASCII letters, digits, spaces and symbols: a class written with \w, \d or \s, or negated, holds some of them.
_SAMPLES = "éßЖ中٣३\u00a0\u2028\u3000…€"


class Unbounded(ValueError):
    """A pattern that could backtrack without a useful bound: the message says which part, in words."""


class _Next(NamedTuple):
    """What may come right after a point in the pattern: the characters (of the sample alphabet) that may start it,
    whether the pattern may end there, the literal text it must start with, and whether it always matches (an
    optional part, then the end: a repetition before it is tried at its first length only)."""

    chars: frozenset[str]
    end: bool
    literal: str = ""
    certain: bool = False
    work: int = 0  # the most steps matching from here to the end may take each time it is reached
    once: int = 0  # and those of the part that always matches (reaching it ends the match), taken once


_END = _Next(frozenset(), True, "", True)


def paths(pattern: str, window: int, line: int, starts: int = 1) -> int:
    """The most ways one start's match of `pattern` can be tried (see the module's docstring); Unbounded for a
    pattern with no useful bound: one whose ways exceed MAX_PATHS, or whose steps over a window, tried at up to
    `starts` starts, exceed MAX_STEPS. `window`: the longest text a repetition that crosses lines may cover;
    `line`: the longest one that stays on a line may."""
    parsed = sre_parse.parse(pattern)
    walk = _Walk(parsed.state.flags, _alphabet(parsed), window, line)
    first, count = walk.sequence(list(parsed.data), _END)
    if count > MAX_PATHS:
        raise Unbounded(f"its repetitions can split a line in about {count:,} ways (at most {MAX_PATHS:,}): "
                        "end each repetition where the next character cannot continue it ([^:]{1,80}:), or bound "
                        "it")
    if first.literal:  # a start is tried past its first character only where that text begins
        starts = (starts - 1) // _period(first.literal) + 1
    steps = starts * first.work + first.once
    if steps > MAX_STEPS:
        raise Unbounded(f"it could take about {steps:,} steps on one line (at most {MAX_STEPS:,}): bound its "
                        "repetitions, and begin it with text rather than a repetition")
    return count


def _alphabet(parsed: Any) -> str:
    """ASCII, the samples, and every character the pattern names with its neighbours: where two sets differ on
    some character, they differ on one of these."""
    named: set[int] = set()

    def visit(node: Any) -> None:
        if isinstance(node, sre_parse.SubPattern):
            node = node.data
        if isinstance(node, (list, tuple)):
            if len(node) == 2 and str(node[0]) in ("LITERAL", "NOT_LITERAL") and isinstance(node[1], int):
                named.add(node[1])
            elif len(node) == 2 and str(node[0]) == "RANGE":
                named.update(node[1])
            for item in node:
                visit(item)

    visit(parsed)
    around = {c + d for c in named for d in (-1, 0, 1) if 0 <= c + d <= sys.maxunicode}
    return "".join(sorted(set(map(chr, range(128))) | set(_SAMPLES) | set(map(chr, around))))


def _period(literal: str) -> int:
    """The smallest shift at which `literal` overlaps itself: two of its occurrences start at least this far apart."""
    return next((p for p in range(1, len(literal)) if literal[p:] == literal[:-p]), len(literal))


class _Walk:
    def __init__(self, flags: int, alphabet: str, window: int, line: int) -> None:
        self.flags, self.alphabet, self.window, self.line = flags, alphabet, window, line

    def sequence(self, items: list[Any], after: _Next) -> tuple[_Next, int]:
        """(what may start `items` followed by `after`, the bound of `items` followed by `after`), read right to
        left. Each way of a part may be tried with each way of the rest, but a lookaround's work adds (it is
        never backtracked into), and so does the work of a part from which the match always succeeds to the end
        (`certain`): reaching it ends the match, so it is paid once."""
        body, tail = 1, 0
        for item in reversed(items):
            first, each = self.item(item, after)
            if first.certain and first.work:
                first = first._replace(work=0, once=first.once + first.work)
            if first.certain:  # from here to the end the match cannot fail: reached once, it ends the match
                tail += each
            elif str(item[0]) in ("ASSERT", "ASSERT_NOT"):
                body += each
            else:
                body *= each
            after = first
        return after, body + tail

    def item(self, item: Any, after: _Next) -> tuple[_Next, int]:
        op, av = str(item[0]), item[1]
        if op in _ONE_CHAR:
            literal = chr(av) + after.literal if op == "LITERAL" and not self.flags & sre_parse.SRE_FLAG_IGNORECASE \
                else ""
            return _Next(self.chars(item), False, literal, False, 1 + after.work, after.once), 1
        if op == "AT":
            return _Next(after.chars, after.end, after.literal, False, 1 + after.work, after.once), 1
        if op in ("ASSERT", "ASSERT_NOT"):
            # A lookaround is tried where it stands: its body's bound adds to the work, and for a lookahead, the
            # characters it looks at count as following what precedes it (conservatively, whatever its sign).
            first, count = self.sequence(list(av[1]), _END)
            ahead = first.chars if av[0] == 1 else frozenset()
            return (_Next(after.chars | ahead, after.end, after.literal if av[0] != 1 else "", False,
                          first.work + first.once + after.work, after.once), count)
        if op == "SUBPATTERN":
            outer = self.flags
            if len(av) == 4:  # (?i:...), (?s:...): flags for this group alone
                self.flags = (outer | av[1]) & ~av[2]
            try:
                first, count = self.sequence(list(av[-1]), after)
            finally:
                self.flags = outer
            if len(av) == 4 and av[1] & sre_parse.SRE_FLAG_IGNORECASE:
                first = first._replace(literal="")
            return first, count
        if op == "ATOMIC_GROUP":
            first, count = self.sequence(list(av), _END)
            return (_Next(first.chars | (after.chars if first.end else frozenset()), first.end and after.end, "", False,
                          first.work + first.once + after.work, after.once), count)
        if op == "BRANCH":
            return self.branch([list(a) for a in av[1]], after)
        if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            return self.repeat(op, av, after)
        if op.startswith("GROUPREF"):
            raise Unbounded("it refers back to a group (a backreference or a conditional): no bound holds for it")
        raise Unbounded(f"it uses {op}, which the loader cannot bound")  # pragma: no cover - every op above

    def branch(self, alternatives: list[list[Any]], after: _Next) -> tuple[_Next, int]:
        """Alternatives are tried in turn: their ways add up, unless no two can begin with the same character
        (then one at most gets past its first character)."""
        firsts, counts = [], []
        for alternative in alternatives:
            first, count = self.sequence(alternative, after)
            firsts.append(first)
            counts.append(count)
        chars = frozenset().union(*(f.chars for f in firsts))
        disjoint = sum(len(f.chars) for f in firsts) == len(chars) and not any(f.end for f in firsts)
        if not disjoint and not self.flags & sre_parse.SRE_FLAG_IGNORECASE:
            # Words none of which begins another (torchaudio|torchvision|pyg_lib): one at most matches where the
            # alternation stands, whatever their first letters share.
            words = ["".join(chr(av) for _, av in a) for a in alternatives
                     if a and all(str(op) == "LITERAL" for op, _ in a)]
            disjoint = len(words) == len(alternatives) and not any(
                a != b and b.startswith(a) for a in words for b in words)
        literal = firsts[0].literal if len({f.literal for f in firsts}) == 1 else ""
        works = [f.work for f in firsts]
        work = max(works) + len(works) if disjoint else sum(works)
        return (_Next(chars, any(f.end for f in firsts), literal, any(f.certain for f in firsts), work,
                      max(f.once for f in firsts)),
                max(counts) if disjoint else sum(counts))

    def repeat(self, op: str, av: Any, after: _Next) -> tuple[_Next, int]:
        low, high, body = av
        unbounded = high is sre_parse.MAXREPEAT
        once, _ = self.sequence(list(body), _Next(frozenset(), True))  # what one repetition may start with
        if high == 1:  # an optional part: taken, or not
            first, count = self.sequence(list(body), after)
            skipped = once.chars.isdisjoint(after.chars) and not once.end and not after.end
            work = max(first.work, after.work) + 1 if skipped else first.work + after.work
            return (_Next(first.chars | after.chars, first.end or after.end, "", after.certain, work,
                          max(first.once, after.once)),
                    count if skipped else count + 1)
        if once.end:  # (a?)*, (?=a)*: every repetition may be empty
            raise Unbounded("it repeats a part that can match nothing: it can take exponential time to match")
        # Each repetition is followed by another one or by what comes after.
        _first, each = self.sequence(list(body), _Next(once.chars | after.chars, after.end))
        if each > 1:
            raise Unbounded("it repeats a part that can match the same text in more than one way ((a+)+, "
                            "(?:\\w|\\w\\w)*): it can take exponential time to match")
        reach = self.window if "\n" in once.chars else self.line
        most = reach if unbounded else min(high, reach)  # repetitions: each takes a character at least
        first = _Next(once.chars | (after.chars if low == 0 else frozenset()), after.end and low == 0,
                      once.literal if low > 0 else "", after.certain and low == 0, 0, after.once)
        scan = most * (once.work + once.once)  # taking the repetitions, then giving them back one by one
        if op == "POSSESSIVE_REPEAT" or after.certain or once.chars.isdisjoint(after.chars):
            # never backtracked into, or what follows closes it: the rest is tried after one length only
            return first._replace(work=scan + after.work), 1
        lengths = max(most - min(low, reach) + 1, 1)
        if after.literal:  # only where that text begins can the rest be tried
            lengths = (lengths - 1) // _period(after.literal) + 1
        return first._replace(work=scan + lengths * after.work), lengths

    def chars(self, item: Any) -> frozenset[str]:
        return _members(self.flags, self.alphabet, item)


def _members(flags: int, alphabet: str, item: Any) -> frozenset[str]:
    """The characters of `alphabet` the one-character `item` matches (compiled as re compiles it, flags included)."""
    op, av = str(item[0]), item[1]
    if not flags & (sre_parse.SRE_FLAG_IGNORECASE | sre_parse.SRE_FLAG_DOTALL):
        if op == "LITERAL":
            return frozenset(chr(av))
        if op == "NOT_LITERAL":
            return frozenset(alphabet.replace(chr(av), ""))
        if op == "ANY":
            return frozenset(alphabet.replace("\n", ""))
    return _compiled_members(flags, alphabet, repr(item), item)


_MEMBERS: dict[tuple[int, str, str], frozenset[str]] = {}  # the classes patterns share ([^\n], \d, \w) compile once


def _compiled_members(flags: int, alphabet: str, key: str, item: Any) -> frozenset[str]:
    found = _MEMBERS.get((flags, alphabet, key))
    if found is None:
        state = sre_parse.State()
        state.flags = flags
        matcher = sre_compile.compile(sre_parse.SubPattern(state, [item]), flags)
        found = _MEMBERS[(flags, alphabet, key)] = frozenset(matcher.findall(alphabet))
    return found

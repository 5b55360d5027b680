"""Error signatures: the messages a rule's failure produces, as patterns a rule file declares.

    [[rule.signatures]]
    anchor = "is not compatible with the current PyTorch installation"   # a literal every match contains
    pattern = '(?P<name>[^\\n:]*?) with CUDA capability sm_(?P<cc>\\d+) is not compatible with ...'
    lines = 1           # the match may run on over this many following lines (default 0)
    yields = { "gpu.capability" = "cc", "gpu.name" = "name" }        # what the text states, from which group
    summary = "{name} (sm_{cc}) has no kernels in this torch build"   # optional, with the pattern's groups
    why = "..."         # optional: the mechanism, where the rule's own why names what only the facts know
    fix = "Install a torch build with sm_{cc}."     # optional; required where the rule's fix needs {item.*}
    severity = "error"  # optional: where the message proves worse than the rule's own severity guesses
    source = "https://github.com/pytorch/pytorch/blob/v2.13.0/torch/cuda/__init__.py#L427"   # the emitting line
    thread = "https://github.com/pytorch/pytorch/issues/150733"        # one real thread that shows it
    example = "..."     # real text it matches (the loader and the tests check it does)
    near_miss = "..."   # text a careless pattern would match, that it must not

Matching stays linear in the input: `anchor` is a literal every match contains, found with `str.find`; the pattern
runs once per line holding it, over at most MAX_BEFORE characters before the anchor and MAX_AFTER after it, and the
`lines` after that line, each clipped to MAX_LINE characters; and the loader refuses a pattern with a backreference,
a quantifier over a quantified group or two quantifiers side by side (the forms whose backtracking explodes). Write
what comes before the anchor with a bounded quantifier (`[^\\n:]{1,120}?`): the search tries each start before
it. A 1 MB log is read in well under a second (tests/unit/test_signatures.py).
"""

from __future__ import annotations

import functools
import re
import sys
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from envcheck.conditions import Where
from envcheck.evidence.facts import YIELDS, normalised
from envcheck.facts.observed import Observation
from envcheck.support.patterns import lazy

if sys.version_info >= (3, 11):
    from re import _parser as sre_parse
else:  # pragma: no cover - 3.10
    import sre_parse

__all__ = ["MAX_LINE", "MAX_LINES", "Signature", "parse_signatures", "scan"]

MAX_LINE = 2000  # characters of a line a pattern sees: a longer line (a minified blob) is clipped, not searched whole
MAX_BEFORE = 300  # characters before the anchor a pattern sees on the anchor's line (a prefix: a path, a timestamp)
MAX_AFTER = 1000  # and after it
MAX_LINES = 5  # following lines a match may span
MAX_TEXT = 400  # characters of the matched text kept as evidence
_KEYS = {"anchor", "pattern", "lines", "yields", "summary", "why", "fix", "severity", "differ", "source", "thread",
         "example",
         "near_miss"}
_REQUIRED = ("anchor", "pattern", "source", "thread", "example", "near_miss")
_PLACEHOLDER = lazy(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class Signature:
    """One message a rule's failure produces (see the module's docstring for the keys)."""

    rule_id: str
    index: int  # its place among the rule's signatures
    anchor: str
    # The pattern's text: compiled on first use (`pattern`), not when the pack is loaded. The pack is cached as a
    # pickle, and unpickling a compiled pattern compiles it again: ~170 compiles on every check, for a pattern that
    # only pasted error output (explain, check --report) ever runs.
    regex: str
    lines: int = 0
    # fact -> capture group; left out of the hash (rules are hashed: the pytest plugin keeps a selection in a dict)
    yields: dict[str, str] = field(default_factory=dict, hash=False)
    summary: str = ""  # "" -> the rule's own summary
    why: str = ""  # "" -> the rule's own why; needed where that why names item fields the text does not state
    fix: str = ""  # "" -> the rule's own fix; needed where that fix names what only the facts know ({item.*})
    severity: str = ""  # "" -> the rule's; set where the message proves more than the facts could (an `info` rule
    # about what a version range may break, whose error shows that it broke)
    # Two groups that must capture different text for the line to mean this failure (a regex cannot compare its
    # captures without a backreference): xformers "built for 2.0.1 (you have 2.0.1)" is not "built for another torch".
    differ: tuple[str, ...] = ()
    source: str = ""
    thread: str = ""
    example: str = ""
    near_miss: str = ""

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.regex)

    def says(self, captures: dict[str, str]) -> str:
        """The signature's summary with its captures filled in ("" when it has none)."""
        return _filled(self.summary, captures)

    def explains(self, captures: dict[str, str]) -> str:
        """The signature's why with its captures filled in ("" when it has none)."""
        return _filled(self.why, captures)

    def fixes(self, captures: dict[str, str]) -> str:
        """The signature's fix with its captures filled in ("" when it has none)."""
        return _filled(self.fix, captures)


@functools.cache
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def _filled(text: str, captures: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: captures.get(m[1]) or "(not stated)", text) if text else ""


def _repeats(op: Any, av: Any) -> bool:
    return str(op) in ("MAX_REPEAT", "MIN_REPEAT") and (av[1] is sre_parse.MAXREPEAT or av[1] > 1)


def _nested_repeat(parsed: Any, inside: bool = False) -> bool:
    """Whether a quantifier repeats something that is itself quantified ((a+)+, (\\w*\\s)*), two quantifiers
    stand side by side (\\w*?\\s*: cubic on a long run of spaces), or a group is referred back to: the regex forms
    whose backtracking grows exponentially or polynomially with the line."""
    items = list(parsed)
    if any(_repeats(*a) and _repeats(*b) for a, b in pairwise(items)):
        return True
    for op, av in items:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            _low, high, body = av
            repeats = high is sre_parse.MAXREPEAT or high > 1
            if repeats and inside:
                return True
            if _nested_repeat(body, inside or repeats):
                return True
        elif name in ("GROUPREF", "GROUPREF_EXISTS"):
            return True
        elif name == "SUBPATTERN":
            if _nested_repeat(av[-1], inside):
                return True
        elif name == "BRANCH":
            if any(_nested_repeat(branch, inside) for branch in av[1]):
                return True
        elif name in ("ASSERT", "ASSERT_NOT", "ATOMIC_GROUP") and _nested_repeat(av[-1], inside):
            return True
    return False


def _url(raw: dict[str, Any], key: str, where: Where) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value.startswith("https://"):
        raise where.at(key).error("expected an https:// URL")
    return value


def _text(raw: dict[str, Any], key: str, where: Where, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or (not value.strip() and default is None):
        raise where.at(key).error("expected a non-empty string")
    return value


def _one(raw: object, rule_id: str, index: int, where: Where) -> Signature:
    if not isinstance(raw, dict):
        raise where.error("expected a table ([[rule.signatures]])")
    extra = sorted(set(raw) - _KEYS)
    if extra:
        raise where.at(extra[0]).error(f"unknown key (allowed: {', '.join(sorted(_KEYS))})")
    for key in _REQUIRED:
        if key not in raw:
            raise where.at(key).error("required")
    anchor = _text(raw, "anchor", where)
    source = _text(raw, "pattern", where)
    try:
        pattern = re.compile(source)
    except re.error as exc:
        raise where.at("pattern").error(f"not a regular expression: {exc}") from None
    if _nested_repeat(sre_parse.parse(source)):
        raise where.at("pattern").error("a quantifier over a quantified group, two quantifiers side by side, or "
                                        "a backreference: matching could take exponential time; write it without")
    lines = raw.get("lines", 0)
    if not isinstance(lines, int) or isinstance(lines, bool) or not 0 <= lines <= MAX_LINES:
        raise where.at("lines").error(f"expected a whole number from 0 to {MAX_LINES}")
    groups = set(pattern.groupindex)
    yields = raw.get("yields", {})
    if not isinstance(yields, dict) or not all(isinstance(v, str) for v in yields.values()):
        raise where.at("yields").error("expected a table of fact = \"capture group\"")
    for fact, group in yields.items():
        if fact not in YIELDS:
            raise where.at(f"yields.{fact}").error(f"unknown fact (known: {', '.join(YIELDS)})")
        if group not in groups:
            raise where.at(f"yields.{fact}").error(f"the pattern has no group (?P<{group}>...)")
    summary, fix = _text(raw, "summary", where, default=""), _text(raw, "fix", where, default="")
    why = _text(raw, "why", where, default="")
    severity = _text(raw, "severity", where, default="")
    differ = raw.get("differ", [])
    if not isinstance(differ, list) or len(differ) not in (0, 2) or not all(g in groups for g in differ):
        raise where.at("differ").error("expected two of the pattern's group names")
    if severity not in ("", "error", "warning", "info"):
        raise where.at("severity").error(f"expected error, warning or info, got {severity!r}")
    for key, text in (("summary", summary), ("why", why), ("fix", fix)):
        for name in _PLACEHOLDER.findall(text):
            if name not in groups:
                raise where.at(key).error(f"{{{name}}}: the pattern has no group (?P<{name}>...)")
    signature = Signature(rule_id=rule_id, index=index, anchor=anchor, regex=source, lines=lines,
                          yields=dict(yields), summary=summary, why=why, fix=fix, severity=severity,
                          differ=tuple(differ),
                          source=_url(raw, "source", where),
                          thread=_url(raw, "thread", where), example=_text(raw, "example", where),
                          near_miss=_text(raw, "near_miss", where))
    # The examples are part of the rule's definition: a pattern that misses its own example, or catches its near
    # miss, is a broken rule file, found where it is loaded rather than by the first user it fails.
    seen = scan(signature.example, [signature])
    if not seen:
        raise where.at("example").error("the pattern does not match its own example")
    for fact in yields:
        if fact not in seen[0].facts:
            raise where.at(f"yields.{fact}").error("the example's capture does not state this fact")
    if scan(signature.near_miss, [signature]):
        raise where.at("near_miss").error("the pattern matches its near miss")
    return signature


def parse_signatures(raw: object, rule_id: str, where: Where, rule_fix: str = "") -> tuple[Signature, ...]:
    """A rule's `signatures`, validated; RuleError naming the file, rule and key for anything wrong. `rule_fix`:
    the rule's own fix, which a signature must replace when it names what only the facts know."""
    if not isinstance(raw, list) or not raw:
        raise where.error("expected [[rule.signatures]] tables")
    signatures = tuple(_one(item, rule_id, i, where.at(str(i))) for i, item in enumerate(raw))
    if "{item." in rule_fix:
        for signature in signatures:
            if not signature.fix:
                raise where.at(str(signature.index)).at("fix").error(
                    "required: the rule's fix names what only the facts know ({item.*}), and error output alone "
                    "may be all there is")
    return signatures


def _line_starts(text: str) -> list[int]:
    starts = [0]
    find = text.find
    at = find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = find("\n", at + 1)
    return starts


def scan(text: str, signatures: Iterable[Signature], source: str = "") -> list[Observation]:
    """Every line of `text` a signature recognises, as observations in input order (one per signature and
    line). Linear in `text`: each anchor is found with `str.find`, and each pattern runs once per line that holds
    its anchor, over a window of at most (1 + lines) * MAX_LINE characters."""
    starts: list[int] | None = None
    out: list[tuple[int, int, Observation]] = []
    for order, signature in enumerate(signatures):
        at = text.find(signature.anchor)
        last_line = -1
        while at >= 0:
            if starts is None:
                starts = _line_starts(text)
            line = bisect_right(starts, at) - 1
            if line != last_line:
                last_line = line
                seen = _match(text, starts, line, signature, source, at)
                if seen is not None:
                    out.append((seen.line, order, seen))
            following = starts[line + 1] if line + 1 < len(starts) else len(text)
            at = text.find(signature.anchor, following)
    out.sort(key=lambda entry: entry[:2])
    return [observation for _, _, observation in out]


def _window(text: str, starts: Sequence[int], first: int, count: int, anchor_at: int) -> tuple[str, int]:
    """(the anchor's line from at most MAX_BEFORE characters before the anchor to MAX_AFTER after it, then the
    `count` lines after it, each at most MAX_LINE characters; where the anchor is in it): what a pattern sees is
    bounded whatever the input holds."""
    lines = []
    offset = 0
    for number in range(first, min(first + count + 1, len(starts))):
        begin, limit = starts[number], MAX_LINE
        if number == first:
            begin = max(begin, anchor_at - MAX_BEFORE)
            offset, limit = anchor_at - begin, anchor_at - begin + MAX_AFTER
        end = starts[number + 1] - 1 if number + 1 < len(starts) else len(text)
        lines.append(text[begin:min(end, begin + limit)].rstrip("\r"))
    return "\n".join(lines), offset


def _match(text: str, starts: Sequence[int], line: int, signature: Signature, source: str,
           anchor_at: int) -> Observation | None:
    window, offset = _window(text, starts, line, signature.lines, anchor_at)
    # A match holds the anchor, so it starts at or before it: trying those starts alone (leftmost first, as search
    # would) spares a line whose anchor is not the message the cost of a search through the rest of the window.
    match = next((m for m in map(lambda pos: signature.pattern.match(window, pos), range(offset + 1)) if m), None)
    if match is None:
        return None
    captures = {k: v.strip() for k, v in match.groupdict().items() if v is not None}
    if signature.differ and captures.get(signature.differ[0]) == captures.get(signature.differ[1]):
        return None
    matched = " ".join(part.strip() for part in match[0].splitlines() if part.strip())
    return Observation(rule_id=signature.rule_id, signature=signature.index, line=line + 1,
                       text=matched if len(matched) <= MAX_TEXT else matched[:MAX_TEXT - 1] + "…",
                       captures=captures, facts=normalised(signature.yields, captures), source=source)

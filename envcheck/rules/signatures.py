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
    decides = false     # optional (default true): the message alone does not decide this rule, the facts must
    source = "https://github.com/pytorch/pytorch/blob/v2.13.0/torch/cuda/__init__.py#L427"   # the emitting line
    thread = "https://github.com/pytorch/pytorch/issues/150733"        # one real thread that shows it
    example = "..."     # real text it matches (the loader and the tests check it does)
    near_miss = "..."   # text a careless pattern would match, that it must not

Matching is linear in the input, with a small constant, on Python's own `re` (envcheck runs inside broken
environments, so it needs no compiled dependency to run):

- Each distinct `anchor` (a literal every match contains) is found with `str.find`, once per line that holds it,
  however many signatures share it. (One alternation of all the anchors, compiled, costs four times as much.)
- A line holding an anchor is cut to a window: at most MAX_BEFORE characters before the anchor and MAX_AFTER after
  it, then the `lines` after it, each clipped to MAX_LINE characters. The pattern runs once over it, at the starts
  up to the anchor, leftmost first, in one call (a lazy `.{0,MAX_BEFORE}?` before it: the loop over the starts is
  re's own, not Python's).
- A window seen before is answered from what it gave the first time: a log of one repeated warning costs one
  match, whatever its length.
- The loader refuses every pattern whose backtracking has no useful bound (envcheck/rules/bounded.py): a
  backreference or a conditional group; a repeated part that can match one text in two ways (`(a+)+`,
  `(?:\\w|\\w\\w)*`), or nothing; repetitions whose ways of splitting a window multiply past MAX_PATHS (`.*a.*b`), or
  whose steps on one window, at every start, could pass MAX_STEPS; and flags for the whole pattern (`(?i)`: write
  `(?i:...)`). What is left costs a constant per line, whatever the line holds. Lookarounds are allowed (the
  shipped pack uses them).

RE2 (`google-re2`), a linear-time engine, was weighed as an optional accelerator and not taken: it has no
lookarounds (https://github.com/google/re2/wiki/Syntax), which 23 of the shipped pack's 167 signatures use; its
`\\w`, `\\d` and `\\s` are ASCII where `re`'s are Unicode, so a log in another script would match differently with
and without it; and without wheels for older glibc, the fallback must be safe on its own anyway, which the bound
above makes it.

Measured on 8 MB logs (bench/scan.py, a shared 2-core machine under load, before -> after): generated noise with
every signature's near miss, 3-4 -> 5-8 MB/s; torch's three-line sm_XX warning repeated, 0.9-1.3 -> 6-20 MB/s;
the corpus's real threads concatenated, 5-6 -> 6-8 MB/s; hostile lines packed with 40 anchors each, 0.1-0.4 ->
1-3 MB/s. The whole `envcheck explain` of 8 MB (start-up and the check included): 4-17 s -> 1.4-2.8 s, at most
70 MB.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from envcheck.rules.bounded import Unbounded, paths
from envcheck.rules.captures import YIELDS, normalised
from envcheck.support.patterns import lazy

if TYPE_CHECKING:
    from envcheck.facts.observed import Observation
    from envcheck.rules.conditions.where import Where

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
_KEYS = {"anchor", "pattern", "lines", "yields", "summary", "why", "fix", "severity", "differ", "decides", "source",
         "thread", "example", "near_miss"}
_REQUIRED = ("anchor", "pattern", "source", "thread", "example", "near_miss")
_PLACEHOLDER = lazy(r"\{([^{}]*)\}")
_PLAIN = re.UNICODE  # a str pattern's flags when it sets none of its own
MAX_REMEMBERED = 4_000_000  # characters of windows the scan keeps with their answers (a repeated warning's is one)


@dataclass(frozen=True)
class Signature:
    """One message a rule's failure produces (see the module's docstring for the keys)."""

    rule_id: str
    index: int  # its place among the rule's signatures
    anchor: str
    # The pattern's text: compiled on first use (`pattern`), not when the pack is loaded. The pack is cached as
    # data, and a compiled pattern read back would be compiled again: ~170 compiles on every check, for a pattern
    # that only pasted error output (explain, check --report) ever runs.
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
    # False: the message has several causes (a dtype error may be apex, an old torch or the code), and it is this
    # rule's failure only where the facts of the environment it came from fire the rule: it never fires it alone.
    decides: bool = True
    source: str = ""
    thread: str = ""
    example: str = ""
    near_miss: str = ""

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.regex)

    @property
    def required(self) -> tuple[str, ...]:
        """Literal text every match holds (the pattern's longest fixed runs): a window without one of them is
        answered without running the pattern."""
        return _required(self.regex)

    @property
    def anchored(self) -> re.Pattern[str]:
        """The pattern tried at each of the first MAX_BEFORE + 1 starts of a window, leftmost first, in one call."""
        return _anchored(self.regex)

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


_START = "_envcheck_match"  # the group that holds the match itself in `_anchored` (a name no signature may use)


@functools.cache
def _anchored(regex: str) -> re.Pattern[str]:
    # `.{0,N}?` skips the fewest characters that let the pattern match: the leftmost start, as a loop over the
    # starts would find it, with the loop in C. Lookbehinds still see the characters before the start.
    return re.compile(f"(?s:.{{0,{MAX_BEFORE}}}?)(?P<{_START}>{regex})")


@functools.cache
def _required(regex: str) -> tuple[str, ...]:
    runs: list[str] = []

    def walk(items: Any) -> None:
        run: list[str] = []
        for op, av in items:
            if str(op) == "LITERAL":
                run.append(chr(av))
                continue
            runs.append("".join(run))
            run = []
            # A group's text is part of every match; an alternative's, a repetition's or a lookaround's may not be.
            if str(op) == "SUBPATTERN" and not av[1] & re.IGNORECASE:
                walk(av[-1])
        runs.append("".join(run))

    parsed = sre_parse.parse(regex)
    if not parsed.state.flags & re.IGNORECASE:
        walk(parsed)
    return tuple(sorted((r for r in runs if len(r) > 1), key=len, reverse=True)[:3])


def _filled(text: str, captures: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: captures.get(m[1]) or "(not stated)", text) if text else ""


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
    except OverflowError as exc:  # a{4294967296}
        raise where.at("pattern").error(f"not a regular expression: {exc}") from None
    except RecursionError:  # groups nested thousands deep
        raise where.at("pattern").error("not a regular expression: groups nested too deeply") from None
    lines = raw.get("lines", 0)
    if not isinstance(lines, int) or isinstance(lines, bool) or not 0 <= lines <= MAX_LINES:
        raise where.at("lines").error(f"expected a whole number from 0 to {MAX_LINES}")
    if pattern.flags != _PLAIN:
        raise where.at("pattern").error("flags for the whole pattern ((?i) at its start): scope them to a group, "
                                        "(?i:...)")
    if _START in pattern.groupindex:
        raise where.at("pattern").error(f"the group name {_START} is the scan's own")
    try:
        paths(source, window=MAX_BEFORE + MAX_AFTER + lines * (MAX_LINE + 1), line=MAX_LINE, starts=MAX_BEFORE + 1)
    except Unbounded as exc:
        raise where.at("pattern").error(f"could backtrack without a useful bound: {exc}") from None
    except RecursionError:
        raise where.at("pattern").error("groups nested too deeply to be bounded") from None
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
    decides = raw.get("decides", True)
    if not isinstance(decides, bool):
        raise where.at("decides").error("expected true or false")
    if severity not in ("", "error", "warning", "info"):
        raise where.at("severity").error(f"expected error, warning or info, got {severity!r}")
    for key, text in (("summary", summary), ("why", why), ("fix", fix)):
        for name in _PLACEHOLDER.findall(text):
            if name not in groups:
                raise where.at(key).error(f"{{{name}}}: the pattern has no group (?P<{name}>...)")
    signature = Signature(rule_id=rule_id, index=index, anchor=anchor, regex=source, lines=lines,
                          yields=dict(yields), summary=summary, why=why, fix=fix, severity=severity,
                          differ=tuple(differ), decides=decides,
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


def scan(text: str, signatures: Iterable[Signature], source: str = "") -> list[Observation]:
    """Every line of `text` a signature recognises, as observations in input order (one per signature and
    line). Linear in `text`: each distinct anchor is found with `str.find`, once per line that holds it, whatever
    the number of signatures that share it; each pattern runs once per such line, over a window of at most
    MAX_BEFORE + MAX_AFTER characters and `lines` more lines of MAX_LINE; and a window seen before (a repeated
    warning) is answered from what it gave the first time."""
    groups: dict[str, list[tuple[int, Signature]]] = {}
    for order, signature in enumerate(signatures):
        groups.setdefault(signature.anchor, []).append((order, signature))
    widest = {anchor: max(s.lines for _, s in members) for anchor, members in groups.items()}
    from envcheck.facts.observed import Observation  # only here: a check without error output never defines it

    hits: list[tuple[int, int, str]] = []  # (where the line begins, where the anchor is, the anchor)
    find, rfind, size = text.find, text.rfind, len(text)
    for anchor in groups:
        at = find(anchor)
        while at >= 0:
            hits.append((rfind("\n", 0, at) + 1, at, anchor))
            end = find("\n", at)
            at = -1 if end < 0 else find(anchor, end + 1)
    hits.sort()
    memo: dict[tuple[str, str, int], list[tuple[int, Signature, _Seen | None]]] = {}
    remembered = 0  # characters of the windows in `memo`
    out: list[tuple[int, int, Observation]] = []
    line, counted = 1, 0
    for begin, at, anchor in hits:
        line += text.count("\n", counted, begin)
        counted = begin
        members = groups[anchor]
        window, offset = _window(text, size, begin, at, widest[anchor])
        key = (anchor, window, offset)
        seen = memo.get(key)
        if seen is None:
            remembered += len(window)
            if remembered > MAX_REMEMBERED:  # a log of windows all different: memory stays bounded, not the answer
                memo.clear()
                remembered = len(window)
            seen = memo[key] = [(order, s, _match(_clipped(window, offset, s.lines), offset, s))
                                for order, s in members]
        out.extend((line, order, Observation(rule_id=s.rule_id, signature=s.index, line=line, text=found.text,
                                             captures=dict(found.captures), facts=dict(found.facts),
                                             source=source))
                   for order, s, found in seen if found is not None)
    out.sort(key=itemgetter(0, 1))
    return [observation for _, _, observation in out]


def _window(text: str, size: int, begin: int, at: int, count: int) -> tuple[str, int]:
    """(the anchor's line from at most MAX_BEFORE characters before the anchor to MAX_AFTER after it, then the
    `count` lines after it, each at most MAX_LINE characters; where the anchor is in it): what a pattern sees is
    bounded whatever the input holds."""
    first = max(begin, at - MAX_BEFORE)
    end = text.find("\n", at)
    end = size if end < 0 else end
    lines = [text[first:min(end, at + MAX_AFTER)].rstrip("\r")]
    for _ in range(count):
        if end >= size:
            break
        begin = end + 1
        end = text.find("\n", begin)
        end = size if end < 0 else end
        lines.append(text[begin:min(end, begin + MAX_LINE)].rstrip("\r"))
    return "\n".join(lines), at - first


def _clipped(window: str, offset: int, count: int) -> str:
    """`window` up to the end of its `count`-th line after the anchor's: a signature sees no more lines than it
    asked for, though the window was cut for the one of its anchor's signatures that asks for most."""
    end = window.find("\n", offset)
    for _ in range(count):
        if end < 0:
            break
        end = window.find("\n", end + 1)
    return window if end < 0 else window[:end]


class _Seen(NamedTuple):
    """What a signature's pattern found in one window: the same for every line whose window is the same."""

    text: str
    captures: dict[str, str]
    facts: dict[str, str]


def _match(window: str, offset: int, signature: Signature) -> _Seen | None:
    # A match holds the anchor, so it starts at or before it: the pattern is tried at those starts alone
    # (leftmost first, as search would), in one call (`_anchored`), not through the rest of the window.
    if any(literal not in window for literal in signature.required):
        return None
    match = signature.anchored.match(window)
    if match is None or match.start(_START) > offset:
        return None
    captures = {k: v.strip() for k, v in match.groupdict().items() if v is not None and k != _START}
    if signature.differ and captures.get(signature.differ[0]) == captures.get(signature.differ[1]):
        return None
    matched = " ".join(part.strip() for part in match[_START].splitlines() if part.strip())
    return _Seen(text=matched if len(matched) <= MAX_TEXT else matched[:MAX_TEXT - 1] + "…", captures=captures,
                 facts=normalised(signature.yields, captures))

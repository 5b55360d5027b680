"""How deep a TOML text nests, found by one linear scan before tomllib parses it.

tomllib's cost grows with the square of a key's depth: a 60 KB file holding one dotted key 30,000 levels deep
(`a.a.a...= 1`) takes tens of seconds and gigabytes before anything parsed could be checked. Every value's depth is
at least the sum of what this scan counts on the way to it: the parts of the current `[table]` header, the parts of
each dotted key, and each array or inline table it sits in. A text whose count passes the limit is refused here,
in time linear in its length; one that passes still has its parsed value checked (input_files.too_deep), so this
scan only has to be a lower bound, never exact.

The scan knows the lexical structure of TOML 1.0 (strings of the four kinds, comments, table headers, keys before
`=`, arrays and inline tables in values) and nothing more: what it does not recognise it leaves to tomllib, which
reports it with its own message. An unterminated string ends the scan: tomllib stops with an error there too.
"""

from __future__ import annotations

from envcheck.support.patterns import lazy

__all__ = ["too_deep_at"]

# One match per token that matters: the four kinds of string (each whole, so a `.`, `[` or `#` inside one is not
# counted), a comment, or a structural character. Everything else (bare keys, numbers, dates, spaces) is skipped by
# finditer itself. Each string pattern is "unrolled" (a run of plain characters, then escape-and-run repeated), so
# it cannot backtrack; multi-line strings may end with one or two extra quotes that belong to the content.
_TOKEN = lazy(
    r'"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*"""(?:"{1,2})?'
    r"|'''[^']*(?:'(?!'')[^']*)*'''(?:'{1,2})?"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    r"|'[^'\n]*'"
    r"|#[^\n]*"
    r"|[\[\]{}=,.\n\"']"  # a lone quote: a string the patterns above could not close
)

_KEY, _VALUE, _HEADER, _AFTER_HEADER = range(4)


def too_deep_at(text: str, limit: int) -> tuple[str, int] | None:
    """(the key, its line) where a value of `text` nests more than `limit` deep, by the scan's count; else None."""
    # Each open array or inline table is a frame: ("[", the depth of its elements) or ("{", the depth its keys
    # start from). `value` is the depth of the value after the last `=`.
    frames: list[tuple[str, int]] = []
    state = _KEY
    base = 0  # the depth the current [table]'s keys start from: its header's parts
    parts = 0  # the parts of the key or header being read (a bare first part is counted at its `.` or `=`)
    value = 0
    key_start = key_end = 0  # where that key or header starts, to name it
    for token in _TOKEN.finditer(text):
        char = token.group()[0]
        lone_quote = char in "\"'" and token.end() - token.start() == 1
        if lone_quote:  # an unterminated string: tomllib stops there with its own error
            return None
        if state == _HEADER:
            if char == ".":
                parts += 1
                if parts > limit:
                    return _key(text, key_start, token.start())
            elif char == "]":
                base, parts, state = parts, 0, _AFTER_HEADER
            elif char == "\n":  # an unclosed header: tomllib's error
                return None
        elif state == _AFTER_HEADER:  # the second `]` of `[[x]]`, a comment
            if char == "\n":
                state, key_start = _KEY, token.end()
        elif state == _KEY:
            start = frames[-1][1] if frames else base
            if char == "[" and not frames and parts == 0:
                state, parts, key_start = _HEADER, 1, token.end()
            elif char == ".":
                parts = max(parts, 1) + 1
                if start + parts > limit:
                    return _key(text, key_start, token.start())
            elif char == "=":
                value, parts, state, key_end = start + max(parts, 1), 0, _VALUE, token.start()
                if value > limit:
                    return _key(text, key_start, token.start())
            elif char == "}" and frames and frames[-1][0] == "{":  # `{}`, or a trailing comma tomllib refuses
                frames.pop()
                state = _VALUE
            elif char in "\n,#":
                key_start = token.end()
            else:  # a quoted part of the key
                parts = max(parts, 1)
        else:  # _VALUE: after `=`, or inside an array
            if char in "[{":
                depth = frames[-1][1] if frames and frames[-1][0] == "[" else value
                if depth > limit:
                    return _key(text, key_start, key_end)
                if char == "[":
                    frames.append(("[", depth + 1))
                else:
                    frames.append(("{", depth))
                    state, key_start = _KEY, token.end()
            elif char in "]}" and frames and frames[-1][0] == ("[" if char == "]" else "{"):
                frames.pop()
            elif (char == "," and frames and frames[-1][0] == "{") or (char == "\n" and not frames):
                state, key_start = _KEY, token.end()  # the next key of an inline table, or of the table
    return None


def _key(text: str, start: int, end: int) -> tuple[str, int]:
    """The key written from `start` to `end` (its head where it is long), and its line."""
    head = " ".join(text[start:min(end, start + 200)].split())
    return (head if len(head) <= 80 and end - start <= 200 else f"{head[:80]}…", text.count("\n", 0, start) + 1)

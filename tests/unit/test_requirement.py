"""The fast reading of simple Requires-Dist lines (envcheck/support/requirement.py) against packaging's own parser."""

from __future__ import annotations

import importlib.metadata
import random

import pytest
from packaging.requirements import InvalidRequirement, Requirement

from envcheck.support.requirement import simple_requirement
from envcheck.support.versions import parse_requirement

# Lines of every shape: the simple ones the fast reading takes, and the ones it must leave to packaging (URLs,
# `===`, epochs, local versions, misplaced `.*`, odd whitespace, names packaging tokenizes differently, bad
# markers), some valid and some not.
TRICKY = [
    "torch", "torch>=2.1", "torch >= 2.1 , < 3", "torch>=2.1,<3", "Torch_Vision.Extra-Name==0.21.0",
    "accelerate[torch]>=1.0", "accelerate[ torch , Deepspeed ]", "accelerate [torch] (>=1.0, <2)",
    "foo (>=1.0)", "foo(>=1.0)", "foo ( >= 1.0 , != 1.5.* )", "foo ()", "foo (>=1.0", "foo >=1.0)",
    "foo==1.0.*", "foo!=1.0.*", "foo>=1.0.*", "foo~=1.0.*", "foo==1.0a1.*", "foo~=1", "foo~=1.4", "foo~=1.4.2rc1",
    "foo==1.0a1", "foo==1.0b2.post3.dev4", "foo==1.0rc1", "foo>=1.0.post1", "foo<1.0.dev0", "foo==1.0RC1",
    "foo==1.0-1", "foo==v1.0", "foo==1!2.0", "foo==1.0+local", "foo>=1.0+local", "foo===1.0-anything",
    "foo==", "foo>=", "foo>=1.0,", "foo>=1.0,,<2", "foo>1<2", "foo>=1.0 <2", "foo=1.0", "foo==1.0 extra",
    "foo; python_version < '3.11'", 'foo>=1; python_version<"3.11"', "foo ;python_version<'3.11'",
    "foo;os_name=='nt' and extra == 'Test_X'", 'foo; extra == "Dev.Tools"', "foo; extra == 'a' or extra == 'b'",
    "foo; (python_version >= '3.8' and sys_platform == 'linux') or platform_machine == 'arm64'",
    "foo; python_version > '3.8' and", "foo; bogus == '1'", "foo;", "foo; ", "foo ; python_version == ';'",
    "foo @ https://example.org/foo-1.0.tar.gz", "foo @ https://example.org/foo.whl ; python_version > '3'",
    "foo@ file:///tmp/x", "foo-", "foo.", "foo_", "_foo", "-foo", ".foo", "foo-bar-", "f", "1", "a.b-c_d",
    "foo[]", "foo[bar,]", "foo[,bar]", "foo[bar baz]", "foo[bar]]", "foo bar", " foo", "foo ", "\tfoo\t>=1.0\t",
    "foo\n", "foo\u00a0>=1.0", "foo>=1.0\r", "foo >= 1.0 ; extra == 'x' ", "", " ", ";", "[x]", ">=1.0",
    "foo>=1.00000000000000000000001", "foo==01.002", "foo>=1.0, <2.0, !=1.5, ==1.*",
    "numpy>=1.23.5; python_version >= '3.11' and python_version < '3.12'",
    "nvidia-cublas-cu12==12.8.4.1; platform_system == 'Linux' and platform_machine == 'x86_64'",
]


def _same(fast: Requirement, slow: Requirement) -> bool:
    return (fast.name == slow.name and fast.url == slow.url and fast.extras == slow.extras
            and str(fast.specifier) == str(slow.specifier) and fast.specifier == slow.specifier
            and str(fast.marker) == str(slow.marker) and fast.marker == slow.marker
            and str(fast) == str(slow) and fast == slow and hash(fast) == hash(slow))


def _packaging(line: str) -> Requirement | None:
    try:
        return Requirement(line)
    except InvalidRequirement:
        return None


def _installed_lines() -> list[str]:
    lines = {line for dist in importlib.metadata.distributions() for line in dist.requires or ()}
    return sorted(lines)


@pytest.mark.parametrize("line", TRICKY)
def test_tricky_lines_agree_with_packaging(line: str) -> None:
    """Where the fast reading answers, packaging reads the line to the same Requirement; where packaging refuses
    it, the fast reading does not answer."""
    fast, slow = simple_requirement(line), _packaging(line)
    if fast is not None:
        assert slow is not None, line
        assert _same(fast, slow), line


def test_every_installed_line_agrees_with_packaging() -> None:
    """Every Requires-Dist line of this environment's distributions reads the same both ways, and most of them
    take the fast way."""
    lines = _installed_lines()
    assert len(lines) > 100  # pytest, mypy, ruff, jsonschema, ... and their dependencies
    fast_count = 0
    for line in lines:
        fast, slow = simple_requirement(line), _packaging(line)
        if fast is None:
            continue
        fast_count += 1
        assert slow is not None, line
        assert _same(fast, slow), line
    assert fast_count > 0.8 * len(lines)


@pytest.mark.parametrize("line", [*TRICKY, "foo>=1" + "0" * 70, "foo; " + "(" * 40 + "os_name == 'nt'" + ")" * 40])
def test_parse_requirement_is_packaging_or_none(line: str) -> None:
    """envcheck's parse_requirement gives packaging's Requirement, or None where packaging refuses the line or it
    is beyond envcheck's bounds."""
    got = parse_requirement(line)
    slow = _packaging(line) if len(line) < 200 else None
    if got is None:
        assert slow is None or "0" * 65 in line or "(" * 33 in line
    else:
        assert slow is not None and _same(got, slow)


def test_simple_shapes_take_the_fast_way() -> None:
    """The shapes the reading exists for are read without packaging's parser (a regression guard on the regex)."""
    for line in ["torch>=2.1,<3", "accelerate[torch]>=1.0; extra == 'gpu'", "foo (>=1.0) ; python_version < '3.11'",
                 "numpy", "requests[socks]", "foo==1.0.*", "foo~=1.4"]:
        assert simple_requirement(line) is not None, line
    for line in ["foo @ https://example.org/foo.whl", "foo===1.0", "foo==1.0+local", "foo==1!2.0", "foo;"]:
        assert simple_requirement(line) is None, line


def test_random_lines_agree_with_packaging() -> None:
    """Lines glued at random from requirement fragments: whatever the fast reading accepts, packaging reads the same."""
    rng = random.Random(7)
    fragments = ["foo", "Foo_bar", "a.b", "x-", "1", "[", "]", "[a]", "[a, b]", "[ ]", "(", ")", ">=", "<=", "==",
                 "!=", "~=", "===", "<", ">", "1.0", "1.0.*", "2.0rc1", "1.0.post1", ".dev0", "+loc", "1!2", " ",
                 "\t", ",", ";", " python_version < '3.9'", " extra == 'X_y'", "@ https://x/y.whl", "or", "and",
                 "\n", "*", "a1", "v1", "-1", "_"]
    accepted = 0
    for _ in range(20000):
        line = "".join(rng.choice(fragments) for _ in range(rng.randint(1, 8)))
        fast = simple_requirement(line)
        if fast is None:
            continue
        accepted += 1
        slow = _packaging(line)
        assert slow is not None, repr(line)
        assert _same(fast, slow), repr(line)
    assert accepted > 500

"""The condition language: Kleene three-valued combinators and every leaf predicate, over Facts built directly."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from _fakes import build_facts, dist_dict, torch_dict

from envcheck.errors import RuleError
from envcheck.rules.conditions import Condition, Context, Outcome, parse
from envcheck.rules.conditions.core import FALSE, TRUE, All, AnyOf, Not, unknown
from envcheck.rules.conditions.where import Where

U_A, U_B = unknown("a"), unknown("b")


@dataclass(frozen=True)
class Fixed:
    """A leaf with a fixed outcome, for the truth tables."""

    outcome: Outcome

    def evaluate(self, ctx: Context) -> Outcome:
        return self.outcome

    def leaves(self) -> Iterator[Condition]:
        yield self

    def describe(self) -> str:
        return repr(self.outcome.value)


def _fixed(*outcomes: Outcome) -> tuple[Condition, ...]:
    return tuple(Fixed(o) for o in outcomes)


@pytest.mark.parametrize(
    ("condition", "value", "missing"),
    [
        pytest.param(All(()), True, set(), id="all()"),
        pytest.param(All(_fixed(TRUE, TRUE)), True, set(), id="all(T,T)"),
        pytest.param(All(_fixed(TRUE, FALSE)), False, set(), id="all(T,F)"),
        pytest.param(All(_fixed(FALSE, U_A)), False, set(), id="all(F,U)"),
        pytest.param(All(_fixed(U_A, FALSE)), False, set(), id="all(U,F)"),
        pytest.param(All(_fixed(TRUE, U_A)), None, {"a"}, id="all(T,U)"),
        pytest.param(All(_fixed(U_A, TRUE, U_B)), None, {"a", "b"}, id="all(U,T,U)"),
        pytest.param(AnyOf(_fixed(FALSE, FALSE)), False, set(), id="any(F,F)"),
        pytest.param(AnyOf(_fixed(FALSE, TRUE)), True, set(), id="any(F,T)"),
        pytest.param(AnyOf(_fixed(TRUE, U_A)), True, set(), id="any(T,U)"),
        pytest.param(AnyOf(_fixed(U_A, TRUE)), True, set(), id="any(U,T)"),
        pytest.param(AnyOf(_fixed(FALSE, U_A)), None, {"a"}, id="any(F,U)"),
        pytest.param(AnyOf(_fixed(U_A, FALSE, U_B)), None, {"a", "b"}, id="any(U,F,U)"),
        pytest.param(Not(Fixed(TRUE)), False, set(), id="not(T)"),
        pytest.param(Not(Fixed(FALSE)), True, set(), id="not(F)"),
        pytest.param(Not(Fixed(U_A)), None, {"a"}, id="not(U)"),
        pytest.param(Not(All(_fixed(TRUE, U_A))), None, {"a"}, id="not(all(T,U))"),
        pytest.param(AnyOf((Not(Fixed(FALSE)), Fixed(U_B))), True, set(), id="any(not(F),U)"),
    ],
)
def test_three_valued_logic(condition: Condition, value: bool | None, missing: set[str]) -> None:
    """all/any/not follow Kleene's logic, and unknown carries the names of exactly the facts that made it so."""
    out = condition.evaluate(Context(build_facts()))
    assert (out.value, set(out.missing)) == (value, missing)


LINUX_TORCH = [dist_dict("torch", "2.6.0+cu124")]


@pytest.mark.parametrize(
    ("condition", "facts", "value"),
    [
        # package: the imported copy, PEP 440 with pre-releases and local versions, markers for the checked Python
        pytest.param({"package": "torch>=2.6"}, {"dists": LINUX_TORCH}, True, id="package-in-range"),
        pytest.param({"package": "torch==2.6.0"}, {"dists": LINUX_TORCH}, True, id="package-local-version"),
        pytest.param({"package": "torch<2.6"}, {"dists": LINUX_TORCH}, False, id="package-out-of-range"),
        pytest.param({"package": "torch>=2.6"}, {"dists": [dist_dict("torch", "2.7.0rc1")]}, True,
                     id="package-prerelease"),
        pytest.param({"package": "torch"}, {}, False, id="package-not-installed"),
        pytest.param({"package": "Pytorch_Lightning>=2"}, {"dists": [dist_dict("pytorch-lightning", "2.4.0")]}, True,
                     id="package-any-spelling"),
        pytest.param({"package": "foo<2"}, {"dists": [dist_dict("foo", "2.0"), dist_dict("foo", "1.0", location="/b")]},
                     False, id="package-active-copy-decides"),
        pytest.param({"package": "torch; sys_platform == 'win32'"}, {"dists": LINUX_TORCH}, False,
                     id="package-marker-false"),
        pytest.param({"package": "torch; sys_platform == 'linux'"}, {"dists": LINUX_TORCH}, True,
                     id="package-marker-true"),
        pytest.param({"package": "torch; python_version >= '3.12'"}, {"dists": LINUX_TORCH,
                     "python": {"marker_environment": {"python_version": "3.12", "sys_platform": "linux"}}}, True,
                     id="package-marker-of-checked-python"),
        pytest.param({"package": "foo>=1"}, {"dists": [dist_dict("foo", "1.0-custom")]}, None,
                     id="package-invalid-version"),
        pytest.param({"package": "foo"}, {"dists": [dist_dict("foo", "1.0-custom")]}, True,
                     id="package-invalid-version-no-specifier"),
        # missing
        pytest.param({"missing": "safetensors"}, {}, True, id="missing-absent"),
        pytest.param({"missing": "safetensors"}, {"dists": [dist_dict("safetensors", "0.4.5")]}, False,
                     id="missing-present"),
        pytest.param({"missing": "safetensors>=0.4.3"}, {"dists": [dist_dict("safetensors", "0.3.0")]}, True,
                     id="missing-too-old"),
        pytest.param({"missing": "safetensors; sys_platform == 'win32'"}, {}, False, id="missing-not-required-here"),
        pytest.param({"missing": "foo>=1"}, {"dists": [dist_dict("foo", "1.0-custom")]}, None,
                     id="missing-invalid-version"),
        # module
        pytest.param({"module": "apex.normalization"}, {"modules": {"apex.normalization": {"found": True,
                     "origin": "/x"}}}, True, id="module-found"),
        pytest.param({"module": "apex"}, {"modules": {"apex": {"found": False, "origin": None}}}, False,
                     id="module-absent"),
        pytest.param({"module": "apex"}, {}, None, id="module-not-looked-up"),
        pytest.param({"module": "apex"}, {"modules": {"apex": {"found": False, "origin": None,
                     "error": "PermissionError: x"}}}, None, id="module-lookup-failed"),
        # source
        pytest.param({"source": {"file": "a/b.py", "contains": "X"}}, {"sources": {"a/b.py": {"path": "/a/b.py",
                     "matches": {"X": True}}}}, True, id="source-contains"),
        pytest.param({"source": {"file": "a/b.py", "contains": "X"}}, {"sources": {"a/b.py": {"path": "/a/b.py",
                     "matches": {"X": False}}}}, False, id="source-contains-no-match"),
        pytest.param({"source": {"file": "a/b.py", "lacks": "X"}}, {"sources": {"a/b.py": {"path": "/a/b.py",
                     "matches": {"X": False}}}}, True, id="source-lacks"),
        pytest.param({"source": {"file": "a/b.py", "lacks": "X"}}, {"sources": {"a/b.py": {"path": "/a/b.py",
                     "matches": {"X": True}}}}, False, id="source-lacks-but-matches"),
        pytest.param({"source": {"file": "a/b.py", "lacks": "X"}}, {"sources": {"a/b.py": {"path": None,
                     "matches": {}}}}, False, id="source-file-absent"),
        pytest.param({"source": {"file": "a/b.py", "contains": "X"}}, {}, None, id="source-not-collected"),
        pytest.param({"source": {"file": "a/b.py", "contains": "X"}}, {"sources": {"a/b.py": {"path": "/a/b.py",
                     "matches": {"Y": True}}}}, None, id="source-pattern-not-searched"),
        pytest.param({"source": {"file": "a/b.py", "contains": "X"}}, {"sources": {"a/b.py": {"path": "/a/b.py",
                     "matches": {}, "error": "cannot read: Permission denied"}}}, None, id="source-unreadable"),
        # marker and python
        pytest.param({"marker": "sys_platform == 'linux'"}, {}, True, id="marker-true"),
        pytest.param({"marker": "sys_platform == 'win32'"}, {}, False, id="marker-false"),
        pytest.param({"marker": "platform_machine == 'aarch64'"}, {"python": {"marker_environment": {
                     "platform_machine": "aarch64"}}}, True, id="marker-of-checked-python"),
        pytest.param({"python": ">=3.10"}, {}, True, id="python-in-range"),
        pytest.param({"python": ">=3.13"}, {}, False, id="python-out-of-range"),
        pytest.param({"python": ">=3.13"}, {"python": {"version": "3.14.0a1"}}, True, id="python-prerelease"),
        pytest.param({"python": ">=3.14"}, {"python": {"version": "3.14.0a1"}}, False,
                     id="python-prerelease-before-final"),
        pytest.param({"python": ">=3.10"}, {"python": {"version": "3.11.7+"}}, None, id="python-unparsable"),
        # env
        pytest.param({"env": "CUDA_VISIBLE_DEVICES"}, {"env": {"CUDA_VISIBLE_DEVICES": ""}}, True, id="env-set"),
        pytest.param({"env": "CUDA_VISIBLE_DEVICES"}, {}, False, id="env-not-set"),
        pytest.param({"env": {"name": "CUDA_VISIBLE_DEVICES", "set": False}}, {}, True, id="env-unset"),
        pytest.param({"env": {"name": "CUDA_HOME", "equals": "/usr/local/cuda"}},
                     {"env": {"CUDA_HOME": "/usr/local/cuda"}}, True, id="env-equals"),
        pytest.param({"env": {"name": "CUDA_HOME", "equals": "/usr/local/cuda"}},
                     {"env": {"CUDA_HOME": "/opt/cuda"}}, False, id="env-equals-other"),
        pytest.param({"env": {"name": "CUDA_HOME", "equals": ""}}, {}, False, id="env-equals-unset"),
        pytest.param({"env": {"name": "CUDA_MODULE_LOADING", "in": ["EAGER", "LAZY"]}},
                     {"env": {"CUDA_MODULE_LOADING": "LAZY"}}, True, id="env-in"),
        pytest.param({"env": {"name": "CUDA_MODULE_LOADING", "in": ["EAGER"]}},
                     {"env": {"CUDA_MODULE_LOADING": "LAZY"}}, False, id="env-not-in"),
        pytest.param({"env": {"name": "PYTORCH_CUDA_ALLOC_CONF", "matches": "expandable_segments:\\s*True"}},
                     {"env": {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64,expandable_segments:True"}}, True,
                     id="env-matches"),
        pytest.param({"env": {"name": "PYTORCH_CUDA_ALLOC_CONF", "matches": "^expandable"}},
                     {"env": {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64"}}, False, id="env-no-match"),
        # fact
        pytest.param({"fact": "requirements.missing"}, {"dists": [dist_dict("a", "1", "b")]}, True,
                     id="fact-nonempty"),
        pytest.param({"fact": {"name": "requirements.missing", "nonempty": True}}, {"dists": [dist_dict("a", "1")]},
                     False, id="fact-nonempty-but-empty"),
        pytest.param({"fact": {"name": "requirements.missing", "nonempty": False}}, {"dists": [dist_dict("a", "1")]},
                     True, id="fact-empty"),
        pytest.param({"fact": {"name": "requirements.missing", "equals": []}}, {}, True, id="fact-equals"),
        pytest.param({"fact": {"name": "distributions.duplicates", "equals": []}},
                     {"dists": [dist_dict("a", "1"), dist_dict("a", "2", location="/b"), dist_dict("c", "1", "a>=2")]},
                     False,
                     id="fact-equals-other"),
        # torch (torch/version.py)
        pytest.param({"torch": {"version": "<2.6"}}, {}, False, id="torch-absent"),
        pytest.param({"torch": {"cuda": "none"}}, {}, False, id="torch-absent-cuda-none"),
        pytest.param({"torch": {"version": "<2.6"}}, {"torch": torch_dict(version=None, problem="cannot read")},
                     None, id="torch-unreadable"),
        pytest.param({"torch": {"version": "<2.6"}}, {"torch": torch_dict("2.5.1+cu124")}, True,
                     id="torch-version"),
        pytest.param({"torch": {"version": "==2.5.1"}}, {"torch": torch_dict("2.5.1+cu124")}, True,
                     id="torch-local-version"),
        pytest.param({"torch": {"version": "<2.6"}}, {"torch": torch_dict("2.6.0+cpu", cuda=None)}, False,
                     id="torch-version-out-of-range"),
        pytest.param({"torch": {"version": ">=2"}}, {"torch": torch_dict("custom-build")}, None,
                     id="torch-version-invalid"),
        pytest.param({"torch": {"cuda": "none"}}, {"torch": torch_dict("2.6.0+cpu", cuda=None)}, True,
                     id="torch-cuda-none"),
        pytest.param({"torch": {"cuda": "none"}}, {"torch": torch_dict()}, False, id="torch-cuda-none-but-cuda"),
        pytest.param({"torch": {"cuda": "any"}}, {"torch": torch_dict()}, True, id="torch-cuda-any"),
        pytest.param({"torch": {"cuda": "any"}}, {"torch": torch_dict(cuda=None)}, False, id="torch-cuda-any-cpu"),
        pytest.param({"torch": {"cuda": ">=12.8"}}, {"torch": torch_dict(cuda="12.4")}, False, id="torch-cuda-old"),
        pytest.param({"torch": {"cuda": ">=12.8"}}, {"torch": torch_dict(cuda="12.8")}, True, id="torch-cuda-new"),
        pytest.param({"torch": {"cuda": ">=12.8"}}, {"torch": torch_dict(cuda=None)}, False, id="torch-cuda-cpu"),
        pytest.param({"torch": {"hip": "any", "version": ">=2.5"}}, {"torch": torch_dict(cuda=None, hip="6.2.4")},
                     True, id="torch-hip-and-version"),
        pytest.param({"torch": {"hip": ">=6"}}, {"torch": torch_dict(cuda=None, hip="6.2.41133-dd7f95766")}, None,
                     id="torch-hip-unparsable"),
    ],
)
def test_leaf_predicates(condition: dict[str, Any], facts: dict[str, Any], value: bool | None) -> None:
    """Each leaf predicate is true, false or unknown (naming what it lacks) exactly as docs/rule-language.md says."""
    parsed = parse(condition, Where("<test>", "EC9999", "when"))
    out = parsed.evaluate(Context(build_facts(**facts)))
    assert out.value is value
    assert bool(out.missing) == (value is None)


def test_table_with_several_keys_means_all() -> None:
    """A condition table with several keys is their conjunction."""
    cond = parse({"python": ">=3.10", "marker": "sys_platform == 'win32'"}, Where("<test>", None, "when"))
    assert isinstance(cond, All) and cond.evaluate(Context(build_facts())).value is False


def test_unknown_names_what_is_missing() -> None:
    """An unknown outcome names the module that was not looked up and the version that is not PEP 440."""
    cond = parse({"all": [{"module": "apex"}, {"package": "foo>=1"}]}, Where("<test>", None, "when"))
    out = cond.evaluate(Context(build_facts(dists=[dist_dict("foo", "1.0-custom")])))
    assert out.value is None
    assert sorted(out.missing) == ["module apex (not looked up in this snapshot)",
                                   "version of foo ('1.0-custom' is not a PEP 440 version)"]


_WHEN = Where("rules/x.toml", "EC9001", "when")
_TORCH_ONLY = {"dists": [dist_dict("torch", "2.5.1")]}


@pytest.mark.parametrize(
    ("condition", "text"),
    [
        pytest.param({"package": "apex"}, "`apex` is installed", id="leaf"),
        pytest.param({"all": [{"package": "apex"}, {"any": [{"package": "a"}, {"package": "b<2"}]}]},
                     "`apex` is installed and (`a` is installed or `b<2` is installed)", id="all-groups-any"),
        pytest.param({"any": [{"first": [{"module": "a"}, {"package": "b"}]},
                              {"all": [{"package": "c"}, {"package": "d"}]}]},
                     "(the first known of: module `a` is importable; else `b` is installed) or "
                     "(`c` is installed and `d` is installed)", id="any-groups-first-and-all"),
        pytest.param({"all": [{"any": [{"package": "a"}]}, {"package": "b"}]}, "`a` is installed and `b` is installed",
                     id="one-part-needs-no-brackets"),
        pytest.param({"package": "a", "python": ">=3"}, "`a` is installed and Python `>=3`", id="two-keys-read-and"),
        pytest.param({"not": {"any": [{"package": "a"}, {"package": "b"}]}},
                     "not (`a` is installed or `b` is installed)", id="not-groups"),
        pytest.param({"not": {"package": "a"}}, "not `a` is installed", id="not-leaf"),
        pytest.param({"first": [{"module": "a"}, {"module": "c"}, {"package": "torch"}]},
                     "the first known of: module `a` is importable; else module `c` is importable; else `torch` is "
                     "installed", id="first"),
    ],
)
def test_describe(condition: dict[str, Any], text: str) -> None:
    """What a rule's n/a and pass verdicts show ("applies when ...", "fires when ..."): parts joined in their order,
    a combinator of several parts inside another in brackets."""
    assert parse(condition, _WHEN).describe() == text


def test_empty_all_reads_always() -> None:
    """A rule without `applies` applies always (All of nothing), and says so."""
    assert All(()).describe() == "always"


@pytest.mark.parametrize(
    ("condition", "value", "evidence", "missing"),
    [
        pytest.param({"first": [{"package": "torch"}, {"module": "a"}]}, True, "`torch` is installed", set(),
                     id="first-part-known"),
        pytest.param({"first": [{"module": "a"}, {"module": "c"}, {"package": "torch<2"}]}, False,
                     "`torch<2` is installed (instead of: module a (not looked up in this snapshot); module c (not "
                     "looked up in this snapshot))", set(), id="falls-back-naming-what-it-lacked"),
        pytest.param({"first": [{"module": "a"}, {"module": "c"}]}, None, "",
                     {"module a (not looked up in this snapshot)", "module c (not looked up in this snapshot)"},
                     id="none-known"),
        pytest.param({"all": [{"first": [{"module": "a"}, {"package": "torch"}]}, {"package": "torch>=2"},
                              {"first": [{"package": "torch<3"}]}]}, True,
                     "`torch` is installed (instead of: module a (not looked up in this snapshot)); "
                     "`torch<3` is installed", set(), id="all-joins-the-evidence"),
        pytest.param({"all": [{"first": [{"package": "torch"}]}, {"module": "a"}]}, None, "",
                     {"module a (not looked up in this snapshot)"}, id="unknown-all-drops-the-evidence"),
        pytest.param({"any": [{"package": "apex"}, {"first": [{"module": "a"}, {"package": "torch"}]}]}, True,
                     "`torch` is installed (instead of: module a (not looked up in this snapshot))", set(),
                     id="any-keeps-the-deciding-part-s-evidence"),
        pytest.param({"not": {"first": [{"package": "torch"}]}}, False, "", set(), id="not-has-none"),
    ],
)
def test_first_names_the_deciding_part(condition: dict[str, Any], value: bool | None, evidence: str,
                                       missing: set[str]) -> None:
    """`first` decides by its first known part and says which (and what it fell back from): shown with the finding."""
    out = parse(condition, _WHEN).evaluate(Context(build_facts(**_TORCH_ONLY)))
    assert (out.value, out.evidence, set(out.missing)) == (value, evidence, missing)


@pytest.mark.parametrize(
    ("where", "condition", "message"),
    [
        pytest.param(Where("rules/x.toml", "EC9001", "when"), {"nope": 1},
                     "rules/x.toml: rule EC9001: key 'when.nope': unknown predicate", id="nested-key"),
        pytest.param(Where("rules/x.toml", "EC9001", ""), {"all": []},
                     "rules/x.toml: rule EC9001: key 'all': expected a non-empty list of conditions",
                     id="top-level-key-without-a-dot"),
        pytest.param(Where("rules/x.toml", None, "when"), {"any": [{"package": "torch"}, {"package": "to rch!"}]},
                     "rules/x.toml: key 'when.any.1.package': invalid requirement", id="no-rule-id"),
    ],
)
def test_a_bad_condition_names_the_file_rule_and_key(where: Where, condition: dict[str, Any], message: str) -> None:
    """A condition that cannot be used is one RuleError naming the file, the rule and the key path to it."""
    with pytest.raises(RuleError) as caught:
        parse(condition, where)
    assert str(caught.value).startswith(message)


def test_leaves_are_every_predicate_in_order() -> None:
    """`leaves()` reaches through every combinator (what the pack's checks and `unseen` read the predicates from)."""
    condition = parse({"all": [{"package": "a"}, {"any": [{"package": "b"}, {"not": {"package": "c"}}]},
                               {"first": [{"module": "d"}, {"package": "e"}]}]}, _WHEN)
    assert [leaf.describe() for leaf in condition.leaves()] == [
        "`a` is installed", "`b` is installed", "`c` is installed", "module `d` is importable", "`e` is installed"]


@pytest.mark.parametrize("condition", [
    pytest.param({"all": [{"package": "a"}, {"package": "b"}]}, id="all"),
    pytest.param({"any": [{"package": "a"}, {"package": "b"}]}, id="any"),
    pytest.param({"not": {"package": "a"}}, id="not"),
    pytest.param({"first": [{"module": "a"}, {"package": "b"}]}, id="first"),
])
def test_combinators_are_frozen_and_hashable(condition: dict[str, Any]) -> None:
    """A condition is part of a rule, which is hashed (the pytest plugin keeps a selection in a dict) and shared:
    equal conditions hash alike, and none can be changed."""
    made = parse(condition, _WHEN)
    assert hash(made) == hash(parse(condition, _WHEN))
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.parts = ()  # any attribute: refused

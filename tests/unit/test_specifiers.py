"""Several requirements of one distribution read as one (envcheck/support/specifiers.py): intersected, tightened, and
refused where no version can meet them all."""

from __future__ import annotations

import itertools

import pytest
from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import Version

from envcheck.support.specifiers import _interval, merge, names, satisfiable


@pytest.mark.parametrize(
    ("args", "requirements", "unsatisfiable"),
    [
        pytest.param(("numpy>=2.0", "numpy<2.6,>=2.0", "numpy>=2.1", "numpy>=2.0.0", "numpy>=2"),
                     ("numpy<2.6,>=2.1",), (), id="ranges-tightened"),
        pytest.param(("torch==2.6.0", "numpy<2", "torch>=2.4"), ("torch==2.6.0", "numpy<2"), (), id="pin-meets-range"),
        pytest.param(("torchvision==0.28.0", "torchvision==0.28.0+cpu"), ("torchvision==0.28.0+cpu",), (),
                     id="the-tagged-pin-wins"),
        pytest.param(("numpy<2", "six", "numpy>=2.1"), ("six",), (("numpy", ("numpy<2", "numpy>=2.1")),),
                     id="none-fits"),
        pytest.param(("a[x]>1", "a[y]<3"), ("a[x,y]<3,>1",), (), id="extras-joined"),
        pytest.param(("Pillow (>=5.3.0)", "safetensors"), ("Pillow (>=5.3.0)", "safetensors"), (),
                     id="a-lone-requirement-as-written"),
        pytest.param(('numpy<2; python_version < "3.9"', "numpy>=2"), ('numpy<2; python_version < "3.9"', "numpy>=2"),
                     (), id="other-markers-stay-apart"),
        pytest.param(("./vendor/pkg", "x @ https://host/x.whl", "x>=1"), ("./vendor/pkg", "x @ https://host/x.whl",
                                                                          "x>=1"), (), id="not-requirements-kept"),
        pytest.param(('numpy<2; python_version < "3.9"', 'numpy>=1.20; python_version < "3.9"',
                      'numpy>=2; python_version >= "3.9"'),
                     ('numpy<2,>=1.20; python_version < "3.9"', 'numpy>=2; python_version >= "3.9"'), (),
                     id="the-same-marker-merged-and-kept"),
        pytest.param(("a>=1", "a>=2"), ("a>=2",), (), id="lower-bounds-only"),
        pytest.param(("a<3", "a<=2"), ("a<=2",), (), id="upper-bounds-only"),
        pytest.param(("numpy>=2.0", "numpy!=2.1.0"), ("numpy!=2.1.0,>=2.0",), (), id="an-exclusion-is-kept"),
        pytest.param(("a~=2.1", "a<2.5", "a!=2.3"), ("a!=2.3,<2.5,~=2.1",), (), id="compatible-and-exclusion-kept"),
        pytest.param(("a==2.1.*", "a>=2.0"), ("a==2.1.*",), (), id="a-prefix-implies-its-floor"),
        pytest.param(("a>2.1", "a>=2.1"), ("a>2.1",), (), id="the-open-floor-wins"),
        pytest.param(("a<=3", "a<3"), ("a<3",), (), id="the-open-ceiling-wins"),
        pytest.param(("numpy>=2", "numpy>=2"), ("numpy>=2",), (), id="the-same-text-once"),
        pytest.param(("torch==2.7.0rc1", "torch>=2.6"), ("torch==2.7.0rc1",), (), id="a-pre-release-pin-meets-a-range"),
        pytest.param(("a~=2.2.post3", "a>=2.5"), ("a>=2.5,~=2.2.post3",), (), id="a-post-release-floor-merged"),
        pytest.param(("NumPy<2", "numpy>=2.1"), (), (("NumPy", ("NumPy<2", "numpy>=2.1")),),
                     id="named-as-first-written"),
        pytest.param(("a[x]", "b", "./p", "A[y]>=1", "a<3"), ("a[x,y]<3,>=1", "b", "./p"), (),
                     id="first-seen-order"),
    ],
)
def test_merge(args: tuple[str, ...], requirements: tuple[str, ...],
               unsatisfiable: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
    """Each distribution once, with what every requirement of it accepts; none where nothing can."""
    merged = merge(args)
    assert (merged.requirements, merged.unsatisfiable) == (requirements, unsatisfiable)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(">=2,<2", False, id="empty-range"),
        pytest.param(">=2,<=2", True, id="one-version"),
        pytest.param(">=2.1rc1,<=2.1rc1", True, id="one-pre-release"),
        pytest.param(">2,<=2", False, id="open-point"),
        pytest.param("==1.*,>=2", False, id="prefix-below-floor"),
        pytest.param("~=1.4,>=2", False, id="compatible-below-floor"),
        pytest.param("~=2.1.3,<2.1.5", True, id="compatible-within"),
        pytest.param("!=2.0,>=2.0,<=2.0", False, id="the-one-version-excluded"),
        pytest.param("==2.6.0,<2.6", False, id="pin-outside"),
        pytest.param("<1,>0.5", True, id="open-range"),
        pytest.param(">=2", True, id="floor-only"),
        pytest.param("<2", True, id="ceiling-only"),
        pytest.param("!=2.1,>=2.2", True, id="an-exclusion-is-not-a-ceiling"),
        pytest.param("!=2.1.*,>=2.2", True, id="an-excluded-prefix-is-not-a-range"),
        pytest.param("~=2.1,>=2.2", True, id="compatible-release-reaches-the-next-major"),
        pytest.param("~=2.1.3,>=2.2", False, id="compatible-release-stops-before-the-next-minor"),
        pytest.param("==2.1.*,<2.2", True, id="prefix-below-its-ceiling"),
        pytest.param("==2.1.*,>=2.2", False, id="prefix-ceiling-excluded"),
        pytest.param("==2.1.*,>=2.1.9", True, id="prefix-holds-every-patch"),
        pytest.param("==2.1.*,<=2.1", True, id="prefix-floor-included"),
        pytest.param("==2.1.*,<2.1", False, id="prefix-floor-above-ceiling"),
        pytest.param("===2.1.5,>=2.2", False, id="arbitrary-equality-pin-outside"),
        pytest.param("==2.6.0,!=2.6.0", False, id="pin-excluded"),
        pytest.param("~=2.2.post3,>=2.5", True, id="compatible-post-release-suffix-not-in-the-prefix"),
        pytest.param("~=2.2.dev1,>=2.5", True, id="compatible-dev-release-suffix-not-in-the-prefix"),
        pytest.param("~=1.4.5a4,>=1.5", False, id="compatible-pre-release-keeps-its-minor"),
        pytest.param("==1!2.1.*,>=1!2.1", True, id="prefix-in-its-epoch"),
        pytest.param("==1!2.1.*,>=1!2.2", False, id="prefix-ceiling-in-its-epoch"),
        pytest.param("~=1!2.2,<1!3", True, id="compatible-in-its-epoch"),
        pytest.param("~=1!2.2,>=1!3", False, id="compatible-ceiling-in-its-epoch"),
    ],
)
def test_satisfiable(spec: str, expected: bool) -> None:
    """Whether some version meets every clause, from the clauses alone."""
    assert satisfiable(SpecifierSet(spec)) is expected


@pytest.mark.parametrize(
    ("clauses", "low", "high"),
    [
        pytest.param((">2.1", ">=2.1", "<3"), ("2.1", False), ("3", False), id="open-floor-beats-closed"),
        pytest.param(("<=3", "<3", ">1"), ("1", False), ("3", False), id="open-ceiling-beats-closed"),
        pytest.param((">=2.1", ">1.0", "<=3", "<4"), ("2.1", True), ("3", True), id="highest-floor-lowest-ceiling"),
        pytest.param(("==2.1.*", ">=2.0", "<2.5"), ("2.1", True), ("2.2", False), id="prefix-as-a-range"),
        pytest.param(("~=2.1.3", "!=2.1.4", ">2.0"), ("2.1.3", True), ("2.2", False), id="compatible-as-a-range"),
    ],
)
def test_interval_does_not_depend_on_clause_order(clauses: tuple[str, ...], low: tuple[str, bool],
                                                  high: tuple[str, bool]) -> None:
    """A SpecifierSet iterates its clauses in hash order (a frozenset: it changes between runs), so the interval
    must come out the same from every order: the tightest bound, and of two at one version the open one."""
    expected = ((Version(low[0]), low[1]), (Version(high[0]), high[1]))
    for order in itertools.permutations(clauses):
        assert _interval([Specifier(c) for c in order]) == expected, order  # a list: iterated in the order given


def test_names_groups_by_canonical_name() -> None:
    """The requirements among the arguments by canonical distribution name, in order; anything else left out."""
    found = names(["a>=1", "./x", "A_b<2", "a[x]"])
    assert {name: [str(r) for r in reqs] for name, reqs in found.items()} == {"a": ["a>=1", "a[x]"], "a-b": ["A_b<2"]}

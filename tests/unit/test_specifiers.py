"""Several requirements of one distribution read as one (envcheck/support/specifiers.py): intersected, tightened, and
refused where no version can meet them all."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from envcheck.support.specifiers import merge, satisfiable


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
        pytest.param(">2,<=2", False, id="open-point"),
        pytest.param("==1.*,>=2", False, id="prefix-below-floor"),
        pytest.param("~=1.4,>=2", False, id="compatible-below-floor"),
        pytest.param("~=2.1.3,<2.1.5", True, id="compatible-within"),
        pytest.param("!=2.0,>=2.0,<=2.0", False, id="the-one-version-excluded"),
        pytest.param("==2.6.0,<2.6", False, id="pin-outside"),
        pytest.param("<1,>0.5", True, id="open-range"),
    ],
)
def test_satisfiable(spec: str, expected: bool) -> None:
    """Whether some version meets every clause, from the clauses alone."""
    assert satisfiable(SpecifierSet(spec)) is expected

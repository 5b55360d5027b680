"""Layered environments (envcheck/derived/layers.py): which copies in two layers matter, what a fix may remove, and
which way a NumPy ABI failure points; checked on recorded snapshots of a GPU host with a venv layered over it."""

from __future__ import annotations

from typing import Any

import pytest
from _fakes import FIXTURES, build_facts, dist_dict, torch_dict

from envcheck.derived import layers
from envcheck.derived.derive import Derived
from envcheck.derived.tables import load as load_tables
from envcheck.facts.snapshot import Facts
from envcheck.remedy import fix
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Report, Status
from envcheck.rules.rule_pack import builtin_rules_dir
from envcheck.sources.live import collect

OWN = "/opt/venv/lib/python3.11/site-packages"  # _fakes.py's SITE: prefix /opt/venv
BASE = "/opt/base/lib/python3.11/site-packages"
USER = "/home/me/.local/lib/python3.11/site-packages"
TABLES = load_tables([builtin_rules_dir()])
PACK = rule_pack.load()


def _duplicates(*dists: dict[str, Any], torch: dict[str, Any] | None = None, **python: Any) -> list[dict[str, str]]:
    facts = build_facts(dists=dists, python=python or None, torch=torch)
    found: list[dict[str, str]] = Derived(facts, TABLES).get("distributions.duplicates")
    return found


@pytest.mark.parametrize(
    ("location", "python", "installer", "own"),
    [
        pytest.param(OWN, {}, "pip", True, id="venv-site-packages"),
        pytest.param(BASE, {}, "pip", False, id="base-under-a-venv"),
        pytest.param(USER, {}, "pip", False, id="user-site-under-a-venv"),
        pytest.param(USER, {"virtualenv": False, "prefix": "/usr", "user_site": USER}, "pip", True,
                     id="user-site-of-a-system-python"),
        pytest.param("/usr/local/lib/python3.10/dist-packages", {"virtualenv": False, "prefix": "/usr"}, "pip", True,
                     id="pip-layer-of-a-system-python"),
        pytest.param("/usr/lib/python3/dist-packages", {"virtualenv": False, "prefix": "/usr"}, None, False,
                     id="distribution-packages"),
        pytest.param("/usr/local/lib/python3.12/dist-packages",
                     {"virtualenv": False, "prefix": "/usr", "externally_managed": True}, "pip", False,
                     id="externally-managed"),
        pytest.param("/opt/conda/envs/x/lib/python3.11/site-packages",
                     {"virtualenv": False, "conda": True, "prefix": "/opt/conda/envs/x"}, "conda", True,
                     id="conda-environment"),
    ],
)
def test_own_layer(location: str, python: dict[str, Any], installer: str | None, own: bool) -> None:
    """The environment's own layer is where its installer writes and may remove: never a base underneath."""
    facts = build_facts(dists=[dist_dict("six", "1.17.0", location=location, installer=installer)],
                        python=python or None)
    assert layers.own_layer(facts, facts.distributions[0]) is own


def test_installer_and_build_tools_in_two_layers_are_normal() -> None:
    """pip, setuptools and wheel in a venv and in its base, of any versions, are not reported when nothing breaks."""
    found = _duplicates(dist_dict("pip", "24.0"), dist_dict("setuptools", "65.5.0"), dist_dict("wheel", "0.45.0"),
                        dist_dict("pip", "23.2.1", location=BASE), dist_dict("setuptools", "80.9.0", location=BASE),
                        dist_dict("wheel", "0.45.0", location=BASE))
    assert found == []


def test_a_broken_installer_is_reported_but_never_removed() -> None:
    """A layered pip that fails a requirement only the base's pip meets is reported, with no command to remove it."""
    [item] = _duplicates(dist_dict("pip", "9.0.1"), dist_dict("pip-tools", "7.4.1", "pip>=22.2", location=BASE),
                         dist_dict("pip", "24.0", location=BASE))
    assert (item["name"], item["remove"], item["remove_again"], item["reinstall"]) == ("pip", "", "", "")
    assert item["breaks"].endswith("pip-tools 7.4.1 requires pip>=22.2")


def test_a_companion_that_breaks_its_own_pin_is_removed_from_the_own_layer_only() -> None:
    """torchvision 0.20.0 over the base's 0.28.0: its own torch pin fails where the base's is met; the fix removes
    the layered copy once and reinstalls nothing."""
    found = _duplicates(dist_dict("torchvision", "0.20.0", "torch==2.5.0"),
                        dist_dict("torch", "2.13.0+cpu", location=BASE),
                        dist_dict("torchvision", "0.28.0+cpu", "torch==2.13.0", location=BASE))
    [item] = found
    assert (item["remove"], item["remove_again"], item["reinstall"]) == ("torchvision", "", "")
    assert "it requires torch==2.5.0, but torch 2.13.0+cpu is installed" in item["breaks"]


def test_a_breaking_copy_outside_the_own_layer_gets_no_command() -> None:
    """When the imported copy is not in the checked environment's layer (PYTHONPATH first), nothing removes it."""
    [item] = _duplicates(dist_dict("numpy", "1.26.4", location="/srv/shared/lib"),
                         dist_dict("numpy", "2.1.0"), dist_dict("contourpy", "1.3.0", "numpy>=2.0"))
    assert (item["remove"], item["breaks"] != "") == ("", True)


def test_two_copies_in_one_folder_are_replaced_and_a_companion_is_left_to_the_planner() -> None:
    """In one folder both copies go; torchvision comes back by name (the planner pins the release made for torch),
    anything else as the imported version, and pip is never uninstalled."""
    found = _duplicates(dist_dict("torch", "2.13.0+cpu"),
                        dist_dict("torchvision", "0.20.0", "torch==2.5.0"), dist_dict("torchvision", "0.19.0"),
                        dist_dict("six", "1.17.0"), dist_dict("six", "1.16.0"),
                        dist_dict("pip", "24.0"), dist_dict("pip", "23.2.1"), torch=torch_dict("2.13.0+cpu", None))
    got = {i["name"]: (i["remove"], i["remove_again"], i["reinstall"]) for i in found}
    assert got == {"pip": ("", "", ""), "six": ("six", "six", "six==1.17.0"),
                   "torchvision": ("torchvision", "torchvision", "torchvision")}


@pytest.mark.parametrize(
    ("dists", "expected"),
    [
        pytest.param([dist_dict("numpy", "1.26.4"), dist_dict("numpy", "2.5.2", location=BASE),
                      dist_dict("cupy-cuda13x", "14.2.0", "numpy<2.6,>=2.0", location=BASE)],
                     ("NumPy 2", "numpy<2.6,>=2.0", "numpy", ""), id="own-requirement-met-underneath"),
        pytest.param([dist_dict("numpy", "1.26.4"), dist_dict("numpy", "2.5.2", location=BASE),
                      dist_dict("cupy-cuda13x", "14.2.0", "numpy>=1.21.2", location=BASE)],
                     ("NumPy 2", "numpy>=2", "numpy", ""), id="numpy-2-underneath"),
        pytest.param([dist_dict("numpy", "1.26.4"), dist_dict("cupy-cuda13x", "14.2.0", "numpy<2.6,>=2.0")],
                     ("NumPy 2", "numpy<2.6,>=2.0", "", "numpy<2.6,>=2.0"), id="not-layered"),
        pytest.param([dist_dict("numpy", "1.21.0"), dist_dict("cupy-cuda13x", "14.2.0")],
                     ("a newer NumPy than 1.21.0", "numpy>1.21.0", "", "numpy>1.21.0"), id="no-evidence"),
        pytest.param([dist_dict("numpy", "1.26.4"), dist_dict("numpy", "1.25.0", location=BASE),
                      dist_dict("cupy-cuda13x", "14.2.0", "numpy<2.6,>=2.0")],
                     ("NumPy 2", "numpy<2.6,>=2.0", "", "numpy<2.6,>=2.0"), id="old-numpy-underneath-too"),
    ],
)
def test_an_extension_built_for_a_newer_numpy_moves_numpy(dists: list[dict[str, Any]],
                                                          expected: tuple[str, str, str, str]) -> None:
    """Under NumPy 1.x a NumPy ABI failure means the extension is newer: NumPy moves, by removing the layered
    copy where the one underneath meets the need, else by installing the need."""
    probes = {"extension-imports": {"status": "ok", "cases": {"cupy-cuda13x": {
        "status": "error", "error_class": "ImportError", "version": "14.2.0", "module": "cupy",
        "message": "numpy.core.multiarray failed to import"}}}}
    derived = Derived(build_facts(dists=dists, probes=probes), TABLES)
    [item] = derived.get("extensions.import-numpy-too-old")
    assert (item["built_for"], item["needs"], item["remove"], item["install"]) == expected
    assert derived.get("extensions.import-numpy-abi") == []


# --- the recorded GPU host, with a venv layered over it by a .pth line ----------------------------------------


def _recorded(name: str) -> tuple[Facts, Report]:
    facts = collect.load(str(FIXTURES / "layered" / name))
    return facts, evaluate(PACK, facts)


def _commands(report: Report) -> list[tuple[str, ...]]:
    return [argv for f in report.findings if f.status.is_finding for argv in f.commands]


def _removes_pip(argv: tuple[str, ...]) -> bool:
    return "uninstall" in argv and "pip" in argv[argv.index("uninstall") + 1:]


def test_recorded_layered_torchvision() -> None:
    """torchvision 0.20.0 layered over torch 2.11.0+cu130 and torchvision 0.26.0: no finding for pip, no command
    that uninstalls pip or installs 0.20.0 again; the layered copy is removed and EC0702's release installed."""
    facts, report = _recorded("overlay-torchvision.json")
    twice = [f for f in report.findings if f.rule_id == "EC0103" and f.status.is_finding]
    assert [f.item["name"] for f in twice if f.item] == ["torchvision"]
    commands = _commands(report)
    assert not any(_removes_pip(a) for a in commands)
    assert not any(r.startswith("torchvision==0.20.0") for a in commands for r in a)
    plan = fix.plan(report.at_or_above("warning"), report.python, facts=facts)
    assert [s.argv[3:] for s in plan.steps][:2] == [
        ("uninstall", "-y", "torchvision"),
        ("install", "--no-deps", "torchvision==0.26.0+cu130", "--index-url", "https://download.pytorch.org/whl/cu130")]
    assert plan.conflicts == ()


def test_recorded_layered_numpy() -> None:
    """numpy 1.26.4 layered over a NumPy 2 stack: cupy and h5py were built for NumPy 2 (EC1120, not EC1103), the fix
    removes the layered numpy, and EC0101's command names numpy once, with the range every requirer accepts."""
    facts, report = _recorded("overlay-numpy.json")
    fired = {f.rule_id for f in report.findings if f.status.is_finding}
    assert {"EC0101", "EC0103", "EC1120"} <= fired
    assert "EC1103" not in fired
    numpy2 = [f for f in report.findings if f.rule_id == "EC1120" and f.status.is_finding]
    assert sorted(f.item["name"] for f in numpy2 if f.item) == ["cupy-cuda13x", "h5py"]
    assert all("compiled for NumPy 2 and does not import with NumPy 1.26.4" in f.summary for f in numpy2)
    plan = fix.plan(report.at_or_above("warning"), report.python, facts=facts)
    numpy_steps = [s.argv[3:] for s in plan.steps if any(a.startswith("numpy") for a in s.argv[4:])]
    assert numpy_steps == [("uninstall", "-y", "numpy"), ("install", "numpy<2.6,>=2.1")]
    assert not any(_removes_pip(s.argv) for s in plan.steps)


def test_recorded_base_is_quiet() -> None:
    """The base environment those overlays sit on, with nothing layered, has no EC0103 or EC1120 finding."""
    facts, _ = _recorded("overlay-numpy.json")
    data = facts.to_dict()
    base = [d for d in data["distributions"] if not d["location"].startswith("/tmp/vn/")]
    data["distributions"] = base
    data["probes"]["extension-imports"]["cases"] = {
        k: v for k, v in data["probes"]["extension-imports"]["cases"].items() if k not in ("cupy-cuda13x", "h5py")}
    report = evaluate(PACK, Facts.from_dict(data))
    assert {f.rule_id for f in report.findings if f.status.is_finding} & {"EC0101", "EC0103", "EC1120"} == set()
    assert next(f for f in report.findings if f.rule_id == "EC0103").status is Status.PASS

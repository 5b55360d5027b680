"""The torch-family planner (envcheck/remedy/commands/planner.py) with the shipped companion tables, and the findings it
shapes."""

from __future__ import annotations

from typing import Any

import pytest
from _fakes import build_facts, dist_dict, torch_dict

from envcheck.derived import companions
from envcheck.derived import tables as tables_mod
from envcheck.facts.snapshot import Facts
from envcheck.remedy.commands import planner
from envcheck.rules.engine import evaluate
from envcheck.rules.rule_pack import builtin_rules_dir
from envcheck.rules.rule_pack import load as load_pack

TABLES = tables_mod.load([builtin_rules_dir()])
COMPANIONS = companions.merged((TABLES[tables_mod.TORCH_COMPANIONS], TABLES[tables_mod.XFORMERS]),
                              TABLES[tables_mod.TORCH_BUILDS])
CPU = "https://download.pytorch.org/whl/cpu"
CU128 = "https://download.pytorch.org/whl/cu128"


@pytest.fixture(autouse=True)
def _real_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(companions.INDEX_BASE_VARIABLE, raising=False)


def _facts(torch: str | None, cuda: str | None, *dists: tuple[str, ...]) -> Facts:
    entries = [dist_dict(name, version, *requires) for name, version, *requires in dists]
    if torch is not None:
        entries.append(dist_dict("torch", torch))
    return build_facts(dists=entries, torch=None if torch is None else torch_dict(torch, cuda=cuda))


def _plan(facts: Facts, *args: str, item: dict[str, str] | None = None) -> list[tuple[str, ...]]:
    py = facts.python.executable
    return [a[3:] for a in planner.plan_command((py, "-m", "pip", *args), facts, COMPANIONS, item)]


def test_companion_replaced_with_the_release_for_torch_from_its_variant_index() -> None:
    """A torchvision command keeps torch 2.13.0+cpu: the +cpu build of 0.28.0, from the CPU index, --no-deps."""
    facts = _facts("2.13.0+cpu", None, ("torchvision", "0.20.0", "torch==2.5.0"))
    assert _plan(facts, "install", "--no-deps", "torchvision==0.28.0", "--index-url", CPU) == [
        ("install", "--no-deps", "torchvision==0.28.0+cpu", "--index-url", CPU)]


def test_companion_pin_on_torch_never_moves_torch() -> None:
    """EC0101's `pip install torch==2.5.0` for torchvision's pin becomes the torchvision release made for torch."""
    facts = _facts("2.13.0+cu128", "12.8", ("torchvision", "0.20.0", "torch==2.5.0"))
    item = {"package": "torchvision", "dependency": "torch", "requirement": "torch==2.5.0"}
    assert _plan(facts, "install", "torch==2.5.0", item=item) == [
        ("install", "--no-deps", "torchvision==0.28.0+cu128", "--index-url", CU128)]


def test_unknown_companion_release_lets_the_resolver_pick_it_beside_the_pinned_torch() -> None:
    """Without a table row for this torch, torch is pinned as installed and the companion is left to pip."""
    facts = _facts("1.12.1+cpu", None, ("torchvision", "0.20.0", "torch==2.5.0"))
    item = {"package": "torchvision", "dependency": "torch", "requirement": "torch==2.5.0"}
    assert _plan(facts, "install", "torch==2.5.0", item=item) == [
        ("install", "torch==1.12.1+cpu", "torchvision", "--index-url", CPU)]


def test_same_version_other_build_needs_force_reinstall_only_without_a_tag() -> None:
    """A tagged pin differs from the installed version (no --force-reinstall); PyPI's untagged pin needs it."""
    tagged = _facts("2.7.0+cpu", None, ("torchvision", "0.22.0", "torch==2.7.0"))
    assert _plan(tagged, "install", "--force-reinstall", "--no-deps", "torchvision==0.22.0") == [
        ("install", "--no-deps", "torchvision==0.22.0+cpu", "--index-url", CPU)]
    pypi = _facts("2.7.0", "12.6", ("torchvision", "0.22.0+cpu", "torch==2.7.0"))
    assert _plan(pypi, "install", "--force-reinstall", "--no-deps", "torchvision==0.22.0") == [
        ("install", "--no-deps", "--force-reinstall", "torchvision==0.22.0")]


def test_torch_is_the_problem_moves_within_its_variant_with_its_companions() -> None:
    """A library needs torch 2.9.1: torch keeps +cu128 and torchvision moves to 0.24.1+cu128, in one command."""
    facts = _facts("2.13.0+cu128", "12.8", ("torchvision", "0.28.0+cu128", "torch==2.13.0"),
                   ("mylib", "1.0", "torch==2.9.1"))
    item = {"package": "mylib", "dependency": "torch"}
    assert _plan(facts, "install", "torch==2.9.1", item=item) == [
        ("install", "torch==2.9.1+cu128", "torchvision==0.24.1+cu128", "--index-url", CU128)]


def test_torch_range_is_left_to_the_resolver_on_the_variant_index() -> None:
    """A torch range keeps its specifier, drops its marker, and brings the companions unpinned, same index."""
    facts = _facts("2.13.0+cpu", None, ("torchaudio", "2.11.0"), ("mylib", "1.0", "torch<2.10"))
    assert _plan(facts, "install", 'torch<2.10; python_version >= "3.8"', item={"package": "mylib"}) == [
        ("install", "torch<2.10", "torchaudio", "--index-url", CPU)]


def test_reinstall_of_the_same_torch_keeps_its_flags_and_adds_its_index() -> None:
    """EC0103's `--no-deps torch==2.13.0+cpu` after the uninstalls: same torch, from the CPU index, nothing else."""
    facts = _facts("2.13.0+cpu", None, ("torchvision", "0.28.0+cpu", "torch==2.13.0"))
    assert _plan(facts, "install", "--no-deps", "torch==2.13.0+cpu") == [
        ("install", "--no-deps", "torch==2.13.0+cpu", "--index-url", CPU)]


def test_pypi_torch_gets_no_index_option() -> None:
    """A torch from PyPI keeps the configured index: the rule's PyPI URL is dropped, nothing is tagged."""
    facts = _facts("2.13.0", "13.0", ("torchvision", "0.20.0", "torch==2.5.0"))
    assert _plan(facts, "install", "--no-deps", "torchvision==0.28.0", "--index-url", "https://pypi.org/simple") == [
        ("install", "--no-deps", "torchvision==0.28.0")]


def test_other_requirements_only_lose_markers_that_hold() -> None:
    """A requirement whose marker held is printed bare; one that does not hold here keeps it for pip."""
    facts = _facts(None, None)
    assert _plan(facts, "install", 'numpy>=1.17; python_version >= "3.8"', 'pywin32; sys_platform == "win32"') == [
        ("install", "numpy>=1.17", 'pywin32; sys_platform == "win32"')]


def test_uninstalls_and_other_commands_pass_unchanged() -> None:
    """Only installs are planned: an uninstall of torchvision and a non-pip command stay as written."""
    facts = _facts("2.13.0+cpu", None, ("torchvision", "0.28.0+cpu"))
    py = facts.python.executable
    argvs = [(py, "-m", "pip", "uninstall", "-y", "torchvision"), ("conda", "list")]
    assert planner.plan_commands(argvs, facts, COMPANIONS) == tuple(argvs)


def test_index_base_is_overridable(monkeypatch: pytest.MonkeyPatch) -> None:
    """ENVCHECK_TORCH_INDEX_BASE replaces https://download.pytorch.org/whl/ in every variant index."""
    monkeypatch.setenv(companions.INDEX_BASE_VARIABLE, "http://mirror.example/torch/")
    facts = _facts("2.13.0+cpu", None, ("torchvision", "0.20.0", "torch==2.5.0"))
    assert _plan(facts, "install", "torchvision==0.28.0")[0][-1] == "http://mirror.example/torch/cpu"


# --- the findings --------------------------------------------------------------------------------------------


def _findings(facts: Facts) -> dict[str, list[tuple[str, ...]]]:
    report = evaluate(load_pack(), facts)
    out: dict[str, list[tuple[str, ...]]] = {}
    for f in report.findings:
        if f.status.is_finding:
            out.setdefault(f.rule_id, []).extend(c[3:] for c in f.commands)
    return out


def test_old_companion_is_one_error_whose_command_keeps_torch() -> None:
    """torchvision 0.20.0 beside torch 2.13.0+cpu: EC0702 alone, no command anywhere installs another torch."""
    facts = _facts("2.13.0+cpu", None, ("torchvision", "0.20.0", "torch==2.5.0"))
    found = _findings(facts)
    assert "EC0101" not in found
    assert found["EC0702"] == [("install", "--no-deps", "torchvision==0.28.0+cpu", "--index-url", CPU)]
    assert not any(arg.startswith("torch==") for cmds in found.values() for c in cmds for arg in c)


def test_cuda_companion_beside_cpu_torch_gets_the_cpu_build() -> None:
    """EC0703: PyPI's CUDA torchvision 0.22.0 with torch 2.7.0+cpu is replaced by 0.22.0+cpu, torch kept."""
    facts = _facts("2.7.0+cpu", None, ("torchvision", "0.22.0", "torch==2.7.0"))
    assert _findings(facts)["EC0703"] == [("install", "--no-deps", "torchvision==0.22.0+cpu", "--index-url", CPU)]


def test_missing_requirement_with_a_marker_is_printed_without_it() -> None:
    """EC0102 for `numpy>=1.17; python_version >= "3.8"` prints `numpy>=1.17`."""
    facts = _facts(None, None, ("mylib", "1.0", 'numpy>=1.17; python_version >= "3.8"'))
    assert _findings(facts)["EC0102"] == [("install", "numpy>=1.17")]


def test_library_ceiling_on_torch_keeps_the_variant() -> None:
    """EC0101 for a library's `torch<2.10` keeps +cpu: the CPU index, torchvision moving with torch."""
    facts: Any = _facts("2.13.0+cpu", None, ("torchvision", "0.28.0+cpu", "torch==2.13.0"),
                        ("mylib", "1.0", "torch<2.10"))
    assert _findings(facts)["EC0101"] == [("install", "torch<2.10", "torchvision", "--index-url", CPU)]


def test_torch_and_companion_named_together_move_in_one_command() -> None:
    """`torch==2.6.0 torchaudio==2.6.0` (EC0304's fix) is one command on torch's index, every companion pinned."""
    facts = _facts("2.5.1+cu124", "12.4", ("torchaudio", "2.5.1+cu124", "torch==2.5.1"),
                   ("torchvision", "0.20.1+cu124", "torch==2.5.1"))
    cu124 = "https://download.pytorch.org/whl/cu124"
    assert _plan(facts, "install", "torch==2.6.0", "torchaudio==2.6.0") == [
        ("install", "torch==2.6.0+cu124", "torchaudio==2.6.0+cu124", "torchvision==0.21.0+cu124", "--index-url",
         cu124)]


def test_a_variant_change_the_finding_asks_for_is_kept() -> None:
    """A command naming another PyTorch index (a CUDA build for a GPU) installs that variant, companions too."""
    facts = _facts("2.13.0+cpu", None, ("torchvision", "0.28.0+cpu", "torch==2.13.0"))
    assert _plan(facts, "install", "torch==2.13.0", "--index-url", CU128) == [
        ("install", "torch==2.13.0+cu128", "torchvision==0.28.0+cu128", "--index-url", CU128)]

"""Derived facts about torch's companions (torchvision, torchaudio, torchcodec, xformers) and the sdpa probe's
flash backend: envcheck/derived/companions.py and envcheck/derived/attention.py, with the shipped data tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _fakes import build_facts, dist_dict, torch_dict

from envcheck.derived import attention, companions
from envcheck.derived import tables as tables_mod
from envcheck.derived.derive import DERIVATIONS, Derived
from envcheck.errors import RuleError
from envcheck.rules import rule_pack
from envcheck.rules.rule_pack import builtin_rules_dir

TABLES = tables_mod.load([builtin_rules_dir()])

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _facts(torch: str | None, cuda: str | None = None, *dists: tuple[str, str], hip: str | None = None,
           platform: str = "linux", machine: str = "x86_64", installer: str = "pip", **torch_changes: Any) -> Any:
    """Facts with torch `torch` (its version.py saying `cuda` / `hip`) and the distributions `dists`."""
    entries = [dist_dict(name, version, installer=installer) for name, version in dists]
    if torch is not None:
        entries.append(dist_dict("torch", torch))
    return build_facts(dists=entries, python={"platform": platform, "machine": machine},
                       torch=None if torch is None else torch_dict(torch, cuda=cuda, hip=hip, **torch_changes))


def _derived(name: str, facts: Any) -> Any:
    return Derived(facts, TABLES).get(name)


def companion_tables() -> dict[str, companions.Companion]:
    """The shipped companion tables, merged by companion name as the derivations see them."""
    return companions.merged((TABLES[tables_mod.TORCH_COMPANIONS], TABLES[tables_mod.XFORMERS]),
                             TABLES[tables_mod.TORCH_BUILDS])


# --- the shipped tables ----------------------------------------------------------------------------------------


def test_shipped_tables_load() -> None:
    """The shipped pack's two companion tables load, from rules/data/, naming the four companions."""
    assert set(companion_tables()) == {"torchvision", "torchaudio", "torchcodec", "xformers"}
    for table in (tables_mod.TORCH_COMPANIONS, tables_mod.XFORMERS):
        assert TABLES.files[table.stem] == str(builtin_rules_dir() / "data" / f"{table.stem}.toml")


def test_torchvision_rows_follow_the_release_scheme() -> None:
    """torchvision 0.(N+15) is built for torch 2.N: a typo in the table breaks this."""
    for release in companion_tables()["torchvision"].releases:
        exact = release.exact_torch()
        if exact is None:
            continue
        assert int(release.key.split(".")[1]) == exact.minor + 15, release.key


def test_torchaudio_rows_follow_the_release_scheme() -> None:
    """torchaudio X.Y is built for torch X.Y (the 2.0 series one patch ahead)."""
    for release in companion_tables()["torchaudio"].releases:
        exact = release.exact_torch()
        if exact is not None:
            assert release.key.split(".")[:2] == [str(exact.major), str(exact.minor)], release.key


def test_cuda_match_per_release() -> None:
    """torchvision compared CUDA major.minor in 0.15 and majors from 0.16; torchaudio always major.minor."""
    tables = companion_tables()
    by_key = {r.key: r for r in tables["torchvision"].releases}
    assert by_key["0.15.2"].cuda_match == "minor"
    assert by_key["0.16.0"].cuda_match == "major"
    assert {r.cuda_match for r in tables["torchaudio"].releases} == {"minor"}
    assert {r.cuda_match for r in tables["xformers"].releases} == {None}


SYMPTOM = 'symptom = "it fails"\n'


@pytest.mark.parametrize(
    ("text", "key"),
    [
        pytest.param(f'[x]\n{SYMPTOM}cuda-match = "major"\n', "x", id="no-releases"),
        pytest.param('[x.releases]\n"1.0" = { torch = "==2.6.0" }\n', "x.symptom", id="no-symptom"),
        pytest.param(f'[x]\n{SYMPTOM}[x.releases]\n"1.0" = {{ torch = "2.6.0" }}\n', "x.releases.1.0",
                     id="bad-specifier"),
        pytest.param(f'[x]\n{SYMPTOM}[x.releases]\n"1.0" = {{ torch = "==2.6.0", arm = "cpu" }}\n',
                     "x.releases.1.0", id="unknown-row-key"),
        pytest.param(f'[x]\n{SYMPTOM}[x.releases]\n"1.0" = {{ torch = "==2.6.0", linux-x86_64 = "cuda12" }}\n',
                     "x.releases.1.0.linux-x86_64", id="bad-build"),
        pytest.param(f'[x]\n{SYMPTOM}windows = "gpu"\n[x.releases]\n"1.0" = {{ torch = "==2.6.0" }}\n',
                     "x.windows", id="bad-platform-default"),
        pytest.param(f'[x]\n{SYMPTOM}cuda-match = "patch"\n[x.releases]\n"1.0" = {{ torch = "==2.6.0" }}\n',
                     "x.cuda-match", id="bad-cuda-match"),
        pytest.param(f'[x]\n{SYMPTOM}[x.releases]\n"1.0" = {{ torch = "" }}\n', "x.releases.1.0.torch",
                     id="empty-torch"),
        pytest.param(f'[x]\n{SYMPTOM}other = 1\n[x.releases]\n"1.0" = {{ torch = "==2.6.0" }}\n', "x.other",
                     id="unknown-key"),
    ],
)
def test_malformed_table(tmp_path: Path, text: str, key: str) -> None:
    """A malformed table in a rule directory's data/ is one RuleError naming the file and the key when the pack
    loads, not a wrong answer (nor an error verdict) later."""
    path = tmp_path / "data" / "torch-companions.toml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RuleError) as info:
        rule_pack.load([tmp_path])
    assert info.value.key == key
    assert info.value.file == str(path)


# --- built for another torch -----------------------------------------------------------------------------------


def _with_pins(torch: str, cuda: str | None, *dists: tuple[str, str, str | None], **kw: Any) -> Any:
    """Like _facts, but each companion declares `Requires-Dist: torch<pin>` (None: no torch requirement)."""
    entries = [dist_dict(name, version, *([f"torch{pin}"] if pin else [])) for name, version, pin in dists]
    entries.append(dist_dict("torch", torch))
    return build_facts(dists=entries, python={"platform": kw.get("platform", "linux"), "machine": "x86_64"},
                       torch=torch_dict(torch, cuda=cuda))


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        pytest.param(_with_pins("2.9.0", "12.8", ("torchaudio", "2.11.0", None)),
                     [("torchaudio", "2.9.0", "2.11.0 or later", companions.PYPI_INDEX)], id="no-pin-floor"),
        pytest.param(_with_pins("2.9.0", "12.8", ("torchcodec", "0.11.0", None)),
                     [("torchcodec", "0.9.1", "2.11", companions.PYPI_INDEX)], id="torchcodec-series"),
        pytest.param(_with_pins("2.7.0+cpu", None, ("torchaudio", "2.6.0+cpu", None)),
                     [("torchaudio", "2.7.0", "2.6.0", CPU_INDEX)], id="no-pin-cpu-index"),
        pytest.param(_with_pins("2.9.1", "12.8", ("torchvision", "0.23.0", None)),
                     [("torchvision", "0.24.1", "2.8.0", companions.PYPI_INDEX)], id="exact-patch-preferred"),
        pytest.param(_with_pins("2.9.2", "12.8", ("torchvision", "0.23.0", None)),
                     [("torchvision", "0.24.1", "2.8.0", companions.PYPI_INDEX)], id="unknown-patch-same-minor"),
        pytest.param(_with_pins("2.5.1+rocm6.2", None, ("torchvision", "0.19.1+rocm6.1", None)),
                     [("torchvision", "0.20.1", "2.4.1", "https://download.pytorch.org/whl/rocm6.2")], id="rocm"),
        pytest.param(_with_pins("2.5.1", "12.4", ("xformers", "0.0.28", ">=2.4")),
                     [("xformers", "0.0.29.post1", "2.4.1", companions.PYPI_INDEX)], id="floor-met-table-knows"),
        pytest.param(_with_pins("2.16.0", "13.0", ("torchvision", "0.21.0", None)),
                     [("torchvision", "0.29.2", "2.6.0", companions.PYPI_INDEX)], id="newer-torch-floor-row"),
        pytest.param(_with_pins("2.9.0", "12.8", ("torchcodec", "0.11.0", None), ("torchaudio", "2.11.0", None)),
                     [("torchaudio", "2.9.0", "2.11.0 or later", companions.PYPI_INDEX),
                      ("torchcodec", "0.9.1", "2.11", companions.PYPI_INDEX)], id="sorted-by-name"),
    ],
)
def test_torch_mismatch(facts: Any, expected: list[tuple[str, str, str, str]]) -> None:
    items = _derived("companions.torch-mismatch", facts)
    assert [(i["name"], i["expected"], i["built_for"], i["index"]) for i in items] == expected
    assert all(i["install"] == f"{i['name']}=={i['expected']}" and i["requirement"] == "" for i in items)
    assert _derived("companions.pinned-to-other-torch", facts) == []


@pytest.mark.parametrize(
    "facts",
    [
        pytest.param(_with_pins("2.6.0", "12.4", ("torchvision", "0.21.0", "==2.6.0")), id="matching"),
        pytest.param(_with_pins("2.4.1", "12.1", ("xformers", "0.0.27.post2", None)),
                     id="patch-difference-is-fine"),
        pytest.param(_with_pins("2.13.0", "13.0", ("torchaudio", "2.11.0", None)), id="stable-abi-floor"),
        pytest.param(_with_pins("2.9.1", "12.8", ("torchcodec", "0.8.1", None)), id="series-any-patch"),
        pytest.param(_facts(None, None, ("torchvision", "0.21.0")), id="no-torch"),
        pytest.param(_facts("2.7.0", "12.6"), id="no-companion"),
        pytest.param(_facts("2.8.0.dev20250501+cu128", "12.8", ("torchvision", "0.21.0")), id="nightly-torch"),
        pytest.param(_facts("2.6.0a0+ecf3bae40a.nv25.01", "12.8", ("torchvision", "0.20.0a0")), id="ngc-build"),
        pytest.param(_facts("2.7.0+git1234", "12.6", ("torchvision", "0.21.0")), id="custom-torch-tag"),
        pytest.param(_facts("2.7.0", "12.6", ("torchvision", "0.21.0+git99")), id="companion-built-from-source"),
        pytest.param(_facts("2.7.0", "12.6", ("torchvision", "0.21.0"), installer="conda"), id="conda-companion"),
        pytest.param(_facts("2.7.0", "12.6", ("torchvision", "0.14.1")), id="companion-not-in-table"),
        pytest.param(_facts("2.3.1", "12.1", ("torchcodec", "0.9.1")), id="no-release-for-torch"),
    ],
)
def test_no_torch_mismatch(facts: Any) -> None:
    assert _derived("companions.torch-mismatch", facts) == []
    assert _derived("companions.pinned-to-other-torch", facts) == []


def test_declared_pin_conflict_goes_to_the_other_derivation() -> None:
    """A failing `Requires-Dist: torch==...` is EC0101's; the alternative fix is listed apart, never both."""
    facts = _with_pins("2.7.0+cu126", "12.6", ("torchvision", "0.21.0+cu126", "==2.6.0"),
                       ("xformers", "0.0.35", ">=2.10"))
    assert _derived("companions.torch-mismatch", facts) == []
    items = _derived("companions.pinned-to-other-torch", facts)
    assert [(i["name"], i["requirement"], i["expected"], i["index"]) for i in items] == [
        ("torchvision", "torch==2.6.0", "0.22.0", "https://download.pytorch.org/whl/cu126"),
        ("xformers", "torch>=2.10", "0.0.30", "https://download.pytorch.org/whl/cu126")]
    assert "torchvision::nms" in items[0]["symptom"]


def test_declared_pin_with_a_marker_that_does_not_hold_is_ignored() -> None:
    facts = build_facts(dists=[dist_dict("torch", "2.9.0"),
                               dist_dict("torchaudio", "2.11.0", "torch==2.6.0; sys_platform == 'win32'")],
                        torch=torch_dict("2.9.0", cuda="12.8"))
    assert [i["name"] for i in _derived("companions.torch-mismatch", facts)] == ["torchaudio"]


def test_torch_version_comes_from_version_py() -> None:
    """torch/version.py outranks the dist-info (they can disagree after a half-finished reinstall)."""
    facts = build_facts(dists=[dist_dict("torch", "2.7.0"), dist_dict("torchaudio", "2.11.0")],
                        torch=torch_dict("2.11.0", cuda="13.0"))
    assert _derived("companions.torch-mismatch", facts) == []


# --- built differently (CPU / CUDA X.Y / ROCm) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "name", "build", "torch_build", "index"),
    [
        pytest.param(_facts("2.7.0+cpu", None, ("torchvision", "0.22.0")), "torchvision", "a CUDA 12.6 build",
                     "a CPU build", CPU_INDEX, id="vision-9085-cpu-torch-pypi-vision"),
        pytest.param(_facts("2.7.0+cu126", "12.6", ("torchvision", "0.22.0+cpu")), "torchvision", "a CPU build",
                     "a CUDA 12.6 build", "https://download.pytorch.org/whl/cu126", id="cpu-vision-cuda-torch"),
        pytest.param(_facts("2.7.0+cu126", "12.6", ("torchvision", "0.22.0"), platform="win32", machine="AMD64"),
                     "torchvision", "a CPU build", "a CUDA 12.6 build", "https://download.pytorch.org/whl/cu126",
                     id="windows-pypi-vision-is-cpu"),
        pytest.param(_facts("2.0.1+cu118", "11.8", ("torchvision", "0.15.2")), "torchvision", "a CUDA 11.7 build",
                     "a CUDA 11.8 build", "https://download.pytorch.org/whl/cu118", id="vision-0.15-compares-minor"),
        pytest.param(_facts("2.6.0+cu118", "11.8", ("torchvision", "0.21.0")), "torchvision", "a CUDA 12.4 build",
                     "a CUDA 11.8 build", "https://download.pytorch.org/whl/cu118", id="cuda-majors-differ"),
        pytest.param(_facts("2.7.0+cu128", "12.8", ("torchaudio", "2.7.0")), "torchaudio", "a CUDA 12.6 build",
                     "a CUDA 12.8 build", "https://download.pytorch.org/whl/cu128", id="audio-compares-minor"),
        pytest.param(_facts("2.5.1+rocm6.2", None, ("torchvision", "0.20.1"), hip="6.2.41133"), "torchvision",
                     "a CUDA 12.4 build", "a ROCm 6.2 build", "https://download.pytorch.org/whl/rocm6.2",
                     id="rocm-torch-cuda-vision"),
    ],
)
def test_build_mismatch(facts: Any, name: str, build: str, torch_build: str, index: str) -> None:
    items = _derived(f"companions.{name}-build-mismatch", facts)
    assert [(i["build"], i["torch_build"], i["index"]) for i in items] == [(build, torch_build, index)]
    assert items[0]["install"].startswith(f"{name}==") and "+" not in items[0]["install"]


@pytest.mark.parametrize(
    ("facts", "name"),
    [
        pytest.param(_facts("2.7.0+cu128", "12.8", ("torchvision", "0.22.0")), "torchvision",
                     id="vision-compares-majors-only"),
        pytest.param(_facts("2.7.0", "12.6", ("torchaudio", "2.7.0")), "torchaudio", id="both-from-pypi"),
        pytest.param(_facts("2.7.0+cpu", None, ("torchvision", "0.22.0"), platform="linux", machine="aarch64"),
                     "torchvision", id="aarch64-pypi-build-unknown"),
        pytest.param(_facts("2.7.0", None, ("torchvision", "0.22.0"), platform="darwin", machine="arm64"),
                     "torchvision", id="macos-cpu"),
        pytest.param(_facts("2.5.1", "12.1", ("torchaudio", "2.5.1"), installer="conda"), "torchaudio",
                     id="conda-build-unknown"),
        pytest.param(_facts("2.7.0+cpu", None, ("torchvision", "0.21.0")), "torchvision",
                     id="other-release-left-to-torch-mismatch"),
        pytest.param(_facts("2.7.0+cpu", None, ("torchvision", "0.22.0"), problem="unreadable"), "torchvision",
                     id="torch-build-unknown"),
        pytest.param(_facts("2.7.0+cpu", None, ("torchvision", "0.22.0+git99")), "torchvision",
                     id="custom-companion-tag"),
    ],
)
def test_no_build_mismatch(facts: Any, name: str) -> None:
    assert _derived(f"companions.{name}-build-mismatch", facts) == []


# --- the torchcodec release for this torch ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("torch", "expected"),
    [
        pytest.param("2.9.0", ["0.9.1"], id="matrix-entry-for-2.9"),
        pytest.param("2.7.1+cu128", ["0.5"], id="tagged"),
        pytest.param("2.11.0+cu130", ["0.11.1"], id="matrix-entry-not-the-newest-floor-row"),
        pytest.param("2.13.0", ["0.14.0"], id="matrix-entry-for-2.13"),
        pytest.param("2.15.0", ["0.16.*"], id="beyond-the-matrix-newest-floor-row"),
    ],
)
def test_torchcodec_for_torch(torch: str, expected: list[str]) -> None:
    """The torchcodec release for torch is the build matrix's entry; past the matrix's torchcodec column, the
    newest series the companion table says was built for it."""
    items = _derived("companions.torchcodec-for-torch", _facts(torch, "12.8"))
    assert [i["expected"] for i in items] == expected


@pytest.mark.parametrize("torch", [None, "2.3.1", "2.9.0.dev20250801"])
def test_torchcodec_for_torch_unknown(torch: str | None) -> None:
    """No torch, no torchcodec release for it, or a nightly: nothing precise to offer, so unknown (skipped)."""
    assert _derived("companions.torchcodec-for-torch", _facts(torch, "12.8")) is None


def test_companion_derivations_are_registered_with_their_item_fields() -> None:
    for name in ("companions.torch-mismatch", "companions.pinned-to-other-torch"):
        assert {"install", "index", "requirement", "symptom"} <= set(DERIVATIONS[name].fields)
    for name in ("torchvision", "torchaudio"):
        assert DERIVATIONS[f"companions.{name}-build-mismatch"].fields == (
            "name", "version", "build", "torch", "torch_build", "torch_release", "install", "index")


# --- the sdpa probe's flash backend ----------------------------------------------------------------------------


def _sdpa(cases: dict[str, Any], status: str = "ok") -> dict[str, Any]:
    return {"sdpa": {"status": status, "cases": cases},
            "torch-build": {"status": "ok", "details": {"devices": [
                {"index": 0, "name": "Tesla T4", "capability": "7.5"},
                {"index": 2, "name": "Tesla V100-SXM2-16GB", "capability": "7.0"},
                {"index": 10, "name": "NVIDIA A100-SXM4-40GB", "capability": "8.0"}]}}}


ARCH_REASON = ("Flash attention only supports gpu architectures in the range [sm80, sm90]. Attempting to run on a "
               "sm 7.5 gpu.")


def test_sdpa_flash_unavailable_items() -> None:
    # `can_use: False`: torch's own check refused the flash kernel (envcheck/derived/attention.py counts only that).
    error = {"status": "error", "error_class": "RuntimeError", "message": "No available kernel. Aborting execution.",
             "can_use": False}
    facts = build_facts(probes=_sdpa({
        "cuda:10/backend=flash,dtype=float16": {**error, "reasons": [], "warnings": []},
        "cuda:0/backend=flash,dtype=float16": {**error, "reasons": ["Flash attention kernel not used because:",
                                                                    ARCH_REASON]},
        "cuda:2/backend=flash,dtype=float16": {**error, "warnings": [
            "UserWarning: Flash attention kernel not used because:",
            "UserWarning: Torch was not compiled with flash attention."]},
        "cuda:0/backend=flash,dtype=bfloat16": error,  # only float16 is judged: bf16 needs sm80 anyway
        "cuda:0/backend=efficient,dtype=float16": error,
        "cuda:3/backend=flash,dtype=float16": {"status": "ok"},
    }))
    items = attention.sdpa_flash_unavailable(facts)
    assert items is not None
    assert [(i["device"], i["name"], i["capability"]) for i in items] == [
        ("cuda:0", "Tesla T4", "7.5"), ("cuda:2", "Tesla V100-SXM2-16GB", "7.0"),
        ("cuda:10", "NVIDIA A100-SXM4-40GB", "8.0")]
    assert [i["reason"] for i in items] == [ARCH_REASON, "Torch was not compiled with flash attention.",
                                            "No available kernel. Aborting execution."]
    assert items[0]["error"] == "RuntimeError: No available kernel. Aborting execution."


@pytest.mark.parametrize("status", ["skipped", "crashed", "timeout", "error"])
def test_sdpa_flash_unknown_when_the_probe_did_not_finish(status: str) -> None:
    assert attention.sdpa_flash_unavailable(build_facts(probes=_sdpa({}, status))) is None
    assert attention.sdpa_flash_unavailable(build_facts()) is None  # --static


def test_sdpa_flash_without_device_names() -> None:
    facts = build_facts(probes={"sdpa": {"status": "ok", "cases": {
        "cuda:0/backend=flash,dtype=float16": {"status": "error", "error_class": "RuntimeError", "message": "x",
                                               "can_use": False}}}})
    assert attention.sdpa_flash_unavailable(facts) == [
        {"device": "cuda:0", "name": "?", "capability": "?", "error": "RuntimeError: x", "reason": "x"}]

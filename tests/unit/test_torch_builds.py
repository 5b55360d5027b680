"""The torch build matrix: rules/data/torch-builds.toml, its parser, its queries, and its agreement with the other
tables and with the wheels' metadata on PyPI (recorded once in tests/fixtures/torch-builds/)."""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envcheck.derived import build_matrix as tb
from envcheck.errors import RuleError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 in CI
    import tomli as tomllib

DATA = Path(__file__).resolve().parents[2] / "rules" / "data"
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "torch-builds" / "pypi-metadata.json"
LINUX, ARM, WINDOWS, MAC = "linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-arm64"


@pytest.fixture(scope="module")
def matrix() -> tb.BuildMatrix:
    return tb.load()


def small() -> dict[str, Any]:
    """A minimal valid matrix: one release, CUDA 12.8 and 12.6."""
    return {
        "schema": 1,
        "index": "https://download.pytorch.org/whl/",
        "archs": {"new": "7.5;8.0;12.0+PTX", "old": "5.0;6.0;7.0"},
        "drivers": {
            "toolkit": {"12.6": {"linux": "560.28.03", "windows": "560.76"}, "12.8": {"linux": "570.26"}},
            "minor-compatibility": {"12": {"linux": "525.60.13", "windows": "527.41"}},
        },
        "release": [{
            "series": "2.7",
            "versions": ["2.7.0", "2.7.1"],
            "python": ["3.11", "3.13t"],
            "platforms": {
                LINUX: {"variants": ["cpu", "cu126", "cu128"], "pypi": "cu126",
                        "archs": {"cu126": "old", "cu128": "new"}},
                MAC: {"variants": ["cpu"], "pypi": "cpu", "python": ["3.12"]},
            },
            "companions": {"2.7.1": {"torchvision": "0.22.1"}},
        }],
    }


def test_small_matrix_parses_and_expands() -> None:
    """A valid file becomes releases with variants, index URLs, expanded arch lists and per-platform Pythons."""
    parsed = tb.parse(small(), "m.toml")
    assert [str(r.version) for r in parsed.releases] == ["2.7.0", "2.7.1"]
    cu128 = tb.variants(parsed, "2.7.1", LINUX)[2]
    assert (cu128.kind, cu128.cuda, cu128.index_url) == ("cuda", (12, 8), "https://download.pytorch.org/whl/cu128")
    assert cu128.archs == ("sm_75", "sm_80", "sm_120", "compute_120")
    assert tb.variants(parsed, "2.7.1", MAC, "3.12")[0].name == "cpu"
    assert tb.variants(parsed, "2.7.1", MAC, "3.11") == ()
    assert tb.companions(parsed, "2.7.1") == {"torchvision": "0.22.1"}
    assert tb.companions(parsed, "2.7.0") == {}


def _set(data: dict[str, Any], path: str, value: object) -> None:
    target: Any = data
    keys = path.split("/")
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    last: Any = int(keys[-1]) if isinstance(target, list) else keys[-1]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value


DELETE = object()
P = "release/0/platforms/linux-x86_64"


@pytest.mark.parametrize(("path", "value", "key", "message"), [
    pytest.param("schema", 2, "schema", "schema = 1", id="schema"),
    pytest.param("colour", "x", "colour", "unknown key", id="unknown-top-key"),
    pytest.param("index", "http://x", "index", "base URL", id="index"),
    pytest.param("archs/new", "7.5;8.x", "archs.new", "not an architecture", id="bad-arch"),
    pytest.param("archs/new", "7.5;7.5", "archs.new", "twice", id="arch-twice"),
    pytest.param("drivers/toolkit/12.8", {"windows": "570.65"}, "drivers.toolkit.12.8", "Linux driver",
                 id="driver-without-linux"),
    pytest.param("drivers/toolkit/12.8/linux", "r570", "drivers.toolkit.12.8.linux", "expected a version",
                 id="driver-not-a-version"),
    pytest.param("drivers/toolkit/12", {"linux": "1"}, "drivers.toolkit.12", "CUDA release", id="toolkit-key"),
    pytest.param("drivers/minor-compatibility/12.x", {"linux": "1"}, "drivers.minor-compatibility.12.x",
                 "CUDA major", id="floor-key"),
    pytest.param("release/0/series", DELETE, "release[0]", "missing key 'series'", id="no-series"),
    pytest.param("release/0/versions", ["2.8.0"], "release[0].versions[0]", "not a final release of series 2.7",
                 id="version-outside-series"),
    pytest.param("release/0/versions", ["2.7.0+cpu"], "release[0].versions[0]", "not a final release",
                 id="local-version"),
    pytest.param("release/0/versions", ["2.7.0", "2.7.0"], "release[0].versions", "twice", id="version-twice"),
    pytest.param("release/0/platforms/linux-riscv64", {"variants": ["cpu"]}, "release[0].platforms.linux-riscv64",
                 "unknown platform", id="platform"),
    pytest.param(f"{P}/variants", ["cpu", "cuda12"], "release[0].platforms.linux-x86_64.variants[1]",
                 "expected a variant", id="variant-name"),
    pytest.param(f"{P}/variants", ["cpu", "cu126", "cu128", "cu999"],
                 "release[0].platforms.linux-x86_64.variants[3]", "no row in drivers.toolkit", id="cuda-no-driver"),
    pytest.param(f"{P}/archs/cu128", "newest", "release[0].platforms.linux-x86_64.archs.cu128",
                 "name of an [archs] entry", id="arch-ref"),
    pytest.param(f"{P}/archs/cpu", "old", "release[0].platforms.linux-x86_64.archs.cpu", "only CUDA variants",
                 id="arch-for-cpu"),
    pytest.param(f"{P}/archs/cu118", "old", "release[0].platforms.linux-x86_64.archs.cu118",
                 "not in 'variants'", id="arch-for-absent-variant"),
    pytest.param(f"{P}/pypi", "cu124", "release[0].platforms.linux-x86_64.pypi", "one of the variants",
                 id="pypi-not-a-variant"),
    pytest.param(f"{P}/python", ["3.x"], "release[0].platforms.linux-x86_64.python", "Python versions",
                 id="platform-python"),
    pytest.param("release/0/python", "3.11", "release[0].python", "list of non-empty strings", id="python-type"),
    pytest.param(f"{P}/wheels", [], "release[0].platforms.linux-x86_64.wheels", "unknown key", id="platform-key"),
    pytest.param("release/0/companions/2.6.0", {"torchvision": "0.21.0"}, "release[0].companions.2.6.0",
                 "not one of this entry's versions", id="companion-version"),
    pytest.param("release/0/companions/2.7.1/torchtext", "0.18.0", "release[0].companions.2.7.1.torchtext",
                 "unknown key", id="companion-package"),
    pytest.param("release/0/companions/2.7.1/torchvision", "latest", "release[0].companions.2.7.1.torchvision",
                 "expected a version", id="companion-pin"),
    pytest.param("release/1", None, "release[1]", "expected a table", id="release-not-a-table"),
])
def test_parse_errors_name_the_key(path: str, value: object, key: str, message: str) -> None:
    """Each mistake in the file is one RuleError naming the file and the key path of the bad value."""
    data = small()
    if path == "release/1":
        data["release"].append(value)
    else:
        _set(data, path, value)
    with pytest.raises(RuleError) as info:
        tb.parse(data, "m.toml")
    assert info.value.file == "m.toml"
    assert info.value.key == key
    assert message in info.value.detail


def test_release_listed_twice_is_an_error() -> None:
    """The same torch version in two entries is refused."""
    data = small()
    data["release"].append(copy.deepcopy(data["release"][0]))
    with pytest.raises(RuleError, match=r"2\.7\.0 is listed twice"):
        tb.parse(data, "m.toml")


def test_load_reports_unreadable_files(tmp_path: Path) -> None:
    """A missing or malformed file is a RuleError naming it, never a traceback."""
    with pytest.raises(RuleError, match=r"absent\.toml"):
        tb.load(tmp_path / "absent.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("schema = [", encoding="utf-8")
    with pytest.raises(RuleError, match=r"bad\.toml: .*TOML"):
        tb.load(bad)


def test_shipped_file_is_found_beside_the_rule_pack() -> None:
    """load() reads rules/data/torch-builds.toml of this checkout, which the rule loader does not glob."""
    assert tb.data_file() == DATA / "torch-builds.toml"
    assert tb.data_file().parent.name == "data"  # rules.load_files globs rules/*.toml only


# -------------------------------------------------------------------------------------------- coverage rules


@pytest.mark.parametrize(("archs", "capability", "expected"), [
    pytest.param(["sm_86"], (8, 9), "native", id="cubin-runs-newer-minor"),
    pytest.param(["sm_86"], (8, 0), "none", id="cubin-not-older-minor"),
    pytest.param(["sm_80"], (9, 0), "none", id="cubin-not-next-major"),
    pytest.param(["sm_80", "compute_80"], (9, 0), "ptx-jit", id="ptx-jits-forward"),
    pytest.param(["compute_120"], (12, 1), "ptx-jit", id="ptx-same-major"),
    pytest.param(["compute_120"], (11, 0), "none", id="ptx-not-backward"),
    pytest.param(["sm_90a"], (9, 0), "native", id="arch-specific-exact"),
    pytest.param(["sm_90a"], (10, 0), "none", id="arch-specific-not-forward"),
    pytest.param(["sm_100a", "compute_100a"], (10, 3), "none", id="arch-specific-ptx-not-forward"),
    pytest.param(["sm_100f"], (10, 3), "native", id="family-cubin-within-family"),
    pytest.param(["sm_100f"], (12, 0), "none", id="family-cubin-not-other-major"),
    pytest.param(["compute_100f"], (12, 0), "none", id="family-ptx-not-other-major"),
    pytest.param(["gfx90a", "sm_70"], (7, 5), "native", id="non-cuda-targets-ignored"),
    pytest.param([], (8, 0), "none", id="empty"),
])
def test_coverage_follows_nvidia_compatibility_rules(archs: list[str], capability: tuple[int, int],
                                                     expected: str) -> None:
    """Cubins run forward within a major, PTX forward across majors, 'a' targets only on their own capability."""
    assert tb.coverage(archs, capability) == expected


def test_arch_list_expansion() -> None:
    """TORCH_CUDA_ARCH_LIST entries become sm_/compute_ targets; suffixes are kept."""
    assert tb.expand_arch_list("9.0a;10.0f;12.0+PTX") == ("sm_90a", "sm_100f", "sm_120", "compute_120")
    with pytest.raises(ValueError, match="not an architecture"):
        tb.expand_arch_list("sm_90")


# ------------------------------------------------------------------------------------- queries on the real table


def _runs(matrix: tb.BuildMatrix, version: str, name: str, capability: tuple[int, int],
          platform: str = LINUX) -> str | None:
    variant = next(v for v in tb.variants(matrix, version, platform) if v.name == name)
    return tb.runs_on(variant, capability)


@pytest.mark.parametrize(("version", "variant", "expected"), [
    pytest.param("2.5.1", "cu124", "none", id="2.5.1-cu124"),
    pytest.param("2.7.1", "cu126", "none", id="2.7.1-cu126"),
    pytest.param("2.7.1", "cu128", "native", id="2.7.1-cu128"),
    pytest.param("2.8.0", "cu128", "native", id="2.8.0-cu128"),
    pytest.param("2.13.0", "cu130", "native", id="2.13.0-cu130"),
    pytest.param("2.14.1", "cu126", "none", id="2.14.1-cu126"),
])
def test_rtx_5090_needs_a_cuda_12_8_or_newer_build(matrix: tb.BuildMatrix, version: str, variant: str,
                                                   expected: str) -> None:
    """sm_120 (RTX 50xx) is in no cu124/cu126 build and in every cu128+ build."""
    assert _runs(matrix, version, variant, (12, 0)) == expected


@pytest.mark.parametrize(("version", "variant", "expected"), [
    pytest.param("2.6.0", "cu126", "native", id="2.6.0-cu126"),
    pytest.param("2.7.1", "cu128", "none", id="2.7.1-cu128-dropped"),
    pytest.param("2.8.0", "cu128", "native", id="2.8.0-cu128-back"),
    pytest.param("2.8.0", "cu129", "native", id="2.8.0-cu129"),
    pytest.param("2.10.0", "cu128", "native", id="2.10.0-cu128"),
    pytest.param("2.11.0", "cu128", "none", id="2.11.0-cu128-dropped"),
    pytest.param("2.11.0", "cu126", "native", id="2.11.0-cu126"),
    pytest.param("2.9.0", "cu130", "none", id="2.9.0-cu130"),
    pytest.param("2.14.1", "cu132", "none", id="2.14.1-cu132"),
])
def test_v100_sm70_per_build(matrix: tb.BuildMatrix, version: str, variant: str, expected: str) -> None:
    """Volta is out of cu128 in 2.7 and from 2.11, in it for 2.8 to 2.10, never in CUDA 13 builds."""
    assert _runs(matrix, version, variant, (7, 0)) == expected


def test_newest_release_for_a_v100_keeps_cuda_12_6(matrix: tb.BuildMatrix) -> None:
    """With a new driver, a V100 gets the newest release that still ships cu126, not 2.15 (CUDA 13 only)."""
    choice = tb.best_build(matrix, platform=LINUX, python="3.12", capabilities=[(7, 0)], driver=Version("580.95.05"))
    assert choice is not None
    assert (str(choice.release.version), choice.variant.name, choice.coverage) == ("2.14.1", "cu126", ("native",))
    assert tb.variants(matrix, "2.15.0", LINUX, "3.12")  # 2.15 exists for this Python: it has no sm_70 build
    assert all(tb.runs_on(v, (7, 0)) == "none" for v in tb.variants(matrix, "2.15.0", LINUX))


def test_rtx_5090_with_driver_570_gets_the_newest_cu128(matrix: tb.BuildMatrix) -> None:
    """A 570 driver runs CUDA 12.8 but not 13.0: the newest release with a cu128 build, from the cu128 index."""
    choice = tb.best_build(matrix, platform=LINUX, python="3.12", capabilities=[(12, 0)], driver=Version("570.133.07"))
    assert choice is not None
    assert (str(choice.release.version), choice.variant.name) == ("2.11.0", "cu128")
    assert choice.variant.index_url == "https://download.pytorch.org/whl/cu128"


def test_keeping_the_release_picks_its_variant(matrix: tb.BuildMatrix) -> None:
    """Restricted to torch 2.7.1, an RTX 5090 with driver 575 gets cu128 (the only 2.7 build with sm_120)."""
    choice = tb.best_build(matrix, platform=LINUX, python="3.11", capabilities=[(12, 0)],
                           driver=Version("575.51.03"), releases=SpecifierSet("==2.7.1"))
    assert choice is not None and choice.variant.name == "cu128"
    assert tb.best_build(matrix, platform=LINUX, python="3.11", capabilities=[(12, 0)], driver=Version("575.51.03"),
                         releases=SpecifierSet("==2.5.1")) is None


def test_driver_470_runs_cuda_11_only_through_minor_version_compatibility(matrix: tb.BuildMatrix) -> None:
    """Driver 470 is below every toolkit minimum of a torch build but above CUDA 11's floor: cu11x builds only."""
    driver = Version("470.82.01")
    cu124 = next(v for v in tb.variants(matrix, "2.5.1", LINUX) if v.name == "cu124")
    cu118 = next(v for v in tb.variants(matrix, "2.5.1", LINUX) if v.name == "cu118")
    assert tb.driver_status(matrix, cu124, driver, LINUX) == "too-old"
    assert tb.driver_status(matrix, cu118, driver, LINUX) == "minor-compat"
    assert tb.best_build(matrix, platform=LINUX, python="3.11", capabilities=[(7, 5)], driver=driver) is None
    choice = tb.best_build(matrix, platform=LINUX, python="3.11", capabilities=[(7, 5)], driver=driver,
                           minor_compat=True)
    assert choice is not None
    assert (str(choice.release.version), choice.variant.name) == ("2.7.1", "cu118")


def test_ptx_jit_needs_the_full_driver(matrix: tb.BuildMatrix) -> None:
    """A GPU reached only through PTX is not planned on a driver that runs the build by minor compatibility."""
    cu130 = next(v for v in tb.variants(matrix, "2.13.0", LINUX) if v.name == "cu130")
    assert tb.runs_on(cu130, (12, 5)) == "native" and tb.runs_on(cu130, (13, 0)) == "ptx-jit"
    assert tb.driver_status(matrix, cu130, Version("580.65.06"), LINUX) == "ok"
    assert tb.driver_status(matrix, cu130, Version("580.10"), LINUX) == "minor-compat"
    kwargs: dict[str, Any] = {"platform": LINUX, "python": "3.12", "capabilities": [(13, 0)],
                              "releases": SpecifierSet("==2.13.0"), "minor_compat": True}
    assert tb.best_build(matrix, driver=Version("580.10"), **kwargs) is None
    chosen = tb.best_build(matrix, driver=Version("595.58.03"), **kwargs)
    assert chosen is not None and chosen.coverage == ("ptx-jit",)
    assert tb.best_build(matrix, driver=Version("595.58.03"), allow_ptx=False, **kwargs) is None


def test_no_gpu_gets_the_newest_cpu_build(matrix: tb.BuildMatrix) -> None:
    """Without GPUs the answer is the newest release's CPU variant for this Python and platform."""
    newest = max(r.version for r in matrix.releases)
    choice = tb.best_build(matrix, platform=MAC, python="3.12", capabilities=[], driver=None)
    assert choice is not None and choice.variant.name == "cpu" and choice.release.version == newest
    assert tb.best_build(matrix, platform=LINUX, python="3.12", capabilities=[(8, 0)], driver=None) is None


def test_python_limits_the_releases(matrix: tb.BuildMatrix) -> None:
    """Python 3.7 ends at torch 1.13.1; Python 3.10 ends at 2.14.1 (2.15 dropped it)."""
    old = tb.best_build(matrix, platform=LINUX, python="3.7", capabilities=[], driver=None)
    py310 = tb.best_build(matrix, platform=LINUX, python="3.10", capabilities=[], driver=None)
    assert old is not None and str(old.release.version) == "1.13.1"
    assert py310 is not None and str(py310.release.version) == "2.14.1"


def test_multi_gpu_machines_need_one_build_for_all(matrix: tb.BuildMatrix) -> None:
    """A V100 beside an RTX 5090 needs a build with sm_70 and sm_120: cu128 of 2.8 to 2.10."""
    choice = tb.best_build(matrix, platform=LINUX, python="3.12", capabilities=[(7, 0), (12, 0)],
                           driver=Version("580.95.05"))
    assert choice is not None
    assert (str(choice.release.version), choice.variant.name) == ("2.10.0", "cu128")


def test_minimum_drivers(matrix: tb.BuildMatrix) -> None:
    """NVIDIA's stated minimums: CUDA 12.0's 525.60.13 / 527.41, CUDA 11's floor 450.80.02 / 452.39."""
    cu128 = next(v for v in tb.variants(matrix, "2.8.0", WINDOWS) if v.name == "cu128")
    cu118 = next(v for v in tb.variants(matrix, "2.6.0", LINUX) if v.name == "cu118")
    assert tb.minimum_driver(matrix, cu128, LINUX) == Version("570.26")
    assert tb.minimum_driver(matrix, cu128, WINDOWS) == Version("570.65")
    assert tb.minimum_driver(matrix, cu128, WINDOWS, minor_compat=True) == Version("527.41")
    assert tb.minimum_driver(matrix, cu118, LINUX, minor_compat=True) == Version("450.80.02")
    assert matrix.drivers.toolkit[(12, 0)]["linux"] == Version("525.60.13")
    assert matrix.drivers.minor_compat[11]["windows"] == Version("452.39")
    cpu = tb.variants(matrix, "2.8.0", LINUX)[0]
    assert tb.minimum_driver(matrix, cpu, LINUX) is None and tb.driver_status(matrix, cpu, Version("1"), LINUX) == "n/a"


def test_installed_version_to_variant(matrix: tb.BuildMatrix) -> None:
    """A local tag names the variant; an untagged version is PyPI's build for the platform."""
    tagged = tb.installed_variant(matrix, "2.5.1+cu124", LINUX)
    assert tagged is not None and tagged.name == "cu124"
    pypi_linux = tb.installed_variant(matrix, "2.8.0", LINUX)
    pypi_windows = tb.installed_variant(matrix, "2.8.0", WINDOWS)
    assert pypi_linux is not None and pypi_linux.name == "cu128"
    assert pypi_windows is not None and pypi_windows.name == "cpu"
    assert tb.installed_variant(matrix, "2.5.1+cu999", LINUX) is None
    assert tb.installed_variant(matrix, "1.12.1", LINUX) is None
    assert tb.release(matrix, "not a version") is None


# ---------------------------------------------------------------------------- consistency of the whole table


def test_every_release_on_pypi_from_1_13_is_in_the_table(matrix: tb.BuildMatrix) -> None:
    """The recorded PyPI listing of torch and the table name the same releases from 1.13.0 on."""
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    on_pypi = {Version(v) for v in recorded["torch-releases"] if Version(v) >= Version("1.13.0")}
    assert {r.version for r in matrix.releases} == on_pypi


def test_python_versions_agree_with_the_recorded_wheels(matrix: tb.BuildMatrix) -> None:
    """Each release's Python versions per platform are exactly the CPython tags of its wheels on PyPI."""
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))["torch-python"]
    for release in matrix.releases:
        for platform, builds in release.platforms.items():
            if builds.pypi is not None:
                assert list(builds.python) == recorded[str(release.version)][platform], (release.version, platform)
        assert set(recorded[str(release.version)]) == {p for p, b in release.platforms.items() if b.pypi}


ENVIRONMENTS = {
    LINUX: {"platform_system": "Linux", "platform_machine": "x86_64", "sys_platform": "linux"},
    ARM: {"platform_system": "Linux", "platform_machine": "aarch64", "sys_platform": "linux"},
    WINDOWS: {"platform_system": "Windows", "platform_machine": "AMD64", "sys_platform": "win32"},
    MAC: {"platform_system": "Darwin", "platform_machine": "arm64", "sys_platform": "darwin"},
    "macos-x86_64": {"platform_system": "Darwin", "platform_machine": "x86_64", "sys_platform": "darwin"},
}


def _cuda_of_requirements(requires: list[str], platform: str, python: str) -> str:
    """"cu128" from nvidia-cuda-runtime-cu12==12.8.90 or cuda-toolkit[...]==13.0.2 in a torch wheel's
    Requires-Dist, markers evaluated for `platform`; "cpu" when it names no CUDA runtime there."""
    environment = {**ENVIRONMENTS[platform], "python_version": python.rstrip("t")}
    for line in requires:
        req = Requirement(line)
        if req.name not in ("nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime-cu12", "cuda-toolkit"):
            continue
        if req.marker is None or req.marker.evaluate(environment):
            version = Version(next(iter(req.specifier)).version)
            return f"cu{version.major}{version.minor}"
    return "cpu"


def _torch_metadata(recorded: dict[str, Any], version: Version, platform: str) -> dict[str, Any] | None:
    """The recorded metadata of torch `version`'s wheel for `platform`; from 2.0 on, the Linux x86_64 wheel's
    stands in for a platform not recorded: its CUDA pins carry markers that name the platforms they apply to."""
    exact = recorded.get(f"torch|{version}|{platform}")
    if exact is not None or version < Version("2.0"):
        return exact
    return recorded.get(f"torch|{version}|{LINUX}")


def test_pypi_default_builds_agree_with_wheel_metadata(matrix: tb.BuildMatrix) -> None:
    """PyPI's untagged wheel per platform is the build whose CUDA runtime its Requires-Dist pins there."""
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))["metadata"]
    checked = 0
    for release in matrix.releases:
        for platform, builds in release.platforms.items():
            meta = _torch_metadata(recorded, release.version, platform)
            if meta is None or builds.pypi is None:
                continue
            found = _cuda_of_requirements(meta["requires_dist"], platform, builds.python[0])
            assert builds.pypi == found, (release.version, platform)
            checked += 1
    assert checked >= 3 * len(matrix.releases)


def _pin(requires: list[str], name: str) -> SpecifierSet | None:
    for line in requires:
        req = Requirement(line)
        if req.name == name and (req.marker is None or req.marker.evaluate(
                {"platform_system": "Linux", "platform_machine": "x86_64", "sys_platform": "linux",
                 "python_version": "3.12"})):
            return req.specifier
    return None


def test_companion_pins_agree_with_their_requires_dist(matrix: tb.BuildMatrix) -> None:
    """torchvision and torchaudio made for a torch release require it; torch's own wheel pins its triton."""
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))["metadata"]
    checked = 0
    for release in matrix.releases:
        for package in ("torchvision", "torchaudio"):
            pinned = release.companions.get(package)
            # Their torch pin carries no platform marker: any platform's wheel tells it.
            meta = next((m for k, m in sorted(recorded.items()) if k.startswith(f"{package}|{pinned}|")), None)
            if meta is None:
                continue
            spec = _pin(meta["requires_dist"], "torch")
            if spec is None:  # torchaudio 2.11.0 declares no torch at all (pytorch/audio#4212)
                assert (package, pinned) == ("torchaudio", "2.11.0")
            else:
                assert spec.contains(release.version), (package, pinned, release.version)
            checked += 1
        torch_meta = _torch_metadata(recorded, release.version, LINUX)
        triton = None if torch_meta is None else _pin(torch_meta["requires_dist"], "triton")
        if triton is not None:
            assert triton.contains(release.companions["triton"]), release.version
            checked += 1
    assert checked > 2 * len(matrix.releases)


def test_every_torch_release_has_its_torchvision(matrix: tb.BuildMatrix) -> None:
    """Each release names a torchvision, and no torchvision is made for two minors."""
    series: dict[str, set[str]] = {}
    for release in matrix.releases:
        vision = release.companions.get("torchvision")
        assert vision is not None, release.version
        series.setdefault(vision, set()).add(release.series)
    assert all(len(s) == 1 for s in series.values())


def _toml(name: str) -> dict[str, Any]:
    with (DATA / name).open("rb") as fh:
        return tomllib.load(fh)


def test_cuda_driver_table_agrees_with_the_matrix(matrix: tb.BuildMatrix) -> None:
    """Every row of cuda-driver.toml for a toolkit the matrix records (the CUDA versions torch builds used) has the
    same version there; cuda-driver.toml also covers older 11.x toolkits, which no torch in the matrix was built
    with."""
    old = _toml("cuda-driver.toml")
    compared = 0
    for os_name in ("linux", "windows"):
        for cuda, driver in old["toolkit-minimum-driver"][os_name].items():
            major, minor = (int(p) for p in cuda.split("."))
            if (major, minor) not in matrix.drivers.toolkit:
                assert (major, minor) < min(matrix.drivers.toolkit), (os_name, cuda)
                continue
            compared += 1
            assert matrix.drivers.toolkit[(major, minor)][os_name] == Version(driver), (os_name, cuda)
    assert compared >= 10
    for os_name, floors in old["minor-compatibility"].items():
        for major, floor in floors.items():
            ours = matrix.drivers.minor_compat[int(major)].get(os_name)
            assert ours is not None and ours == Version(floor), (os_name, major)


def test_companion_tables_agree_with_the_matrix(matrix: tb.BuildMatrix) -> None:
    """torch-companions.toml and xformers.toml say each companion the matrix names was built for that torch, and
    the PyPI build they record for Linux x86_64 is the torch release's PyPI build."""
    old = _toml("torch-companions.toml") | _toml("xformers.toml")
    checked = 0
    for release in matrix.releases:
        for package, pinned in release.companions.items():
            rows = old.get(package, {}).get("releases", {})
            row = rows.get(pinned) or next((r for key, r in rows.items()
                                            if key.endswith(".*") and SpecifierSet(f"=={key}").contains(pinned)), None)
            if row is None or package == "triton":
                continue
            spec = SpecifierSet(row["torch"])
            exact = re.fullmatch(r"==(\d+\.\d+)\.\d+", row["torch"])
            # The companion table reads an exact pin at the minor level (pinned for 2.6.0, fine on 2.6.1).
            assert spec.contains(release.version) or (exact and release.series == exact.group(1)), (package, pinned)
            build = row.get("linux-x86_64")
            if build is not None and re.fullmatch(r"cu\d+", build) and spec.contains(release.version):
                assert build == release.platforms[LINUX].pypi, (package, pinned)
            checked += 1
    assert checked >= 2 * len(matrix.releases)

"""The stdlib fact collector over real folders: corrupt metadata becomes facts, and no package code ever runs."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest
from _fakes import EXT_SUFFIX, collect_facts, write_apex, write_dist, write_torch, write_tree

from envcheck.errors import CollectError
from envcheck.facts.snapshot import Distribution
from envcheck.sources.live import _collector
from envcheck.sources.live import collect as collect_mod


@pytest.mark.parametrize(
    ("metadata", "name", "version", "problem"),
    [
        pytest.param(None, "broken", "1.0", "no METADATA file", id="no-metadata"),
        pytest.param("Metadata-Version: 2.1\nVersion: 1.0\n", "broken", "1.0", "METADATA has no Name",
                     id="no-name"),
        pytest.param("Metadata-Version: 2.1\nName: broken\n", "broken", "1.0", "METADATA has no Version",
                     id="no-version"),
        pytest.param("Metadata-Version: 2.1\nName: Broken\nVersion: 1.0\nAuthor: G\xe9rard\n".encode("latin-1"),
                     "broken", "1.0", "METADATA is not valid UTF-8", id="latin-1"),
    ],
)
def test_corrupt_metadata_is_a_problem_not_an_exception(site: Path, metadata: object, name: str, version: str,
                                                        problem: str) -> None:
    """A dist-info folder with missing, incomplete or undecodable METADATA is recorded with a problem in words."""
    write_dist(site, "broken", "1.0", metadata=metadata)
    write_dist(site, "healthy", "2.0")
    facts = collect_facts(site)
    broken = facts.active("broken")
    assert broken is not None
    assert (broken.name.lower(), broken.version) == (name, version)
    assert any(problem in p for p in broken.problems), broken.problems
    healthy = facts.active("healthy")
    assert healthy is not None and healthy.problems == ()


def test_invalid_version_is_recorded_verbatim(site: Path) -> None:
    """A version that is not PEP 440 ("1.0-custom") is kept as written and is not a collection problem."""
    write_dist(site, "custom", "1.0-custom")
    dist = collect_facts(site).active("custom")
    assert dist is not None
    assert (dist.version, dist.problems) == ("1.0-custom", ())


def test_long_description_is_not_parsed_as_headers(site: Path) -> None:
    """Headers end at the first blank line: `Name:` inside the description does not rename the distribution."""
    write_dist(site, "real-name", "1.0")
    assert [d.name for d in collect_facts(site).distributions] == ["real-name"]


def test_unreadable_folder_is_a_problem(site: Path) -> None:
    """A dist-info folder that cannot be read is recorded (name guessed from the folder), never raised."""
    dist_info = write_dist(site, "locked", "3.0")
    write_dist(site, "other", "1.0")
    dist_info.chmod(0)
    try:
        try:
            (dist_info / "METADATA").read_bytes()
        except PermissionError:
            pass
        else:
            pytest.skip("permissions are not enforced for this user (root)")
        facts = collect_facts(site)
    finally:
        dist_info.chmod(0o755)
    locked = facts.active("locked")
    assert locked is not None and locked.version == "3.0" and locked.problems
    assert facts.active("other") is not None


def test_first_install_on_the_path_is_active(tmp_path: Path) -> None:
    """With one name installed in two site dirs, both are recorded in path order and the first is the active one."""
    first, second = tmp_path / "user-site", tmp_path / "venv-site"
    write_dist(first, "Pillow", "11.0.0")
    write_dist(second, "pillow", "10.4.0")
    facts = collect_facts(first, second)
    assert [(d.version, d.location) for d in facts.installed("PILLOW")] == [
        ("11.0.0", str(first)), ("10.4.0", str(second))]
    active = facts.active("pillow")
    assert active is not None and active.version == "11.0.0"


def test_distribution_record_has_the_snapshot_fields_only(site: Path) -> None:
    """A collected distribution holds exactly the fields of snapshot.Distribution: no top_level (nothing read the
    importable names, and finding them meant reading RECORD, thousands of lines for torch)."""
    write_dist(site, "apex", "0.1", top_level=["apex"], record=["apex/__init__.py"])
    raw = _collector.collect({}, path=[str(site)])
    # requires_known is false only for distributions read from a pasted report (envcheck/sources/reports); collected
    # ones always know their Requires-Dist, so the collector leaves it to its default.
    assert set(raw["distributions"][0]) == {f.name for f in dataclasses.fields(Distribution)} - {"requires_known"}
    assert "top_level" not in raw["distributions"][0]


def test_torch_version_is_read_as_text(site: Path) -> None:
    """torch's build comes from torch/version.py parsed as text; torch/__init__.py (which raises) never runs."""
    write_torch(site, "from typing import Optional\n__version__ = '2.5.1+cu124'\ndebug = False\n"
                      "cuda: Optional[str] = '12.4'\nhip = None\ngit_version = 'a8d6afb'\n"
                      "odd = {[]: 1}\ncomputed = '2' + '.5'\n")
    build = collect_facts(site).torch
    assert build is not None
    assert (build.version, build.cuda, build.hip, build.debug, build.problem) == ("2.5.1+cu124", "12.4", None,
                                                                                  False, None)
    assert build.location == str(site / "torch")
    assert "odd" not in build.fields and "computed" not in build.fields
    assert "torch" not in sys.modules or not str(getattr(sys.modules["torch"], "__file__", "")).startswith(
        str(site))


@pytest.mark.parametrize(
    ("version_py", "problem"),
    [
        pytest.param(None, "cannot read", id="absent"),
        pytest.param("__version__ = (\n", "cannot read", id="syntax-error"),
        pytest.param("cuda = '12.4'\n", "has no __version__", id="no-version"),
        pytest.param("__version__ = 5\ncuda = 12.4\ndebug = 0\n",
                     "has values of an unexpected type: __version__ = 5, cuda = 12.4, debug = 0", id="odd-types"),
    ],
)
def test_unreadable_torch_version_is_a_problem(site: Path, version_py: str | None, problem: str) -> None:
    """An absent, unparsable, incomplete or oddly typed torch/version.py gives a torch fact with a problem (and the
    odd values left out), not an exception."""
    write_torch(site, version_py)
    build = collect_facts(site).torch
    assert build is not None and build.version is None
    assert build.problem is not None and problem in build.problem


def test_no_torch_is_none(site: Path) -> None:
    """Without an importable torch the torch fact is None."""
    write_dist(site, "numpy", "2.1.0")
    assert collect_facts(site).torch is None


def test_environment_is_filtered_and_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Relevant variables are kept, credentials are recorded only as set, and unrelated variables are dropped."""
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    monkeypatch.setenv("NCCL_AUTH_KEY", "also-secret")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    monkeypatch.setenv("ENVCHECK_TEST_UNRELATED", "x")
    env = _collector.collect({}, path=[])["env"]
    assert env["HF_TOKEN"] == _collector.REDACTED == "<redacted>"
    assert env["NCCL_AUTH_KEY"] == "<redacted>"
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert "ENVCHECK_TEST_UNRELATED" not in env
    assert list(env) == sorted(env)


def test_modules_are_found_without_importing(site: Path) -> None:
    """Dotted modules and extension modules are located without running any package's __init__."""
    write_apex(site)
    names = ["apex.normalization", "apex.normalization.fused_layer_norm", "fused_layer_norm_cuda", "apex.absent",
             "envcheck_test_absent.sub"]
    modules = collect_facts(site, request={"modules": names}).modules
    assert {n: m.found for n, m in modules.items()} == {
        "apex.absent": False, "apex.normalization": True, "apex.normalization.fused_layer_norm": True,
        "envcheck_test_absent.sub": False, "fused_layer_norm_cuda": True}
    assert modules["fused_layer_norm_cuda"].origin == str(site / f"fused_layer_norm_cuda{EXT_SUFFIX}")
    assert modules["apex.normalization"].origin == str(site / "apex" / "normalization" / "__init__.py")
    assert "apex" not in sys.modules


def test_namespace_package_is_found(site: Path) -> None:
    """A namespace package (no __init__.py) counts as found, with its folder as origin."""
    write_tree(site, {"nvidia/cudnn/lib/README": "x"})
    module = collect_facts(site, request={"modules": ["nvidia.cudnn"]}).modules["nvidia.cudnn"]
    assert module.found and module.origin == str(site / "nvidia" / "cudnn")


def test_source_patterns(site: Path) -> None:
    """Source files are grepped for exactly the requested patterns; an absent file has no path and no matches."""
    write_apex(site)
    write_tree(site, {"six.py": "PY3 = True\n"})
    request = {"sources": [
        {"file": "apex/normalization/fused_layer_norm.py", "patterns": ["^class FusedRMSNorm", "MixedFused", "("]},
        {"file": "apex/absent.py", "patterns": ["x"]},
        {"file": "six.py", "patterns": [r"PY3\s*="]},
    ]}
    sources = collect_facts(site, request=request).sources
    fused = sources["apex/normalization/fused_layer_norm.py"]
    assert fused.path == str(site / "apex" / "normalization" / "fused_layer_norm.py")
    assert fused.matches == {"^class FusedRMSNorm": True, "MixedFused": False}  # "(" is invalid: not answered
    assert (sources["apex/absent.py"].path, sources["apex/absent.py"].matches) == (None, {})
    assert sources["six.py"].matches == {r"PY3\s*=": True}
    assert "apex" not in sys.modules


def test_python_facts_describe_this_interpreter(site: Path) -> None:
    """The python section names the running interpreter and records the searched path in order."""
    python = collect_facts(site).python
    assert python.executable == sys.executable
    assert python.path == (str(site),)
    assert python.marker_environment["sys_platform"] == sys.platform
    assert python.version.startswith(f"{sys.version_info.major}.{sys.version_info.minor}.")


def test_search_path_starts_at_the_working_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The default path replaces sys.path[0] with the working directory, as `python -m` would see it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["/where/the/script/lives", "", "/lib/a"])
    assert _collector.search_path() == [os.getcwd(), "/lib/a"]


def test_foreign_interpreter_matches_in_process() -> None:
    """`--python sys.executable` (the collector piped to a child interpreter) sees the same distributions."""
    request = {"modules": ["click", "envcheck_test_absent"], "sources": []}
    here = collect_mod.collect(request)
    there = collect_mod.collect(request, python=sys.executable)
    assert sorted((d.canonical_name, d.version) for d in there.distributions) == sorted(
        (d.canonical_name, d.version) for d in here.distributions)
    assert there.origin == f"python:{sys.executable}" and here.origin == "local"
    assert there.modules == here.modules
    assert there.python.executable == here.python.executable
    # The machine's network interfaces are machine facts, read in envcheck's own process for either.
    assert here.network is not None and there.network == here.network


@pytest.mark.parametrize(
    ("python", "message"),
    [
        pytest.param("/nonexistent/bin/python", "no such file", id="absent"),
        pytest.param("/bin/false", "the fact collector failed (exit 1)", id="fails"),
    ],
)
def test_foreign_interpreter_that_cannot_run_is_a_collect_error(python: str, message: str) -> None:
    """A --python that does not exist or does not run the collector is one CollectError naming it."""
    if python == "/bin/false" and not Path(python).exists():
        pytest.skip("/bin/false is not on this system")
    with pytest.raises(CollectError, match=f"--python {python}: ") as info:
        collect_mod.collect({}, python=python)
    assert message in str(info.value)


def test_partial_install_leftovers(tmp_path: Path) -> None:
    """pip's `~name` leftovers in site-packages are recorded, and a `~` metadata folder is not an install."""
    site = tmp_path / "lib" / "site-packages"
    write_dist(site, "torch", "2.6.0")
    write_dist(site, "torch", "2.5.1", folder="~orch-2.5.1.dist-info")
    write_tree(site, {"~orch/__init__.py": ""})
    other = tmp_path / "not-a-site-dir"
    write_tree(other, {"~scratch/x.py": ""})
    facts = collect_facts(site, other)
    assert facts.partial_installs == (str(site / "~orch"), str(site / "~orch-2.5.1.dist-info"))
    assert [(d.name, d.version) for d in facts.distributions] == [("torch", "2.6.0")]


def test_folders_are_listed_as_importlib_metadata_finds_them(tmp_path: Path) -> None:
    """The listing that spares a warm collector importlib.metadata finds exactly its folders, in its order: on
    this interpreter's own path, and on a folder of awkward names (spellings of one name, egg-info, a pip
    leftover, upper case, a folder that is no distribution) behind a path entry that does not exist."""
    import importlib.metadata

    odd = tmp_path / "odd-site"
    for folder in ("Foo_Bar-1.0.dist-info", "zeta-2.0.dist-info", "foo.bar-2.0.dist-info", "legacy-0.1.egg-info",
                   "~orch-2.5.1.dist-info", "UPPER-3.0.DIST-INFO", "notadist", "alpha-1.0.dist-info"):
        (odd / folder).mkdir(parents=True)
    for path in ([p for p in sys.path if p and os.path.isabs(p)], [str(tmp_path / "missing"), str(odd)]):
        listed = _collector._listed(path)
        if listed is None:
            pytest.skip(f"Python {sys.version_info[:2]} or this sys.meta_path is left to importlib.metadata")
        assert listed == [str(d._path) for d in importlib.metadata.distributions(path=path)]  # type: ignore[attr-defined]


def test_a_warm_collection_equals_a_cold_one(site: Path, tmp_path: Path) -> None:
    """With every distribution in the metadata cache (listed without importlib.metadata), the facts are the ones
    a collection without the cache reads."""
    write_dist(site, "alpha", "1.0", requires=["beta>=2"])
    write_dist(site, "Beta", "2.1")
    request = {"cache_dir": str(tmp_path / "cache")}
    (tmp_path / "cache").mkdir(mode=0o700)
    cold = _collector.collect({}, path=[str(site)])["distributions"]
    first = _collector.collect(request, path=[str(site)])["distributions"]
    warm = _collector.collect(request, path=[str(site)])["distributions"]
    assert cold == first == warm
    assert [d["name"] for d in warm] == ["alpha", "Beta"]

"""The probe cache: an unchanged environment reuses results; any change, a corrupt file or a timeout does not."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from _fakes import build_facts, dist_dict, write_dist
from click.testing import CliRunner

from envcheck.cache.signed import cache_dir
from envcheck.cli.click_cli import cli
from envcheck.facts.probe_results import ProbeResult
from envcheck.facts.snapshot import Facts
from envcheck.sources.probes import results_cache as probe_results
from envcheck.sources.probes import run_probes


def _facts(**changes: object):  # type: ignore[no-untyped-def]
    facts = build_facts(dists=[dist_dict("numpy", "2.1.0")], env={"CUDA_VISIBLE_DEVICES": "0"})
    return dataclasses.replace(facts, **changes) if changes else facts


OK = {"torch-import": ProbeResult(status="ok", details={"version": "2.13.0"})}


def test_hit_returns_what_was_stored() -> None:
    """Results stored under a fingerprint come back equal."""
    key = probe_results.fingerprint(_facts(), ["torch-import"], "code")
    probe_results.store(key, OK)
    assert probe_results.load(key) == OK


BASE = {"dists": [dist_dict("numpy", "2.1.0")], "env": {"CUDA_VISIBLE_DEVICES": "0"}}


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param({**BASE, "dists": [dist_dict("numpy", "2.1.1")]}, id="a-version-changed"),
        pytest.param({**BASE, "dists": [*BASE["dists"], dist_dict("apex", "0.1")]}, id="a-distribution-added"),
        pytest.param({**BASE, "env": {"CUDA_VISIBLE_DEVICES": "1"}}, id="an-env-var-changed"),
        pytest.param({**BASE, "python": {"executable": "/other/bin/python"}}, id="another-interpreter"),
    ],
)
def test_any_change_is_a_new_fingerprint(changed: dict[str, object]) -> None:
    """Changing an installed version, a distribution, a relevant variable or the interpreter changes the key."""
    assert probe_results.fingerprint(build_facts(**BASE), ["torch-import"], "code") != \
        probe_results.fingerprint(build_facts(**changed), ["torch-import"], "code")


def test_probe_code_is_part_of_the_fingerprint() -> None:
    """A new envcheck with different probe code never reuses old results."""
    assert probe_results.fingerprint(_facts(), ["sdpa"], "a") != probe_results.fingerprint(_facts(), ["sdpa"], "b")


def _entry(key: str) -> Path:
    return cache_dir() / f"probes-{key}.signed"


@pytest.mark.parametrize("content", [b"not json", b"\xff\xfe", b"envcheck-signed-1\n"],
                         ids=["garbage", "undecodable", "truncated"])
def test_corrupt_cache_is_a_miss_and_is_rewritten(content: bytes) -> None:
    """A cache file that cannot be read is ignored, said to be, and the next store replaces it."""
    key = probe_results.fingerprint(_facts(), ["torch-import"], "code")
    probe_results.store(key, OK)
    _entry(key).write_bytes(content)
    problems: list[str] = []
    assert probe_results.load(key, problems=problems) is None
    assert problems and "not a signed entry" in problems[0]
    probe_results.store(key, OK)
    assert probe_results.load(key) == OK


def _segfault() -> dict[str, ProbeResult]:
    return {"torch-import": ProbeResult(status="crashed", error_class="SIGSEGV", message="the probe process died")}


def test_an_edited_entry_is_not_believed() -> None:
    """Turning a cached segfault into an ok result by editing the entry's JSON breaks its signature: ignored."""
    key = probe_results.fingerprint(_facts(), ["torch-import"], "code")
    probe_results.store(key, _segfault())
    assert probe_results.load(key) == _segfault()
    data = _entry(key).read_bytes()
    forged = data.replace(b'"status": "crashed"', b'"status": "ok"     ')
    assert forged != data
    _entry(key).write_bytes(forged)
    problems: list[str] = []
    assert probe_results.load(key, problems=problems) is None
    assert len(problems) == 1 and "failed its signature check" in problems[0]


def test_an_entry_signed_with_another_key_is_not_believed() -> None:
    """An entry copied from another account or machine (signed with its key) is ignored."""
    key = probe_results.fingerprint(_facts(), ["torch-import"], "code")
    probe_results.store(key, OK)
    (cache_dir() / "key").write_bytes(os.urandom(32))
    assert probe_results.load(key) is None


def test_the_old_unsigned_file_is_never_read() -> None:
    """A plain JSON file where format 1 kept its results is not a cache entry any more."""
    key = probe_results.fingerprint(_facts(), ["torch-import"], "code")
    plain = cache_dir() / f"probes-{key}.json"
    plain.parent.mkdir(parents=True, exist_ok=True)
    plain.write_text('{"format": 1, "results": {"torch-import": {"status": "ok"}}}', encoding="utf-8")
    assert probe_results.load(key) is None


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_cache_folder_others_can_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENVCHECK_CACHE_DIR at a world-writable folder: nothing is read from it or written to it, and it is said."""
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(shared))
    key = probe_results.fingerprint(_facts(), ["torch-import"], "code")
    probe_results.store(key, OK)
    assert probe_results.load(key) == OK  # a private folder: used
    shared.chmod(0o777)
    problems: list[str] = []
    assert probe_results.load(key, problems=problems) is None
    assert problems and "writable by others" in problems[0]
    probe_results.store(key, _segfault())
    shared.chmod(0o700)
    assert probe_results.load(key) == OK  # the store into the shared folder wrote nothing


def test_no_cache_inside_the_checked_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache folder inside the checked environment's prefix is neither read nor written."""
    prefix = tmp_path / "venv"
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(prefix / "cache"))
    key = probe_results.fingerprint(_facts(), ["torch-import"], "code")
    probe_results.store(key, OK, avoid=[str(prefix)])
    assert not (prefix / "cache").exists() or not any((prefix / "cache").iterdir())
    problems: list[str] = []
    assert probe_results.load(key, avoid=[str(prefix)], problems=problems) is None
    assert problems and "inside a Python environment" in problems[0]


def test_timeouts_are_not_cached() -> None:
    """A result set with a timeout is not stored: a slow first CUDA start may not repeat."""
    key = probe_results.fingerprint(_facts(), ["torch-import"], "code")
    probe_results.store(key, {"torch-import": ProbeResult(status="timeout", error_class="Timeout")})
    assert probe_results.load(key) is None


def test_second_run_comes_from_the_cache_and_no_cache_forces_a_run(tmp_path: Path) -> None:
    """run_probes reports a cache hit the second time, and a fresh run with use_cache=False."""
    facts = dataclasses.replace(_facts(), python=dataclasses.replace(_facts().python, executable=sys.executable))
    first = run_probes(facts, ["torch-import"], timeout_s=30)
    second = run_probes(facts, ["torch-import"], timeout_s=30)
    third = run_probes(facts, ["torch-import"], timeout_s=30, use_cache=False)
    assert (first.cached, second.cached, third.cached) == (False, True, False)
    assert first.results == second.results
    assert third.results["torch-import"].status == first.results["torch-import"].status


def test_no_cache_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`envcheck check --no-cache` leaves the cache folder as it found it: absent."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(folder))
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--probe-timeout", "60", "--python", sys.executable])
    assert result.exit_code in (0, 1), result.output
    assert not folder.exists() or sorted(folder.rglob("*")) == []


def test_an_edited_entry_reaches_the_report() -> None:
    """A check whose cached probe results were edited runs the probes afresh and its report names the entry."""
    args = ["check", "--probe-timeout", "60", "--python", sys.executable, "--no-project", "--no-config"]
    first = CliRunner().invoke(cli, args)
    (entry,) = cache_dir().glob("probes-*.signed")
    entry.write_bytes(entry.read_bytes() + b" ")
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == first.exit_code, again.output
    assert f"{entry} failed its signature check" in again.output.replace("\n    ", " ")
    assert "signature" not in CliRunner().invoke(cli, args).output  # rewritten by the second run: believed again


def test_cli_probe_command_lists_every_probe() -> None:
    """`envcheck probe` runs every probe with the current interpreter and names each with its status."""
    result = CliRunner().invoke(cli, ["probe", "--probe-timeout", "60"])
    assert result.exit_code == 0, result.output
    for name in ("torch-import", "torch-build", "sdpa", "transformer-fastpath", "bf16", "apex-fused-norm",
                 "safetensors"):
        assert f"{name}: " in result.output


def test_cli_probe_rejects_unknown_names() -> None:
    """An unknown probe name is a usage error (exit 2) listing the probes."""
    result = CliRunner().invoke(cli, ["probe", "sdpaa"])
    assert result.exit_code == 2
    assert "no probe 'sdpaa'" in result.output


def test_static_runs_no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """--static never starts a probe child."""
    import envcheck.sources.probes as probes_mod

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("a probe ran under --static")

    monkeypatch.setattr(probes_mod, "run_probes", boom)
    result = CliRunner().invoke(cli, ["check", "--static"])
    assert result.exit_code == 0, result.output


def test_reinstalling_the_same_version_is_a_new_fingerprint(tmp_path: Path) -> None:
    """A distribution reinstalled in place (same name, version and location) invalidates cached probe results."""
    site = tmp_path / "site"
    site.mkdir()
    folder = write_dist(site, "flash-attn", "2.5.8")
    facts = build_facts(dists=[dist_dict("flash-attn", "2.5.8", location=str(site), metadata_dir=str(folder))])
    before = probe_results.fingerprint(facts, ["extension-imports"], "code")
    assert probe_results.fingerprint(facts, ["extension-imports"], "code") == before
    shutil.rmtree(folder)
    write_dist(site, "flash-attn", "2.5.8")
    os.utime(folder, ns=(1, 1))  # a filesystem with coarse timestamps could otherwise give the same mtime
    assert probe_results.fingerprint(facts, ["extension-imports"], "code") != before


def test_an_amd_gpu_is_part_of_the_fingerprint() -> None:
    """A ROCm machine's GPUs count like NVIDIA's: another gfx target, or /dev/kfd becoming accessible, is a new key."""
    from envcheck.facts.amd_gpu import AmdGpu
    from envcheck.facts.rocm import RocmFacts

    gpu = AmdGpu(index=0, node=1, gfx_target="gfx1100", gfx_target_version=110000, device_id=0x744C, simd_count=96,
                 pci_bus_id="0000:03:00.0", render_access="ok")
    rocm = RocmFacts(status="ok", reason=None, devices=(gpu,), kfd_access="ok")
    keys = {probe_results.fingerprint(_facts(rocm=r), ["torch-import"], "code") for r in (
        None, rocm, dataclasses.replace(rocm, kfd_access="no-permission"),
        dataclasses.replace(rocm, devices=(dataclasses.replace(gpu, gfx_target="gfx1030",
                                                               gfx_target_version=100300),)))}
    assert len(keys) == 4


def _torch_tree(site: Path) -> Facts:
    """A torch-like package as an installed one is laid out (its __init__, version.py, the extension module and
    torch/lib's libraries), collected by the real collector: the facts name its location."""
    from _fakes import POISON, collect_facts, write_tree

    write_tree(site, {"torch/__init__.py": POISON, "torch/version.py": "__version__ = '2.13.0'\n",
                      "torch/_C.cpython-311-x86_64-linux-gnu.so": b"\x7fELF extension",
                      "torch/lib/libtorch_cpu.so": b"\x7fELF library", "torch/lib/libc10.so.2": b"\x7fELF c10"})
    facts = collect_facts(site)
    assert facts.torch is not None and Path(facts.torch.location) == site / "torch"
    return facts


def _replaced(path: Path, content: bytes) -> None:
    """`path` rewritten as installers and builds do: a new file renamed over the old one (a new inode)."""
    new = path.with_name(path.name + ".new")
    new.write_bytes(content)
    os.replace(new, path)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda t: (t / "__init__.py").write_text("import sys  # edited in an editable install\n"),
                     id="init-edited"),
        pytest.param(lambda t: _replaced(t / "_C.cpython-311-x86_64-linux-gnu.so", b"\x7fELF extension"),
                     id="extension-rebuilt-same-size"),
        pytest.param(lambda t: _replaced(t / "lib" / "libtorch_cpu.so", b"\x7fELF library, rebuilt"),
                     id="library-rebuilt"),
        pytest.param(lambda t: (t / "lib" / "libtorch_cuda.so").write_bytes(b"\x7fELF"), id="library-added"),
        pytest.param(lambda t: (t / "version.py").write_text("__version__ = '2.13.0'  # regenerated\n"),
                     id="version-py-rewritten"),
        pytest.param(lambda t: (t.parent.parent / "conda-meta").mkdir(), id="conda-transaction"),
    ],
)
def test_a_changed_torch_file_is_a_new_fingerprint(tmp_path: Path, change: Any) -> None:
    """A cached result holds only while the files importing torch runs and loads are unchanged: no distribution's
    version or metadata changes when an editable torch is edited or its extension rebuilt, yet EC0501 must see it."""
    prefix = tmp_path / "env"
    site = prefix / "site"
    site.mkdir(parents=True)
    facts = _torch_tree(site)
    facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, prefix=str(prefix)))
    before = probe_results.fingerprint(facts, ["torch-import"], "code")
    assert probe_results.fingerprint(facts, ["torch-import"], "code") == before  # stable while nothing changes
    change(site / "torch")
    assert probe_results.fingerprint(facts, ["torch-import"], "code") != before


SELF_KILLED = '''
def probe_killed_once(ctx):
    import os, signal
    marker = os.environ["KILLED_ONCE_MARKER"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer ends a child under a passing load
    return {"status": "ok"}
'''


def test_a_child_killed_by_sigkill_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real probe child killed by SIGKILL gives a `crashed` result that is reported but not cached: the next run
    runs the probe again (and its passing result is cached)."""
    from envcheck.sources.probes import runner
    from envcheck.sources.probes.catalog import ProbeSpec

    monkeypatch.setattr(runner, "PROGRAM", runner.Program(SELF_KILLED, {
        "killed-once": ProbeSpec("killed-once", "killed by SIGKILL the first time", needs_torch=False)}))
    monkeypatch.setenv("KILLED_ONCE_MARKER", str(tmp_path / "killed"))
    facts = dataclasses.replace(_facts(), python=dataclasses.replace(_facts().python, executable=sys.executable))
    first = run_probes(facts, ["killed-once"], timeout_s=30)
    assert first.results["killed-once"].status == "crashed"
    assert first.results["killed-once"].error_class == "SIGKILL"
    second = run_probes(facts, ["killed-once"], timeout_s=30)
    assert not second.cached and second.results["killed-once"].status == "ok"
    assert run_probes(facts, ["killed-once"], timeout_s=30).cached


def test_a_crash_of_its_own_is_cached() -> None:
    """A segfault is what torch does here, not what happened to the process: it stays cached."""
    key = probe_results.fingerprint(_facts(), ["torch-import"], "code")
    probe_results.store(key, _segfault())
    assert probe_results.load(key) == _segfault()

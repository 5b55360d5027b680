"""Native-library facts from real files: distributions in a site folder read by the real collector, a real compiled
module of this interpreter as their shared object, CUDA library files on LD_LIBRARY_PATH, and the cache that keeps
an unchanged environment cheap."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest
from _fakes import build_facts, dist_dict, torch_dict

from envcheck.cache.file_values import FileCache
from envcheck.derived.native_libs import loaded_outside_wheels
from envcheck.facts.snapshot import Facts
from envcheck.sources.live import _collector, native_scan
from envcheck.sources.live.native_scan import collect_native, manylinux_floor
from envcheck.sources.probes._child import shared_objects_in_maps

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF shared objects and LD_LIBRARY_PATH")


def _real_shared_object() -> Path:
    import _ctypes

    if not _ctypes.__file__.endswith(".so"):
        pytest.skip("this Python's _ctypes is built in")
    return Path(_ctypes.__file__)


def _site(tmp_path: Path, tag: str = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64") -> Path:
    """A site folder with one distribution that installed a real shared object (listed in its RECORD)."""
    site = tmp_path / "site"
    package = site / "extpkg"
    package.mkdir(parents=True)
    shutil.copy(_real_shared_object(), package / "_ext.cpython-311-x86_64-linux-gnu.so")
    (package / "__init__.py").write_text("")
    info = site / "extpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: extpkg\nVersion: 1.0\n")
    (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n")
    (info / "RECORD").write_text("extpkg/__init__.py,,\nextpkg/_ext.cpython-311-x86_64-linux-gnu.so,sha256=x,1\n"
                                 "extpkg-1.0.dist-info/RECORD,,\n")
    return site


def _facts(site: Path) -> Facts:
    return Facts.from_dict(_collector.collect({}, path=[str(site)]))


@linux
def test_needs_and_floor_of_a_real_distribution(tmp_path: Path) -> None:
    """The distribution's shared object (from its RECORD) needs a GLIBC version; its WHEEL tags give glibc 2.17."""
    facts = _facts(_site(tmp_path))
    native = collect_native(facts, {}, use_cache=False)
    glibc = [n for n in native.needs if n.distribution == "extpkg" and n.version.startswith("GLIBC_")]
    assert len(glibc) == 1 and glibc[0].file == "extpkg/_ext.cpython-311-x86_64-linux-gnu.so"
    assert native.scanned_files == 1
    assert [(w.distribution, w.tag, w.glibc) for w in native.wheel_floors] == [
        ("extpkg", "manylinux_2_17_x86_64", "2.17")]


@pytest.mark.parametrize(("tags", "floor"), [
    pytest.param(["cp311-cp311-manylinux_2_28_x86_64"], ("manylinux_2_28_x86_64", "2.28"), id="pep600"),
    pytest.param(["cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"], ("manylinux_2_17_x86_64", "2.17"),
                 id="compressed pair"),
    pytest.param(["py3-none-manylinux1_x86_64"], ("manylinux1_x86_64", "2.5"), id="manylinux1"),
    pytest.param(["cp311-cp311-linux_x86_64"], None, id="plain linux tag promises nothing"),
    pytest.param(["py3-none-any"], None, id="pure"),
    pytest.param([], None, id="no tags"),
])
def test_manylinux_floor(tags: list[str], floor: tuple[str, str] | None) -> None:
    """A wheel's glibc floor is the lowest its manylinux tags promise; any other platform tag means none."""
    assert manylinux_floor(tags) == floor


@linux
def test_cache_reuses_unchanged_files_and_rereads_changed_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """The second scan takes each file's needs from the cache; a rewritten file is parsed again."""
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(cache_dir))
    site = _site(tmp_path)
    facts = _facts(site)
    first = collect_native(facts, {})
    parsed: list[str] = []
    original = native_scan.elf.version_needs

    def counting(path: str) -> dict[str, list[str]] | None:
        parsed.append(path)
        return original(path)

    monkeypatch.setattr(native_scan.elf, "version_needs", counting)
    assert collect_native(facts, {}) == first
    assert parsed == []
    so = site / "extpkg" / "_ext.cpython-311-x86_64-linux-gnu.so"
    so.write_bytes(b"not an ELF file any more")
    changed = collect_native(facts, {})
    assert parsed == [str(so)]
    assert not [n for n in changed.needs if n.distribution == "extpkg"]


@linux
def test_cuda_libraries_on_ld_library_path(tmp_path: Path) -> None:
    """A libcudnn.so.9 symlink's version is that of the file it resolves to; a name that tells none has none;
    other files are ignored."""
    folder = tmp_path / "cudnn" / "lib"
    folder.mkdir(parents=True)
    (folder / "libcudnn.so.9.0.0").write_bytes(b"")
    (folder / "libcudnn.so.9").symlink_to("libcudnn.so.9.0.0")
    (folder / "libnccl.so.2").write_bytes(b"")
    (folder / "libfoo.so.1").write_bytes(b"")
    facts = build_facts()
    native = collect_native(facts, {"LD_LIBRARY_PATH": f"{folder}:{tmp_path / 'missing'}::{folder}"},
                            use_cache=False)
    assert [(lib.name, lib.version) for lib in native.loader_path] == [("libcudnn.so.9", "9.0.0"),
                                                                       ("libnccl.so.2", None)]


@linux
def test_libstdcxx_provider_from_ld_library_path(tmp_path: Path) -> None:
    """The first libstdc++.so.6 on LD_LIBRARY_PATH is the provider, with the versions its ELF file defines."""
    system = next((Path(p) for p in ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib64/libstdc++.so.6",
                                     "/usr/lib/aarch64-linux-gnu/libstdc++.so.6") if Path(p).exists()), None)
    if system is None:
        pytest.skip("no system libstdc++.so.6 in the usual folders")
    folder = tmp_path / "lib"
    folder.mkdir()
    shutil.copy(system.resolve(), folder / "libstdc++.so.6")
    native = collect_native(build_facts(), {"LD_LIBRARY_PATH": str(folder)}, use_cache=False)
    assert native.libstdcxx is not None
    assert (native.libstdcxx.path, native.libstdcxx.via) == (str(folder / "libstdc++.so.6"), "LD_LIBRARY_PATH")
    assert native.libstdcxx.glibcxx is not None and native.libstdcxx.glibcxx.startswith("GLIBCXX_3.4.")
    assert native.libstdcxx.cxxabi is not None and native.libstdcxx.cxxabi.startswith("CXXABI_1.3")


def test_windows_dlls_found_where_torchs_loader_looks(tmp_path: Path) -> None:
    """Each runtime DLL counts as found in System32, torch\\lib or a PATH folder, and missing elsewhere."""
    system32 = tmp_path / "Windows" / "System32"
    system32.mkdir(parents=True)
    (system32 / "vcruntime140.dll").write_bytes(b"")
    torch_lib = tmp_path / "site" / "torch" / "lib"
    torch_lib.mkdir(parents=True)
    (torch_lib / "libomp140.x86_64.dll").write_bytes(b"")
    facts = build_facts(torch={**torch_dict("2.4.0+cpu", None), "location": str(tmp_path / "site" / "torch")})
    found = native_scan.windows_dlls({"SystemRoot": str(tmp_path / "Windows")}, facts)
    assert found == {"vcruntime140.dll": True, "vcruntime140_1.dll": False, "msvcp140.dll": False,
                     "libomp140.x86_64.dll": True}
    on_path = tmp_path / "Program Files" / "app"
    on_path.mkdir(parents=True)
    (on_path / "msvcp140.dll").write_bytes(b"")
    with_path = native_scan.windows_dlls({"SystemRoot": str(tmp_path / "Windows"), "PATH": f"{on_path};"}, facts)
    assert with_path["msvcp140.dll"] is True


def test_native_facts_round_trip(tmp_path: Path) -> None:
    """The native facts written by to_dict read back identical; absent, they read as None."""
    facts = build_facts()
    native = collect_native(facts, {}, use_cache=False)
    again = Facts.from_dict(json.loads(json.dumps(dataclasses.replace(facts, native=native).to_dict())))
    assert again.native == native
    assert facts.native is None


# /proc/self/maps lines as Linux writes them (address, perms, offset, dev, inode, path), recorded from a child that
# imported a CUDA torch whose cuDNN came from a system folder on LD_LIBRARY_PATH.
RECORDED_MAPS = """\
55d0c0a00000-55d0c0a2d000 r--p 00000000 08:01 1311 /usr/bin/python3.11
7f1c2a000000-7f1c2a200000 r--p 00000000 08:01 2301 /usr/lib/x86_64-linux-gnu/libcudnn.so.9.0.0
7f1c2a200000-7f1c2a400000 r-xp 00200000 08:01 2301 /usr/lib/x86_64-linux-gnu/libcudnn.so.9.0.0
7f1c2b000000-7f1c2b100000 r-xp 00000000 08:01 4410 /srv/venv/lib/python3.11/site-packages/nvidia/cublas/lib/\
libcublas.so.12
7f1c2c000000-7f1c2c100000 r-xp 00000000 08:01 4411 /srv/venv/lib/python3.11/site-packages/torch/lib/libgomp.so.1
7f1c2d000000-7f1c2d021000 rw-p 00000000 00:00 0
7f1c2e000000-7f1c2e100000 r-xp 00000000 08:01 4412 /opt/nccl/lib/libnccl.so.2.18.3 (deleted)
7ffd1a000000-7ffd1a021000 rw-p 00000000 00:00 0                          [stack]
"""


def test_maps_parsing_lists_each_shared_object_once() -> None:
    """Anonymous mappings, the executable and [stack] are left out; a library mapped twice is listed once."""
    assert shared_objects_in_maps(RECORDED_MAPS) == [
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.0.0",
        "/srv/venv/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12",
        "/srv/venv/lib/python3.11/site-packages/torch/lib/libgomp.so.1",
        "/opt/nccl/lib/libnccl.so.2.18.3",
    ]


@pytest.mark.parametrize(("dists", "expected"), [
    pytest.param([["nvidia-cudnn-cu12", "9.1.0.70"], ["nvidia-cublas-cu12", "12.4.5.8"],
                  ["nvidia-nccl-cu12", "2.21.5"]],
                 [("cudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.0.0"),
                  ("nccl", "/opt/nccl/lib/libnccl.so.2.18.3")],
                 id="cudnn and nccl from outside their wheels"),
    pytest.param([["nvidia-cublas-cu12", "12.4.5.8"]], [], id="no cudnn or nccl wheel: nothing to compare"),
])
def test_loaded_outside_wheels_from_recorded_maps(dists: list[list[str]], expected: list[tuple[str, str]]) -> None:
    """Libraries mapped from outside the nvidia-* wheels are reported only where that library's wheel is installed."""
    facts = build_facts(dists=[dist_dict("torch", "2.5.1"), *(dist_dict(n, v) for n, v in dists)],
                        torch=torch_dict(),
                        probes={"loaded-libraries": {"status": "ok", "details": {
                            "libraries": shared_objects_in_maps(RECORDED_MAPS)}}})
    items = loaded_outside_wheels(facts)
    assert items is not None
    assert [(i["library"], i["path"]) for i in items] == expected


def test_loaded_outside_wheels_is_unknown_without_the_probe() -> None:
    """A CUDA torch without the probe's answer (--static, or not Linux) is unknown, not clean."""
    facts = build_facts(dists=[dist_dict("torch", "2.5.1"), dist_dict("nvidia-cudnn-cu12", "9.1.0.70")],
                        torch=torch_dict())
    assert loaded_outside_wheels(facts) is None


@linux
@pytest.mark.parametrize(("conda_version", "via"), [("GLIBCXX_3.4.99", "conda"), ("GLIBCXX_3.4.1", "system")])
def test_conda_environment_takes_the_newer_libstdcxx(tmp_path: Path, conda_version: str, via: str) -> None:
    """In a conda environment the newer of its own and the system's libstdc++ is the provider: which one a process
    holds depends on what it imports first, and a finding must not."""
    from test_elf import _elf

    if native_scan._provider(FileCache(None, ""), f"/usr/lib/{native_scan._triple()}", "system") is None:
        pytest.skip("no system libstdc++.so.6 in /usr/lib/<triple>")
    prefix = tmp_path / "env"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "lib" / "libstdc++.so.6").write_bytes(_elf({}, ["GLIBCXX_3.4", conda_version, "CXXABI_1.3"]))
    facts = build_facts(python={"conda": True, "prefix": str(prefix)})
    native = collect_native(facts, {}, use_cache=False)
    assert native.libstdcxx is not None and native.libstdcxx.via == via


@linux
def test_fifo_record_is_not_read(tmp_path: Path) -> None:
    """A RECORD or WHEEL that is a FIFO is skipped (opening it would block the check), like a missing one."""
    import os

    site = _site(tmp_path)
    facts = _facts(site)
    info = site / "extpkg-1.0.dist-info"
    for name in ("RECORD", "WHEEL"):
        (info / name).unlink()
        os.mkfifo(info / name)
    native = collect_native(facts, {}, use_cache=False)
    assert (native.needs, native.wheel_floors, native.scanned_files) == ((), (), 0)


@pytest.mark.parametrize(("section", "value", "key"), [
    pytest.param("toolchain", {"cuda_home": {"source": "somewhere", "path": "/x", "exists": True, "nvcc": True}},
                 "toolchain.cuda_home.source", id="unknown toolkit source"),
    pytest.param("toolchain", {"gcc": {"version": "12"}}, "toolchain.gcc.path", id="gcc without path"),
    pytest.param("native", {"needs": "GLIBCXX_3.4.30"}, "native.needs", id="needs not a list"),
    pytest.param("native", {"windows_dlls": {"msvcp140.dll": "yes"}}, "native.windows_dlls", id="dll not a flag"),
])
def test_malformed_sections_are_one_clear_error(section: str, value: object, key: str) -> None:
    """A malformed toolchain or native section is one FactsError naming the file and the key."""
    from _fakes import facts_dict

    from envcheck.errors import FactsError

    data = {**facts_dict(), section: value}
    with pytest.raises(FactsError) as caught:
        Facts.from_dict(data, file="env.json")
    assert "env.json" in str(caught.value) and key in str(caught.value)

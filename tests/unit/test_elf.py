"""The ELF version reader: real shared objects of this machine, synthetic files of both widths and byte orders, and
malformed files, which must read as None rather than raise."""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

import pytest

from envcheck.sources.live.elf import version_definitions, version_needs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF files are Linux's")

_VERNEED, _VERDEF, _STRTAB = 0x6FFFFFFE, 0x6FFFFFFD, 3


def _elf(needs: dict[str, list[str]], defines: list[str], *, wide: bool = True, little: bool = True) -> bytes:
    """A minimal ELF file with a string table, a .gnu.version_r and a .gnu.version_d section."""
    end = "<" if little else ">"
    strings = bytearray(b"\0")

    def name(text: str) -> int:
        offset = len(strings)
        strings.extend(text.encode() + b"\0")
        return offset

    verneed = bytearray()
    files = list(needs.items())
    for i, (library, versions) in enumerate(files):
        aux = bytearray()
        for j, version in enumerate(versions):
            aux += struct.pack(end + "IHHII", 0, 0, 0, name(version), 16 if j < len(versions) - 1 else 0)
        size = 16 + len(aux)
        verneed += struct.pack(end + "HHIII", 1, len(versions), name(library), 16,
                               size if i < len(files) - 1 else 0) + aux
    verdef = bytearray()
    for i, version in enumerate(["libself.so", *defines]):
        flags = 1 if i == 0 else 0  # VER_FLG_BASE: the file's own name
        verdef += struct.pack(end + "HHHHIII", 1, flags, i + 1, 1, 0, 20, 28 if i < len(defines) else 0)
        verdef += struct.pack(end + "II", name(version), 0)
    header_size, entry_size = (64, 64) if wide else (52, 40)
    body = bytes(strings) + bytes(verneed) + bytes(verdef)
    offsets = [header_size, header_size + len(strings), header_size + len(strings) + len(verneed)]
    sections = [(0, 0, 0, 0, 0), (_STRTAB, offsets[0], len(strings), 0, 0),
                (_VERNEED, offsets[1], len(verneed), 1, len(files)),
                (_VERDEF, offsets[2], len(verdef), 1, len(defines) + 1)]
    shoff = header_size + len(body)
    ident = b"\x7fELF" + bytes([2 if wide else 1, 1 if little else 2, 1]) + bytes(9)
    if wide:
        header = ident + struct.pack(end + "HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, header_size, 0, 0,
                                     entry_size, len(sections), 0)
        table = b"".join(struct.pack(end + "IIQQQQIIQQ", 0, k, 0, 0, o, s, link, info, 1, 0)
                         for k, o, s, link, info in sections)
    else:
        header = ident + struct.pack(end + "HHIIIIIHHHHHH", 3, 3, 1, 0, 0, shoff, 0, header_size, 0, 0,
                                     entry_size, len(sections), 0)
        table = b"".join(struct.pack(end + "IIIIIIIIII", 0, k, 0, 0, o, s, link, info, 1, 0)
                         for k, o, s, link, info in sections)
    return header + body + table


@pytest.mark.parametrize(("wide", "little"), [(True, True), (False, True), (True, False), (False, False)],
                         ids=["elf64-le", "elf32-le", "elf64-be", "elf32-be"])
def test_synthetic_needs_and_definitions(tmp_path: Path, wide: bool, little: bool) -> None:
    """Needed versions per library and defined versions (without the file's own name) are read in any layout."""
    path = tmp_path / "lib.so"
    path.write_bytes(_elf({"libstdc++.so.6": ["GLIBCXX_3.4.30", "CXXABI_1.3.13"], "libc.so.6": ["GLIBC_2.34"]},
                          ["GLIBCXX_3.4", "GLIBCXX_3.4.29"], wide=wide, little=little))
    assert version_needs(str(path)) == {"libstdc++.so.6": ["GLIBCXX_3.4.30", "CXXABI_1.3.13"],
                                        "libc.so.6": ["GLIBC_2.34"]}
    assert version_definitions(str(path)) == ["GLIBCXX_3.4", "GLIBCXX_3.4.29"]


def test_real_extension_module_needs_glibc() -> None:
    """A compiled module of this interpreter's standard library needs GLIBC_2.x symbol versions from libc."""
    import _ctypes

    if not _ctypes.__file__.endswith(".so"):
        pytest.skip("this Python's _ctypes is built in")
    needs = version_needs(_ctypes.__file__)
    assert needs is not None
    assert any(v.startswith("GLIBC_2.") for v in needs.get("libc.so.6", []))


def test_real_libstdcxx_defines_its_versions() -> None:
    """The system's libstdc++ defines GLIBCXX_3.4 and CXXABI_1.3 and newer versions of both."""
    candidates = [p for p in ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib64/libstdc++.so.6",
                              "/usr/lib/aarch64-linux-gnu/libstdc++.so.6") if os.path.exists(p)]
    if not candidates:
        pytest.skip("no system libstdc++.so.6 in the usual folders")
    defined = version_definitions(candidates[0])
    assert defined is not None
    assert "GLIBCXX_3.4" in defined and "CXXABI_1.3" in defined
    assert any(v.startswith("GLIBCXX_3.4.") for v in defined)


@pytest.mark.parametrize("content", [
    pytest.param(b"", id="empty"),
    pytest.param(b"#!/bin/sh\necho hi\n", id="script"),
    pytest.param(b"\x7fELF\x02\x01\x01" + bytes(9), id="header-cut-short"),
    pytest.param(b"\x7fELF\x03\x01\x01" + bytes(100), id="bad-class"),
])
def test_not_elf_reads_as_none(tmp_path: Path, content: bytes) -> None:
    """A file that is not a readable ELF file is None for both readers, never an exception."""
    path = tmp_path / "x.so"
    path.write_bytes(content)
    assert version_needs(str(path)) is None
    assert version_definitions(str(path)) is None


def test_truncated_and_corrupted_sections_read_as_none(tmp_path: Path) -> None:
    """Cut anywhere, a file reads as None, or as the full answer where the cut spares every byte read (the unread
    tail of the last section header); a section table offset past the end reads as None."""
    data = _elf({"libc.so.6": ["GLIBC_2.17"]}, ["V_1"])
    path = tmp_path / "x.so"
    outcomes = set()
    for cut in range(len(data)):
        path.write_bytes(data[:cut])
        found = version_needs(str(path))
        assert found in (None, {"libc.so.6": ["GLIBC_2.17"]})
        outcomes.add(found is None)
    assert outcomes == {True, False}
    corrupt = bytearray(data)
    struct.pack_into("<Q", corrupt, 0x28, 10**12)  # e_shoff far beyond the file
    path.write_bytes(bytes(corrupt))
    assert version_needs(str(path)) is None


def test_fifo_and_missing_file_are_none(tmp_path: Path) -> None:
    """A FIFO is not opened (the open would block) and a missing file is None."""
    fifo = tmp_path / "pipe.so"
    os.mkfifo(fifo)
    assert version_needs(str(fifo)) is None
    assert version_needs(str(tmp_path / "absent.so")) is None


def test_file_without_version_sections_needs_nothing(tmp_path: Path) -> None:
    """An ELF file with no version sections needs nothing and defines nothing (not None: it was read)."""
    ident = b"\x7fELF\x02\x01\x01" + bytes(9)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, 64, 0, 64, 0, 0, 64, 1, 0)
    path = tmp_path / "plain.so"
    path.write_bytes(header + bytes(64))
    assert version_needs(str(path)) == {}
    assert version_definitions(str(path)) == []

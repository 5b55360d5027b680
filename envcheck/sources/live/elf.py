"""A small, bounded ELF reader: the symbol versions a shared object needs (.gnu.version_r) and defines
(.gnu.version_d), which is what the loader checks before `version GLIBCXX_3.4.30 not found`.

Only section headers and the two version sections are read, with seeks; string-table entries are read one at a
time, so a 500 MB libtorch costs a few small reads. Any malformed, truncated or foreign file yields None: this module
never raises on file contents.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import BinaryIO, TypeVar

_T = TypeVar("_T")  # what a reader of the version sections returns

_SHT_GNU_VERDEF = 0x6FFFFFFD
_SHT_GNU_VERNEED = 0x6FFFFFFE
_MAX_SECTIONS = 65535
_MAX_VERSION_SECTION = 1024 * 1024  # real ones are a few KB
_MAX_ENTRIES = 4096  # verneed/vernaux/verdef entries followed, at most
_MAX_NAME = 256


class _Malformed(Exception):
    """Internal: the file is not an ELF file this reader understands."""


class _Elf:
    def __init__(self, fh: BinaryIO, size: int) -> None:
        self.fh, self.size = fh, size
        ident = self._read(0, 16)
        if ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise _Malformed
        self.wide = ident[4] == 2
        self.end = "<" if ident[5] == 1 else ">"
        if self.wide:
            shoff, = self._unpack("Q", 0x28)
            shentsize, shnum, _ = self._unpack("HHH", 0x3A)
        else:
            shoff, = self._unpack("I", 0x20)
            shentsize, shnum, _ = self._unpack("HHH", 0x2E)
        if shoff == 0 or shentsize < (64 if self.wide else 40):
            raise _Malformed
        if shnum == 0:  # more sections than fit in e_shnum: the count is section 0's sh_size
            shnum = self._section(shoff, shentsize, 0)[2]
        if shnum > _MAX_SECTIONS:
            raise _Malformed
        self.sections = [self._section(shoff, shentsize, i) for i in range(shnum)]

    def _read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise _Malformed
        self.fh.seek(offset)
        data = self.fh.read(length)
        if len(data) != length:
            raise _Malformed
        return data

    def _unpack(self, fmt: str, offset: int) -> tuple[int, ...]:
        full = self.end + fmt
        return struct.unpack(full, self._read(offset, struct.calcsize(full)))

    def _section(self, shoff: int, shentsize: int, index: int) -> tuple[int, int, int, int, int]:
        """(type, offset, size, link, info) of section `index`."""
        base = shoff + index * shentsize
        if self.wide:
            _, kind, _, _, offset, size, link, info = self._unpack("IIQQQQII", base)
        else:
            _, kind, _, _, offset, size, link, info = self._unpack("IIIIIIII", base)
        return kind, offset, size, link, info

    def string(self, table: int, offset: int) -> str:
        if not 0 <= table < len(self.sections):
            raise _Malformed
        _, start, size, _, _ = self.sections[table]
        if offset >= size:
            raise _Malformed
        raw = self._read(start + offset, min(_MAX_NAME, size - offset, self.size - start - offset))
        return raw.split(b"\0", 1)[0].decode("ascii", "replace")

    def of_type(self, kind: int) -> tuple[int, int, int, int] | None:
        for section in self.sections:
            if section[0] == kind:
                if section[2] > _MAX_VERSION_SECTION:
                    raise _Malformed
                return section[1:]
        return None

    def needs(self) -> dict[str, list[str]]:
        found = self.of_type(_SHT_GNU_VERNEED)
        out: dict[str, list[str]] = {}
        if found is None:
            return out
        offset, size, link, count = found
        data = self._read(offset, size)
        at, seen = 0, 0
        for _ in range(min(count or _MAX_ENTRIES, _MAX_ENTRIES)):
            if at + 16 > len(data):
                raise _Malformed
            _, cnt, file, aux, nxt = struct.unpack_from(self.end + "HHIII", data, at)
            names = out.setdefault(self.string(link, file), [])
            aux_at = at + aux
            for _ in range(cnt):
                seen += 1
                if seen > _MAX_ENTRIES or aux_at + 16 > len(data):
                    raise _Malformed
                _, _, _, name, aux_next = struct.unpack_from(self.end + "IHHII", data, aux_at)
                names.append(self.string(link, name))
                if aux_next == 0:
                    break
                aux_at += aux_next
            if nxt == 0:
                break
            at += nxt
        return out

    def defines(self) -> list[str]:
        found = self.of_type(_SHT_GNU_VERDEF)
        out: list[str] = []
        if found is None:
            return out
        offset, size, link, count = found
        data = self._read(offset, size)
        at = 0
        for _ in range(min(count or _MAX_ENTRIES, _MAX_ENTRIES)):
            if at + 20 > len(data):
                raise _Malformed
            _, flags, _, cnt, _, aux, nxt = struct.unpack_from(self.end + "HHHHIII", data, at)
            if cnt and at + aux + 8 <= len(data) and not flags & 0x1:  # VER_FLG_BASE names the file itself
                name, = struct.unpack_from(self.end + "I", data, at + aux)
                out.append(self.string(link, name))
            if nxt == 0:
                break
            at += nxt
        return out


def _open(path: str) -> tuple[BinaryIO, int] | None:
    import stat
    from pathlib import Path

    try:
        st = Path(path).stat()
        if not stat.S_ISREG(st.st_mode):
            return None  # a FIFO would block the open, a device would never end
        return Path(path).open("rb"), st.st_size
    except OSError:
        return None


def _read_elf(path: str, read: Callable[[_Elf], _T]) -> _T | None:
    """`read` applied to the ELF file at `path`; None when it is not a readable ELF file."""
    opened = _open(path)
    if opened is None:
        return None
    fh, size = opened
    try:
        return read(_Elf(fh, size))
    except (_Malformed, OSError, struct.error):
        return None
    finally:
        fh.close()


def version_needs(path: str) -> dict[str, list[str]] | None:
    """Library file name -> the symbol versions `path` needs from it ({"libstdc++.so.6": ["GLIBCXX_3.4.30", ...]});
    {} for an ELF file that needs none; None for a file that is not a readable ELF file."""
    return _read_elf(path, _Elf.needs)


def version_definitions(path: str) -> list[str] | None:
    """The symbol versions `path` defines (libstdc++.so.6: "GLIBCXX_3.4", ..., "CXXABI_1.3.13"); None when it is
    not a readable ELF file."""
    return _read_elf(path, _Elf.defines)

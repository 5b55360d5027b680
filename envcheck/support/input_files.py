"""The one way envcheck reads an input file: a regular file only, of bounded size, UTF-8, parsed with bounded depth.

Every reader of user-supplied text goes through here (--facts, --config and pyproject.toml, rule files and their
data tables, fleet snapshots, the foreign collector's output), so each class of bad input is refused the same way,
with one line naming the file (and the key, for depth):

- not a regular file (a directory, a FIFO, /dev/zero, a socket): refused at once, never waited on or read forever;
  the file is opened with O_NONBLOCK, so opening a FIFO that has no writer does not block either;
- larger than the caller's bound: refused before reading (and a file that grows while read is cut at the bound);
- not UTF-8 (UTF-16 or UTF-32, NUL bytes, an undecodable byte): the first bad byte's line is named. A UTF-8 byte
  order mark is skipped (RFC 8259 lets a JSON reader ignore it; Windows editors write it);
- nested deeper than MAX_DEPTH (arrays and tables in JSON or TOML): the parsers recurse, so without a bound a few
  thousand `[` end in RecursionError; the key where the limit was passed is named. TOML is scanned for its depth
  before it is parsed (support/toml.py), since tomllib's cost grows with the square of a dotted key's depth.

A file name longer than MAX_NAME characters is shown without its middle (`shown`): the error line is clipped as a
whole, and the reason after the name ("cannot be read (File name too long)") must stay on it.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envcheck.errors import EnvcheckError
from envcheck.support import toml

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NAME", "InputError", "load_json", "load_toml", "loads_json", "read_text",
           "shown"]

MAX_BYTES = 64 * 1024 * 1024  # a snapshot of a venv with 10,000 distributions is about 10 MB
MAX_DEPTH = toml.MAX_DEPTH  # the deepest real input (a rule's condition tree inside its file) is about 12 levels
MAX_NAME = 200  # characters of a file name in an error message

ErrorFactory = Callable[[str, str], EnvcheckError]


class InputError(EnvcheckError):
    """An input file that cannot be read as text: names the file (and the key, when one is known)."""

    def __init__(self, file: str, message: str) -> None:
        self.file = file
        self.detail = message
        super().__init__(f"{file}: {message}")


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
_UTF16_32 = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF16_LE, "UTF-16"),
             (codecs.BOM_UTF16_BE, "UTF-16"))


def shown(file: str) -> str:
    """`file` as an error message names it: whole, or its start and its end (where the file's own name is) with
    how much was left out between them."""
    if len(file) <= MAX_NAME:
        return file
    keep = (MAX_NAME - 30) // 2
    return f"{file[:keep]}…({len(file) - 2 * keep:,} characters)…{file[-keep:]}"


def _naming(error: ErrorFactory) -> ErrorFactory:
    """`error`, given the file as `shown` names it."""
    return lambda file, message: error(shown(file), message)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: str | os.PathLike[str], *, error: ErrorFactory = InputError, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; anything else raises `error(file, why)`."""
    file, error = os.fsdecode(path), _naming(error)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        # stat first: on systems where O_NONBLOCK does not exist, opening a FIFO would still wait for a writer.
        mode = Path(file).stat().st_mode
        if not stat.S_ISREG(mode):
            raise error(file, f"is {_kind(mode)}, not a regular file")
        fd = os.open(file, flags)
    except FileNotFoundError:
        raise error(file, "no such file") from None
    except OSError as exc:
        raise error(file, f"cannot be read ({exc.strerror or exc})") from None
    except ValueError:  # a NUL character in the path
        raise error(file, "is not a valid path") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # replaced between the stat and the open
            raise error(file, f"is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise error(file, f"is {st.st_size:,} bytes, more than the {limit:,} this input may have")
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise error(file, f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise error(file, f"is more than the {limit:,} bytes this input may have")
    return data


def decode(data: bytes, file: str, *, error: ErrorFactory = InputError) -> str:
    """`data` as UTF-8 text (a leading UTF-8 byte order mark dropped); anything else is one line naming `file`."""
    error = _naming(error)
    for bom, name in _UTF16_32:
        if data.startswith(bom):
            raise error(file, f"is {name} encoded; save it as UTF-8")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(file, f"is not UTF-8 text: byte 0x{data[exc.start]:02x} on line {line} cannot be decoded; "
                          "save it as UTF-8") from None
    if "\x00" in text:  # UTF-16 without a byte order mark decodes as UTF-8 full of NULs
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise error(file, f"is not a text file: a NUL byte on line {line} (UTF-16 without a byte order mark?)")
    return text


def read_text(path: str | os.PathLike[str], *, error: ErrorFactory = InputError, limit: int = MAX_BYTES) -> str:
    """The UTF-8 text of the regular file `path` (see the module docstring for what is refused and how)."""
    return decode(read_bytes(path, error=error, limit=limit), os.fsdecode(path), error=error)


def _exceeds(value: object, limit: int) -> bool:
    """Whether any value in `value` is nested deeper than `limit`: too_deep's question without its key, cheap
    enough for a 100 MB fleet merge (only containers are visited and no key is built)."""
    stack: list[tuple[dict[Any, object] | list[object], int]] = []
    if isinstance(value, (dict, list)):
        stack.append((value, 0))
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if not children:
            continue
        if depth >= limit:  # a member of this container sits at depth + 1, past the bound
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)) and child)
    return False


def too_deep(value: object, limit: int = MAX_DEPTH) -> str | None:
    """The dotted key of the first value nested deeper than `limit` in parsed JSON or TOML, else None.

    Iterative, so that checking a deep value cannot itself overflow the stack."""
    if not isinstance(value, (dict, list)) or not _exceeds(value, limit):
        return None if limit >= 0 else "(top level)"
    stack: list[tuple[object, str, int]] = [(value, "", 0)]
    while stack:
        item, key, depth = stack.pop()
        if depth > limit:
            return key or "(top level)"
        if isinstance(item, dict):
            stack.extend((v, f"{key}.{k}" if key else str(k), depth + 1) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{key}[{i}]", depth + 1) for i, v in enumerate(item))
    return None


def _deep_key(key: str) -> str:
    # The key of a value nested past the bound is itself long; its head says where, its length says how deep.
    return key if len(key) <= 80 else f"{key[:80]}…"


def loads_toml(text: str, file: str, *, error: ErrorFactory = InputError) -> dict[str, Any]:
    """Parsed TOML `text` from `file`, nested at most MAX_DEPTH deep."""
    error = _naming(error)
    try:
        data: dict[str, Any] = toml.loads(text)
    except toml.TooDeep as exc:  # refused before parsing: tomllib's cost grows with the square of the depth
        raise error(file, str(exc)) from None
    except toml.TOMLDecodeError as exc:
        raise error(file, f"invalid TOML: {exc}") from None
    except RecursionError:
        raise error(file, f"invalid TOML: arrays or tables nested more than {MAX_DEPTH} deep") from None
    except ValueError as exc:  # int()'s digit limit on an integer thousands of digits long
        raise error(file, f"invalid TOML: {_first_line(exc)}") from None
    deep = too_deep(data)
    if deep is not None:
        raise error(file, f"key '{_deep_key(deep)}': nested more than {MAX_DEPTH} deep")
    return data


def load_toml(path: str | os.PathLike[str], *, error: ErrorFactory = InputError,
              limit: int = MAX_BYTES) -> dict[str, Any]:
    """The parsed TOML file `path`: read_text's checks, then loads_toml's."""
    return loads_toml(read_text(path, error=error, limit=limit), os.fsdecode(path), error=error)


def loads_json(text: str, file: str, *, error: ErrorFactory = InputError) -> Any:
    """Parsed JSON `text` from `file`, nested at most MAX_DEPTH deep; numbers too long for int() are refused."""
    error = _naming(error)
    try:
        data = json.loads(text)
    except RecursionError:
        raise error(file, f"is not JSON: arrays or objects nested more than {MAX_DEPTH} deep") from None
    except ValueError as exc:  # JSONDecodeError, and int()'s digit limit on a number thousands of digits long
        raise error(file, f"is not JSON ({_first_line(exc)})") from None
    deep = too_deep(data)
    if deep is not None:
        raise error(file, f"key '{_deep_key(deep)}': nested more than {MAX_DEPTH} deep")
    return data


def load_json(path: str | os.PathLike[str], *, error: ErrorFactory = InputError, limit: int = MAX_BYTES) -> Any:
    """The parsed JSON file `path`: read_text's checks, then loads_json's."""
    return loads_json(read_text(path, error=error, limit=limit), os.fsdecode(path), error=error)


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [""])[0][:200]


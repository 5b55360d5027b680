"""envcheck's cache on disk: where it lives, and entries that are verified before anything in them is trusted.

Four things are cached there, each keyed so that any change misses: probe results
(envcheck.sources.probes.results_cache), the validated rule pack (envcheck.rules.rule_pack.load), each distribution's
parsed metadata (the collector) and the requirement walk's result (envcheck.derived.walk_memo, through `SignedMemo`:
signed JSON, keyed by a digest of its inputs).

Every entry is data, never code: the rule pack is plain JSON naming only envcheck's and packaging's own data classes
(envcheck/cache/pack_data.py), the others JSON. No pickle: the key sits beside the entries, and restoring a whole
cache folder (CI's `actions/cache` of ~/.cache) brings both, so a signature cannot make running an entry safe. An
entry is believed only when all of these hold:
- the directory is the current user's, and neither group nor others can write to it (created 0700);
- the entry carries an HMAC-SHA256 made with a per-user random key kept 0600 in that directory, over the entry's
  cache key and its bytes: an entry copied from another machine or account, restored from a CI cache, or written
  by anything but this user's envcheck fails the check and is ignored (and rewritten), never loaded.
The distributions' metadata is plain JSON (the collector runs inside the checked interpreter with the standard
library only) and is validated field by field where it is read.

The cache never lives inside the checked environment: `usable_dir` refuses a directory in or under any Python
environment (a folder with a pyvenv.cfg or conda-meta above it, or envcheck's own prefix), so an ENVCHECK_CACHE_DIR or
XDG_CACHE_HOME pointing into a venv caches nothing; the collector also refuses one under the checked prefix.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sys

TYPE_CHECKING = False  # not typing's: a replayed static check reads its entry through here, without pathlib
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

__all__ = ["SignedMemo", "cache_dir", "inside", "load_signed", "store_signed", "usable_dir"]

_MAGIC = b"envcheck-signed-1\n"
_KEY_FILE = "key"
_KEY_BYTES = 32


def _cache_folder() -> str:
    """cache_dir() as a string: the signed entries are read without pathlib (a replayed check imports nothing it can
    avoid; envcheck/pipeline/replay.py)."""
    override = os.environ.get("ENVCHECK_CACHE_DIR")
    if override:
        return os.path.normpath(override)
    home = os.path.expanduser("~")  # noqa: PTH111 - Path.home() without pathlib
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")  # noqa: PTH118
    elif sys.platform == "darwin":
        base = os.path.join(home, "Library", "Caches")  # noqa: PTH118
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")  # noqa: PTH118
    return os.path.join(os.path.normpath(base), "envcheck")  # noqa: PTH118


def cache_dir() -> Path:
    """ENVCHECK_CACHE_DIR, else the platform's user cache directory, + /envcheck."""
    from pathlib import Path

    return Path(_cache_folder())


def inside(path: str | os.PathLike[str], prefixes: Iterable[str]) -> bool:
    """Whether `path` is one of `prefixes` or below one (both resolved: a symlinked venv counts)."""
    real = os.path.realpath(path)
    for prefix in prefixes:
        top = os.path.realpath(prefix)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def _in_an_environment(directory: str) -> bool:
    """Whether `directory` or a folder above it is a Python environment (a venv's pyvenv.cfg, a conda prefix's
    conda-meta): whichever interpreter is checked, its environment is never where the cache goes."""
    folder = directory
    while True:
        if os.path.isfile(os.path.join(folder, "pyvenv.cfg")) \
                or os.path.isdir(os.path.join(folder, "conda-meta")):  # noqa: PTH112, PTH113, PTH118
            return True
        parent = os.path.dirname(folder)  # noqa: PTH120
        if parent == folder:
            return False
        folder = parent


def _private(st: os.stat_result) -> bool:
    """Owned by the current user and not writable by group or others (POSIX; Windows has per-user profiles)."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return True
    return bool(st.st_uid == getuid() and not st.st_mode & 0o022)


def _usable(avoid: Iterable[str], problems: list[str] | None = None) -> str | None:
    directory = _cache_folder()
    try:
        if inside(directory, [*avoid, sys.prefix]) or _in_an_environment(os.path.realpath(directory)):
            _tell(problems, f"the cache folder {directory} is inside a Python environment: the cache was not used")
            return None
        os.makedirs(directory, mode=0o700, exist_ok=True)  # noqa: PTH103 - the leaf 0700, as Path.mkdir does
        if _private(os.stat(directory)):  # noqa: PTH116
            return directory
        _tell(problems, f"the cache folder {directory} is not this user's or is writable by others: the cache "
                        "was not used")
        return None
    except OSError as exc:
        _tell(problems, f"the cache folder {directory} cannot be used ({exc.strerror or exc})")
        return None


def usable_dir(avoid: Iterable[str] = ()) -> Path | None:
    """The cache directory, created 0700 if need be, or None when it must not be used: inside one of the `avoid`
    prefixes (the checked environment), not the current user's, writable by others, or not creatable."""
    directory = _usable(avoid)
    if directory is None:
        return None
    from pathlib import Path

    return Path(directory)


def _key(directory: str) -> bytes | None:
    """The per-user HMAC key in `directory`, made on first use; None if it cannot be trusted or made."""
    path = os.path.join(directory, _KEY_FILE)  # noqa: PTH118
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError:
            return None  # another process made it meanwhile, or the directory is read-only: no caching this time
        with os.fdopen(fd, "wb") as fh:
            secret = os.urandom(_KEY_BYTES)
            fh.write(secret)
        return secret
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not _private(os.fstat(fh.fileno())) or os.fstat(fh.fileno()).st_mode & 0o044:
            return None
        secret = fh.read(_KEY_BYTES + 1)
    return secret if len(secret) == _KEY_BYTES else None


def _mac(secret: bytes, name: str, stamp: str, payload: bytes) -> bytes:
    return hmac.new(secret, b"\0".join([name.encode(), stamp.encode(), payload]), hashlib.sha256).digest()


def _entry(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name}.signed")  # noqa: PTH118


def load_signed(name: str, stamp: str, avoid: Iterable[str] = (), problems: list[str] | None = None) -> bytes | None:
    """The payload stored as `name` for `stamp` (a digest of everything it depends on), if its HMAC verifies;
    None when absent, stale, corrupt, foreign or unreadable. `problems`, when given, is told in words why an entry
    that is there was not believed, or why the cache folder was not used: a stale entry (another stamp) is no
    problem, an entry whose signature fails is (edited, or written by another account or machine)."""
    directory = _usable(avoid, problems)
    if directory is None:
        return None
    secret = _key(directory)
    if secret is None:
        _tell(problems, f"the cache key in {directory} is not private to this user: the cache was not used")
        return None
    path = _entry(directory, name)
    try:
        with open(path, "rb") as fh:  # noqa: PTH123
            if not _private(os.fstat(fh.fileno())):
                _tell(problems, f"the cache entry {path} is writable by others or not this user's: ignored")
                return None
            data = fh.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _tell(problems, f"the cache entry {path} cannot be read ({exc.strerror or exc}): ignored")
        return None
    head = len(_MAGIC)
    stamp_end = data.find(b"\n", head)
    if not data.startswith(_MAGIC) or stamp_end < 0 or len(data) < stamp_end + 1 + 32:
        _tell(problems, f"the cache entry {path} is not a signed entry: ignored, and rewritten")
        return None
    if data[head:stamp_end] != stamp.encode():
        return None  # stale: written for other inputs
    mac, payload = data[stamp_end + 1:stamp_end + 33], data[stamp_end + 33:]
    if not hmac.compare_digest(mac, _mac(secret, name, stamp, payload)):
        _tell(problems, f"the cache entry {path} failed its signature check (edited, or written by another "
                        "account or machine): ignored, and rewritten")
        return None
    return payload


def _tell(problems: list[str] | None, problem: str) -> None:
    if problems is not None:
        problems.append(problem)


def store_signed(name: str, stamp: str, payload: bytes, avoid: Iterable[str] = ()) -> None:
    """Store `payload` as `name` for `stamp`, signed, atomically, replacing the previous entry. Failing to write is
    not an error: the next run recomputes."""
    directory = _usable(avoid)
    if directory is None:
        return
    secret = _key(directory)
    if secret is None:
        return
    data = b"".join([_MAGIC, stamp.encode(), b"\n", _mac(secret, name, stamp, payload), payload])
    import tempfile  # only when writing: a replayed check reads its entry and writes nothing

    try:
        with tempfile.NamedTemporaryFile("wb", dir=directory, delete=False, suffix=".tmp") as fh:
            fh.write(data)
        os.replace(fh.name, _entry(directory, name))  # noqa: PTH105 - no pathlib here (see the imports)
    except OSError:
        pass


class SignedMemo:
    """`load_signed` / `store_signed` as a memo for derived results (envcheck.derived.walk_memo.Memo), never in or
    under the `avoid` prefixes (the checked environment)."""

    def __init__(self, avoid: Iterable[str] = ()) -> None:
        self._avoid = tuple(avoid)

    def load(self, name: str, key: str) -> bytes | None:
        return load_signed(name, key, self._avoid)

    def store(self, name: str, key: str, payload: bytes) -> None:
        store_signed(name, key, payload, self._avoid)

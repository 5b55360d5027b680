"""A repeated check answered from its last run while nothing that run read has changed.

pre-commit runs the static check on every commit and install scripts on every install, nearly always on an
environment that has not changed since the last run; most of a run's cost is importing the rules, the model and
packaging (bench/README.md). So a run of a plain form (`envcheck`, `envcheck --static`: envcheck/cli/plain_cli.py)
records what it read, and the next run of that form with the same interpreter in the same folder writes the recorded
report and exit code again when all of these still hold, and otherwise checks afresh (and records again):

- the same envcheck, interpreter, working directory, command, standard streams (a terminal or not, encodings) and
  environment variables: all of them but the few that shells and terminals change per session and git and
  pre-commit per hook call (`_VOLATILE`; `git commit -a` names a new index file each time);
- every answer the run got from the file system outside the collection below: each `os.stat` and `os.lstat` (a
  missing path stays missing; a regular file keeps its device, inode, size, mtime, mode and owner; anything else
  its device, inode, mode and owner; a symbolic link its target), each `os.access`, each file opened for reading
  (as `os.stat` sees it when opened, and still sees it when the run ends) and each folder listed (its inode and
  mtime: an entry added, removed or renamed changes the mtime). Reads are seen through the interpreter's audit
  hooks (`open`, `os.listdir`, `os.scandir`: imports included) and through `os.stat`, `os.lstat` and `os.access`,
  wrapped for the length of the run; envcheck's own entries in its cache folder are not witnessed (each is
  verified where it is read), anything else there is;
- the rule pack's stamp (envcheck/cache/pack_stamp.py: envcheck's code and every rule and table file);
- the collector's answer for the checked interpreter (in this process or another), NVML's (on a machine without
  NVIDIA's driver: that its library still does not load) and the network interfaces': read again and compared by
  digest. These go through another process, a driver library and system calls that no hook sees, so their own
  reads are not witnessed but repeated.

Not witnessed: what the C library reads for itself (a group's name for the owner of /dev/kfd), and a file changed
in place with its size and mtime put back. Both also go unnoticed by the per-file caches this one sits on.

Runs are recorded only on CPython 3.11 to 3.13 on POSIX, where every stat goes through the os module's functions
(3.10's pathlib holds its own reference to os.stat). A run is not recorded when its probes ran (their outcome is
evidence of that run; with results from the probe cache, whose file is witnessed, it is), nor when anything in it is
unusual: a file written outside envcheck's cache folder (a first run that writes bytecode), a read under /proc
(answers that differ per process), an input that answered differently twice or changed before the run ended, a
read that cannot be named (a descriptor), output on standard error (the probes' status line on a terminal among
it), an exit other than 0 or 1. Entries are kept through envcheck.cache.signed: signed with the user's key, in the
user's cache folder, never in the checked environment, one per interpreter, working directory and form; one that fails
its signature or is not exactly what `Recording.store` writes is ignored. A replay writes nothing. `envcheck
--no-cache` always checks afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat as stat_module
import sys
import threading

from envcheck.support.patterns import lazy
from envcheck.version import __version__

TYPE_CHECKING = False  # not typing's: a replay imports as little as it can (typing alone costs milliseconds)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from envcheck.facts.gpus import NvmlFacts
    from envcheck.facts.network import NetworkFacts

__all__ = ["Recording", "replayed"]

_FORMAT = 1  # bumped when an entry's shape or meaning changes
# Set per login, shell, terminal tab or editor window, and read by no rule: a replay must survive a new terminal.
_VOLATILE = frozenset({
    "_", "OLDPWD", "PWD", "SHLVL", "TERM_SESSION_ID", "WINDOWID", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_CLIENT",
    "SSH_CONNECTION", "SSH_TTY", "XDG_SESSION_ID", "TMUX_PANE", "GPG_TTY", "DBUS_SESSION_BUS_ADDRESS",
    "KITTY_WINDOW_ID", "KITTY_PID", "WEZTERM_PANE", "ITERM_SESSION_ID", "VSCODE_GIT_IPC_HANDLE",
    "VSCODE_IPC_HOOK_CLI", "VSCODE_GIT_ASKPASS_MAIN", "VSCODE_GIT_ASKPASS_NODE", "VSCODE_GIT_ASKPASS_EXTRA_ARGS",
})
_VOLATILE_PREFIXES = ("GIT_", "PRE_COMMIT_")  # a hook's git index, refs and message file: never read by a rule
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PER_PROCESS = ("/proc/",)
# The entries envcheck keeps in its cache folder, which it verifies where it reads them (envcheck.cache.signed's signed
# entries and key, the collector's and the native scan's per-file caches, temporary files). Anything else there is
# witnessed like any other read: the probe results, signed too (only running the probes tells whether they still
# hold, so their entry's disappearance must end the replay), and a project that happens to live in that folder.
_OWN_ENTRY = lazy(r"key|(?!probes-)[^/\\]+\.signed|(?:dists|native)-[0-9a-f]+\.json|[^/\\]+\.tmp")

# The recording of the run in progress, if any: the audit hook and the wrapped os functions report to it.
_active: Recording | None = None
_hook_installed = False


def _env_items() -> list[list[str]]:
    return sorted([k, v] for k, v in os.environ.items() if k not in _VOLATILE and not k.startswith(_VOLATILE_PREFIXES))


def _stream(stream: Any) -> list[Any]:
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        tty = None
    return [tty, getattr(stream, "encoding", None), getattr(stream, "errors", None)]


def _key(form: Sequence[str]) -> tuple[str, str]:
    """(entry name, stamp): the entry of this interpreter in this folder, and a digest of what must be the same
    for it to apply at all."""
    cwd = os.getcwd()  # noqa: PTH109 - a str, hashed
    where = json.dumps([sys.executable, cwd, list(form)])  # `envcheck` and `envcheck --static` keep one each
    name = "replay-" + hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    # ASCII JSON: every string, a lone surrogate from an undecodable name included, encodes.
    what = json.dumps([_FORMAT, __version__, sys.version, sys.executable, sys.prefix, cwd, list(form),
                       _env_items(), _stream(sys.stdout), _stream(sys.stderr)])
    return name, hashlib.sha256(what.encode("ascii")).hexdigest()


# --- what a path answers ------------------------------------------------------------------------------------------


# The os functions as they are before a recording wraps them: what a path answers is asked through these.
_stat, _lstat, _access, _readlink = os.stat, os.lstat, os.access, os.readlink


def _summary(st: os.stat_result, path: Any = None) -> list[Any]:
    """A stat answer as compared: device, inode, mode and owner; a regular file's size and mtime too; a symbolic
    link's target (`path` given: an lstat), since a link replaced by another may keep its inode."""
    regular = stat_module.S_ISREG(st.st_mode)
    out: list[Any] = [st.st_mode, st.st_dev, st.st_ino, st.st_uid, st.st_gid, st.st_size if regular else 0,
                      st.st_mtime_ns if regular else 0]
    if path is not None and stat_module.S_ISLNK(st.st_mode):
        try:
            out.append(os.fsdecode(_readlink(path)))
        except OSError:
            out.append(None)
    return out


def _observe(kind: str, path: str) -> Any:
    """What `path` answers now to the read of `kind`: "s" os.stat, "l" os.lstat, "o" opened (os.stat), "d" listed
    (os.stat: device, inode, mtime), "a<mode>" os.access. None for a path that cannot be stat'ed."""
    if kind.startswith("a"):
        return _access(path, int(kind[1:]))
    try:
        st = _lstat(path) if kind == "l" else _stat(path)
    except OSError:
        return None
    if kind == "d":
        return [st.st_dev, st.st_ino, st.st_mtime_ns]
    return _summary(st, path if kind == "l" else None)


def _digest(raw: dict[str, Any], nvml: list[Any], interfaces: tuple[str, ...] | None) -> str:
    text = json.dumps([raw, nvml, interfaces], sort_keys=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _nvml_answer(facts: NvmlFacts | None = None) -> list[Any]:
    """What NVML says, comparable across runs: why its library does not load here, else its facts (given, or read
    now). A machine without NVIDIA's driver answers without importing the bindings or building the model."""
    from envcheck.sources.live import nvml

    absent = nvml.without_library()
    if absent is not None:
        return ["absent", *absent]
    return ["facts", repr(facts if facts is not None else nvml.collect_nvml())]


# --- recording a run ----------------------------------------------------------------------------------------------


def _path_of(value: Any) -> str | None:
    if isinstance(value, int):
        return None
    try:
        path = os.fsdecode(os.fspath(value))
    except TypeError:
        return None
    # Nearly every path a check reads is absolute and already normal: abspath would return it unchanged, at a few
    # microseconds for each of some thousands of reads. Only an empty, "." or ".." component or a trailing slash
    # makes normpath change an absolute POSIX path.
    if (path[:1] == "/" and "//" not in path and "/./" not in path and "/../" not in path
            and not path.endswith(("/", "/.", "/.."))):
        return path
    return os.path.abspath(path)  # noqa: PTH100 - plain strings, many per run


def _audit(event: str, args: tuple[Any, ...]) -> None:
    recording = _active
    if recording is None or recording.pauses or event not in ("open", "os.listdir", "os.scandir"):
        return
    try:
        _audited(recording, event, args)
    except Exception as exc:  # noqa: BLE001 - an audit hook's exception would fail the read it audits
        recording.spoil(f"the recorder failed: {type(exc).__name__}")


def _audited(recording: Recording, event: str, args: tuple[Any, ...]) -> None:
    if event == "open":
        path, mode, flags = args
        if isinstance(path, int):
            return  # an open of a descriptor already opened (and audited) by name
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & _WRITE_FLAGS)
        recording.read("o", path, writing=writing)
    elif event in ("os.listdir", "os.scandir"):
        path = args[0] if args and args[0] is not None else "."
        if isinstance(path, int):
            recording.spoil("a folder listed through a descriptor")
            return
        recording.read("d", path)


def _wrapped_stat(original: Callable[..., os.stat_result], link: bool) -> Callable[..., os.stat_result]:
    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        recording = _active
        if recording is None or recording.pauses or args or kwargs.get("dir_fd") is not None:
            if recording is not None and not recording.pauses and (args or kwargs.get("dir_fd") is not None):
                recording.spoil("a stat relative to a descriptor")
            return original(path, *args, **kwargs)
        kind = "l" if link or not kwargs.get("follow_symlinks", True) else "s"
        try:
            result = original(path, **kwargs)
        except OSError:
            recording.note(kind, path, None)
            raise
        recording.note(kind, path, result)
        return result

    return stat


def _wrapped_access(original: Callable[..., bool]) -> Callable[..., bool]:
    def access(path: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
        result = original(path, mode, *args, **kwargs)
        recording = _active
        if recording is not None and not recording.pauses:
            if args or kwargs:
                recording.spoil("an access check with options")
            else:
                recording.note(f"a{int(mode)}", path, result)
        return result

    return access


class _WatchedStderr:
    """sys.stderr for the length of a recorded run: anything written there makes the run not worth replaying
    (a replay writes the report only)."""

    def __init__(self, stream: Any, recording: Recording) -> None:
        self._stream = stream
        self._recording = recording

    def write(self, text: str) -> int:
        if text:
            self._recording.spoil("output on standard error")
        return int(self._stream.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Paused:
    def __init__(self, recording: Recording) -> None:
        self._recording = recording

    def __enter__(self) -> None:
        self._recording.pauses += 1

    def __exit__(self, *_exc: object) -> None:
        self._recording.pauses -= 1


class Recording:
    """What one static check read, while it runs; `store` keeps it with the check's answer for the next run."""

    def __init__(self, form: Sequence[str], cache_dir: str) -> None:
        self.form = tuple(form)
        self.pauses = 0
        self.spoiled: str | None = None
        self._reads: dict[tuple[str, str], Any] = {}
        self._cache = frozenset({os.path.abspath(cache_dir), os.path.realpath(cache_dir)})  # noqa: PTH100
        self._skip_folders: frozenset[str] = frozenset()  # folders of the check's own (`ignore`)
        self._skip: tuple[str, ...] = ()  # and what is below them
        self._collected: dict[str, Any] | None = None
        self._saved: tuple[Any, Any, Any, Any] | None = None

    @classmethod
    def start(cls, form: Sequence[str]) -> Recording | None:
        """Begin recording this process's reads; None where nothing could be kept (no usable cache directory)."""
        global _active, _hook_installed  # the hooks are process-wide by nature
        from envcheck.cache.signed import usable_dir

        # Where every stat goes through the os module's functions (pathlib included): CPython 3.11 to 3.13 on POSIX.
        # Python 3.10's pathlib holds its own reference to os.stat, taken when it is imported.
        if not (3, 11) <= sys.version_info[:2] <= (3, 13) or os.name != "posix":
            return None
        directory = usable_dir()
        if directory is None or _active is not None:
            return None
        import shutil  # noqa: F401 - decides at import whether os.stat takes dir_fd; the wrapper must not change that

        recording = cls(form, str(directory))
        if not _hook_installed:  # an audit hook cannot be removed: one, idle while no run is recorded
            sys.addaudithook(_audit)
            _hook_installed = True
        recording._saved = (os.stat, os.lstat, os.access, sys.stderr)
        os.stat = _wrapped_stat(os.stat, link=False)
        os.lstat = _wrapped_stat(os.lstat, link=True)
        os.access = _wrapped_access(os.access)
        sys.stderr = _WatchedStderr(sys.stderr, recording)
        _active = recording
        return recording

    def stop(self) -> None:
        """Stop recording and put back what `start` replaced."""
        global _active
        if self._saved is not None:
            os.stat, os.lstat, os.access, sys.stderr = self._saved
            self._saved = None
        if _active is self:
            _active = None

    def paused(self) -> _Paused:
        """Reads in its `with` block are not witnessed: what they find is collected again and compared
        (`collected`)."""
        return _Paused(self)

    def ignore(self, folder: str | os.PathLike[str]) -> None:
        """Reads in and of `folder` are not witnessed: a folder of the check's own, made and removed by it (the probe
        child's), which holds nothing the report is made of."""
        path = os.path.abspath(os.fspath(folder))  # noqa: PTH100
        self._skip_folders = self._skip_folders | {path}
        self._skip = (*self._skip, path + os.sep)

    def spoil(self, why: str) -> None:
        if self.spoiled is None:
            self.spoiled = why

    def _own(self, name: str) -> bool:
        """Whether `name` is envcheck's own: its cache folder or an entry it keeps there (verified where it is read;
        the probe results excepted), or a folder of the check's own (`ignore`)."""
        if name in self._cache or name in self._skip_folders or name.startswith(self._skip):
            return True
        folder, _, base = name.rpartition(os.sep)
        return folder in self._cache and _OWN_ENTRY.fullmatch(base) is not None

    def note(self, kind: str, path: Any, result: os.stat_result | bool | None) -> None:
        """`read` of what a wrapped os function answered; whatever goes wrong here spoils the run, never the call."""
        try:
            answer = _summary(result, path if kind == "l" else None) if isinstance(result, os.stat_result) \
                else result
            self.read(kind, path, answer=answer)
        except Exception as exc:  # noqa: BLE001 - the check's own stat must not fail for the recorder's sake
            self.spoil(f"the recorder failed: {type(exc).__name__}")

    def read(self, kind: str, path: Any, *, answer: Any = None, writing: bool = False) -> None:
        """A read of `kind` (see `_observe`) of `path`, and its `answer` when the caller has it (a stat's, an access
        check's); an opened file or a listed folder is looked at now, before it is read, and again when the run is
        stored: an input that changed meanwhile makes the run not worth keeping."""
        name = _path_of(path)
        if name is None:
            self.spoil("a read that names no path")
            return
        if self._own(name):
            return
        if writing:
            self.spoil(f"a file written: {name}")
        elif name.startswith(_PER_PROCESS):
            self.spoil(f"a per-process file read: {name}")
        elif kind in ("o", "d"):
            if (kind, name) not in self._reads:
                self._reads[(kind, name)] = _observe(kind, name)
        elif self._reads.setdefault((kind, name), answer) != answer:
            self.spoil(f"{name} changed while it was read")

    def collected(self, python: str | None, request: dict[str, Any], raw: dict[str, Any], nvml: NvmlFacts,
                  network: NetworkFacts | None) -> None:
        """The collector's answer for `python` (None: this interpreter) to `request`, NVML's and the network's."""
        answer = _nvml_answer(nvml)
        if answer[0] == "absent" and (nvml.status, nvml.reason, nvml.devices) != (answer[1], answer[2], ()):
            self.spoil("NVML answered differently twice")
        interfaces = None if network is None else network.interfaces
        self._collected = {"python": python, "request": request, "digest": _digest(raw, answer, interfaces)}

    def store(self, text: str, code: int, rule_dirs: Sequence[str | os.PathLike[str]]) -> None:
        """Keep the run's answer and what it read, unless the run was unusual (see the module's docstring)."""
        self.stop()
        if self.spoiled is not None or self._collected is None or code not in (0, 1):
            return
        from envcheck.cache import signed
        from envcheck.cache.pack_stamp import pack_stamp

        dirs = [os.fspath(d) for d in rule_dirs]
        pack = pack_stamp(dirs)
        if pack is None:
            return
        witnesses = [[kind, path, answer] for (kind, path), answer in self._reads.items()]
        if any(_observe(kind, path) != answer for kind, path, answer in witnesses if kind in ("o", "d")):
            return  # an input changed while the check ran: the report may hold either state
        entry = {"format": _FORMAT, "text": text, "code": code, "pack": [dirs, pack], "collected": self._collected,
                 "witnesses": witnesses}
        name, stamp = _key(self.form)
        signed.store_signed(name, stamp, json.dumps(entry).encode("ascii"))


# --- replaying ----------------------------------------------------------------------------------------------------


def _entry(payload: bytes) -> dict[str, Any] | None:
    """The entry as `Recording.store` writes it, every field checked; None for anything else."""
    try:
        entry = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or set(entry) != {"format", "text", "code", "pack", "collected", "witnesses"}:
        return None
    pack, collected, witnesses = entry["pack"], entry["collected"], entry["witnesses"]
    if (entry["format"] != _FORMAT or not isinstance(entry["text"], str) or entry["code"] not in (0, 1)
            or not (isinstance(pack, list) and len(pack) == 2 and isinstance(pack[1], str)
                    and isinstance(pack[0], list) and all(isinstance(d, str) for d in pack[0]))
            or not (isinstance(collected, dict) and set(collected) == {"python", "request", "digest"}
                    and isinstance(collected["python"], (str, type(None))) and isinstance(collected["request"], dict)
                    and isinstance(collected["digest"], str))
            or not isinstance(witnesses, list)
            or not all(isinstance(w, list) and len(w) == 3 and isinstance(w[0], str) and isinstance(w[1], str)
                       for w in witnesses)):
        return None
    return entry


def _collected_digest(python: str | None, request: dict[str, Any]) -> str:
    from envcheck.sources.live.raw import collect_raw, interface_names

    box: list[list[Any]] = []
    worker = threading.Thread(target=lambda: box.append(_nvml_answer()), name="envcheck-nvml", daemon=True)
    worker.start()  # as in envcheck.sources.live.collect: NVML's start-up overlaps the collector
    raw = collect_raw(request, python)
    worker.join()
    return _digest(raw, box[0] if box else ["error"], interface_names())


def replayed(form: Sequence[str]) -> tuple[str, int] | None:
    """The report and exit code recorded for this check, if everything it read still answers the same; else None.
    Never raises: whatever goes wrong here, the check runs afresh."""
    try:
        from envcheck.cache import signed
        from envcheck.cache.pack_stamp import pack_stamp

        name, stamp = _key(form)
        payload = signed.load_signed(name, stamp)
        entry = None if payload is None else _entry(payload)
        if entry is None:
            return None
        if any(_observe(kind, path) != answer for kind, path, answer in entry["witnesses"]):
            return None
        dirs, pack = entry["pack"]
        if pack_stamp(dirs) != pack:
            return None
        collected = entry["collected"]
        if _collected_digest(collected["python"], collected["request"]) != collected["digest"]:
            return None
        return entry["text"], entry["code"]
    except Exception:  # noqa: BLE001 - a replay is only ever a shortcut; checking afresh is always right
        return None

"""Static fact collector. Standard library only; runs inside the interpreter being checked.

The same file serves two ways:
- in the envcheck process, `collect(request)` is called directly (the checked interpreter is envcheck's own);
- for `--python PATH`, its source is written to a file in a folder of envcheck's own and run as `PATH FILE` (so
  nothing of the working folder is on its sys.path: envcheck/sources/live/raw.py), and `main()` writes the facts to a
  file. envcheck need not be installed there, so this module imports nothing from envcheck and keeps to syntax that
  Python 3.8 accepts.

Principle: no third-party code runs. Distributions are read through `importlib.metadata` (files only), torch's build
comes from `torch/version.py` read as text, and modules are located with `PathFinder`, which never executes a
package's `__init__`. Every failure becomes a recorded problem, never an exception.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import platform
import re
import shutil
import stat
import sys

# Spliced in where envcheck is not installed (envcheck/support/names.py says how).
from envcheck.support.names import canonical_name

TYPE_CHECKING = False  # not typing's: the collector imports nothing it does not need at run time
if TYPE_CHECKING:
    from typing import Any


def _metadata() -> Any:
    """importlib.metadata, imported only when needed: through the email package its import is a third of what
    the collector costs in another interpreter, and a warm cache with _listed() needs none of it."""
    import importlib.metadata

    return importlib.metadata

# Bumped whenever the shape of the snapshot changes (2: `distributions[].top_level` dropped; 3: `project` added, and
# the markers of unknowns, `distributions_complete` and `distributions[].requires_known`, and `provenance`);
# envcheck.facts.snapshot says which schemas this envcheck still reads.
SCHEMA = 3

# Variables that change how torch, CUDA, NCCL or the import system behave. Exact names, then prefixes.
_ENV_NAMES = frozenset(
    [
        "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "CUDA_LAUNCH_BLOCKING",
        "CUDA_MODULE_LOADING", "LD_LIBRARY_PATH", "LD_PRELOAD", "DYLD_LIBRARY_PATH", "PATH", "PYTHONPATH",
        "PYTHONNOUSERSITE", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
        "HSA_OVERRIDE_GFX_VERSION",  # ROCm: the gfx target the runtime reports for every GPU
        "DS_SKIP_CUDA_CHECK", "TF_ENABLE_ONEDNN_OPTS", "BNB_CUDA_VERSION", "GLOO_SOCKET_IFNAME",
    ]
)
_ENV_PREFIXES = ("PYTORCH_", "TORCH_", "NCCL_", "CUDA_", "CUDNN_", "CUBLAS_", "TRITON_", "XFORMERS_", "HF_",
                 "TRANSFORMERS_", "ACCELERATE_")
# A snapshot ends up in bug reports: a credential's value is never recorded, only that it is set.
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_?KEY|AUTH", re.IGNORECASE)
REDACTED = "<redacted>"

_MAX_SOURCE_BYTES = 4 * 1024 * 1024  # a source file larger than this is not a module a rule should grep
_MAX_METADATA_BYTES = 16 * 1024 * 1024  # the largest real METADATA (with its long description) is some hundred KB
_MAX_VERSION_PY_BYTES = 1024 * 1024  # torch's version.py is a dozen lines; ast.parse of megabytes costs gigabytes


def _irregular(path: str, limit: int) -> str | None:
    """Why the file `path` must not be read (not a regular file, or larger than `limit`), else None (also when it
    does not exist: opening it says so). A FIFO would block the open, /dev/zero would never end the read."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_size > limit:
        return "is %d bytes, more than the %d read" % (st.st_size, limit)
    return None


# --- interpreter -----------------------------------------------------------------------------------------------


def search_path() -> list[str]:
    """The import path a program started in the current directory would see.

    `sys.path[0]` is the directory of whatever started this process (envcheck's console script, or the folder the
    collector was written to): replace it with the working directory, which is what `python -m project` or
    `python -c` would put there.
    """
    rest = [p for p in sys.path[1:] if p]
    return [os.getcwd(), *rest]


def _libc() -> dict[str, str] | None:
    if not sys.platform.startswith("linux"):
        return None  # only Linux wheels are tagged by libc (manylinux / musllinux)
    try:
        value = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"; fast, no file read
        if value:
            name, _, version = value.partition(" ")
            return {"name": name, "version": version}
    except (AttributeError, ValueError, OSError):
        pass
    try:
        name, version = platform.libc_ver()
        if name:
            return {"name": name, "version": version}
    except OSError:
        pass
    return {"name": "unknown", "version": ""}  # musl and friends: confstr is glibc's


def _marker_environment() -> dict[str, str]:
    """PEP 508 marker variables of this interpreter (what packaging's default_environment computes)."""
    impl = sys.implementation
    iv = impl.version
    impl_version = "%d.%d.%d" % (iv.major, iv.minor, iv.micro)
    if iv.releaselevel != "final":
        impl_version += iv.releaselevel[0] + str(iv.serial)
    return {
        "implementation_name": impl.name,
        "implementation_version": impl_version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


def _externally_managed() -> bool:
    """PEP 668: pip refuses to install into this interpreter (a distro's system Python outside any venv)."""
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix):
        return False  # virtual environments are never externally managed
    try:
        import sysconfig

        return os.path.isfile(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
    except Exception:  # noqa: BLE001 - an odd sysconfig means "not known to be managed"
        return False


def _python_facts(path: list[str]) -> dict[str, Any]:
    user_site = None
    try:
        import site

        if site.ENABLE_USER_SITE:
            user_site = site.getusersitepackages()
    except Exception:  # noqa: BLE001 - a broken site module must not stop the collection
        user_site = None
    return {
        "version": platform.python_version(),
        "implementation": sys.implementation.name,
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "virtualenv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
        "conda": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
        "externally_managed": _externally_managed(),
        "platform": sys.platform,
        "machine": platform.machine(),
        "system": platform.system(),
        "release": platform.release(),
        "libc": _libc(),
        "user_site": user_site,
        "cwd": os.getcwd(),
        "path": list(path),
        "marker_environment": _marker_environment(),
    }


# --- distributions ---------------------------------------------------------------------------------------------


def _headers(text: str) -> dict[str, list[str]]:
    """Core-metadata headers (RFC 822 style) up to the first blank line; the long description is never parsed."""
    headers: dict[str, list[str]] = {}
    last = None
    # Cut at the first blank line before splitting: the long description can be most of the file.
    head = text.replace("\r\n", "\n").split("\n\n", 1)[0]
    for line in head.splitlines():
        if not line.strip():
            break
        if line[0] in " \t":
            if last is not None:  # folded continuation of the previous header
                headers[last][-1] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        last = key.strip().lower()
        headers.setdefault(last, []).append(value.strip())
    return headers


def _read(dist: Any, filename: str) -> tuple[str | None, str | None]:
    """(text or None, problem or None): a metadata file of a distribution, never an exception."""
    folder = getattr(dist, "_path", None)
    if isinstance(folder, (str, os.PathLike)):
        why = _irregular(os.path.join(folder, filename), _MAX_METADATA_BYTES)
        if why:
            return None, "%s %s" % (filename, why)
    try:
        return dist.read_text(filename), None
    except UnicodeDecodeError as exc:
        return None, "%s is not valid UTF-8 (%s)" % (filename, exc.reason)
    except OSError as exc:
        return None, "%s cannot be read (%s)" % (filename, exc.strerror or exc)


def _folder_name_guess(meta_dir: str) -> tuple[str, str]:
    base = os.path.basename(meta_dir.rstrip("/\\"))
    stem = base.rsplit(".", 1)[0]  # drop .dist-info / .egg-info
    name, _, version = stem.partition("-")
    return name, version.split("-")[0] if version else ""


def _distribution(dist: Any) -> dict[str, Any]:
    meta_dir = str(getattr(dist, "_path", "") or "")  # PathDistribution keeps its folder here; best effort
    try:
        location = str(dist.locate_file(""))
    except Exception:  # noqa: BLE001 - custom Distribution classes from third-party finders
        location = os.path.dirname(meta_dir)
    problems: list[str] = []
    text, problem = _read(dist, "METADATA")
    if text is None and problem is None:
        text, problem = _read(dist, "PKG-INFO")  # egg-info
    if problem:
        problems.append(problem)
    elif text is None:
        problems.append("no METADATA file")
    headers = _headers(text) if text else {}
    guess_name, guess_version = _folder_name_guess(meta_dir)
    name = (headers.get("name") or [""])[0]
    version = (headers.get("version") or [""])[0]
    if text is not None and not name:
        problems.append("METADATA has no Name")
    if text is not None and not version:
        problems.append("METADATA has no Version")
    installer, _ = _read(dist, "INSTALLER")
    editable = False
    direct_url, _ = _read(dist, "direct_url.json")
    if direct_url:
        try:
            editable = bool(json.loads(direct_url).get("dir_info", {}).get("editable", False))
        except (ValueError, AttributeError, RecursionError):
            problems.append("direct_url.json is not valid JSON")
    name = name or guess_name
    unrecorded = _unrecorded(meta_dir, location, name, dist)
    return {
        "name": name,
        "canonical_name": canonical_name(name),
        "version": version or guess_version,
        "location": location,
        "metadata_dir": meta_dir,
        "requires": headers.get("requires-dist", []),
        "requires_python": headers["requires-python"][0] if "requires-python" in headers else None,
        "installer": installer.strip() if installer else None,
        "editable": editable,
        "problems": problems,
        "unrecorded": unrecorded[0] if unrecorded else None,
        "files_by_name": unrecorded[1] if unrecorded else [],
    }


_MAX_EMPTY_RECORD = 4096  # a RECORD larger than this lists files; a smaller one is read to see whether it does


def _unrecorded(meta_dir: str, location: str, name: str, dist: Any) -> tuple[str, list[str]] | None:
    """(why, paths) for a .dist-info folder whose RECORD lists nothing: pip and uv uninstall what RECORD lists and
    nothing else, so they cannot remove it (an empty RECORD: pip says "No files were found to uninstall", uv
    "Uninstalled 1 package", and both leave it; no RECORD: both refuse). `paths` are what belongs to it, found by
    name: the metadata folder, then each top-level name of top_level.txt (else the distribution's own name) as a
    package, a module or an extension module directly in `location`. None when RECORD lists files, for an
    .egg-info (pip reads installed-files.txt there), and when RECORD cannot be judged."""
    if not meta_dir.endswith(".dist-info") or not location or not os.path.isabs(meta_dir):
        return None
    record = os.path.join(meta_dir, "RECORD")
    try:
        st = os.stat(record)
    except FileNotFoundError:
        why = "it has no RECORD file"
    except (OSError, ValueError):
        return None
    else:
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_EMPTY_RECORD:
            return None
        try:
            with open(record, "rb") as fh:
                if fh.read(_MAX_EMPTY_RECORD).strip():
                    return None
        except OSError:
            return None
        why = "its RECORD is empty"
    text, _ = _read(dist, "top_level.txt")
    names = [n.strip() for n in (text or "").splitlines() if n.strip()] or [name.replace("-", "_").replace(".", "_")]
    paths = [meta_dir]
    for top in dict.fromkeys(names):
        if not top.isidentifier() or _claimed_by_another(location, meta_dir, top):
            continue  # never a path outside `location`, nor a name another distribution installed files into
        package = os.path.join(location, top)
        if os.path.isfile(os.path.join(package, "__init__.py")) and not os.path.islink(package):
            paths.append(package)  # a regular package: a namespace folder (no __init__.py) may be shared
        for suffix in [".py", *importlib.machinery.EXTENSION_SUFFIXES]:
            if os.path.isfile(os.path.join(location, top + suffix)):
                paths.append(os.path.join(location, top + suffix))
    return why, paths


def _claimed_by_another(location: str, meta_dir: str, top: str) -> bool:
    """Whether another metadata folder in `location` declares the top-level name `top` (top_level.txt): then it is
    not this one's alone to remove. Each location's folders are read once per collection (_CLAIMS): read again for
    each distribution without RECORD, 50,000 of them cost 50,000 squared reads."""
    claims = _CLAIMS.get(location)
    if claims is None:
        claims = _CLAIMS[location] = _claims(location)
    return bool(claims.get(top, set()) - {os.path.basename(meta_dir.rstrip("/\\"))})


def _claims(location: str) -> dict[str, set[str]]:
    """Each top-level name the metadata folders in `location` declare -> the folders that declare it."""
    claims: dict[str, set[str]] = {}
    try:
        entries = os.listdir(location)
    except OSError:
        return claims
    for entry in entries:
        if not entry.endswith((".dist-info", ".egg-info")):
            continue
        listed = os.path.join(location, entry, "top_level.txt")
        if _irregular(listed, _MAX_METADATA_BYTES):
            continue
        try:
            with open(listed, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    claims.setdefault(line.strip(), set()).add(entry)
        except OSError:
            continue
    return claims


_CLAIMS: dict[str, dict[str, set[str]]] = {}  # location -> _claims(location), for one collection (collect() empties it)


# --- the metadata cache: each distribution's parsed facts, reused while its metadata files are unchanged -------
#
# The cache directory is chosen by envcheck (envcheck.cache.signed) and passed in the request; this side trusts it only
# if it is the current user's, not writable by others, and outside the checked environment (a check never writes
# there). It is JSON: every entry is validated before use, and a file that is not exactly what this code writes
# is ignored and replaced.

_DIST_CACHE_FORMAT = 1
_DIST_KEYS = frozenset(["name", "canonical_name", "version", "location", "metadata_dir", "requires", "unrecorded",
                        "files_by_name",
                        "requires_python", "installer", "editable", "problems"])
_STAMPED = ("", "METADATA", "PKG-INFO", "INSTALLER", "direct_url.json", "RECORD", "top_level.txt")


def _stamp(meta_dir: str) -> list[Any]:
    """(inode, mtime in ns, size) of the metadata folder and of each file a distribution's facts are read from,
    None for a missing one: a reinstall, an edit or a file added or removed changes it."""
    out: list[Any] = []
    for name in _STAMPED:
        try:
            st = os.stat(os.path.join(meta_dir, name) if name else meta_dir)
            out.append([st.st_ino, st.st_mtime_ns, st.st_size])
        except OSError:
            out.append(None)
    return out


def _owned(st: os.stat_result) -> bool:
    getuid = getattr(os, "getuid", None)
    return getuid is None or (st.st_uid == getuid() and not st.st_mode & 0o022)


def _cache_file(cache_dir: Any) -> str | None:
    """The cache file for this interpreter, or None when the directory is not to be trusted."""
    if not isinstance(cache_dir, str) or not cache_dir:
        return None
    try:
        real, prefix = os.path.realpath(cache_dir), os.path.realpath(sys.prefix)
        if real == prefix or real.startswith(prefix.rstrip(os.sep) + os.sep) or not _owned(os.stat(real)):
            return None
    except OSError:
        return None
    import hashlib

    # One file per interpreter, not per search path: the path starts with the working directory, and a file per
    # directory a check ran in would grow without bound. Entries are per metadata folder either way.
    key = hashlib.sha256(json.dumps([sys.executable, sys.prefix]).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(real, "dists-%s.json" % key[:32])


def _valid_fact(fact: Any) -> bool:
    if not isinstance(fact, dict) or set(fact) != _DIST_KEYS:
        return False
    texts = ("name", "canonical_name", "version", "location", "metadata_dir")
    return (all(isinstance(fact[k], str) for k in texts) and isinstance(fact["editable"], bool)
            and all(isinstance(fact[k], (str, type(None))) for k in ("requires_python", "installer", "unrecorded"))
            and all(isinstance(fact[k], list) and all(isinstance(v, str) for v in fact[k])
                    for k in ("requires", "problems", "files_by_name")))


def _read_cache(file: str | None) -> dict[str, Any]:
    """meta_dir -> [stamp, fact] from the cache file; empty when it is absent, foreign, or not what we write."""
    if file is None:
        return {}
    try:
        with open(file, encoding="utf-8") as fh:
            if not _owned(os.fstat(fh.fileno())):
                return {}
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _DIST_CACHE_FORMAT or data.get("python") != sys.version:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def _write_cache(file: str, entries: dict[str, Any]) -> None:
    """Replace the cache file atomically; failing to write is not an error (the next run reads the files)."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(file), suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"format": _DIST_CACHE_FORMAT, "python": sys.version, "entries": entries}, fh)
            os.replace(tmp, file)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, TypeError, ValueError):
        pass


def _listed(path: list[str]) -> list[str] | None:
    """The metadata folders `importlib.metadata.distributions(path=path)` finds, in its order, without importing
    it; None where that cannot be known for sure, and the caller asks importlib.metadata itself.

    Its standard finder lists each path entry's children and, per entry, yields every `*.dist-info` and
    `*.egg-info` folder grouped by normalised name in first-seen order (`importlib.metadata.Lookup`, as in
    CPython 3.11 to 3.13). Not mirrored: another finder on sys.meta_path that finds distributions, a zip file or an
    `.egg` on the path, a relative entry, other Pythons; a test compares the two on real environments."""
    if not (3, 11) <= sys.version_info[:2] <= (3, 13):
        return None
    if any(hasattr(f, "find_distributions") and f is not importlib.machinery.PathFinder for f in sys.meta_path):
        return None
    out: list[str] = []
    for root in path:
        if not root or not os.path.isabs(root) or root.lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.exists(root):  # a zip file (or an unreadable folder): importlib.metadata's own business
                return None
            continue
        # str(pathlib.Path(root, child)), as importlib.metadata names the folder; a plain join gives the same text
        # for a normalised root, without importing pathlib.
        plain = os.path.normpath(root) == root and not root.startswith("//")
        groups: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                name = low.rpartition(".")[0].partition("-")[0]
                # importlib.metadata groups by `Prepared.normalize`, PEP 503's name with `_` for `-`: the same
                # groups as canonical_name's.
                folder = os.path.join(root, child) if plain else _path_text(root, child)
                groups.setdefault(canonical_name(name), []).append(folder)
        for group in groups.values():
            out.extend(group)
    return out


def _path_text(root: str, child: str) -> str:
    import pathlib

    return str(pathlib.Path(root, child))


def _distributions(path: list[str], cache_dir: Any = None) -> tuple[list[dict[str, Any]], list[str]]:
    out: list[dict[str, Any]] = []
    cache_file = _cache_file(cache_dir)
    # With a cache, most distributions come from it: list their folders without importlib.metadata when possible.
    found: list[Any] | None = _listed(path) if cache_file else None
    if found is None:
        try:
            found = list(_metadata().distributions(path=path))
        except Exception as exc:  # noqa: BLE001 - an unreadable path entry must not lose the others
            return [], ["listing distributions failed: %s: %s" % (type(exc).__name__, exc)]
    cached = _read_cache(cache_file)
    fresh: dict[str, Any] = {}
    for entry in found:
        listed = isinstance(entry, str)  # a folder from _listed(): a PathDistribution, made when it must be read
        dist = None if listed else entry
        if os.path.basename((entry if listed else str(getattr(dist, "_path", "") or "")).rstrip("/\\")).startswith("~"):
            # pip's leftover of an interrupted run (`~orch-2.5.1.dist-info`, a partial install): pip and
            # importlib.metadata.version() ignore it, so it must not count as an install, let alone the active one.
            continue
        stamp: list[Any] | None
        if listed:
            meta_dir = entry
            stamp = _stamp(meta_dir)
        else:
            meta_dir = str(getattr(dist, "_path", "") or "") if cache_file else ""
            stamp = _stamp(meta_dir) if meta_dir and type(dist) is _metadata().PathDistribution else None
        if stamp is not None:
            hit = cached.get(meta_dir)
            if (isinstance(hit, list) and len(hit) == 2 and hit[0] == stamp and _valid_fact(hit[1])
                    and hit[1]["metadata_dir"] == meta_dir):
                fresh[meta_dir] = hit
                out.append(dict(hit[1], requires=list(hit[1]["requires"]), problems=list(hit[1]["problems"]),
                                files_by_name=list(hit[1]["files_by_name"])))
                continue
        try:
            if dist is None:
                import pathlib

                dist = _metadata().PathDistribution(pathlib.Path(meta_dir))
            fact = _distribution(dist)
            out.append(fact)
            if stamp is not None and _stamp(meta_dir) == stamp:  # unchanged while it was read
                fresh[meta_dir] = [stamp, fact]
        except Exception as exc:  # noqa: BLE001 - one corrupt folder is a fact about that folder
            meta_dir = entry if listed else str(getattr(dist, "_path", "") or "")
            name, version = _folder_name_guess(meta_dir)
            out.append({
                "name": name, "canonical_name": canonical_name(name), "version": version,
                "location": os.path.dirname(meta_dir), "metadata_dir": meta_dir, "requires": [],
                "requires_python": None, "installer": None, "editable": False,
                "problems": ["%s: %s" % (type(exc).__name__, exc)], "unrecorded": None, "files_by_name": [],
            })
    if cache_file and fresh != cached:
        _write_cache(cache_file, fresh)
    return out, []


def _partial_installs(path: list[str]) -> list[str]:
    """Entries pip leaves when an install or uninstall is interrupted: `~orch`, `~umpy-1.26.4.dist-info`.

    pip renames a package to `~name` while replacing it; if it dies midway, the folder stays, pip warns
    "Ignoring invalid distribution ~orch" forever, and the package may be half-removed.
    """
    found: list[str] = []
    for entry in path:
        if not entry.endswith(("site-packages", "dist-packages")):
            continue  # pip only ever works inside these
        try:
            with os.scandir(entry) as it:
                found.extend(e.path for e in it if e.name.startswith("~"))
        except OSError:
            continue
    return sorted(found)


# --- installer -------------------------------------------------------------------------------------------------


def _venv_config(prefix: str) -> dict[str, str]:
    """pyvenv.cfg of a virtual environment (`key = value` lines); empty outside one or when unreadable."""
    values: dict[str, str] = {}
    if _irregular(os.path.join(prefix, "pyvenv.cfg"), _MAX_METADATA_BYTES):
        return values
    try:
        with open(os.path.join(prefix, "pyvenv.cfg"), encoding="utf-8") as fh:
            for line in fh:
                key, sep, value = line.partition("=")
                if sep:
                    values[key.strip().lower()] = value.strip()
    except (OSError, UnicodeDecodeError):
        pass
    return values


def _ensurepip_has_pip() -> bool:
    """`python -m ensurepip` can install pip: the module exists and carries a pip wheel.

    Distributions that strip the bundled wheels (Debian's system Python without python3-venv) keep a module that
    only refuses, so the wheel itself is what counts. Located without importing ensurepip.
    """
    spec = importlib.machinery.PathFinder.find_spec("ensurepip")
    if spec is None or not _locations(spec):
        return False
    bundled = os.path.join(_locations(spec)[0], "_bundled")
    try:
        return any(name.startswith("pip-") and name.endswith(".whl") for name in os.listdir(bundled))
    except OSError:
        return False


def tool_command(name: str, scripts: str | None) -> str | None:
    """How to invoke a tool: its bare name when the PATH finds it (the command then runs as printed in this
    shell), else its absolute path in the environment's own scripts folder, else None.

    Only PATH's absolute entries count: a relative one (`.`, `bin`, an empty entry) would make a program of the
    working folder, a cloned project's `./uv`, "the uv found". Where the whole PATH finds another file first (a
    relative entry comes before), the absolute path of the one found is given, never the bare name."""
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    found = shutil.which(name, path=os.pathsep.join(p for p in entries if p and os.path.isabs(p)))
    if found:
        return name if shutil.which(name) == found else found
    if scripts:
        found = shutil.which(name, path=scripts)
        if found:
            return found
    return None


def _conda_command(scripts: str | None) -> str | None:
    """conda, mamba or micromamba: `conda activate` exports CONDA_EXE (micromamba: MAMBA_EXE) even when the
    tool itself is not on PATH."""
    for name in ("conda", "mamba", "micromamba"):
        found = tool_command(name, scripts)
        if found:
            return found
    for var in ("CONDA_EXE", "MAMBA_EXE"):
        exe = os.environ.get(var)
        if exe and os.path.isfile(exe):
            return exe
    return None


_CONDA_NAME = re.compile(r'"name":\s*"([^"\\]+)"')


def _conda_meta_folders(text: str) -> set[str]:
    """The NAME-VERSION.dist-info / .egg-info folders named in a conda record's paths (str.find: a regex over
    megabytes of paths was ten times slower)."""
    found: set[str] = set()
    end = text.find("-info/")
    while end != -1:
        start = max(text.rfind("/", 0, end), text.rfind('"', 0, end)) + 1
        folder = text[start:end + 5]
        if folder.endswith((".dist-info", ".egg-info")):
            found.add(folder)
        end = text.find("-info/", end + 6)
    return found


# conda's records of these packages describe torch's build (envcheck/facts/conda.py keeps the same list).
_TORCH_STACK = ("pytorch", "pytorch-gpu", "pytorch-cpu", "libtorch", "cuda-version", "cudatoolkit", "pytorch-cuda",
                "torchvision", "torchaudio", "python")
_CHANNEL_URL = re.compile(r"^[a-z][a-z0-9+.-]*://[^/]+/(.+?)/?$")
_SUBDIRS = ("linux-64", "linux-aarch64", "linux-ppc64le", "osx-64", "osx-arm64", "win-64", "noarch")


def _channel(record: dict[str, Any]) -> str:
    """A record's channel as conda names it ("conda-forge"): its `channel` (a URL in conda's records, or a name),
    else the folder of its `url`."""
    text = record.get("channel")
    if not isinstance(text, str) or not text:
        url = record.get("url")
        text = url.rsplit("/", 1)[0] if isinstance(url, str) else ""
    match = _CHANNEL_URL.match(text.strip())
    parts = [p for p in (match.group(1) if match else text.strip()).split("/") if p]
    if parts and parts[-1] in _SUBDIRS:
        parts = parts[:-1]
    return "/".join(parts)


def _stack_record(entry: str, text: str) -> dict[str, Any] | str:
    """One torch-stack record in the shape of facts/conda.py's CondaPackage, or a problem in words."""
    try:
        record = json.loads(text)
    except ValueError as exc:
        return "conda-meta/%s is not JSON (%s)" % (entry, exc)
    if not isinstance(record, dict) or not isinstance(record.get("name"), str) \
            or not isinstance(record.get("version"), str):
        return "conda-meta/%s has no name or version" % entry
    build = record.get("build")
    subdir = record.get("subdir")
    return {"name": record["name"], "version": record["version"], "build": build if isinstance(build, str) else "",
            "channel": _channel(record), "subdir": subdir if isinstance(subdir, str) else "",
            "source": "conda-meta/" + entry}


def _conda_records(prefix: str, stack: list[Any] | None = None) -> dict[str, str]:
    """Metadata folder name ("torch-2.5.1.dist-info") -> name of the conda package that installed it ("pytorch").

    conda records each package it installs as conda-meta/NAME-VERSION-BUILD.json, whose "files" lists every path
    it put into the prefix; a Python package's .dist-info folder is among them. A large environment has hundreds of
    records and a hundred thousand paths, so the records are scanned as text (300 records of 500 paths: about 17 ms,
    where parsing them as JSON and splitting every path took 150 ms): the package name is the `"name"` value
    that the record's own file name starts with. The few records of the torch stack (`_TORCH_STACK`) are parsed
    whole into `stack` (their build strings and channels), with a problem string for one that cannot be.
    """
    meta = os.path.join(prefix, "conda-meta")
    owners: dict[str, str] = {}
    try:
        entries = sorted(os.listdir(meta))
    except OSError:
        return owners
    for entry in entries:
        if not entry.endswith(".json"):
            continue
        if _irregular(os.path.join(meta, entry), _MAX_METADATA_BYTES):
            continue
        try:
            with open(os.path.join(meta, entry), encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            continue  # one unreadable record must not hide the others
        name = next((n for n in _CONDA_NAME.findall(text) if entry.startswith(n + "-")), None)
        if name is None:
            if stack is not None and any(entry.startswith(n + "-") for n in _TORCH_STACK):
                stack.append("conda-meta/%s names no package of its own (not a conda record)" % entry)
            continue
        if stack is not None and name in _TORCH_STACK:
            stack.append(_stack_record(entry, text))
        for folder in _conda_meta_folders(text):
            owners[folder] = name
    return owners


def _pixi_manifest(prefix: str) -> str | None:
    """The manifest of the pixi project that owns an environment at PROJECT/.pixi/envs/NAME: PROJECT/pixi.toml, or
    PROJECT/pyproject.toml when it has a [tool.pixi] table; None for any other prefix."""
    envs = os.path.dirname(os.path.normpath(prefix))
    hidden = os.path.dirname(envs)
    if os.path.basename(envs) != "envs" or os.path.basename(hidden) != ".pixi":
        return None
    project = os.path.dirname(hidden)
    manifest = os.path.join(project, "pixi.toml")
    if os.path.isfile(manifest):
        return manifest
    pyproject = os.path.join(project, "pyproject.toml")
    try:
        if not _irregular(pyproject, _MAX_METADATA_BYTES):
            with open(pyproject, encoding="utf-8") as fh:
                if re.search(r"^\[tool\.pixi[\].]", fh.read(), re.MULTILINE):
                    return pyproject
    except (OSError, UnicodeDecodeError):
        pass
    return None


def _installer_facts(path: list[str], distributions: list[dict[str, Any]],
                     stack: list[Any] | None = None) -> dict[str, Any]:
    """Which installer can change this environment: pip inside it, uv, conda for what conda installed, pixi for a
    pixi project's environment. `stack` receives conda's torch-stack records (see _conda_records)."""
    try:
        import sysconfig

        scripts: str | None = sysconfig.get_path("scripts")
    except Exception:  # noqa: BLE001 - an odd sysconfig only loses the environment's own scripts folder
        scripts = None
    try:
        pip = find_spec("pip", path) is not None
    except Exception:  # noqa: BLE001
        pip = False
    conda_owned: dict[str, str] = {}
    if os.path.isdir(os.path.join(sys.prefix, "conda-meta")):
        owners = _conda_records(sys.prefix, stack)
        for dist in distributions:
            owner = owners.get(os.path.basename(dist["metadata_dir"].rstrip("/\\")))
            if owner is None and dist["installer"] == "conda":
                owner = dist["canonical_name"]  # conda-build writes INSTALLER; its record may be unreadable
            if owner is not None:
                conda_owned.setdefault(dist["canonical_name"], owner)
    return {
        "pip": pip,
        "ensurepip": _ensurepip_has_pip(),
        "uv_venv": _venv_config(sys.prefix).get("uv"),
        "uv": tool_command("uv", scripts),
        "conda": _conda_command(scripts),
        "conda_owned": dict(sorted(conda_owned.items())),
        "pixi": _pixi_manifest(sys.prefix),
    }


# --- modules, sources, torch -----------------------------------------------------------------------------------


def _locations(spec: importlib.machinery.ModuleSpec) -> list[str]:
    """A package's directories. A namespace package's `_NamespacePath` recomputes itself from its parent *module*
    in sys.modules (KeyError for `nvidia.cudnn` when `nvidia` was never imported) or from sys.path (not the path
    searched): read the list it was found with instead."""
    locations = spec.submodule_search_locations
    if locations is None:
        return []
    return list(getattr(locations, "_path", locations))


def _path_spec(fullname: str, path: list[str]) -> importlib.machinery.ModuleSpec | None:
    """`PathFinder.find_spec`, except that a namespace package keeps its plain list of directories.

    find_spec wraps one in a `_NamespacePath`, whose constructor looks the parent module up in sys.modules: a
    KeyError for `nvidia.cudnn` (the nvidia-* wheels are namespace packages) when `nvidia` was never imported,
    which is always here. `_get_spec` (Python 3.4 to 3.13 at least) is the same search without that wrapping.
    """
    get_spec = getattr(importlib.machinery.PathFinder, "_get_spec", None)
    if get_spec is None:  # pragma: no cover - a future Python without it: the public call, KeyError and all
        return importlib.machinery.PathFinder.find_spec(fullname, path)
    spec: importlib.machinery.ModuleSpec | None = get_spec(fullname, path)
    if spec is None or (spec.loader is None and not spec.submodule_search_locations):
        return None
    return spec


def find_spec(name: str, path: list[str]) -> importlib.machinery.ModuleSpec | None:
    """Locate a (dotted) module without executing any package's code; None when it is absent.

    `PathFinder.find_spec(fullname, path)` looks only in the given directories, so a submodule is found from its
    parent's search locations without importing the parent. Names that only a meta-path finder knows (editable
    installs) are asked of those finders for the top-level name, as an import would.
    """
    parts = name.split(".")
    spec = _path_spec(parts[0], path)
    if spec is None:
        if parts[0] in sys.builtin_module_names:
            return importlib.machinery.ModuleSpec(parts[0], None, origin="built-in")
        for finder in sys.meta_path:
            if finder is importlib.machinery.PathFinder or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(parts[0], None)
            except Exception:  # noqa: BLE001 - a broken third-party finder means "not found by it"
                spec = None
            if spec is not None:
                break
    for i in range(1, len(parts)):
        if spec is None or not _locations(spec):
            return None
        spec = _path_spec(".".join(parts[: i + 1]), _locations(spec))
    return spec


def _module_fact(name: str, path: list[str]) -> dict[str, Any]:
    try:
        spec = find_spec(name, path)
    except Exception as exc:  # noqa: BLE001 - e.g. a path entry that is an unreadable folder
        return {"found": False, "origin": None, "error": "%s: %s" % (type(exc).__name__, exc)}
    if spec is None:
        return {"found": False, "origin": None}
    origin = spec.origin if spec.origin not in (None, "namespace") else None
    if origin is None and _locations(spec):
        origin = _locations(spec)[0]
    return {"found": True, "origin": origin}


def _source_file(relative: str, path: list[str]) -> str | None:
    """Absolute path of a file given relative to the import root of its top-level package, or None."""
    parts = relative.replace("\\", "/").split("/")
    spec = find_spec(parts[0].split(".")[0] if len(parts) == 1 else parts[0], path)
    if spec is None:
        return None
    if len(parts) == 1:
        return spec.origin if spec.origin and os.path.basename(spec.origin) == parts[0] else None
    for base in _locations(spec):
        candidate = os.path.join(base, *parts[1:])
        if os.path.isfile(candidate):
            return candidate
    return None


def _source_fact(relative: str, patterns: list[str], path: list[str]) -> dict[str, Any]:
    try:
        found = _source_file(relative, path)
    except Exception as exc:  # noqa: BLE001
        return {"path": None, "matches": {}, "error": "%s: %s" % (type(exc).__name__, exc)}
    if found is None:
        return {"path": None, "matches": {}}
    why = _irregular(found, sys.maxsize)  # the read below stops at _MAX_SOURCE_BYTES
    if why:
        return {"path": found, "matches": {}, "error": "cannot read: %s" % why}
    try:
        with open(found, "rb") as fh:
            data = fh.read(_MAX_SOURCE_BYTES)
    except OSError as exc:
        return {"path": found, "matches": {}, "error": "cannot read: %s" % (exc.strerror or exc)}
    text = data.decode("utf-8", errors="replace")
    matches: dict[str, bool] = {}
    for pattern in patterns:
        try:
            matches[pattern] = re.search(pattern, text, re.MULTILINE) is not None
        except re.error:
            continue  # envcheck validates patterns when it loads rules; an invalid one is simply not answered
    return {"path": found, "matches": matches}


def _literal_assignments(text: str) -> dict[str, Any]:
    import ast  # only where torch is installed: its version.py is read as literals

    values: dict[str, Any] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError):  # TypeError: an unhashable literal key, `{[]: 1}`
                continue
            if value is None or isinstance(value, (str, bool, int, float)):
                values[node.targets[0].id] = value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError):
                continue
            if value is None or isinstance(value, (str, bool, int, float)):
                values[node.target.id] = value
    return values


def _torch_build(path: list[str]) -> dict[str, Any] | None:
    """torch's build, from torch/version.py read as text. None when no torch is importable."""
    try:
        spec = find_spec("torch", path)
    except Exception:  # noqa: BLE001
        spec = None
    if spec is None or not _locations(spec):
        return None
    root = _locations(spec)[0]
    version_py = os.path.join(root, "version.py")
    fact: dict[str, Any] = {"location": root, "version": None, "cuda": None, "hip": None, "git_version": None,
            "debug": None, "fields": {}, "problem": None}
    why = _irregular(version_py, _MAX_VERSION_PY_BYTES)
    if why:
        fact["problem"] = "cannot read %s: it %s" % (version_py, why)
        return fact
    try:
        with open(version_py, encoding="utf-8") as fh:
            fields = _literal_assignments(fh.read())
    # RecursionError and MemoryError: an expression nested thousands deep, which the parser cannot hold
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        fact["problem"] = "cannot read %s: %s" % (version_py, type(exc).__name__ if not str(exc) else exc)
        return fact
    fact["fields"] = fields
    odd = []
    # A value of another type (`__version__ = 5`, `debug = 0`) is recorded as a problem, not passed on: the snapshot
    # reader would rightly refuse it, and the environment is odd, not the snapshot.
    for key, name, kind in (("version", "__version__", str), ("cuda", "cuda", str), ("hip", "hip", str),
                            ("git_version", "git_version", str), ("debug", "debug", bool)):
        value = fields.get(name)
        if value is not None and not isinstance(value, kind):
            odd.append("%s = %r" % (name, value))
            value = None
        fact[key] = value
    if odd:
        fact["problem"] = "%s has values of an unexpected type: %s" % (version_py, ", ".join(odd))
    elif fact["version"] is None:
        fact["problem"] = "%s has no __version__" % version_py
    return fact


def _environment() -> dict[str, str]:
    env: dict[str, str] = {}
    for name, value in os.environ.items():
        if name in _ENV_NAMES or name.startswith(_ENV_PREFIXES):
            env[name] = REDACTED if _SECRET.search(name) else value
    return dict(sorted(env.items()))


# PEP 825 (draft): a variant wheel's properties in NAME-VERSION.dist-info/variant.json. Read only in the draft
# format this envcheck knows (schema URL version 0.0.x); a later format may mean something else by the same keys.
_VARIANT_SCHEMA = re.compile(r"/v0\.0\.\d+\.json$")
_MAX_VARIANT_BYTES = 1024 * 1024


def _wheel_variant(distributions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The imported torch's variant.json: its label and properties (namespace -> feature -> values), or a
    problem in words; None when torch's wheel is no variant wheel."""
    dist = next((d for d in distributions if d.get("canonical_name") == "torch"), None)
    folder = dist.get("metadata_dir") if dist is not None else None
    path = os.path.join(folder, "variant.json") if folder else ""
    if not path or not os.path.lexists(path):
        return None
    why = _irregular(path, _MAX_VARIANT_BYTES)
    try:
        if why:
            raise ValueError("it " + why)
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        schema = data.get("$schema") if isinstance(data, dict) else None
        variants = data.get("variants") if isinstance(data, dict) else None
        if not isinstance(schema, str) or not _VARIANT_SCHEMA.search(schema):
            raise ValueError("its $schema %r is not the draft format this envcheck reads (v0.0.x)" % (schema,))
        if not isinstance(variants, dict) or len(variants) != 1:
            raise ValueError("its `variants` is not one label")
        label, properties = next(iter(variants.items()))
        clean = {}
        for namespace, features in properties.items() if isinstance(properties, dict) else ():
            if isinstance(features, dict):
                clean[str(namespace)] = {str(k): [str(v) for v in values] for k, values in features.items()
                                         if isinstance(values, list)}
        return {"label": str(label), "schema": schema, "properties": clean, "problem": None}
    except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
        return {"label": "", "schema": "", "properties": {}, "problem": "cannot read %s: %s" % (path, exc)}


# --- entry points ----------------------------------------------------------------------------------------------


def collect(request: dict[str, Any] | None = None, path: list[str] | None = None) -> dict[str, Any]:
    """All static facts as a JSON-ready dict. `request` names the modules and source files rules ask about."""
    request = request or {}
    path = list(path) if path is not None else search_path()
    _CLAIMS.clear()  # read afresh by each collection
    problems: list[str] = []
    distributions: list[dict[str, Any]]
    if sys.version_info < (3, 8):
        distributions = []
        problems.append("Python %s has no importlib.metadata (Python >= 3.8 needed)" % platform.python_version())
    else:
        distributions, listing_problems = _distributions(path, request.get("cache_dir"))
        problems.extend(listing_problems)
    modules = {name: _module_fact(name, path) for name in sorted(set(request.get("modules", [])))}
    sources: dict[str, Any] = {}
    for item in request.get("sources", []):
        sources[item["file"]] = _source_fact(item["file"], sorted(set(item.get("patterns", []))), path)
    stack: list[Any] = []
    installer = _installer_facts(path, distributions, stack)
    torch = _torch_build(path)
    variant = _wheel_variant(distributions)
    if torch is not None and variant is not None:
        torch["variant"] = variant
    out = {
        "schema": SCHEMA,
        "python": _python_facts(path),
        "distributions": distributions,
        "torch": torch,
        "modules": modules,
        "sources": dict(sorted(sources.items())),
        "env": _environment(),
        "partial_installs": _partial_installs(path),
        "installer": installer,
        "problems": problems,
    }
    if os.path.isdir(os.path.join(sys.prefix, "conda-meta")):
        out["conda"] = {"packages": sorted((r for r in stack if isinstance(r, dict)), key=lambda r: r["name"]),
                        "problems": [r for r in stack if isinstance(r, str)]}
    return out


def main(argv: list[str]) -> None:
    """`python COLLECTOR_FILE REQUEST_JSON OUT_FILE`: write the facts of this interpreter to OUT_FILE."""
    request = json.loads(argv[1]) if len(argv) > 1 and argv[1] else {}
    facts = collect(request)
    with open(argv[2], "w", encoding="utf-8") as fh:
        json.dump(facts, fh)


if __name__ == "__main__":
    main(sys.argv)

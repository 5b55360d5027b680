"""A PEP 503 simple index on 127.0.0.1 serving stand-in wheels built in the test, for real pip and real uv.

The wheels are real wheel files (PEP 427: METADATA, WHEEL, a hashed RECORD), named and tagged like the real ones
(`torch-2.13.0+cpu-cp311-cp311-manylinux_2_39_x86_64.whl`), but hold only what a static check reads (a stand-in
torch has `torch/version.py`). The tag is this interpreter's most specific one, so the installers accept it here.

pip and uv are pointed at the index through their environment variables (`index_env`), never through their
command lines: the commands under test must be the ones envcheck printed, unchanged. The same server also has
PyTorch's index layout under /whl/ (`/whl/cpu/` holds the `+cpu` wheels, as https://download.pytorch.org/whl/cpu
does), and `index_env` points envcheck's PyTorch index base there (ENVCHECK_TORCH_INDEX_BASE), so the index URLs
envcheck prints are ones that work here.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import html
import http.server
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name


def platform_tag() -> str:
    """This interpreter's most specific wheel tag: what a real binary wheel (torch, pillow) would carry here."""
    return str(next(iter(sys_tags())))


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class StandIn:
    """One wheel to build: a distribution and what its files say."""

    name: str
    version: str
    requires: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)  # path inside the wheel -> text
    tag: str = "py3-none-any"


def build_wheel(dest: Path, wheel: StandIn) -> Path:
    """A real wheel file for `wheel` in `dest`; the import package is the name with `-` as `_` unless files say."""
    stem = wheel.name.replace("-", "_")
    dist_info = f"{stem}-{wheel.version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {wheel.name}\nVersion: {wheel.version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in wheel.requires)
    pure = "true" if wheel.tag == "py3-none-any" else "false"
    files = dict(wheel.files) or {f"{stem}/__init__.py": f'__version__ = "{wheel.version}"\n'}
    files[f"{dist_info}/METADATA"] = metadata
    files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: envcheck-tests\nRoot-Is-Purelib: {pure}\n"
                                   f"Tag: {wheel.tag}\n")
    record = [f"{path},{_record_hash(text.encode())},{len(text.encode())}" for path, text in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    target = dest / f"{stem}-{wheel.version}-{wheel.tag}.whl"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return target


def torch_stand_in(version: str, *, cuda: str | None = None) -> StandIn:
    """torch as a static check sees it: torch/version.py with the build's fields, tagged like the real wheel."""
    version_py = (f"__version__ = {version!r}\ndebug = False\ncuda = {cuda!r}\nhip = None\n"
                  f"git_version = '0000000000000000000000000000000000000000'\n")
    return StandIn("torch", version, files={"torch/__init__.py": "", "torch/version.py": version_py},
                   tag=platform_tag())


def write_index(root: Path, wheels: Iterable[StandIn], *, simple: str = "simple", files: str = "files") -> Path:
    """The PEP 503 layout under `root`: SIMPLE/index.html, SIMPLE/PROJECT/index.html, FILES/*.whl."""
    _write_simple(root / simple, root / files, wheels)
    return root


def _write_simple(simple: Path, files: Path, wheels: Iterable[StandIn]) -> None:
    files.mkdir(parents=True)
    projects: dict[str, list[Path]] = {}
    for wheel in wheels:
        projects.setdefault(canonicalize_name(wheel.name), []).append(build_wheel(files, wheel))
    simple.mkdir(parents=True)
    to_files = Path(os.path.relpath(files, simple / "project")).as_posix()
    links = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(projects))
    (simple / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n", encoding="utf-8")
    for project, paths in projects.items():
        (simple / project).mkdir()
        anchors = "".join(
            f'<a href="{to_files}/{html.escape(p.name)}#sha256={hashlib.sha256(p.read_bytes()).hexdigest()}">'
            f"{html.escape(p.name)}</a>\n" for p in sorted(paths))
        (simple / project / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{anchors}</body></html>\n",
                                                     encoding="utf-8")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass  # pytest shows a failing test's output; the request log would drown it


@dataclass(frozen=True)
class LocalIndex:
    """A running index: its URL, and the environment variables that send pip and uv there and nowhere else."""

    url: str  # http://127.0.0.1:PORT/simple/
    torch_base: str  # http://127.0.0.1:PORT/whl/: PyTorch's variant indexes (`cpu`) under it
    cache: Path  # uv's cache for these tests (never the user's: stand-ins reuse real names and versions)

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PIP_", "UV_", "ENVCHECK_")) and k not in ("VIRTUAL_ENV", "PYTHONPATH",
                                                                               "PYTHONHOME", "CONDA_PREFIX")}
        env.update({
            "PIP_INDEX_URL": self.url, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_CACHE_DIR": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
            "UV_DEFAULT_INDEX": self.url, "UV_NO_CONFIG": "1", "UV_CACHE_DIR": str(self.cache),
            "UV_PYTHON_DOWNLOADS": "never", "NO_COLOR": "1",
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            "ENVCHECK_TORCH_INDEX_BASE": self.torch_base,
        })
        env.update(extra or {})
        return env


@contextlib.contextmanager
def serve(root: Path, cache: Path) -> Iterator[LocalIndex]:
    """Serve `root` (see write_index) on an ephemeral port of 127.0.0.1 until the block ends."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="test-index", daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        yield LocalIndex(f"{base}/simple/", f"{base}/whl/", cache)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def torchvision_stand_in(version: str, torch: str) -> StandIn:
    """torchvision `version`, pinned to torch release `torch` as the real wheels are, with its two requirements."""
    return StandIn("torchvision", version, (f"torch=={torch}", "numpy", "pillow!=8.3.*,>=5.3.0"),
                   files={"torchvision/__init__.py": "", "torchvision/version.py": f"__version__ = {version!r}\n"},
                   tag=platform_tag())


# The stand-ins: torch and its companions as the CPU index names them, and two libraries torchvision requires.
TORCH = "2.13.0+cpu"
STAND_INS = (
    torch_stand_in(TORCH),
    torchvision_stand_in("0.28.0+cpu", "2.13.0"),
    StandIn("numpy", "2.3.5", tag=platform_tag()),
    StandIn("pillow", "12.0.0", files={"PIL/__init__.py": "__version__ = '12.0.0'\n"}, tag=platform_tag()),
)
# What PyPI has besides: torchvision's untagged wheels (CUDA builds on Linux x86_64), one made for an older torch.
PYPI_EXTRA = (
    torchvision_stand_in("0.20.0", "2.5.0"),
    torchvision_stand_in("0.28.0", "2.13.0"),
)
# PyTorch's CPU index (/whl/cpu/): the `+cpu` builds of torch and torchvision.
CPU_INDEX = (torch_stand_in(TORCH), torchvision_stand_in("0.28.0+cpu", "2.13.0"))


@pytest.fixture(scope="session")
def local_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    """The stand-in wheels on a local simple index, for the whole session."""
    root = write_index(tmp_path_factory.mktemp("index"), (*STAND_INS, *PYPI_EXTRA))
    write_index(root, CPU_INDEX, simple="whl/cpu", files="whl/files-cpu")
    with serve(root, tmp_path_factory.mktemp("uv-cache")) as index:
        yield index


def uv_binary() -> str | None:
    """The uv executable of the `uv` distribution from PyPI (the test extra), else one on PATH."""
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return shutil.which("uv")
    try:
        return str(find_uv_bin())
    except FileNotFoundError:
        return shutil.which("uv")


_TIMEOUT_S = 600  # guards against a hung installer; never a timing assertion


def run(argv: Sequence[str | Path], env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A real pip, uv or envcheck run with no standard input, its output captured."""
    return subprocess.run([str(a) for a in argv], env=dict(env), cwd=cwd, capture_output=True, text=True,
                          timeout=_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """`proc`, asserted to have exited 0 (the message shows the command and its output)."""
    assert proc.returncode == 0, f"{shlex.join(proc.args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def envcheck(*args: str | Path, env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """This checkout's envcheck run as a command (`python -m envcheck ARGS`), as `run` runs pip or uv."""
    return run([sys.executable, "-m", "envcheck", *args], env, cwd)


def static_report(python: Path, env: Mapping[str, str], cwd: Path) -> dict[str, Any]:
    """The JSON report of `envcheck check --static --python PYTHON`, which exits 0 or 1 (findings, not errors)."""
    proc = envcheck("check", "--static", "--format", "json", "--python", python, env=env, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def failing(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A report's findings that fail or warn."""
    return [f for f in report["findings"] if f["status"] in ("fail", "warn")]

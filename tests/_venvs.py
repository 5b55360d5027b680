"""Real venvs with pip, as `python -m venv DEST` makes them, in a fraction of its time.

`python -m venv` spends seconds in ensurepip, which installs the same bundled pip (and, before Python 3.12,
setuptools) into every venv and compiles them. Here ensurepip runs once per test run, into a template venv
(tests/_once.py); each venv is then `python -m venv --without-pip DEST` with the template's site-packages copied in
and its scripts (`pip`, `pip3`, ...) written for DEST: the shebang names DEST's interpreter, the RECORD rows carry
the rewritten scripts' hashes, and pyvenv.cfg's `command` is the one `python -m venv DEST` writes. What differs
from ensurepip's own result is only the source path recorded inside the compiled `.pyc` files, which Python
replaces with the real one when it loads them.

Where that cannot be done the same way (Windows, whose pip.exe launchers hold their interpreter's path; an
interpreter of another Python version than the template's), the venv is made by `python -m venv` itself.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from _once import built_once

_TIMEOUT_S = 600  # guards against a hung interpreter; never a timing assertion
# The template is made as the tests make their venvs: none of the variables that point Python elsewhere.
_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}


def _run(argv: list[str], env: Mapping[str, str] | None) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False,
                          env=None if env is None else dict(env), stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"


def _bin(prefix: Path) -> Path:
    return prefix / ("Scripts" if os.name == "nt" else "bin")


def _site(prefix: Path) -> Path:
    return next(prefix.glob("lib/python*/site-packages"))


def _version(prefix: Path) -> str:
    """The `version` line of a venv's pyvenv.cfg (the interpreter's X.Y.Z)."""
    for line in (prefix / "pyvenv.cfg").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "version":
            return value.strip()
    return ""


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class VenvMaker:
    """`make(dest)`: a venv at `dest` with pip, as `python -m venv [--system-site-packages] DEST` makes it."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._factory = tmp_path_factory
        self._template: Path | None = None

    def template(self) -> Path:
        """The venv that ensurepip filled, made once per run by this interpreter."""
        if self._template is None:
            self._template = built_once(self._factory, "pip-venv-template",
                                        lambda folder: _run([sys.executable, "-m", "venv", str(folder)], _ENV))
        return self._template

    def make(self, dest: Path, *, python: str | Path = sys.executable, system_site_packages: bool = False,
             env: Mapping[str, str] | None = None) -> Path:
        """A venv at `dest` made by `python` (its interpreter is returned); `env` is the environment it is made in."""
        options = ["--system-site-packages"] if system_site_packages else []
        if os.name == "nt":
            _run([str(python), "-m", "venv", *options, str(dest)], env)
            return _bin(dest) / "python.exe"
        template = self.template()
        _run([str(python), "-m", "venv", "--without-pip", *options, str(dest)], env)
        if _version(dest) != _version(template):  # another Python's ensurepip bundles another pip
            shutil.rmtree(dest)
            _run([str(python), "-m", "venv", *options, str(dest)], env)
            return _bin(dest) / "python"
        config = dest / "pyvenv.cfg"
        config.write_text(config.read_text(encoding="utf-8").replace(" -m venv --without-pip ", " -m venv ", 1),
                          encoding="utf-8")
        site = _site(dest)
        for entry in _site(template).iterdir():
            if entry.is_dir():
                shutil.copytree(entry, site / entry.name, symlinks=True)
            else:
                shutil.copy2(entry, site / entry.name)
        self._scripts(template, dest, site)
        return _bin(dest) / "python"

    @staticmethod
    def _scripts(template: Path, dest: Path, site: Path) -> None:
        """The template's own scripts (pip's), their shebang naming DEST's interpreter, and RECORD rows to match."""
        rows: dict[str, str] = {}
        for script in sorted(_bin(template).iterdir()):
            target = _bin(dest) / script.name
            if target.exists() or target.is_symlink():
                continue  # the interpreter and the activate scripts, which `python -m venv` wrote for DEST
            data = script.read_bytes()
            first, newline, rest = data.partition(b"\n")
            data = first.replace(os.fsencode(template), os.fsencode(dest), 1) + newline + rest
            target.write_bytes(data)
            shutil.copymode(script, target)
            rows[f"../../../{_bin(dest).name}/{script.name}"] = f"{_record_hash(data)},{len(data)}"
        for record in site.glob("*.dist-info/RECORD"):
            lines = record.read_bytes().decode("utf-8").splitlines(keepends=True)  # pip ends its rows with \r\n
            changed = False
            for i, line in enumerate(lines):
                path = line.split(",", 1)[0]
                if path in rows:
                    lines[i] = f"{path},{rows[path]}{line[len(line.rstrip()):]}"
                    changed = True
            if changed:
                record.write_bytes("".join(lines).encode("utf-8"))

"""Which commands of an `envcheck fix` plan run without --allow-other, and why the others wait for it.

Pure: an argv, the checked interpreter and what envcheck found in (`Found`, envcheck/remedy/found_tools.py), a
classification or a reason out. envcheck/remedy/fix.py asks for each step of its plan.

- An installer command is `PYTHON -m pip ...` of the checked interpreter, `PYTHON -m ensurepip`, and `uv pip ...`
  or a `conda` / `mamba` / `micromamba` command whose executable is the uv or conda envcheck found for this
  environment (envcheck/facts/installer.py). "The one found" means the same file once PATH and symbolic links are
  resolved, never the same last name: `./conda` in a cloned project is a script of that project. Anything else (`python
  -m venv`, a pip of another interpreter, a script named like an installer) is not an installer command.
- An installer command that only rules from outside the shipped pack ask for (a project's `rule-dirs`, `--rules`,
  the rules made from a project's files and policy: EC98xx, EC99xx) must pass nothing but requirements by name and
  flags that choose nothing about where packages come from. Such a rule must not choose where the installer
  downloads from (`--index-url`, `--find-links`, `--trusted-host`, a conda channel), install a path, URL or VCS
  link (`-e .`, `pkg @ git+https://...`) or read a requirements file. The one index it may name is a PyTorch
  variant index, which the planner writes itself into torch-family installs (envcheck/remedy/commands/planner.py). What
  is allowed is listed, not what is refused: pip accepts abbreviated and clustered options (`--extra`, `-Ue .`).
- Whichever rule asks for it, an installer command whose requirement an installer would read as a file or folder
  waits for --allow-other (`file_named`): a name can come from a project's `require` or from an installed
  distribution's metadata, and `evil-1.0-py3-none-any.whl` is a valid PEP 508 name that pip installs from the
  working folder when such a file is there.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement

from envcheck.support.patterns import lazy

if TYPE_CHECKING:
    from envcheck.remedy.found_tools import Found

CONDA = ("conda", "mamba", "micromamba")
PREFIX = {"pip": 4, "uv": 3, "conda": 2, "ensurepip": 3}  # argv up to and including the installer's subcommand
# Flags without a value that mean the same for every requirement and choose nothing about where packages come from.
PLAIN_FLAGS = frozenset({"-U", "--upgrade", "--no-deps", "--force-reinstall", "--pre", "-q", "--quiet",
                         "--no-cache-dir", "--no-build-isolation", "-I", "--ignore-installed", "-y", "--yes",
                         "--no-input", "--disable-pip-version-check"})
_VETTED_FLAGS = PLAIN_FLAGS | {"--reinstall"}  # uv's spelling of -I (envcheck/remedy/commands/installers.py)
_CONDA_SPEC = lazy(r"[A-Za-z0-9_][A-Za-z0-9_.=<>!~,*|+-]*")  # `numpy>=1.26,<2`; never `chan::pkg` or a path
_OUTSIDE = "a rule from outside envcheck's pack"
# What pip reads as an archive file (pip/_internal/utils/filetypes.py, ARCHIVE_EXTENSIONS), what uv reads so too
# (.tar.zst) and conda's package files (.conda, .tar.bz2 already among them).
ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tbz", ".tar.xz", ".txz", ".tlz",
                    ".tar.lz", ".tar.lzma", ".tar.zst", ".conda")


def _is_tool(executable: str, kind: str, found: Found | None) -> bool:
    """Whether `executable` is the uv (kind "uv") or conda envcheck found. Without facts (envcheck.remedy.fix.commands,
    the reports' listing, which runs nothing) the rules' own spelling is all there is: the name."""
    if found is None:
        return PurePath(executable).name in (("uv",) if kind == "uv" else CONDA)
    from envcheck.remedy.found_tools import resolved  # imported already: `found` is one of its Found

    path = found.uv if kind == "uv" else found.conda
    return path is not None and resolved(executable) == path


def installer(argv: Sequence[str], python: str, found: Found | None = None) -> tuple[str | None, int]:
    """(installer, length of the prefix up to and including its subcommand); (None, 0) for anything else."""
    if len(argv) >= 4 and argv[0] == python and argv[1:3] == ("-m", "pip"):
        return "pip", 4
    if tuple(argv) == (python, "-m", "ensurepip"):
        return "ensurepip", 3
    if len(argv) >= 3 and argv[1] == "pip" and _is_tool(argv[0], "uv", found):
        return "uv", 3
    if len(argv) >= 2 and _is_tool(argv[0], "conda", found):
        return "conda", 2
    return None, 0


def not_an_installer(argv: Sequence[str], found: Found | None) -> str:
    """Why a command that is no installer of the checked environment waits for --allow-other."""
    name = PurePath(argv[0]).name if argv else ""
    if found is not None and name in ("uv", *CONDA):
        kind = "uv" if name == "uv" else "conda"
        path = found.uv if kind == "uv" else found.conda
        return (f"not an installer command: {argv[0]} is not the {kind} envcheck found "
                f"({path if path is not None else 'none was found'})")
    return "not an installer command"


def unvetted(argv: Sequence[str], kind: str, python: str, prefix: str | None) -> str:
    """Why an installer command (of `kind`) that only rules from outside the pack ask for waits for --allow-other;
    "" when it passes nothing but requirements by name and harmless flags. `prefix`: the checked environment's,
    which a conda removal names."""
    args = list(argv[PREFIX[kind]:])
    while args:
        arg = args.pop(0)
        value = args[0] if args else None
        if arg in _VETTED_FLAGS:
            continue
        if value is not None and _vetted_option(arg, value, kind, python, prefix):
            args.pop(0)
            continue
        if arg.startswith("-"):
            return f"{_OUTSIDE} passes {arg} to {kind}"
        if not (_CONDA_SPEC.fullmatch(arg) if kind == "conda" else _by_name(arg)):
            return f"{_OUTSIDE} installs {arg!r}, which is not a requirement by name"
    return ""


def _vetted_option(option: str, value: str, kind: str, python: str, prefix: str | None) -> bool:
    """The options with a value that envcheck itself writes: uv's `--python` of the checked interpreter, conda's
    `-p` of the checked prefix, and the PyTorch index the planner puts into torch-family installs."""
    if kind == "uv" and option in ("--python", "-p"):
        return value == python
    if kind == "conda" and option in ("-p", "--prefix"):
        return value == prefix
    return kind in ("pip", "uv") and option in ("--index-url", "-i") and _pytorch_index(value)


def _by_name(arg: str) -> bool:
    """A PEP 508 requirement without a URL: what an index serves, not a path, an archive or a VCS link."""
    try:
        return Requirement(arg).url is None and not names_a_file(arg)
    except InvalidRequirement:
        return False


def names_a_file(arg: str) -> bool:
    """Whether an installer reads `arg` as a file or folder rather than as a name an index serves.

    pip (`parse_req_from_line` in pip/_internal/req/constructors.py) takes the text before a `;` marker, its extras
    stripped, as a path when it ends like an archive (`is_archive_file`: whether or not the file exists) or, for a
    folder, when it "looks like a path" (`_looks_like_path`: a path separator, or a leading `.`); uv reads the same
    shapes, and `~`. A bare name stays a name for both even where a folder of that name is in the working folder
    (`pip install datasets` beside a `datasets/` folder asks the index), so existence is not what decides."""
    head = arg.split(";", 1)[0].strip()
    for text in {head, head.split("[", 1)[0].strip()}:
        if "/" in text or "\\" in text or os.sep in text or (os.altsep and os.altsep in text):
            return True
        if text.startswith((".", "~")) or text.lower().endswith(ARCHIVE_SUFFIXES):
            return True
    return False


def file_named(argv: Sequence[str], kind: str) -> str:
    """Why an installer command of any rule, the pack's too, waits for --allow-other: an argument shaped as a
    requirement by name that the installer reads as a file (`evil-1.0-py3-none-any.whl`); "" when there is none.
    The pack's rules fill names in from the project and the environment; what the pack writes itself (a path, a
    link, an option's value) is its own choice and not shaped as a name."""
    if kind == "ensurepip":
        return ""
    for arg in argv[PREFIX[kind]:]:
        if arg.startswith("-"):
            continue
        if kind == "conda":
            shaped = bool(_CONDA_SPEC.fullmatch(arg))
        else:
            try:
                shaped = Requirement(arg).url is None  # `name @ URL` says what it is: the pack's links stay its own
            except InvalidRequirement:
                shaped = False
        if shaped and names_a_file(arg):
            return f"{kind} reads {arg!r} as a file, not as a requirement by name"
    return ""


def _pytorch_index(url: str) -> bool:
    """One of PyTorch's variant indexes, as the planner writes them (ENVCHECK_TORCH_INDEX_BASE honoured)."""
    from envcheck.derived.companions import pytorch_index

    url = url.rstrip("/")
    return url == pytorch_index(url.rsplit("/", 1)[-1]).rstrip("/")

"""Commands for the installer the checked environment has. Pure: facts in, argv tuples out.

Rules write every install and removal as `{python} -m pip ...`: pip's command line is the one every Python user
reads, uv's `uv pip` interface mirrors it, and a project's own rule directories keep working unchanged. What runs is
decided here, per environment, from the collected installer facts (envcheck/facts/installer.py):

- pip, when pip is importable by the checked interpreter and uv did not make the environment;
- `uv pip SUBCOMMAND --python PYTHON ...`, when uv made the environment (`uv venv` writes `uv = VERSION` into
  pyvenv.cfg and installs no pip) or the environment has no pip, and a uv is found. uv's options differ from pip's
  in a few places: `uninstall` has no `-y` (it never asks), `--ignore-installed` is `--reinstall`, and pip's
  `--no-input` / `--disable-pip-version-check` have no counterpart (uv never prompts, never checks itself);
- `CONDA remove -p PREFIX -y NAME` for removing a distribution that conda installed (its conda-meta record lists
  the .dist-info folder): removing it with pip would leave conda's record of it behind, and the next conda
  transaction would trust a package that is gone. Installs stay with pip / uv (conda package names and channels
  differ from PyPI's, so a pip requirement has no faithful conda translation), but for the torch family where
  conda installed torch: those go to conda-forge with the environment's conda, mamba or pixi (remedy/commands/conda.py),
  never as a pip install over conda's torch;
- with neither pip nor uv, `PYTHON -m ensurepip` first (the standard library's pip bootstrap, offline), then pip;
- and where not even ensurepip can provide pip, no command at all: the fix says what to do by hand, because a
  command that cannot run must not be printed as if it could.

Two states of an environment make a pip command print and not do, and get a command that does instead:

- a distribution whose .dist-info has an empty RECORD, or none (installed by hand or by `setup.py`, a copied
  folder): pip and uv remove only what RECORD lists, so pip answers "No files were found to uninstall" (exit 0) and
  the distribution stays, or refuses without a RECORD. Its uninstall becomes `rm -rf` of the files the collector
  found by name (the metadata folder and its top-level packages and modules: `files_by_name`), and the fix says
  why. It is not an installer command, so `envcheck fix` runs it only with --allow-other. On Windows it is left
  to do by hand, with the paths;
- a distribution whose METADATA pip cannot read (not UTF-8, not a regular file): every pip command stops with a
  traceback while listing what is installed, whatever it was asked to do; one without a Version makes every
  `pip install` print a traceback and skip its conflict check. Such metadata folders are removed first
  (`rm -rf FOLDER`, EC0104 reports them), before any pip command of the finding. uv is not affected.

Snapshots older than the installer fact get pip, as before.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from envcheck.facts.snapshot import Distribution, Facts, canonical_name
from envcheck.remedy.commands import conda

# `uv pip` has these subcommands with pip's meaning; pip's others (download, wheel, ...) have no uv counterpart.
_UV_SUBCOMMANDS = frozenset({"install", "uninstall", "freeze", "list", "show", "check"})
_UV_DROP = frozenset({"-y", "--yes", "--no-input", "--disable-pip-version-check"})
_UV_RENAME = {"-I": "--reinstall", "--ignore-installed": "--reinstall"}


@dataclass(frozen=True)
class Installer:
    """The installer chosen for an environment, and why, in words."""

    kind: str  # "pip", "uv", "ensurepip" (pip, installed first by ensurepip) or "none" (commands are by hand)
    reason: str
    uv: str | None = None  # how to run uv when kind == "uv"
    conda: str | None = None  # how to run conda for what conda installed; None: conda is not used
    conda_owned: int = 0  # how many distributions conda installed

    def describe(self) -> str:
        """One line for reports: "uv pip (the environment was made by uv 0.13.9 and has no pip)"."""
        name = {"pip": "pip", "uv": "uv pip", "ensurepip": "pip, after ensurepip", "none": "none"}[self.kind]
        line = f"{name} ({self.reason})"
        if self.conda is not None and self.conda_owned:
            noun = "distribution" if self.conda_owned == 1 else "distributions"
            line += f"; {self.conda} removes the {self.conda_owned} {noun} conda installed"
        return line


@dataclass(frozen=True)
class Rendered:
    """Commands for one finding, and what to do by hand for those that cannot run here."""

    commands: tuple[tuple[str, ...], ...]
    by_hand: str = ""  # sentences for the finding's fix: what is done by hand, or differently from the rule's
    # commands, and why; empty when every command runs as the rule wrote it


def _kind(facts: Facts) -> tuple[str, str]:
    """(kind, reason): see the module docstring."""
    found = facts.installer
    if found is None:
        return "pip", "this snapshot does not record the installer"
    if found.uv is not None and found.uv_venv is not None:
        return "uv", f"the environment was made by uv {found.uv_venv}" + ("" if found.pip else " and has no pip")
    if found.uv is not None and not found.pip:
        return "uv", "the environment has no pip"
    if found.pip:
        made = f"; uv {found.uv_venv} made it, but no uv was found" if found.uv_venv is not None else ""
        return "pip", "pip is installed in the environment" + made
    if found.ensurepip:
        return "ensurepip", "the environment has no pip and no uv was found: `python -m ensurepip` installs pip"
    return "none", "the environment has no pip, no uv was found, and ensurepip has no pip to install"


def choose(facts: Facts) -> Installer:
    """The installer envcheck's commands use in this environment (see the module docstring)."""
    kind, reason = _kind(facts)
    found = facts.installer
    if found is None:
        if facts.conda is not None and facts.conda.packages:  # a pasted `conda list`, a pixi.lock: conda's torch
            reason += ", and the torch family conda installed is installed with conda"
        return Installer(kind, reason)
    conda = found.conda if facts.python.conda and found.conda_owned else None
    return Installer(kind, reason, uv=found.uv if kind == "uv" else None, conda=conda,
                     conda_owned=len(found.conda_owned) if conda else 0)


def _is_pip(argv: Sequence[str], python: str) -> bool:
    return len(argv) >= 4 and argv[0] == python and tuple(argv[1:3]) == ("-m", "pip")


def _to_uv(argv: Sequence[str], uv: str, python: str) -> tuple[str, ...]:
    rest = [_UV_RENAME.get(a, a) for a in argv[4:] if a not in _UV_DROP]
    return (uv, "pip", argv[3], "--python", python, *rest)


def _conda_split(argv: Sequence[str], facts: Facts, conda: str) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """A pip uninstall split into (`conda remove` of what conda installed, the pip uninstall of the rest).

    The pip part is () when nothing is left for pip. An uninstall with options other than -y (`-r FILE`) is left
    whole to pip: its arguments are not all names.
    """
    options = [a for a in argv[4:] if a.startswith("-")]
    names = [a for a in argv[4:] if not a.startswith("-")]
    owned = facts.installer.conda_owned if facts.installer is not None else {}
    if any(o not in ("-y", "--yes") for o in options) or not any(canonical_name(n) in owned for n in names):
        return None, tuple(argv)
    conda_names = tuple(dict.fromkeys(owned[canonical_name(n)] for n in names if canonical_name(n) in owned))
    rest = [n for n in names if canonical_name(n) not in owned]
    remove = (conda, "remove", "-p", facts.python.prefix, "-y", *conda_names)
    return remove, ((*argv[:4], *options, *rest) if rest else ())


def _unrecorded_split(argv: tuple[str, ...], facts: Facts,
                      taken: dict[str, int]) -> tuple[list[Distribution], tuple[str, ...]]:
    """A pip uninstall split into (the copies it would remove that have no RECORD to remove them by, the pip
    uninstall of the rest; () when nothing is left). The n-th uninstall of a name in one finding removes its n-th
    copy on the path (EC0103 uninstalls one per copy); `taken` counts them. An uninstall with options other than
    -y (`-r FILE`) is left whole to pip."""
    options = [a for a in argv[4:] if a.startswith("-")]
    names = [a for a in argv[4:] if not a.startswith("-")]
    if any(o not in ("-y", "--yes") for o in options):
        return [], argv
    by_hand: list[Distribution] = []
    rest: list[str] = []
    for name in names:
        key = canonical_name(name)
        copies = facts.names.get(key, ())
        index = taken.get(key, 0)
        taken[key] = index + 1
        copy = copies[index] if index < len(copies) else None
        if copy is not None and copy.unrecorded and copy.files_by_name:
            by_hand.append(copy)
        else:
            rest.append(name)
    if not by_hand:
        return [], argv
    return by_hand, ((*argv[:4], *options, *rest) if rest else ())


def _removal(paths: Sequence[str], facts: Facts) -> tuple[str, ...] | None:
    """The command that deletes `paths` (absolute, each a file or folder), or None where there is none to print."""
    if facts.python.platform == "win32" or not paths or not all(p.startswith("/") for p in paths):
        return None
    return ("rm", "-rf", *paths)


# What pip does with a distribution that has no usable RECORD (envcheck/sources/live/_collector.py says which), in
# words.
_PIP_SAYS = {"its RECORD is empty": "pip removes nothing, says \"No files were found to uninstall\" and exits 0",
             "it has no RECORD file": "pip refuses (\"uninstall-no-record-file\")"}


# Problems (envcheck/sources/live/_collector.py) of metadata that pip cannot read: every pip command stops on it while
# listing what is installed (a UnicodeDecodeError traceback; a FIFO would be waited on), and one without a Version
# makes `pip install` print a traceback and skip its conflict check.
_STOPS_PIP = ("METADATA is not valid UTF-8", "PKG-INFO is not valid UTF-8", "METADATA is not a regular file",
              "PKG-INFO is not a regular file")
_STOPS_PIP_INSTALL = ("METADATA has no Version",)


# The last snapshot's distributions and those of them with problems. pip_blockers runs once per finding, and a
# snapshot of 20,000 distributions can have as many findings: its distributions are scanned once, not per finding.
# The tuple is held, so `is` cannot take another snapshot's tuple for it.
_last: tuple[tuple[Distribution, ...], tuple[Distribution, ...]] = ((), ())


def _with_problems(facts: Facts) -> tuple[Distribution, ...]:
    global _last
    held, found = _last
    if held is not facts.distributions:
        found = tuple(d for d in facts.distributions if d.metadata_dir and d.problems)
        _last = (facts.distributions, found)
    return found


def pip_blockers(facts: Facts, *, install: bool) -> list[Distribution]:
    """The distributions whose metadata makes pip fail (`install`: a pip install among the commands) before it
    does what it was asked."""
    marks = _STOPS_PIP + (_STOPS_PIP_INSTALL if install else ())
    return [d for d in _with_problems(facts) if any(p.startswith(marks) for p in d.problems)]


def _with_blockers_removed(out: list[tuple[str, ...]], facts: Facts) -> tuple[list[tuple[str, ...]], str]:
    """`out`, its pip commands preceded by the removal of the metadata pip cannot read, and why, in words."""
    python = facts.python.executable
    pips = [a for a in out if _is_pip(a, python) or a == (python, "-m", "ensurepip")]
    blockers = pip_blockers(facts, install=any(len(a) > 3 and a[3] == "install" for a in pips)) if pips else []
    if not blockers:
        return out, ""
    folders = [d.metadata_dir for d in blockers]
    which = "; ".join(f"{d.name or '?'} ({'; '.join(d.problems)})" for d in blockers)
    removal = _removal(folders, facts)
    if removal is None:
        return out, (f"pip fails on the metadata of {which} before it does anything: delete "
                     f"{', '.join(folders)} by hand first (EC0104), then run the commands.")
    first = next(i for i, a in enumerate(out) if a in pips)
    return ([*out[:first], removal, *out[first:]],
            f"pip fails on the metadata of {which} before it does anything, so the commands first delete "
            f"{'that folder' if len(folders) == 1 else 'those folders'} (EC0104); reinstall what is still needed "
            "after.")


def for_environment(commands: Iterable[Sequence[str]], facts: Facts) -> Rendered:
    """`commands` (argv, placeholders filled in) as the checked environment runs them.

    Only `PYTHON -m pip ...` of the checked interpreter is rewritten; any other command is kept as written.
    """
    python = facts.python.executable
    chosen = choose(facts)
    out: list[tuple[str, ...]] = []
    conda_removals: set[tuple[str, ...]] = set()
    unrunnable: list[tuple[str, ...]] = []
    notes: list[str] = []
    taken: dict[str, int] = {}
    bootstrap = False
    for raw in commands:
        argv = tuple(raw)
        if not _is_pip(argv, python):
            out.append(argv)
            continue
        in_conda = conda.rewrite(argv, facts)
        if in_conda is not None:
            out += in_conda[0][:1]
            if in_conda[1] not in notes:
                notes.append(in_conda[1])
            if len(in_conda[0]) == 1:
                continue
            argv = in_conda[0][1]
        if argv[3] == "uninstall" and chosen.conda is not None:
            remove, argv = _conda_split(argv, facts, chosen.conda)
            if remove is not None and remove not in conda_removals:
                # A removal asked twice (one per duplicated copy, for pip) is one conda transaction.
                conda_removals.add(remove)
                out.append(remove)
            if not argv:
                continue
        if argv[3] == "uninstall":
            unrecorded, argv = _unrecorded_split(argv, facts, taken)
            for dist in unrecorded:
                removal = _removal(dist.files_by_name, facts)
                how = ("the command removes its files by name instead (envcheck fix runs it only with "
                       "--allow-other)" if removal is not None else
                       f"delete its files by hand instead: {', '.join(dist.files_by_name)}")
                notes.append(f"pip and uv cannot uninstall {dist.name} {dist.version} in {dist.location}: "
                             f"{dist.unrecorded}, so {_PIP_SAYS.get(dist.unrecorded or '', 'pip refuses')}; {how}.")
                if removal is not None:
                    out.append(removal)
            if not argv:
                continue
        found = facts.installer
        if chosen.uv is not None and argv[3] in _UV_SUBCOMMANDS:
            out.append(_to_uv(argv, chosen.uv, python))
        elif found is None or found.pip:
            out.append(argv)
        elif found.ensurepip:  # no pip, and no uv (or a pip subcommand uv lacks): bootstrap pip first
            bootstrap = True
            out.append(argv)
        else:
            unrunnable.append(argv)
    if bootstrap:
        out.insert(0, (python, "-m", "ensurepip"))
    out, blocked = _with_blockers_removed(out, facts)
    if blocked:
        notes.insert(0, blocked)
    if unrunnable:
        lines = "; ".join(shlex.join(a) for a in unrunnable)
        notes.append(f"No command is printed because nothing here can run it ({chosen.reason}): make pip or uv "
                     f"available to {python}, then run: {lines}")
    return Rendered(tuple(out), " ".join(notes))

"""The table of what each release of a compiled extension was built for: rules/data/extension-releases.toml.

Compiled torch extensions (flash-attn, vllm, torchao, DeepSpeed, detectron2) work only with the torch they were
built against, and OpenMMLab's packages assert the mmcv / mmengine range they accept when imported; most of them
declare none of it in their metadata (vllm, which pins torch exactly, is the exception). The table says, per
release, the versions of each such dependency the release works with, so that a derivation can name the release
made for what is installed. Parsed and validated with the rule pack (`parse`); a malformed table is one RuleError
naming the file and the key.

Layout, per distribution (its canonical name):

    [torchao]
    symptom = "how a release fails next to another torch, in the library's own words"
    applies-to = "all" | "tagged" | "untagged"   # which installs the rows describe (optional, default "all")
    import-decides = true   # optional: an import that succeeds proves the binary loads with this torch
    [torchao.releases]
    "0.14.1" = { torch = "==2.9.0" }
    "2.8.3" = { torch = ">=2.4,<2.9", cuda = ["12"] }   # cuda: the CUDA versions its binaries were built for
    "<0.8.2" = { torch = "<2" }   # a key that starts with an operator covers a range of releases

Every key of a row other than `cuda` names a distribution and gives the versions of it the release works with.
`cuda` lists the CUDA builds of torch its binaries load with: a major ("12") takes every minor of it, a minor
("12.8") only itself; a row may give `cuda` alone (bitsandbytes: one library per CUDA minor, any torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.derived.common import Table, release_table
from envcheck.errors import RuleError
from envcheck.support.patterns import lazy

__all__ = ["APPLIES", "EXTENSION_RELEASES", "ExtensionTable", "Library", "Row", "parse"]

APPLIES = ("all", "tagged", "untagged")
_LIBRARY_KEYS = frozenset({"symptom", "applies-to", "import-decides", "releases"})
_OPERATORS = ("<", ">", "=", "!", "~")
_CUDA = lazy(r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Row:
    """One release (or range of releases) of an extension and what it works with."""

    key: str  # as written: "0.14.1", or a range "<0.8.2"
    versions: SpecifierSet  # the releases the row covers
    needs: Mapping[str, SpecifierSet]  # dependency (canonical name) -> the versions of it the release works with
    cuda: tuple[str, ...]  # CUDA of its binaries: majors ("12", any minor) or minors ("12.8"); empty: not recorded
    written: Mapping[str, str]  # dependency -> its specifier as the table writes it (">=2.4,<2.9", for people)

    @property
    def exact(self) -> bool:
        """The row is one installable release (not a range)."""
        return not self.key.startswith(_OPERATORS)

    def install(self, name: str) -> str:
        """The pip requirement that installs this row's release(s): "torchao==0.14.1", "deepspeed>=0.8.2"."""
        return f"{name}=={self.key}" if self.exact else f"{name}{self.key}"

    def admits(self, dependency: str, version: Version, cuda: str | None = None) -> bool | None:
        """Does the release work with `version` of `dependency` (and, for torch, a CUDA build of `cuda`, "12.8";
        None for a CPU or ROCm torch, which `cuda` does not judge)? None when the row says nothing about it."""
        spec = self.needs.get(dependency)
        judges_cuda = dependency == "torch" and bool(self.cuda)
        if spec is None and not judges_cuda:
            return None
        if spec is not None and not spec.contains(Version(version.public), prereleases=True):
            return False
        if not judges_cuda or cuda is None:
            return True
        return any(cuda == c or cuda.split(".")[0] == c for c in self.cuda)

    def describe(self, dependency: str) -> str:
        """What the release works with, for people: "2.8.0", ">=2.4,<2.9 (CUDA 12)", "CUDA 11.8, 12.1"."""
        written = self.written.get(dependency, "")
        text = written[2:] if written.startswith("==") and "," not in written else written
        if dependency == "torch" and self.cuda:
            cuda = f"CUDA {', '.join(self.cuda)}" if not text else f"(CUDA {' or '.join(self.cuda)})"
            text = f"{text} {cuda}".strip()
        return text


@dataclass(frozen=True)
class Library:
    """An extension library's rows: which torch each of its releases was built for."""

    name: str
    symptom: str
    applies_to: str  # "all", "tagged" (only installs whose version carries a local tag), "untagged"
    import_decides: bool
    rows: tuple[Row, ...]

    def row_of(self, version: Version) -> Row | None:
        """The row of an installed release: its own row, else the first range that covers it."""
        release = Version(version.public)
        exact = [r for r in self.rows if r.exact and r.versions.contains(release, prereleases=True)]
        if exact:
            return exact[0]
        return next((r for r in self.rows if not r.exact and r.versions.contains(release, prereleases=True)), None)

    def release_for(self, dependency: str, version: Version, cuda: str | None = None) -> Row | None:
        """The newest release that works with `version` of `dependency`; a listed release before a range."""
        fitting = [r for r in self.rows if r.admits(dependency, version, cuda)]
        exact = [r for r in fitting if r.exact]
        if exact:
            return max(exact, key=lambda r: Version(r.key))
        return fitting[0] if fitting else None


@dataclass(frozen=True)
class ExtensionTable:
    """Every extension library of rules/data, by name."""

    libraries: Mapping[str, Library]


def parse(data: dict[str, Any], file: str) -> ExtensionTable:
    """The table from its parsed TOML; anything malformed is a RuleError naming `file` and the key."""
    return ExtensionTable({name: _library(file, name, table) for name, table in data.items()})


def _library(file: str, name: str, raw: object) -> Library:
    table, symptom = release_table(file, name, raw, _LIBRARY_KEYS, "how a mismatched release fails")
    applies = table.get("applies-to", "all")
    if applies not in APPLIES:
        raise RuleError(file, f"expected one of {', '.join(APPLIES)}, got {applies!r}", key=f"{name}.applies-to")
    decides = table.get("import-decides", False)
    if not isinstance(decides, bool):
        raise RuleError(file, f"expected true or false, got {decides!r}", key=f"{name}.import-decides")
    rows = tuple(_row(file, f"{name}.releases.{key}", key, row) for key, row in table["releases"].items())
    return Library(name, symptom, str(applies), decides, rows)


def _row(file: str, where: str, key: str, row: object) -> Row:
    if not isinstance(row, dict) or not row:
        raise RuleError(file, "expected { DEPENDENCY = \"SPECIFIER\", cuda = [...] } naming a dependency or CUDA",
                        key=where)
    try:
        if key.startswith(_OPERATORS):
            versions = SpecifierSet(key)
        else:
            Version(key)  # an installable release must be a version, not a pattern
            versions = SpecifierSet(f"=={key}")
    except (InvalidSpecifier, InvalidVersion):
        raise RuleError(file, "expected a release (\"0.14.1\") or a range of releases (\"<0.8.2\")",
                        key=where) from None
    needs: dict[str, SpecifierSet] = {}
    written: dict[str, str] = {}
    for dependency, spec in row.items():
        if dependency == "cuda":
            continue
        try:
            if not isinstance(spec, str) or not spec.strip():
                raise InvalidSpecifier(repr(spec))
            needs[dependency] = SpecifierSet(spec)
            written[dependency] = spec.replace(" ", "")
        except InvalidSpecifier:
            raise RuleError(file, f"expected a version specifier such as \">=2.4,<2.9\", got {spec!r}",
                            key=f"{where}.{dependency}") from None
    cuda = row.get("cuda", [])
    if not isinstance(cuda, list) or not all(isinstance(c, str) and _CUDA.fullmatch(c) for c in cuda) or \
            ("cuda" in row and not cuda):
        raise RuleError(file, f"expected a list of CUDA versions such as [\"12\"] or [\"12.8\"], got {cuda!r}",
                        key=f"{where}.cuda")
    return Row(key, versions, needs, tuple(cuda), written)


# rules/data/extension-releases.toml, as the derivations read it (`tables[EXTENSION_RELEASES]`).
EXTENSION_RELEASES = Table("extension-releases", parse)

"""Version skew from real release data (the table and the judgement behind envcheck/derived/release_names.py,
imported only when error output shows a failed import): which releases of a library have a name or module that
an import failed to find (`ImportError: cannot import name 'X' from 'P'`, `AttributeError: module 'P' has no
attribute 'X'`, `ModuleNotFoundError: No module named 'P.sub'`), and what that says about the release installed.

The data is rules/data/release-names.json, made from the libraries' released wheels by bench/release_names.py
(its docstring says how). Layout, per distribution:

    "transformers": {"package": "transformers",                # the import package
                     "releases": ["4.10.0", ..., "4.57.0"],     # the releases examined, oldest first
                     "modules": {"4.10.0..": "transformers transformers.models ...", "4.10.0..4.45.0": "..."},
                     "names": {"transformers": {"4.31.0..": "LlamaForCausalLM ...", ...}, ...}}

A range "A..B" is the first and the last examined release that has the name ("A.." up to the newest examined); the
names of a range are space-separated. Only public names of each library's key modules are listed, and every module
up to three components deep (four for google.protobuf).

The file is JSON, not TOML, and it is not one of the pack's tables (envcheck/derived/tables.py): a few hundred
kilobytes that only error output needs, read the first time a failed import is explained, never by a check without
error output, like this module. Its reader validates it and names the file and key of anything malformed in one
line.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from envcheck.derived.common import Item, Tables, Values
from envcheck.errors import RuleError
from envcheck.facts.snapshot import Facts, canonical_name
from envcheck.support import input_files, resources
from envcheck.support.versions import parse_version

__all__ = ["FILE", "Library", "ReleaseNames", "judged", "load", "parse"]

FILE = "release-names.json"
FORMAT = 1
_MAX_BYTES = 4 * 1024 * 1024  # the shipped file is some hundreds of kilobytes


class Span(NamedTuple):
    """The first and last examined release that have a name ("" for last: it is in the newest examined), and the
    release after the last (where it is gone; "" when none was examined after it)."""

    first: str
    last: str
    removed: str


class Library(NamedTuple):
    """One library's releases examined, its modules and its key modules' names, each with the span that has it."""

    distribution: str
    package: str
    releases: tuple[str, ...]
    modules: Mapping[str, str]  # range -> space-separated modules, as in the file (split when looked up)
    names: Mapping[str, Mapping[str, str]]  # module -> range -> space-separated names

    def span(self, text: str) -> Span:
        first, _, last = text.partition("..")
        removed = ""
        if last:
            after = self.releases.index(last) + 1
            removed = self.releases[after] if after < len(self.releases) else ""
        return Span(first, last, removed)

    def module(self, module: str) -> Span | None:
        """The span of releases that have `module` (a package or a file), or None when none examined has it."""
        return _find(self, self.modules, module)

    def name(self, module: str, name: str) -> Span | None:
        """The span of releases whose `module` binds the public `name`; None when none does or it is not listed."""
        spans = self.names.get(module)
        return None if spans is None else _find(self, spans, name)

    def lists_names_of(self, module: str) -> bool:
        return module in self.names


def _find(library: Library, spans: Mapping[str, str], word: str) -> Span | None:
    for text, words in spans.items():
        # A word is found whole: padded so that "float" does not match inside "float_".
        if f" {word} " in f" {words} ":
            return library.span(text)
    return None


class ReleaseNames(NamedTuple):
    """Every library of the file, by PEP 503 name, and an index of them by import package."""

    libraries: Mapping[str, Library]
    file: str

    def for_module(self, module: str) -> Library | None:
        """The library whose import package `module` is or lies in ("google.protobuf.internal" -> protobuf)."""
        best = None
        for library in self.libraries.values():
            if (module == library.package or module.startswith(library.package + ".")) and (
                    best is None or len(library.package) > len(best.package)):
                best = library
        return best


def parse(data: object, file: str) -> ReleaseNames:
    """The file's contents validated; RuleError naming `file` and the key of anything malformed."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RuleError(file, f"expected an object with \"format\": {FORMAT}", key="format")
    libraries = data.get("libraries")
    if not isinstance(libraries, dict) or not libraries:
        raise RuleError(file, "expected a non-empty object of libraries", key="libraries")
    out: dict[str, Library] = {}
    for dist, raw in libraries.items():
        where = f"libraries.{dist}"
        if not isinstance(raw, dict) or set(raw) != {"package", "releases", "modules", "names"}:
            raise RuleError(file, "expected package, releases, modules and names", key=where)
        package, releases = raw["package"], raw["releases"]
        if not isinstance(package, str) or not package:
            raise RuleError(file, "expected the import package's name", key=f"{where}.package")
        if (not isinstance(releases, list) or not releases or
                not all(isinstance(r, str) and parse_version(r) is not None for r in releases)):
            raise RuleError(file, "expected a list of release versions", key=f"{where}.releases")
        known = set(releases)
        modules = _spans(raw["modules"], known, file, f"{where}.modules")
        names = raw["names"]
        if not isinstance(names, dict):
            raise RuleError(file, "expected an object of module -> ranges", key=f"{where}.names")
        out[canonical_name(dist)] = Library(
            distribution=dist, package=package, releases=tuple(releases), modules=modules,
            names={module: _spans(spans, known, file, f"{where}.names.{module}") for module, spans in names.items()})
    return ReleaseNames(out, file)


def _spans(raw: object, releases: set[str], file: str, where: str) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise RuleError(file, "expected an object of \"first..last\" -> names", key=where)
    for text, words in raw.items():
        first, dots, last = text.partition("..")
        if not dots or first not in releases or (last and last not in releases):
            raise RuleError(file, "expected \"first..last\" of the releases listed (last empty: the newest)",
                            key=f"{where}.{text}")
        if not isinstance(words, str):
            raise RuleError(file, "expected space-separated names", key=f"{where}.{text}")
    return dict(raw)


@functools.cache
def load(path: str) -> ReleaseNames:
    """The file at `path`, read and validated once per process."""
    import json  # only here: a check without error output never reads the file

    text = input_files.read_text(path, error=RuleError, limit=_MAX_BYTES)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RuleError(path, f"not JSON: {exc}") from None
    return parse(data, path)


def _path(tables: Tables) -> str:
    """The file beside the pack's other tables (the last rule directory that has one), else the shipped one."""
    found = [Path(f).parent / FILE for f in tables.files.values()]
    chosen = next((p for p in reversed(found) if p.is_file()), resources.data_dir() / FILE)
    return str(chosen)


class _Failure(NamedTuple):
    module: str  # the module the import named ("transformers.cache_utils")
    name: str  # the name it lacked ("" for `No module named`)
    importer: str  # the package whose code imported it, from the traceback's path ("" when not shown)
    where: str  # the line, for the item
    nowhere: bool = False  # "(unknown location)": the module was found as a folder without its __init__.py


def _failures(facts: Facts, rule_id: str) -> list[_Failure]:
    """The failed imports error output showed, once each (module, name), with the importer where any line shows it;
    a failure whose message another rule also recognised is left to that rule (EC1201 knows why diffusers imports
    `cached_download`, EC1802 why NumPy's aliases went): its explanation is more specific than "missing"."""
    others = [o.text for o in facts.observed if o.rule_id != rule_id]
    found: dict[tuple[str, str], _Failure] = {}
    for seen in facts.observed:
        if seen.rule_id != rule_id:
            continue
        module, name = seen.captures.get("module", ""), seen.captures.get("name", "")
        said = (f"'{name}' from '{module}'", f"'{module}' has no attribute '{name}'") if name else \
            (f"No module named '{module}'",)
        if any(marker in text for text in others for marker in said):
            continue
        importer = seen.captures.get("importer", "")
        nowhere = bool(seen.captures.get("nowhere"))
        before = found.get((module, name))
        if before is None or (importer and not before.importer) or (nowhere and not before.nowhere):
            found[(module, name)] = _Failure(module, name, importer or (before.importer if before else ""),
                                             seen.where(), nowhere or (before is not None and before.nowhere))
    return list(found.values())


def judged(derived: Values, rule_id: str) -> list[Item]:
    """The items of `imports.missing-from-release` (envcheck/derived/release_names.py): each failed import the
    error output shows (the lines rule `rule_id`'s signatures recognised), judged against the releases that have
    the name."""
    facts = derived.facts
    failures = _failures(facts, rule_id)
    if not failures:
        return []
    data = load(_path(derived.tables))
    items = [_item(data, failure, facts) for failure in failures]
    return sorted((i for i in items if i is not None), key=lambda i: (i["module"], i["name"]))


def _item(data: ReleaseNames, failure: _Failure, facts: Facts) -> Item | None:
    library = data.for_module(failure.module)
    if library is None:
        return None
    qualified = f"{failure.module}.{failure.name}" if failure.name else failure.module
    what = f"`{failure.name}` of `{failure.module}`" if failure.name else f"the module `{failure.module}`"
    if failure.name:
        span = library.name(failure.module, failure.name) or library.module(qualified)
    else:
        span = library.module(failure.module)
    listed = library.lists_names_of(failure.module) if failure.name else \
        failure.module.count(".") - library.package.count(".") <= 3
    dist = library.distribution
    installed = facts.active(dist)
    have = installed.version if installed is not None else ""
    stated = facts.origin.startswith("report:")  # a pasted report's facts: what it states, not an install
    oldest, newest = library.releases[0], library.releases[-1]
    private = any(part.startswith("_") for part in qualified.split("."))
    importer = failure.importer if failure.importer and canonical_name(failure.importer) != canonical_name(dist) \
        else ""
    needs = importer or "the code that imports it"
    base: Item = {"library": dist, "module": failure.module, "name": failure.name, "qualified": qualified,
                  "first": "", "removed": "", "version": have, "importer": importer, "install": "",
                  "line": failure.where, "skew": "no"}
    if failure.nowhere:
        # Python names no file: it found `module` as a bare folder (a namespace package), not the installed library.
        return {**base, "summary": f"{what} could not be imported because `{failure.module}` was found as a folder "
                                   "without its code (`unknown location`), not as an installed release",
                "why": f"`(unknown location)` means Python found a folder named `{failure.module.split('.')[0]}` "
                       "without an `__init__.py` before (or instead of) the installed library: what an uninstall or "
                       "an interrupted install leaves behind, or a folder of that name in the working directory. "
                       f"No release of {dist} is to blame.",
                "fix": f"Look for a stray `{failure.module.split('.')[0]}` folder in the working directory and on "
                       f"`sys.path`, then reinstall {dist} (`pip install --force-reinstall --no-deps {dist}`)."}
    note = (f" `{qualified}` is private (a leading underscore): it is not part of {dist}'s API and changes without "
            "notice between releases; code that imports it is tied to the releases that have it."
            if private else "")
    if span is None:
        if not listed or private:
            # Names of this module are not listed (only key modules' are), or private names are not: no verdict.
            return {**base, "summary": f"{what} could not be imported; the release table lists no verdict for it",
                    "why": f"envcheck's table of {dist}'s releases ({oldest} to {newest}) lists the public names of "
                           f"its key modules only.{note}",
                    "fix": f"Check which {dist} the code expects (its requirements, or `pip show {dist}` where it "
                           f"worked) against the one installed (`pip show {dist}`)."}
        return {**base, "summary": f"no release of {dist} from {oldest} to {newest} has {what}",
                "why": f"Every release of {dist} from {oldest} to {newest} was read (its wheel) and none provides "
                       f"`{qualified}`: it is a typo, a name of another library, or of a release older than "
                       f"{oldest}; installing another {dist} will not provide it.{note}",
                "fix": f"Check the spelling and the library `{qualified}` belongs to (the project's documentation "
                       "or requirements); no release of this library fixes it."}
    first = "" if span.first == oldest else span.first
    base = {**base, "first": first, "removed": span.removed}
    have_v, first_v, removed_v = parse_version(have), parse_version(first), parse_version(span.removed)
    added = f"was added in {dist} {first}" if first else f"exists in {dist} {oldest} (the oldest release read)"
    gone = f" and removed in {span.removed}" if span.removed else ""
    ranged = f"{what} {added}{gone}"
    has = f"the report states {dist} {have}" if stated else f"the installed {dist} is {have}"
    that = f"{dist} {have} ({'as the report states' if stated else 'installed'})"
    spec = ",".join(p for p in (f">={first}" if first else "", f"<{span.removed}" if span.removed else "") if p)
    releases = (f"{dist} {first or oldest} to {span.last or newest}" + ("" if span.last else " and later"))
    if have_v is None:
        return {**base, "skew": "yes", "summary": f"{ranged}; which {dist} is installed is not known",
                "why": f"{what.capitalize()} exists in {releases} (read from the released wheels).{note}",
                "fix": f"Run `pip show {dist}` in the environment that failed: {needs} needs {dist}{spec}."}
    too_old = first_v is not None and have_v.release < first_v.release
    too_new = removed_v is not None and have_v.release >= removed_v.release
    if not too_old and not too_new:
        return {**base, "summary": f"{ranged}, and {that} has it: the failure is not the release",
                "why": f"{what.capitalize()} exists in {releases}, which includes {have}. An import of it fails "
                       "for another reason: a local file or folder named like the module shadows it, an install "
                       "was interrupted, the error comes from another interpreter, or a circular import.",
                "fix": f"Check where `{library.package}` is imported from (`python -c \"import {library.package}; "
                       f"print({library.package}.__file__)\"`) and reinstall {dist} if its files are incomplete."}
    if too_old:
        why = (f"{what.capitalize()} first appears in {dist} {first}; {that} is older, so "
               f"{needs} needs a newer {dist}.")
        fix = f"Install {dist}{spec} ({releases} have it)."
    else:
        why = (f"{what.capitalize()} was removed in {dist} {span.removed}; {that} is newer, so "
               f"{needs}, written for an older {dist}, needs {dist}{spec}.")
        fix = (f"Install {dist}{spec}, or upgrade {importer or 'the code that imports it'} to a release written "
               f"for {dist} {have}.")
    return {**base, "skew": "yes", "install": f"{dist}{spec}",
            "summary": f"{ranged}; {has}" + (f": {importer} needs {dist}{spec}" if importer else ""),
            "why": f"{why}{note}", "fix": fix}

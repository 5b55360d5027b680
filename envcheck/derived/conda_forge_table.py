"""rules/data/conda-forge-builds.toml: what conda-forge compiled each pytorch build for, parsed and validated
(envcheck/derived/conda_builds.py declares the table and reads it). Imported only to parse the table or where a
derivation reads it (a torch that conda installed): a pip environment's check, its pack cached, never defines these
classes (envcheck/cache/pack_data.py decodes a table when it is first read)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from envcheck.derived import build_matrix as tb
from envcheck.errors import RuleError

SUBDIRS = ("linux-64", "linux-aarch64", "win-64")
_KEYS = frozenset({"version", "builds", "source", *SUBDIRS})


@dataclass(frozen=True)
class CondaForgeRelease:
    """The builds `builds[0]..builds[1]` of one pytorch release on conda-forge, and what each CUDA's was compiled
    for, per subdir."""

    version: Version
    builds: tuple[int, int]
    source: str  # the feedstock's recipe/build.sh at the commit it was read from
    archs: Mapping[str, Mapping[tuple[int, int], tuple[str, ...]]]  # subdir -> CUDA -> ("sm_50", ..., "compute_90")


@dataclass(frozen=True)
class CondaForgeTable:
    """conda-forge's pytorch builds, release by release: which CUDA each built for and its architecture list."""

    channel: str  # "conda-forge"
    releases: tuple[CondaForgeRelease, ...]  # oldest first


def parse(data: dict[str, Any], file: str) -> CondaForgeTable:
    """The table from its parsed TOML; anything malformed is a RuleError naming `file` and the key."""
    unknown = sorted(set(data) - {"schema", "channel", "release"})
    if unknown:
        raise RuleError(file, "unknown key; expected schema, channel, release", key=unknown[0])
    if data.get("schema") != 1:
        raise RuleError(file, f"expected schema = 1, got {data.get('schema')!r}", key="schema")
    channel = data.get("channel")
    if not isinstance(channel, str) or not channel:
        raise RuleError(file, "expected the channel's name", key="channel")
    rows = data.get("release")
    if not isinstance(rows, list) or not rows:
        raise RuleError(file, "expected [[release]] entries", key="release")
    releases = [_release(row, f"release[{i}]", file) for i, row in enumerate(rows)]
    seen: dict[Version, list[tuple[int, int]]] = {}
    for i, release in enumerate(releases):
        for low, high in seen.get(release.version, []):
            if release.builds[0] <= high and low <= release.builds[1]:
                raise RuleError(file, f"builds {list(release.builds)} of pytorch {release.version} overlap another "
                                      "entry's", key=f"release[{i}].builds")
        seen.setdefault(release.version, []).append(release.builds)
    return CondaForgeTable(channel, tuple(sorted(releases, key=lambda r: (r.version, r.builds))))


def _release(row: object, key: str, file: str) -> CondaForgeRelease:
    if not isinstance(row, dict):
        raise RuleError(file, "expected a table", key=key)
    stray = sorted(set(row) - _KEYS)
    if stray:
        raise RuleError(file, f"unknown key; expected one of {', '.join(sorted(_KEYS))}", key=f"{key}.{stray[0]}")
    try:
        version = Version(str(row.get("version")))
    except InvalidVersion:
        raise RuleError(file, f"expected a pytorch version, got {row.get('version')!r}", key=f"{key}.version") from None
    builds = row.get("builds")
    if not (isinstance(builds, list) and len(builds) == 2 and all(isinstance(b, int) and 0 <= b < 100 for b in builds)
            and builds[0] <= builds[1]):
        raise RuleError(file, "expected [first, last] feedstock build numbers below 100", key=f"{key}.builds")
    source = row.get("source")
    if not isinstance(source, str) or not re.fullmatch(r"https://\S+", source):
        raise RuleError(file, "expected the URL of the build script read", key=f"{key}.source")
    archs: dict[str, dict[tuple[int, int], tuple[str, ...]]] = {}
    for subdir in SUBDIRS:
        table = row.get(subdir)
        if table is None:
            continue
        if not isinstance(table, dict) or not table:
            raise RuleError(file, "expected a table of CUDA version = architecture list", key=f"{key}.{subdir}")
        for cuda, text in table.items():
            where = f"{key}.{subdir}.{cuda}"
            match = re.fullmatch(r"(\d+)\.(\d+)", cuda)
            if match is None or not isinstance(text, str):
                raise RuleError(file, "expected \"12.6\" = \"5.0;...;9.0+PTX\"", key=where)
            try:
                expanded = tb.expand_arch_list(text)
            except ValueError as exc:
                raise RuleError(file, str(exc), key=where) from None
            archs.setdefault(subdir, {})[(int(match.group(1)), int(match.group(2)))] = expanded
    if not archs:
        raise RuleError(file, f"expected the architectures of at least one of {', '.join(SUBDIRS)}", key=key)
    return CondaForgeRelease(version, (builds[0], builds[1]), source, archs)

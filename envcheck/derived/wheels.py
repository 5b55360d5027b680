"""Wheel availability: torch requirements and PyTorch wheel indexes that no published wheel can satisfy here.

pip and uv install torch only from wheels published for the interpreter's Python and platform. The build matrix
(rules/data/torch-builds.toml) records which releases, variants and Pythons PyTorch published per platform, so a
requirement can be judged before anyone runs the install: `torch>=2.3` on macOS x86_64 (the last wheel there is
2.2.2), `torch==2.4.1` on Python 3.13 (its first wheels came with 2.5), `torch==2.5.1+cu124` on macOS (CUDA builds
exist for Linux and Windows only), or a `--index-url .../cu121` on a Mac.

The requirements judged are those the project declares (`facts.project`: its dependencies, requirements files, and
the pyproject.toml's `[tool.envcheck] require`) and those installed distributions declare on torch that the
installed torch does not meet (the requirement walk): each is what someone will try to install.
A requirement the installed torch already satisfies is left alone (`torch.unpublished-build` judges the installed
build). Nothing is judged for requirements no release of the matrix matches on any platform (a release newer than
the table, a nightly): the table cannot speak for them.
This module exports them as derived facts (`DERIVATIONS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envcheck.derived import build_matrix as tb
from envcheck.derived.build_matrix import platform_key
from envcheck.derived.common import TORCH_BUILDS, Derivation, Item, Values
from envcheck.facts.snapshot import Facts, canonical_name
from envcheck.support.patterns import lazy
from envcheck.support.versions import marker_env, marker_holds, parse_requirement, parse_version

REQUIREMENT_FIELDS = ("requirement", "source", "platform", "python", "reason", "newest", "pythons", "variants")
INDEX_FIELDS = ("url", "variant", "platform", "variants", "source")
_VARIANT = lazy(r"cpu|cu\d+|rocm\d+(?:\.\d+)+")


def _python(facts: Facts) -> str:
    return ".".join(facts.python.version.split(".")[:2])


def _candidates(release: tb.Release, platform: str) -> list[tuple[Version, tb.Variant | None]]:
    """Every version string pip could install of `release` on `platform`: the untagged PyPI wheel (variant None
    when PyPI's wheel is no index variant) and each index variant's `X+tag`."""
    builds = release.platforms.get(platform)
    if builds is None:
        return []
    out: list[tuple[Version, tb.Variant | None]] = []
    if builds.pypi is not None:
        out.append((release.version, next((v for v in builds.variants if v.name == builds.pypi), None)))
    for variant in builds.variants:
        out.append((Version(f"{release.version}+{variant.name}"), variant))
    return out


def _matches(spec: SpecifierSet, release: tb.Release, platform: str) -> bool:
    return any(spec.contains(v, prereleases=True) for v, _ in _candidates(release, platform))


def _public_matches(spec: SpecifierSet, release: tb.Release) -> bool:
    """The release matches `spec` once local tags are ignored (`==2.5.1+cu124` names release 2.5.1)."""
    public = SpecifierSet(",".join(re.sub(r"\+[^,]*", "", str(s)) for s in spec))
    return public.contains(release.version, prereleases=True)


def _declared(facts: Facts, unsatisfied: Iterable[Item]) -> list[tuple[str, str]]:
    """(requirement text, where it comes from) for every torch requirement the project or an installed
    distribution declares, markers holding for the checked interpreter."""
    out: list[tuple[str, str]] = []
    project = facts.project
    if project is not None:
        env = marker_env(facts)
        for declared in project.requirements:
            req = parse_requirement(declared.requirement)
            if (req is None or canonical_name(req.name) != "torch" or req.url is not None
                    or declared.kind == "constraint"):  # a constraint limits torch where installed, needs none
                continue
            if req.marker is not None and marker_holds(req.marker, env) is not True:
                continue  # false here, or not decidable from what the snapshot states
            out.append((declared.requirement, declared.source))
    for item in unsatisfied:
        if canonical_name(item["dependency"]) == "torch":
            out.append((item["requirement"], item["requirer"]))
    return out


def requirements_without_wheel(facts: Facts, matrix: tb.BuildMatrix, unsatisfied: Iterable[Item] | None,
                               kind: str) -> list[Item] | None:
    """The torch requirements of `_declared` that no published wheel satisfies for this platform and Python, of one
    `kind`: "platform" (no release in range has a wheel for the platform), "python" (releases in range have wheels
    here, for other Pythons) or "variant" (the releases exist here, but not as the variant the requirement names).
    None when the walk of installed requirements is unknown and the project declares nothing."""
    platform = platform_key(facts)
    if platform is None:
        return []
    python = _python(facts)
    torch = facts.active("torch")
    installed = parse_version(torch.version) if torch is not None else None
    out: list[Item] = []
    seen: set[str] = set()
    for text, source in _declared(facts, unsatisfied or ()):
        req = parse_requirement(text.split(";", 1)[0].strip())
        if req is None or text in seen:
            continue
        seen.add(text)
        spec = req.specifier
        if installed is not None and spec.contains(installed, prereleases=True):
            continue
        known = [r for r in matrix.releases if any(_matches(spec, r, p) for p in r.platforms)]
        if not known:
            continue  # releases newer than the table, nightlies, source builds: the matrix cannot judge
        here = [r for r in known if _matches(spec, r, platform)]
        if any(python in r.platforms[platform].python for r in here):
            continue
        found = _classify(spec, matrix, known, here, platform, python)
        if found is None or found[0] != kind:
            continue
        _, reason, newest, pythons, variants = found
        out.append({"requirement": text, "source": source, "platform": platform, "python": python,
                    "reason": reason, "newest": newest, "pythons": pythons, "variants": variants})
    if unsatisfied is None and not out:
        return None
    return sorted(out, key=lambda i: (i["source"], i["requirement"]))


def _newest_here(matrix: tb.BuildMatrix, platform: str, python: str) -> str:
    """The newest release with a wheel for this platform and Python, "none" when there is none."""
    found = [r.version for r in matrix.releases if platform in r.platforms and python in r.platforms[platform].python]
    return str(max(found)) if found else "none"


def _classify(spec: SpecifierSet, matrix: tb.BuildMatrix, known: list[tb.Release], here: list[tb.Release],
              platform: str, python: str) -> tuple[str, str, str, str, str] | None:
    newest = _newest_here(matrix, platform, python)
    if here:
        pythons = sorted({p for r in here for p in r.platforms[platform].python}, key=_python_key)
        shown = ", ".join(pythons)
        return ("python", f"torch{spec} has wheels for {platform} only for Python {shown}, not {python}", newest,
                shown, "")
    public = [r for r in known if _public_matches(spec, r) and platform in r.platforms]
    if public:
        variants = sorted({v.name for r in public for v in r.platforms[platform].variants})
        shown = ", ".join(variants)
        return ("variant", f"PyTorch built torch {', '.join(str(r.version) for r in public)} for {platform} only as "
                f"{shown}, not as `{spec}` names", newest, "", shown)
    last = [r.version for r in matrix.releases if platform in r.platforms]
    ended = f" (its last wheels there are torch {max(last)})" if last else ""
    return ("platform", f"no torch release in `{spec}` has a wheel for {platform}{ended}", newest, "", "")


def _python_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def index_without_wheel(facts: Facts, matrix: tb.BuildMatrix) -> list[Item]:
    """The PyTorch wheel indexes the project names (`--index-url` / `--extra-index-url` in its requirements files)
    whose variant no release of the matrix was built as for this platform: `.../whl/cu121` on macOS, `.../rocm6.2`
    on Windows. pip then finds no torch there (`No matching distribution found for torch`), or, with the index as an
    extra index, silently takes PyPI's build instead."""
    project = facts.project
    platform = platform_key(facts)
    if project is None or platform is None:
        return []
    built = {v.name for r in matrix.releases if platform in r.platforms for v in r.platforms[platform].variants}
    everywhere = {v.name for r in matrix.releases for b in r.platforms.values() for v in b.variants}
    out: list[Item] = []
    for option in project.index_options:
        url = option.split("=", 1)[1] if option.startswith("--") and "=" in option else option
        if not url.startswith(("https://", "http://")) or "/whl/" not in url:
            continue
        variant = url.rstrip("/").rsplit("/", 1)[-1]
        if _VARIANT.fullmatch(variant) is None or variant in built or variant not in everywhere:
            continue
        out.append({"url": url, "variant": variant, "platform": platform,
                    "variants": ", ".join(sorted(built)) or "none",
                    "source": ", ".join(project.files) or "the project"})
    return sorted(out, key=lambda i: i["url"])


def _without_wheel(kind: str) -> Callable[[Values], Any]:
    def compute(derived: Values) -> Any:
        return requirements_without_wheel(derived.facts, derived.tables[TORCH_BUILDS],
                                          derived.get("requirements.unsatisfied"), kind)

    return compute


_REQUIREMENT_DOC = ("`requirement`, `source` (\"pyproject.toml: project.dependencies[0]\", or the installed "
                    "distribution that requires it), `platform`, `python`, `reason`, `newest` (the newest torch with a "
                    "wheel for this platform and Python, or \"none\"), `pythons` (the Pythons the releases in range "
                    "have wheels for here), `variants` (the builds PyTorch published of them here). Judged for the "
                    "project's torch requirements (`[tool.envcheck] require` included) and the torch requirements of "
                    "installed distributions that the installed torch does not meet; not for requirements no release "
                    "of the build matrix matches (newer releases, nightlies)")

DERIVATIONS: list[Derivation] = [
    Derivation("torch.requirement-without-wheel-for-platform",
               "torch requirements no published wheel can satisfy on this platform, for any Python: no release "
               f"in range was built for it (macOS x86_64 after 2.2.2): {_REQUIREMENT_DOC}", REQUIREMENT_FIELDS,
               _without_wheel("platform")),
    Derivation("torch.requirement-without-wheel-for-python",
               "torch requirements whose releases have wheels for this platform, but none for this Python "
               f"(3.13 before torch 2.5): {_REQUIREMENT_DOC}", REQUIREMENT_FIELDS, _without_wheel("python")),
    Derivation("torch.requirement-without-wheel-for-variant",
               "torch requirements that name a build (local tag `+cu124`, `+rocm6.2`) PyTorch never published "
               f"for this platform, such as CUDA on macOS: {_REQUIREMENT_DOC}", REQUIREMENT_FIELDS,
               _without_wheel("variant")),
    Derivation("torch.index-without-wheel",
               "PyTorch wheel indexes the project names (`--index-url`, `--extra-index-url` in its requirements "
               "files) whose build no torch release has for this platform (`.../whl/cu121` on macOS): `url`, "
               "`variant`, `platform`, `variants` (the builds published for this platform), `source`",
               INDEX_FIELDS,
               lambda derived: index_without_wheel(derived.facts, derived.tables[TORCH_BUILDS])),
]

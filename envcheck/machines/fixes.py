"""A finding's fix for a declared machine: the change to the project's pins, not a command for a local environment.

The engine writes each finding's commands for the snapshot's interpreter (`python -m pip install ...`): on a machine
that is not here, nobody can run them. `pin_change` reads what such a command would install or remove and says it
as a change to the pins: the file and line of each pin and what it becomes, the index the new build comes from,
and, for a lock, the command that regenerates it in the project's tool. Pure: pins and argv in, a sentence out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from envcheck.facts.snapshot import canonical_name
from envcheck.machines.pins import PLATFORM_MARKERS, Pin, Pins, index_variant
from envcheck.support.versions import parse_requirement, parse_version

_VALUED = frozenset({"-i", "--index-url", "--extra-index-url", "--default-index", "--index", "-c", "--constraint",
                     "-r", "--requirement", "-f", "--find-links", "--python", "-p", "--target", "--prefix"})
_INDEX = frozenset({"-i", "--index-url", "--default-index", "--index", "--extra-index-url"})


@dataclass(frozen=True)
class Change:
    """What one command asks of the pins."""

    install: tuple[Requirement, ...]
    remove: tuple[str, ...]
    index: str | None


def read_command(argv: Sequence[str]) -> Change | None:
    """The requirements a `pip install` / `pip uninstall` command (any interpreter, `uv pip` too) names and the
    index it installs from; None for any other command."""
    words = list(argv)
    for verb in ("install", "uninstall"):
        if verb in words:
            at = words.index(verb)
            break
    else:
        return None
    if "pip" not in words[:at]:
        return None
    install: list[Requirement] = []
    remove: list[str] = []
    index = None
    rest = words[at + 1:]
    while rest:
        arg = rest.pop(0)
        if arg in _VALUED:
            value = rest.pop(0) if rest else ""
            if arg in _INDEX and index is None:
                index = value
            continue
        if arg.startswith("-"):
            continue
        try:
            req = Requirement(arg)
        except InvalidRequirement:
            return None  # a path or a URL: not a pin
        if verb == "install":
            install.append(req)
        else:
            remove.append(canonical_name(req.name))
    return Change(tuple(install), tuple(remove), index)


def marker_for(platform: str) -> str:
    """The PEP 508 marker that keeps a pin to one platform: `sys_platform == "darwin" and platform_machine ==
    "x86_64"`."""
    sys_platform, arch, _, _ = PLATFORM_MARKERS[platform]
    return f'sys_platform == "{sys_platform}" and platform_machine == "{arch}"'


def regenerate(pins: Pins, names: Sequence[str]) -> str:
    """The command that rewrites the lock with `names` moved, in the lock's own tool."""
    if pins.lock is None:
        return ""
    upgrade = " ".join(f"--upgrade-package {n}" for n in names)
    tool = pins.lock.tool
    if tool == "uv":
        return f"uv lock {upgrade}"
    if tool == "pylock":
        return (f"uv lock {upgrade}, then `uv export --format pylock.toml -o {pins.lock_shown}` (or the tool that "
                "wrote it)")
    if tool == "poetry":
        return f"poetry update --lock {' '.join(names)}"
    if tool == "pixi":  # pixi.toml's [pypi-dependencies] (or its conda dependencies) changed, the lock re-solved
        return f"pixi update {' '.join(names)}"
    return f"pdm update --no-sync {' '.join(names)}"


def _versions(req: Requirement) -> list[Version]:
    """The versions a requirement's clauses name, and one just above each: where two ranges meet, one of them is in
    both (`>=2.6` and `<2.8` meet at 2.6; `>2.6` and `<2.7` at 2.6.1)."""
    out = []
    for spec in req.specifier:
        version = parse_version(spec.version.removesuffix(".*"))
        if version is not None:
            out += [version, Version(f"{version.public}.1")]
    return out


def _admits(other: Pin, req: Requirement) -> bool:
    """Whether the project's requirement `other` lets `req` install: the one version `req` pins is in its range, or
    for a range, one version both name is in both."""
    written = parse_requirement(other.written)
    if written is None or not written.specifier:
        return True
    candidates = _versions(req) if req.specifier else []
    if not candidates:
        return True
    exact = _exact_version(req)
    if exact is not None:
        return written.specifier.contains(exact, prereleases=True)
    candidates += _versions(written)
    return any(written.specifier.contains(v, prereleases=True) and req.specifier.contains(v, prereleases=True)
               for v in candidates)


def _exact_version(req: Requirement) -> Version | None:
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and not specs[0].version.endswith("*"):
        return parse_version(specs[0].version)
    return None


def _in_place_of(other: Pin, req: Requirement) -> str:
    """What the project's requirement `other` becomes so that `req` installs: the new pin, without the build's local
    tag where `other` had none (`torch==2.11.0` in pyproject.toml beside `torch==2.11.0+cu128` from the index in
    requirements.txt: an exact pin without a tag admits every build of that release), with `other`'s marker."""
    written = parse_requirement(other.written)
    exact = _exact_version(req)
    local = written is not None and any("+" in s.version for s in written.specifier)
    spec = f"=={exact.public}" if exact is not None and exact.local and not local else str(req.specifier)
    marker = f"; {written.marker}" if written is not None and written.marker is not None else ""
    return f"{written.name if written is not None else req.name}{spec}{marker}"


def pin_change(change: Change, pins: Pins, platform: str, scoped: bool) -> str:
    """`change` as a change to the project's pins, in words. `scoped`: other checked machines run another platform,
    so a pin meant for this one needs a marker."""
    parts: list[str] = []
    moved: list[str] = []
    for req in change.install:
        name = canonical_name(req.name)
        wanted = f"{req.name}{req.specifier}"
        pin = pins.get(name)
        moved.append(name)
        if pin is None:
            parts.append(f"add {wanted}")
        elif pin.version is not None and f"{name}=={pin.version}" == f"{name}{req.specifier}":
            continue
        else:
            others = pins.elsewhere(pin) if pins.written else tuple(filter(None, [pins.declared.get(name)]))
            kept = [o for o in others if _admits(o, req)]
            also = (f", required as {', '.join(f'{o.written} in {o.where}' for o in kept)}, which "
                    f"{'admits' if len(kept) == 1 else 'admit'} it" if kept else "")
            parts.append(f"{wanted} in place of {pin.written} ({pin.where}{also})")
            # Every other file that requires it in a way the new pin breaks changes with it: one left as it was
            # would conflict with the new pin, and the install would fail (or keep the old one).
            parts += [f"{_in_place_of(o, req)} in place of {o.written} ({o.where})" for o in others if o not in kept]
    for name in change.remove:
        pin = pins.get(name)
        parts.append(f"remove {pin.written} ({pin.where})" if pin is not None
                     else f"remove {name} (no pin names it: find what requires it)")
    if not parts:
        return ""
    variant = index_variant(change.index)
    old = next((pin.index for pin in map(pins.get, moved) if pin is not None and pin.index), None)
    index = ""
    if change.index and change.index != old:
        written = pins.index_where.get(old or "", "")
        was = f" (now {old}{', ' + written if written else ''})" if old else ""
        index = f", from {change.index}{was}"
    marker = f"; keep it to this machine's platform with the marker `; {marker_for(platform)}`" if scoped else ""
    if pins.lock is None:
        return f"Change the pins: {'; '.join(parts)}{index}{marker}."
    how = "[[tool.uv.index]] and [tool.uv.sources]" if pins.lock.tool in ("uv", "pylock") else "its source"
    source = f" (the index: {how} in pyproject.toml)" if variant and index else ""
    return (f"Change what {pins.lock_shown} pins: {'; '.join(parts)}{index}{source}{marker}; then regenerate it: "
            f"`{regenerate(pins, moved or list(change.remove))}`.")

"""Requirements files as pip reads them: one requirement a line, `-r` / `-c` includes, index options, markers.

What is kept: each requirement with its file and line, each constraint (`-c`: checked only where the package is
installed), and the index options (`--index-url`, `--extra-index-url`, `--find-links`, `--no-index`) so that the
install command of a finding uses the index the project installs from. What is passed over, as pip would not need
it to know *what* is required: per-line options (`--hash`, `--config-settings`), global options (`--pre`,
`--only-binary`, ...), editable lines (`-e`: a checkout, named by no requirement) and bare paths or URLs of
archives (named by no requirement either). A line that is none of these and does not parse is a ProjectError naming
the file and line; so is an include that cannot be read or that includes itself again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from envcheck.sources.project.errors import ProjectError
from envcheck.support.patterns import lazy

# pip's comment rule: `#` at the start of a line or after whitespace starts a comment (a URL fragment `#egg=` is not).
_COMMENT = lazy(r"(^|\s+)#.*$")
# Per-requirement options that may follow a requirement on its line.
_LINE_OPTION = lazy(r"\s+--?(hash|config-settings|global-option|install-option)\b.*$")
_INCLUDE = {"-r": "requirement", "--requirement": "requirement", "-c": "constraint", "--constraint": "constraint"}
_INDEX = {"-i": "--index-url", "--index-url": "--index-url", "--extra-index-url": "--extra-index-url",
          "-f": "--find-links", "--find-links": "--find-links"}
_EDITABLE = ("-e", "--editable")


@dataclass(frozen=True)
class Line:
    """A requirement (or constraint) of a requirements file, and where it was written."""

    text: str  # PEP 508
    source: str  # "requirements.txt:3"
    constraint: bool  # from a `-c` file: limits the version where installed, requires nothing


@dataclass
class Read:
    """Everything read from a requirements file and its includes."""

    lines: list[Line] = field(default_factory=list)
    index_options: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, content) with `\\` continuations joined and comments removed."""
    out: list[tuple[int, str]] = []
    buffer, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not buffer:
            start = number
        if raw.endswith("\\"):
            buffer += raw[:-1]
            continue
        line = _COMMENT.sub("", buffer + raw).strip()
        buffer = ""
        if line:
            out.append((start, line))
    if buffer.strip():
        out.append((start, _COMMENT.sub("", buffer).strip()))
    return out


def _option(line: str, names: dict[str, str] | tuple[str, ...]) -> tuple[str, str] | None:
    """(option, value) when `line` is one of the options `names` (`-r FILE`, `-rFILE`, `--requirement=FILE`)."""
    for name in names:
        if line == name:
            return name, ""
        if line.startswith(name + "=") or line.startswith(name + " ") or line.startswith(name + "\t"):
            return name, line[len(name) + 1:].strip()
        if len(name) == 2 and line.startswith(name) and not line.startswith("--"):
            return name, line[2:].strip()
    return None


def _is_archive(line: str) -> bool:
    """A path or URL of something to install, named by no requirement (`./pkg`, `https://.../x.whl`)."""
    return line.startswith((".", "/", "~", "file:")) or bool(re.match(r"^[A-Za-z][\w+.-]*://", line))


def read(path: Path, display: Callable[[Path], str], *, constraint: bool = False) -> Read:
    """`path` and everything it includes; `display` names a file in messages and sources."""
    out = Read()
    _read(path, display, constraint, out, [])
    return out


def _read(path: Path, display: Callable[[Path], str], constraint: bool, out: Read, stack: list[Path]) -> None:
    resolved = path.resolve()
    try:
        text = resolved.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProjectError(display(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(display(path), f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    if resolved not in out.files:
        out.files.append(resolved)
    name = display(resolved)
    for number, line in _logical_lines(text):
        include = _option(line, tuple(_INCLUDE))
        if include is not None:
            option, target = include
            if not target:
                raise ProjectError(name, f"{option} names no file", line=number)
            included = (resolved.parent / target).resolve()
            if included in (*stack, resolved):
                chain = " -> ".join(display(p) for p in [*stack, resolved, included])
                raise ProjectError(name, f"{option} {target}: include loop ({chain})", line=number)
            if not included.is_file():
                raise ProjectError(name, f"{option} {target}: no such file", line=number)
            _read(included, display, constraint or _INCLUDE[option] == "constraint", out, [*stack, resolved])
            continue
        index = _option(line, tuple(_INDEX))
        if index is not None:
            if not index[1]:
                raise ProjectError(name, f"{index[0]} names no location", line=number)
            out.index_options.extend([_INDEX[index[0]], index[1]])
            continue
        if line == "--no-index":
            out.index_options.append(line)
            continue
        if _option(line, _EDITABLE) is not None or line.startswith("-") or _is_archive(line):
            continue  # see the module docstring: nothing here names a requirement to check
        text_req = _LINE_OPTION.sub("", line).strip()
        try:
            Requirement(text_req)
        except InvalidRequirement as exc:
            raise ProjectError(name, f"invalid requirement {text_req!r}: {(str(exc).splitlines() or [''])[0]}",
                               line=number) from None
        out.lines.append(Line(text_req, f"{name}:{number}", constraint))

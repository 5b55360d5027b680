#!/usr/bin/env python3
"""Check a release tag against the version and print that version's CHANGELOG section: the release workflow's first
step, and its GitHub release's notes.

    python .ci/release_notes.py v0.1.0 > notes.md

The version has one source, `__version__` in envcheck/version.py (pyproject.toml reads it there); the tag must be
`v` and exactly that version. CHANGELOG.md must have a `## [0.1.0]` section (Keep a Changelog: `## [0.1.0] -
2026-01-31`) with something in it; its body, up to the next `## ` heading or the link definitions at the end, is
printed. Exit status: 0 with the notes on standard output; 1 with one line saying what is wrong; 2 on bad usage.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from verify_dist import ROOT, Failed, source_version

_HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\]")
_LINK_DEFINITION = re.compile(r"^\[[^\]]+\]: \S")


def check_tag(tag: str, version: str) -> None:
    """Raise Failed unless `tag` is `v` + `version`."""
    if tag != f"v{version}":
        raise Failed(f"the tag {tag} does not match envcheck/version.py's __version__ {version} (expected v{version})")


def changelog_section(text: str, version: str) -> str:
    """The body of the `## [version]` section of a Keep-a-Changelog text, without its heading; Failed when the
    section is not there or is empty."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if (m := _HEADING.match(line)) and m["version"] == version]
    if not starts:
        raise Failed(f"CHANGELOG.md has no `## [{version}]` section: rename [Unreleased] to the version being released")
    end = next((i for i in range(starts[0] + 1, len(lines))
                if lines[i].startswith("## ") or _LINK_DEFINITION.match(lines[i])), len(lines))
    body = "\n".join(lines[starts[0] + 1:end]).strip("\n")
    if not body.strip():
        raise Failed(f"CHANGELOG.md's `## [{version}]` section is empty")
    return body + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="release_notes.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("tag", help="the release tag, v<version>")
    parser.add_argument("--changelog", type=Path, default=ROOT / "CHANGELOG.md")
    args = parser.parse_args(argv)
    try:
        version = source_version()
        check_tag(args.tag, version)
        notes = changelog_section(args.changelog.read_text(encoding="utf-8"), version)
    except Failed as exc:
        sys.stderr.write(f"FAILED: {exc}\n")
        return 1
    sys.stdout.write(notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())

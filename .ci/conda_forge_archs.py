"""conda-forge's TORCH_CUDA_ARCH_LIST per pytorch release, read from a pytorch-cpu-feedstock checkout.

    python .ci/conda_forge_archs.py PATH-TO-FEEDSTOCK-GIT [--branch main --branch v2.7.x ...]

prints the `[[conda-forge]]` entries of rules/data/torch-builds.toml: for every (version, build number) that the
feedstock's recipe/meta.yaml sets on a branch's first-parent history, the architecture list recipe/build.sh exports
for each CUDA compiler version that the commit's .ci_support/ configurations build, per platform, with the
commit it was read at. Commits with the same version, build number and lists are one entry (the oldest commit is
cited). Tegra (Jetson) builds of linux-aarch64 are left out: their package carries the same build string, so a build
string cannot tell them apart (the table notes it).

Standard library and git only. What build.sh's shell does is read from its text: the `case ${cuda_compiler_version}`
block (2.5 on) with an optional `if [[ "${target_platform}" == "linux-aarch64" ]]` inside a branch, and the older
`if/elif [[ ${cuda_compiler_version} == PATTERN ]]` chain; bash's case patterns (`12.[89]`, `12.*`, `a|b`) are
matched with fnmatch.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator

_VERSION = re.compile(r'\{%\s*set\s+version\s*=\s*"([^"]+)"\s*%\}')
_BUILD = re.compile(r"\{%\s*set\s+build\s*=\s*(\d+)\s*%\}")
_EXPORT = re.compile(r'export\s+TORCH_CUDA_ARCH_LIST="([^"]*)"')
_CASE_PATTERN = re.compile(r"^\s*([0-9.*\[\]|\-]+)\)\s*$")
_IF_CUDA = re.compile(r'^\s*(?:el)?if\s+\[\[\s*"?\$\{?cuda_compiler_version\}?"?\s*==\s*"?([^\s"\]]+)"?\s*\]\]')
_IF_AARCH64 = re.compile(r'^\s*if\s+\[\[\s*"?\$\{?target_platform\}?"?\s*==\s*"?linux-aarch64"?\s*\]\]')
_CI_CUDA = re.compile(r"cuda_compiler_version(\d+\.\d+)")
PLATFORMS = ("linux-64", "linux-aarch64", "win-64")
# recipe/bld.bat (win-64): `set "TORCH_CUDA_ARCH_LIST=..."`, under `if "%cuda_compiler_version:~0,2%"=="12" (` (a
# prefix) or `if "%cuda_compiler_version%" == "13.0" (`, or unconditional; a line that appends to the variable
# (`%TORCH_CUDA_ARCH_LIST%;...`, the old per-`desired_cuda` scheme) is not read.
_BAT_SET = re.compile(r'set "?TORCH_CUDA_ARCH_LIST=([0-9.;+PTXa-f]+)"?\s*$', re.IGNORECASE)
_BAT_IF = re.compile(r'if "%cuda_compiler_version(:~0,(\d+))?%"\s*==\s*"([^"]+)"', re.IGNORECASE)


def _git_command() -> str:
    found = shutil.which("git")
    if found is None:
        raise SystemExit("conda_forge_archs.py: no git on PATH")
    return found


def git(repo: str, *args: str) -> str:
    return subprocess.run([_git_command(), "--git-dir", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def show(repo: str, commit: str, path: str) -> str | None:
    done = subprocess.run([_git_command(), "--git-dir", repo, "show", f"{commit}:{path}"], capture_output=True,
                          text=True, check=False)
    return done.stdout if done.returncode == 0 else None


def built_cudas(repo: str, commit: str) -> dict[str, set[str]]:
    """Per platform, the CUDA compiler versions the commit's CI configurations build: the names of the files
    conda-smithy renders into .ci_support/ (a migration's variants included; its own file only ranks versions)."""
    out: dict[str, set[str]] = {p: set() for p in PLATFORMS}
    names = git(repo, "ls-tree", "-r", "--name-only", commit, ".ci_support/").split()
    for name in names:
        base = name.rsplit("/", 1)[-1]
        for platform in PLATFORMS:
            if base.startswith(platform.replace("-", "_") + "_") and "tegra" not in base:
                out[platform].update(_CI_CUDA.findall(base))
    return out


def arch_rules(script: str) -> list[tuple[str, str | None, str]]:
    """(cuda pattern, platform or None for both, TORCH_CUDA_ARCH_LIST) as build.sh sets them; tegra left out."""
    rules: list[tuple[str, str | None, str]] = []
    lines = script.splitlines()
    in_case = False
    pattern: str | None = None
    platform: str | None = None  # inside `if aarch64`: "linux-aarch64"; in its else: "linux-64"
    depth_tegra = False
    for line in lines:
        stripped = line.strip()
        if "arm_variant_type" in stripped and "tegra" in stripped and stripped.startswith("if"):
            depth_tegra = True
            continue
        if depth_tegra:
            if stripped.startswith(("else", "fi")):
                depth_tegra = False
            continue
        if re.match(r"case\s+\$\{?cuda_compiler_version\}?\s+in", stripped):
            in_case = True
            continue
        if in_case:
            if stripped == "esac":
                in_case, pattern = False, None
                continue
            match = _CASE_PATTERN.match(line)
            if match is not None:
                pattern, platform = match.group(1), None
                continue
            if _IF_AARCH64.match(line):
                platform = "linux-aarch64"
                continue
            if stripped == "else" and platform == "linux-aarch64":
                platform = "linux-64"
                continue
            if stripped == "fi":
                platform = None
                continue
            export = _EXPORT.search(line)
            if export is not None and pattern is not None:
                rules.append((pattern, platform, export.group(1)))
            continue
        match = _IF_CUDA.match(line)
        if match is not None:
            pattern = match.group(1)
            continue
        export = _EXPORT.search(line)
        if export is not None and pattern is not None and export.group(1):
            rules.append((pattern, None, export.group(1)))
            pattern = None
    return rules


def bat_rules(script: str) -> list[tuple[str, str | None, str]]:
    """(cuda pattern, "win-64", TORCH_CUDA_ARCH_LIST) as recipe/bld.bat sets them."""
    rules: list[tuple[str, str | None, str]] = []
    pattern = "*"
    for line in script.splitlines():
        condition = _BAT_IF.search(line)
        if condition is not None:
            value = condition.group(3)
            pattern = value + "*" if condition.group(2) else value
        elif line.strip().startswith(")") and "else" not in line:
            pattern = "*"
        found = _BAT_SET.search(line.strip())
        if found is not None and "%TORCH_CUDA_ARCH_LIST%" not in line:
            rules.append((pattern, "win-64", found.group(1)))
    return rules


def matches(pattern: str, cuda: str) -> bool:
    return any(fnmatch.fnmatchcase(cuda, alternative) for alternative in pattern.split("|"))


def entries(repo: str, branches: list[str]) -> Iterator[tuple[str, int, str, str, dict[str, dict[str, str]]]]:
    """(version, build, commit, date, {platform: {cuda: archs}}) in the order first met, oldest first."""
    seen: set[tuple[str, int, str]] = set()
    for branch in branches:
        log = git(repo, "log", "--first-parent", "--reverse", "--format=%H %cs", branch, "--",
                  "recipe/meta.yaml", "recipe/build.sh", "recipe/bld.bat", ".ci_support")
        for row in log.splitlines():
            commit, date = row.split()
            meta = show(repo, commit, "recipe/meta.yaml")
            script = show(repo, commit, "recipe/build.sh")
            batch = show(repo, commit, "recipe/bld.bat") or ""
            if meta is None or script is None:
                continue
            version, build = _VERSION.search(meta), _BUILD.search(meta)
            if version is None or build is None or "rc" in version.group(1):
                continue
            cudas = built_cudas(repo, commit)
            table: dict[str, dict[str, str]] = {}
            rules = arch_rules(script)
            windows = bat_rules(batch)
            for platform in PLATFORMS:
                for cuda in sorted(cudas[platform], key=lambda c: tuple(int(p) for p in c.split("."))):
                    found = [a for p, where, a in (windows if platform == "win-64" else rules)
                             if matches(p, cuda) and where in (None, platform)]
                    if found:
                        table.setdefault(platform, {})[cuda] = found[0]
            if not table:
                continue
            key = (version.group(1), int(build.group(1)), repr(sorted((p, sorted(t.items()))
                                                                       for p, t in table.items())))
            if key in seen:
                continue
            seen.add(key)
            yield version.group(1), int(build.group(1)), commit, date, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", help="the feedstock's git directory (a bare clone or a checkout's .git)")
    parser.add_argument("--branch", action="append", help="branches to read (default: main and every vX.Y.x)")
    args = parser.parse_args()
    branches = args.branch or ["main", *sorted(
        (b for b in git(args.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
         if re.fullmatch(r"v\d+\.\d+\.x", b)), key=lambda b: tuple(int(p) for p in b[1:-2].split(".")))]
    rows = sorted(entries(args.repo, branches), key=lambda e: (tuple(int(p) for p in e[0].split(".")), e[1], e[3]))
    merged: list[tuple[str, int, int, str, str, dict[str, dict[str, str]]]] = []
    for version, build, commit, date, table in rows:
        last = merged[-1] if merged else None
        if last is not None and last[0] == version and last[5] == table and build <= last[2] + 1:
            merged[-1] = (version, last[1], max(build, last[2]), last[3], last[4], table)
        elif last is None or (last[0], last[2]) != (version, build) or last[5] != table:
            merged.append((version, build, build, commit, date, table))
    out = [f"# Generated by .ci/conda_forge_archs.py from conda-forge/pytorch-cpu-feedstock (branches "
           f"{', '.join(branches)})."]
    for version, first, last_build, commit, date, table in merged:
        out += ["", "[[release]]", f'version = "{version}"', f"builds = [{first}, {last_build}]",
                f'source = "https://github.com/conda-forge/pytorch-cpu-feedstock/blob/{commit}/recipe/build.sh"'
                f"  # {date}"]
        for platform, by_cuda in table.items():
            cells = ", ".join(f'"{cuda}" = "{archs}"' for cuda, archs in by_cuda.items())
            out.append(f"{platform} = {{ {cells} }}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

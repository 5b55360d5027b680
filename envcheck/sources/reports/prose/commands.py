"""Install commands in a report's text: what `pip install` / `uv pip install` / `conda install` lines state about
the torch they installed. A pinned torch with a PyTorch index names its build (`pip install torch==2.5.1 --index-url
https://download.pytorch.org/whl/cu121` is torch 2.5.1+cu121); `conda install pytorch==2.1 pytorch-cuda=12.1` is
torch 2.1 built for CUDA 12.1; an unpinned `pip install torch` states nothing precise.
"""

from __future__ import annotations

from typing import NamedTuple

from envcheck.sources.reports.prose.words import package_of, version_of

__all__ = ["Install", "install_of"]

_INSTALLERS = ("pip", "pip3", "uv", "conda", "mamba", "micromamba")
_VERBS = ("install", "create", "add")
# Options whose value is the next word; any other option is a flag.
_WITH_VALUE = frozenset(("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--channel", "-n",
                         "--name", "-p", "--prefix", "-r", "--requirement", "--target", "-t", "--python",
                         "--constraint", "--platform", "--python-version", "--only-binary", "--no-binary"))
_INDEX_OPTIONS = frozenset(("-i", "--index-url", "--extra-index-url", "-f", "--find-links"))
_SPECIFIERS = "<>!~;@["
_MAX_WORDS = 200  # longer than any install command a person types; a longer line is not one


class Install(NamedTuple):
    """What one install command states; None or empty where it does not."""

    conda: bool
    torch_version: str | None  # as pinned, with the build the index names added ("2.5.1+cu121")
    torch_cuda: str | None  # "12.1"; "" for a CPU build
    torch_hip: str | None
    python_version: str | None  # conda's `python=3.10`
    packages: tuple[tuple[str, str], ...]  # other pinned distributions (name, version)


def _words(line: str) -> list[str] | None:
    """The command's words from the installer on ("python -m pip install ..." -> ["pip", "install", ...]); None
    when the line runs no installer's install."""
    words = line.replace("`", " ").split()[:_MAX_WORDS]
    for index, word in enumerate(words[:-1]):
        name = word.lstrip("!%$>").lower()
        if name.endswith(_INSTALLERS) and name.rsplit("/", 1)[-1] in _INSTALLERS:
            rest = words[index + 1:]
            if rest and rest[0] == "pip":  # uv pip install
                rest = rest[1:]
            if rest and rest[0].lower() in _VERBS:
                return [name.rsplit("/", 1)[-1], *rest[1:]]
    return None


def _index_build(url: str) -> tuple[str | None, str | None] | None:
    """(cuda, hip) of a PyTorch index URL (".../whl/cu121", ".../whl/nightly/cu128", ".../whl/rocm6.2", ".../whl/cpu");
    None for a URL naming no build (PyPI, a mirror, torch_stable.html)."""
    _, found, path = url.partition("/whl/")
    if not found:
        return None
    parts = [p for p in path.lower().split("/") if p and p not in ("nightly", "test")]
    tag = parts[0] if parts else ""
    if tag == "cpu":
        return "", None
    if tag.startswith("rocm") and version_of(tag[4:]):
        return None, tag[4:]
    digits = tag[2:]
    if tag.startswith("cu") and digits.isdigit() and 2 <= len(digits) <= 4:
        return f"{int(digits[:-1])}.{digits[-1]}", None  # at most 4 digits: "cu121" is 12.1, "cu92" 9.2
    return None


def _pin(word: str, conda: bool) -> tuple[str, str | None] | None:
    """(distribution, version or None) of one requirement word: `torch==2.5.1`, conda's `pytorch=2.1`, a bare
    name, a wheel file name; None for anything else."""
    word = word.strip("'\"")
    if word.endswith(".whl"):
        parts = word.rsplit("/", 1)[-1].replace("%2B", "+").replace("%2b", "+").split("-")
        version = version_of(parts[1]) if len(parts) >= 5 else None
        name = package_of(parts[0])
        return None if name is None or version is None else (name, version)
    name, equals, version = word.partition("==" if "==" in word else "=")
    name = name.split("[", 1)[0]
    if not equals:
        cut = min((i for i in (word.find(c) for c in _SPECIFIERS) if i > 0), default=len(word))
        plain = package_of(word[:cut])
        return None if plain is None or "/" in word else (plain, None)
    if equals == "=" and not conda:
        return None
    canonical = package_of(name)
    pinned = version_of(version.lstrip("="))
    return None if canonical is None or pinned is None else (canonical, pinned)


def install_of(line: str) -> Install | None:
    """What the install command on `line` states; None for a line that is no install command or states nothing."""
    words = _words(line)
    if words is None:
        return None
    conda = words[0] in ("conda", "mamba", "micromamba")
    builds: list[tuple[str | None, str | None]] = []
    pins: dict[str, str | None] = {}
    skip = False
    for index, word in enumerate(words[1:], start=1):
        if skip:
            skip = False
            continue
        option, _, inline = word.partition("=")
        if word.startswith("-"):
            if option in _INDEX_OPTIONS:
                url = inline or (words[index + 1] if index + 1 < len(words) else "")
                build = _index_build(url)
                if build is not None:
                    builds.append(build)
            skip = option in _WITH_VALUE and not inline
            continue
        if word in ("&&", "||", ";", "|"):
            break
        pin = _pin(word, conda)
        if pin is not None:
            pins.setdefault(pin[0], pin[1])
    return _stated(conda, builds, pins)


def _stated(conda: bool, builds: list[tuple[str | None, str | None]], pins: dict[str, str | None]) -> Install | None:
    torch = "torch" in pins  # the build an index or conda's pytorch-cuda names is torch's only with torch installed
    torch_version = pins.pop("torch", None)
    python = pins.pop("python", None)
    cuda: str | None = None
    hip: str | None = None
    pytorch_cuda = pins.pop("", None)  # conda's pytorch-cuda=12.1
    toolkit = pins.pop("cudatoolkit", None)
    if not torch:
        pass
    elif conda:
        if pytorch_cuda or toolkit:
            cuda = pytorch_cuda or toolkit
        elif "cpuonly" in pins:
            cuda = ""
        cuda = ".".join(cuda.split(".")[:2]) if cuda else cuda
    elif len(set(builds)) == 1:
        cuda, hip = builds[0]
        if torch_version is not None and "+" not in torch_version and (cuda or hip):
            torch_version += f"+cu{cuda.replace('.', '')}" if cuda else f"+rocm{hip}"
    pins.pop("cpuonly", None)
    packages = tuple((name, version) for name, version in pins.items() if version)
    if torch_version is None and cuda is None and hip is None and python is None and not packages:
        return None
    return Install(conda, torch_version, cuda, hip, python, packages)

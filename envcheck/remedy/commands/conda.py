"""A torch-family install for an environment whose torch conda installed, written for conda, mamba or pixi.

Rules and the planner write installs as `PYTHON -m pip install torch==2.7.1+cu128 ... --index-url .../cu128`. Where
conda installed torch (its .dist-info says INSTALLER conda, or conda's record of `pytorch` is in the snapshot), that
command would put PyPI's torch over conda's: pip removes conda's files without telling conda, the next conda
transaction restores its own, and whichever ran last wins. So the torch family goes to conda-forge instead, in the
tool that manages the environment:

- `CONDA install -p PREFIX -c conda-forge SPECS` (CONDA: the conda, mamba or micromamba the collector found; a
  report gets plain `conda`, and no `-p` where the prefix is not stated);
- `pixi add --manifest-path MANIFEST SPECS` for an environment of a pixi project (PREFIX is
  PROJECT/.pixi/envs/NAME): pixi owns the lock and the environment, and `pixi add` changes both.

The specs say in conda-forge's terms what the pip requirement says in PyPI's: `torch==V+cuXY` is `pytorch-gpu=V`
with `cuda-version=X.Y` (conda-forge's meta-package that selects its CUDA build, and the CUDA it is built for),
`torch==V+cpu` is `pytorch-cpu=V`, `torch==V` is `pytorch=V`; torchvision and torchaudio keep their names and
release (their conda-forge builds follow the chosen pytorch). Index options and pip's flags have no conda
counterpart and are dropped. Requirements outside the torch family stay in a pip command of their own.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from envcheck.facts.snapshot import Facts, canonical_name

__all__ = ["FAMILY", "conda_owns_torch", "conda_specs", "pixi_manifest", "rewrite"]

CHANNEL = "conda-forge"
# PyPI name -> conda-forge name of the torch family
FAMILY = {"torch": "pytorch", "torchvision": "torchvision", "torchaudio": "torchaudio"}
_VALUED = frozenset({"-i", "--index-url", "--extra-index-url", "--default-index", "--index", "-c", "--constraint",
                     "-f", "--find-links"})


def conda_owns_torch(facts: Facts) -> bool:
    """Whether conda installed the torch that is imported: its record is in the snapshot, or its metadata says so."""
    if facts.conda is not None and facts.conda.get("pytorch") is not None:
        return True
    dist = facts.active("torch")
    return dist is not None and dist.installer == "conda"


def pixi_manifest(facts: Facts) -> str | None:
    """The manifest of the pixi project whose environment this is (PROJECT/.pixi/envs/NAME), as the collector
    found it; None for any other environment."""
    found = facts.installer
    return None if found is None else found.pixi


def conda_specs(req: Requirement) -> list[str] | None:
    """conda-forge match specs for one torch-family requirement (see the module docstring); None for another
    package, or a requirement conda cannot say (a URL)."""
    name = canonical_name(req.name)
    if name not in FAMILY or req.url:
        return None
    specs = list(req.specifier)
    exact = specs[0].version if len(specs) == 1 and specs[0].operator in ("==", "===") else None
    if exact is None:
        spec = str(req.specifier)
        return [f"{FAMILY[name]}{spec}" if spec else FAMILY[name]]
    try:
        version = Version(exact)
    except InvalidVersion:
        return None
    local, public = version.local, version.public
    if name != "torch":
        return [f"{FAMILY[name]}={public}"]
    if local is not None and local.startswith("cu") and local[2:].isdigit() and len(local) >= 4:
        digits = local[2:]
        return [f"pytorch-gpu={public}", f"cuda-version={int(digits[:-1])}.{digits[-1]}"]
    if local == "cpu":
        return [f"pytorch-cpu={public}"]
    return [f"pytorch={public}"]


def _split(argv: Sequence[str]) -> tuple[list[Requirement], list[str]] | None:
    """(torch-family requirements, the other arguments pip keeps) of a pip install; None when an argument is not
    a requirement (a path, `-r FILE`), which leaves the command to pip."""
    family: list[Requirement] = []
    rest: list[str] = []
    words = list(argv[4:])
    while words:
        word = words.pop(0)
        if word in _VALUED:
            value = words.pop(0) if words else ""
            if word not in ("-i", "--index-url", "--extra-index-url", "--default-index", "--index"):
                rest += [word, value]
            continue
        if word.startswith("-"):
            if word in ("-r", "--requirement", "-e", "--editable"):
                return None
            rest.append(word)
            continue
        try:
            req = Requirement(word)
        except InvalidRequirement:
            return None
        if canonical_name(req.name) in FAMILY:
            family.append(req)
        else:
            rest.append(word)
    return family, rest


def rewrite(argv: Sequence[str], facts: Facts) -> tuple[list[tuple[str, ...]], str] | None:
    """A `PYTHON -m pip install` of the torch family as the environment's conda or pixi command (and a pip
    command for the rest), with a sentence that says why; None when conda did not install torch, or the command
    names no torch-family requirement."""
    if not conda_owns_torch(facts) or len(argv) < 5 or tuple(argv[1:4]) != ("-m", "pip", "install"):
        return None
    split = _split(argv)
    if split is None or not split[0]:
        return None
    family, rest = split
    specs: list[str] = []
    for req in family:
        found = conda_specs(req)
        if found is None:
            return None
        specs += [s for s in found if s not in specs]
    out: list[tuple[str, ...]] = []
    manifest = pixi_manifest(facts)
    if manifest is not None:
        out.append(("pixi", "add", "--manifest-path", manifest, *specs))
        note = (f"torch is conda-forge's here, installed by pixi for the project of {manifest}, so the torch "
                "family changes in its manifest: a `pip install torch` would put PyPI's torch over conda's files, "
                "and pixi's next install would put its own back.")
    else:
        conda = (facts.installer.conda if facts.installer is not None else None) or "conda"
        prefix = ("-p", facts.python.prefix) if facts.python.prefix else ()
        out.append((conda, "install", *prefix, "-c", CHANNEL, "-y", *specs))
        tool = posixpath.basename(conda.replace("\\", "/"))
        note = (f"conda installed torch here, so the torch family is installed from {CHANNEL} with {tool}: "
                "`pip install torch` would put PyPI's torch over conda's files, and conda's next transaction "
                "would put its own back; conda picks the build for this environment's Python.")
    others = [a for a in rest if not a.startswith("-")]
    if others:
        out.append((*argv[:4], *rest))
    return out, note

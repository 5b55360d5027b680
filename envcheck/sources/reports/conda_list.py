"""`conda list` (and `mamba list`, `micromamba list`): "# packages in environment at PREFIX:", then
"Name Version Build Channel" rows. Conda names that differ from PyPI's are mapped (pytorch -> torch).

The rows of the torch stack (facts/conda.py's TORCH_STACK: pytorch, pytorch-gpu, cuda-version, ...) are kept as
conda records too, with their build strings and channels: a conda-forge build string names its CUDA
(`cuda126_mkl_py312_h30b5a27_300`), as the pytorch channel's does (`py3.10_cuda11.8_cudnn8.7.0_0`)."""

from __future__ import annotations

from envcheck.facts.conda import TORCH_STACK, CondaPackage, channel_name, parse_build
from envcheck.sources.reports.found import Found, Package
from envcheck.sources.reports.text import Block
from envcheck.support.patterns import lazy

__all__ = ["package_of_row", "parse", "recognise"]

# "... at PREFIX:" with any PREFIX. The pattern once ended `\s+(.+?):?\s*$`, which accepts the same lines in time
# quadratic in a run of spaces inside PREFIX.
_HEADER = lazy(r"^#\s*packages in environment at\s+.")
_COLUMNS = lazy(r"^#\s*Name\s+Version\s+Build(\s+Channel)?\s*$")
_ROW = lazy(r"^([A-Za-z0-9_][A-Za-z0-9._-]*)\s+(\d\S*)\s+(\S+)(?:\s+(\S+))?\s*$")
# Conda package names whose PyPI distribution has another name (what `import` and pip see).
_PYPI_NAME = {"pytorch": "torch", "pytorch-lightning": "pytorch-lightning", "py-opencv": "opencv-python"}


_CHANNELS = {"pytorch", "conda-forge", "defaults", "nvidia", "pypi", "main", "anaconda", "pytorch-nightly"}
_ROWS_WITHOUT_HEADER = 3  # `conda list | grep torch`: rows only, each naming a channel


def recognise(block: Block) -> bool:
    if any(_HEADER.match(line) or _COLUMNS.match(line) for line in block.lines[:200]):
        return True
    rows = (_ROW.match(line) for line in block.lines[:2000])
    return sum(1 for row in rows if row and row.group(4) in _CHANNELS) >= _ROWS_WITHOUT_HEADER


def package_of_row(name: str, version: str, build: str, channel: str) -> Package:
    """One row as a package: a `pypi` channel row was installed by pip, any other by conda."""
    return Package(_PYPI_NAME.get(name, name), version, "pip" if channel == "pypi" else "conda", build)


def torch_build_of(build: str) -> tuple[str | None, bool] | None:
    """conda's pytorch build string: ("11.8", True) for py3.10_cuda11.8_cudnn8.7.0_0 or conda-forge's
    cuda118_..., (None, True) for a CPU build, None when it does not say."""
    found = parse_build(build)
    if found.cuda is not None:
        return found.cuda, True
    return (None, True) if found.cpu else None


def parse(block: Block) -> Found:
    packages: list[Package] = []
    records: list[CondaPackage] = []
    header = False
    start: int | None = None
    end = 0
    problems: list[str] = []
    for index, line in enumerate(block.lines):
        if _HEADER.match(line):
            header = True
            start = index if start is None else start
            continue
        if _COLUMNS.match(line) or line.strip() == "#":
            start = index if start is None else start
            continue
        row = _ROW.match(line)
        if row and start is None and not header and row.group(4) in _CHANNELS:
            start = index  # rows without conda's header: a selection (`conda list | grep ...`)
        if row and start is not None:
            packages.append(package_of_row(row.group(1), row.group(2), row.group(3), row.group(4) or ""))
            if row.group(1) in TORCH_STACK and row.group(4) != "pypi":
                records.append(CondaPackage(row.group(1), row.group(2), row.group(3), channel_name(row.group(4) or ""),
                                            source=f"conda list, line {block.first_line + index}"))
            end = index + 1
        elif start is not None and packages and line.strip() in ("...", "…"):
            problems.append("the conda list is cut short (an elided row)")
    begin = start or 0
    complete = header and block.closed and not problems
    python = next((p for p in packages if p.name == "python" and p.installer == "conda"), None)
    torch = next((p for p in packages if p.name == "torch" and p.installer == "conda"), None)
    torch_build = torch_build_of(torch.build) if torch is not None else None
    return Found(
        fmt="conda list", where=block.where("conda list", begin, max(end, begin + 1)),
        packages=tuple(packages), packages_complete=complete,
        torch_version=torch.version if torch is not None else None,
        torch_cuda=(torch_build[0] or "") if torch_build is not None else None,
        python_version=python.version if python is not None else None,
        conda=True, problems=tuple(problems), conda_packages=tuple(records),
    )

"""`check --machine` on a project with a real uv.lock: written by real uv against a local index that serves the cu124
build of torch and torchvision under PyTorch's layout (/whl/cu124/), as tests/_index.py serves the planner tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _index import LocalIndex, StandIn, ok, run, serve, write_index
from click.testing import CliRunner, Result
from test_machines import MACHINES, sections

from envcheck.cli.click_cli import cli

# The cu124 index's builds as their files name them; `py3-none-any`, so that uv locks them for every platform, as a
# universal lock does (which wheels PyTorch published where is the build matrix's business, not the stand-ins').
CU124 = (
    StandIn("torch", "2.5.1+cu124", files={"torch/__init__.py": ""}),
    StandIn("torchvision", "0.20.1+cu124", ("torch==2.5.1",), files={"torchvision/__init__.py": ""}),
)
PYPROJECT = """\
[project]
name = "deploy-demo"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["torch==2.5.1", "torchvision==0.20.1"]

[[tool.uv.index]]
name = "pytorch-cu124"
url = "{url}"
explicit = true

[tool.uv.sources]
torch = {{ index = "pytorch-cu124" }}
torchvision = {{ index = "pytorch-cu124" }}
"""


@pytest.fixture(scope="module")
def cu124_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    root = tmp_path_factory.mktemp("index")
    write_index(root, (), simple="simple", files="files")
    write_index(root, CU124, simple="whl/cu124", files="whl/files-cu124")
    with serve(root, tmp_path_factory.mktemp("uv-cache")) as index:
        yield index


@pytest.fixture
def locked(tmp_path: Path, cu124_index: LocalIndex, uv: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The acceptance project with a uv.lock that real uv wrote; the working directory."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(url=cu124_index.torch_base + "cu124"),
                                             encoding="utf-8")
    (tmp_path / "envcheck.toml").write_text(MACHINES, encoding="utf-8")
    env = cu124_index.env({"PATH": os.path.dirname(uv) + os.pathsep + os.environ.get("PATH", "")})
    ok(run([uv, "lock", "--python", sys.executable], env, tmp_path))
    assert 'version = "2.5.1+cu124"' in (tmp_path / "uv.lock").read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(*args: str) -> Result:
    return CliRunner().invoke(cli, ["check", *args], catch_exceptions=False)


def _line(lock: Path, name: str) -> int:
    lines = lock.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line == f'name = "{name}"')


def test_uv_lock_gives_the_same_verdicts_as_the_requirements_file(locked: Path) -> None:
    """With a uv.lock pinning torch 2.5.1+cu124, the 5090 fails (no sm_120 kernels; the fix moves the lock to a
    cu128 build and regenerates it with `uv lock --upgrade-package`), the H100 passes, the Intel Mac fails (no
    wheel); each finding names the lock's line of torch."""
    result = check("--machine", "all")
    assert result.exit_code == 1, result.output
    by_machine = sections(result.output)
    torch_line = _line(locked / "uv.lock", "torch")
    rtx = by_machine["rtx5090"]
    assert "pins from uv.lock" in rtx
    assert "✗ EC0401 gpu-architecture-not-in-torch-build" in rtx
    assert f"[torch 2.5.1+cu124, uv.lock:{torch_line}]" in " ".join(rtx.split())
    flat = " ".join(rtx.split())
    # pyproject.toml's own torch==2.5.1 would keep uv from locking the new build: it changes with the lock.
    assert f"in place of torch 2.5.1+cu124 (uv.lock:{torch_line}); torch==2.11.0 in place of torch==2.5.1 " \
           "(pyproject.toml:5)" in flat
    assert "`uv lock --upgrade-package torch --upgrade-package torchvision`" in flat
    assert "/whl/cu128" in flat
    assert "✗" not in by_machine["train"] and "! EC" not in by_machine["train"]
    mac = by_machine["intel-mac"]
    assert f"intel-mac: uv.lock:{torch_line} requires torch==2.5.1+cu124" in " ".join(mac.split())
    assert "✗ EC1601" in mac
    # Its tally says why it has no torch to look at, from the lock: not that "the snapshot does not say".
    assert (f"torch 2.5.1+cu124 (uv.lock:{torch_line}) has no wheel for Python 3.12 on macos-x86_64: it installs "
            "no torch there, so ") in " ".join(mac.split())


def test_github_annotation_of_a_lock_is_on_the_pins_line(locked: Path) -> None:
    """The 5090's annotation is placed on uv.lock's `name = "torch"` line."""
    result = check("--machine", "rtx5090", "--format", "github")
    line = _line(locked / "uv.lock", "torch")
    assert f"::error file=uv.lock,line={line},title=EC0401 gpu-architecture-not-in-torch-build on rtx5090::" \
        in result.output

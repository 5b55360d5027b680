"""Declared machines with torch required in more than one file, notes that need their facts, and what a machine's
tally says when it has no torch to look at; all through `envcheck check --machine` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from envcheck.cli.click_cli import cli

REQUIREMENTS = """\
--index-url https://download.pytorch.org/whl/cu124
torch==2.5.1+cu124
"""
PYPROJECT = """\
[project]
name = "demo"
version = "0.1.0"
dependencies = [{deps}]

[[tool.envcheck.machines]]
name = "rtx5090"
gpu = ["RTX 5090"]
driver = "570.86.10"
python = "3.12"
platform = "linux-x86_64"

[[tool.envcheck.machines]]
name = "train"
gpu = ["H100"]
driver = "550.54.15"
python = "3.11"
platform = "linux-x86_64"

[[tool.envcheck.machines]]
name = "cpu"
python = "3.12"
platform = "linux-x86_64"

[[tool.envcheck.machines]]
name = "intel-mac"
python = "3.13"
platform = "macos-x86_64"
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def project(root: Path, deps: str, requirements: str | None = REQUIREMENTS) -> Path:
    write(root / "pyproject.toml", PYPROJECT.format(deps=deps))
    if requirements is not None:
        write(root / "requirements.txt", requirements)
    return root


def section(output: str, machine: str) -> str:
    """One machine's section of the text report, its lines joined (the report wraps at 100 columns)."""
    part = output.split(f"== machine {machine}:", 1)[1].split("\n== machine ", 1)[0]
    return " ".join(part.split())


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- torch in two files ------------------------------------------------------------------------------------------


def test_both_files_that_pin_torch_are_named_and_changed_together(here: Path) -> None:
    """torch==2.5.1 in pyproject.toml and torch==2.5.1+cu124 in requirements.txt: the heading names both, and the
    5090's fix changes both (the pyproject pin without the build's tag), so neither is left to conflict."""
    project(here, '"torch==2.5.1", "numpy"')
    result = run("check", "--machine", "rtx5090")
    assert result.exit_code == 1, result.output
    text = section(result.output, "rtx5090")
    assert text.startswith("RTX 5090 (12.0), driver 570.86.10, Python 3.12, linux-x86_64; pins from "
                           "requirements.txt, pyproject.toml; torch: torch==2.5.1+cu124 (requirements.txt:2), "
                           "torch==2.5.1 (pyproject.toml:4)")
    assert ("Change the pins: torch==2.11.0+cu128 in place of torch==2.5.1+cu124 (requirements.txt:2); "
            "torch==2.11.0 in place of torch==2.5.1 (pyproject.toml:4), from https://download.pytorch.org/whl/cu128"
            ) in text


def test_a_range_that_admits_the_new_pin_is_said_and_left(here: Path) -> None:
    """pyproject.toml's torch>=2.3 admits the 5090's new build: the fix says so and leaves it as it is."""
    project(here, '"torch>=2.3"')
    text = section(run("check", "--machine", "rtx5090").output, "rtx5090")
    assert ("torch==2.11.0+cu128 in place of torch==2.5.1+cu124 (requirements.txt:2, required as torch>=2.3 in "
            "pyproject.toml:4, which admits it), from") in text
    assert "in place of torch>=2.3" not in text


def test_a_range_that_excludes_the_new_pin_changes_with_it(here: Path) -> None:
    """pyproject.toml's torch<2.6 would refuse the 5090's torch 2.11: it changes with the pin, its marker kept."""
    project(here, '"torch<2.6; sys_platform == \'linux\'"')
    text = section(run("check", "--machine", "rtx5090").output, "rtx5090")
    assert ("""torch==2.11.0; sys_platform == "linux" in place of torch<2.6; sys_platform == 'linux' """
            "(pyproject.toml:4)") in text


def test_json_lists_every_other_requirement_of_a_pin(here: Path) -> None:
    """--format json: each pin carries `also`, the project's other requirements of its name (file and line)."""
    project(here, '"torch==2.5.1"')
    data = json.loads(run("check", "--machine", "train", "--format", "json").stdout)
    torch = next(p for p in data["machines"][0]["pins"] if p["name"] == "torch")
    assert (torch["file"], torch["line"]) == ("requirements.txt", 2)
    assert torch["also"] == [{"written": "torch==2.5.1", "file": "pyproject.toml", "line": 4}]


# --- a note where its facts make it likely -----------------------------------------------------------------------


def test_the_fastpath_note_is_for_lightning_on_a_cpu_machine_and_its_fix_moves_torch(here: Path) -> None:
    """EC0503 (CPU bf16 autocast) on torch 2.5.1 with Lightning: noted on the machine without a GPU, where its
    change of the pins moves torch to 2.6 or later (both files); not on the H100, where Lightning autocasts on CUDA."""
    project(here, '"torch==2.5.1", "lightning==2.4.0"')
    result = run("check", "--machine", "cpu", "--machine", "train")
    cpu, train = section(result.output, "cpu"), section(result.output, "train")
    assert "i EC0503 transformer-encoder-fastpath-cpu-bf16-autocast-by-version" in cpu
    change = cpu.split("Change the pins: ", 1)[1]
    new = change.split(" in place of torch==2.5.1+cu124 (requirements.txt:2); ", 1)[0]
    assert new.startswith("torch==") and new.endswith("+cpu"), change
    release = tuple(int(n) for n in new.removeprefix("torch==").removesuffix("+cpu").split("."))
    assert release >= (2, 6)
    assert f"{new.removesuffix('+cpu')} in place of torch==2.5.1 (pyproject.toml:4)" in change
    assert "EC0503" not in train


def test_the_fastpath_note_needs_lightning(here: Path) -> None:
    """Without Lightning, the machine without a GPU gets no EC0503: CPU bf16 autocast would be code nobody saw."""
    project(here, '"torch==2.5.1"')
    assert "EC0503" not in run("check", "--machine", "cpu").output


# --- a machine without torch says why ----------------------------------------------------------------------------


@pytest.mark.parametrize(("deps", "requirements", "machine", "said"), [
    pytest.param('"numpy==2.1.0"', None, "train",
                 "the project requires no torch on train (pyproject.toml): whether a dependency pulls one in is not "
                 "in its files, so", id="no-torch"),
    pytest.param('"torch>=2.3"', None, "train",
                 "torch>=2.3 (pyproject.toml:4) pins no one torch version: which one a resolver installs is not in "
                 "the files, so", id="range"),
    pytest.param('"torch==2.2.0"', None, "intel-mac",
                 "torch==2.2.0 (pyproject.toml:4) has no wheel for Python 3.13 on macos-x86_64: it installs no torch "
                 "there, so", id="no-wheel"),
])
def test_a_machine_without_torch_says_what_is_true_of_it(here: Path, deps: str, requirements: str | None,
                                                          machine: str, said: str) -> None:
    """The tally of a machine with no torch to look at says why, from the pins: never "the snapshot does not say
    whether torch is installed", which is no sentence about a declared machine."""
    project(here, deps, requirements)
    output = " ".join(run("check", "--machine", machine).output.split())
    assert said in output
    assert "rules about torch were not checked" in output.split(said, 1)[1].split(";", 1)[0]
    assert "the snapshot does not say" not in output

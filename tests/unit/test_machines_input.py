"""Declared machines and what they read stay exact and bounded: a version written as a TOML number is refused (it
cannot say 3.10), a lock's bad marker is one error line, and a project of tens of thousands of pinned requirements
is read and matched to its findings in time linear in it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _fakes import FIXTURES
from click.testing import CliRunner
from report_samples import finding
from test_parse_bounds import RATIO, growth

from envcheck.cli.click_cli import cli
from envcheck.machines import check
from envcheck.machines.pins import pins_for
from envcheck.rules.model import Status
from envcheck.sources.project import config as config_mod
from envcheck.sources.project.discover import discover

MACHINE = '[[tool.envcheck.machines]]\nname = "train"\nplatform = "linux-x86_64"\ngpu = "sm_90"\n'


def _run(root: Path, *args: str) -> tuple[int, list[str]]:
    before = Path.cwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(cli, ["check", "--machine", "all", *args], catch_exceptions=False)
    finally:
        os.chdir(before)
    return result.exit_code, [line for line in result.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize(("lines", "key"), [
    pytest.param('python = 3.10\ndriver = "550.54.15"', "python", id="python-3.10"),
    pytest.param('python = 3\ndriver = "550.54.15"', "python", id="python-3"),
    pytest.param('python = "3.11"\nrocm = 6.10\ngpu = "gfx942"', "rocm", id="rocm-6.10"),
])
def test_a_version_written_as_a_number_is_refused(tmp_path: Path, lines: str, key: str) -> None:
    """`python = 3.10` is the TOML float 3.1: read as Python 3.1 it would check the wrong machine. One line names
    the file and the key, and says to quote the version."""
    text = MACHINE.replace('gpu = "sm_90"\n', "") + lines + "\n"
    if "gpu" not in lines:
        text += 'gpu = "sm_90"\n'
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "p"\nversion = "1"\n{text}', encoding="utf-8")
    code, errors = _run(tmp_path)
    assert code == 2 and len(errors) == 1, errors
    assert "pyproject.toml" in errors[0] and f"tool.envcheck.machines[0].{key}" in errors[0]
    assert 'write the version as a string, such as "3.10"' in errors[0]


def test_a_quoted_version_is_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(MACHINE + 'python = "3.10"\n', encoding="utf-8")
    (machine,) = config_mod.load(tmp_path / "pyproject.toml").machines
    assert machine.python == "3.10"


def test_a_locks_bad_marker_is_one_line_without_a_caret(tmp_path: Path) -> None:
    """packaging's InvalidMarker message repeats the marker and puts a caret under the fault, on lines of their
    own: the exit-2 line keeps its first line only."""
    for name in ("pyproject.toml", "uv.lock"):
        text = (FIXTURES / "projects" / "nanochat" / name).read_text(encoding="utf-8")
        if name == "uv.lock":
            markers = 'resolution-markers = [\n    "'
            at = text.index(markers, text.index("[[package]]")) + len(markers)
            text = text[:at] + 'python_version >", "' + text[at:]
        else:
            text += "\n" + MACHINE + 'python = "3.11"\ndriver = "550.54.15"\n'
        (tmp_path / name).write_text(text, encoding="utf-8")
    code, errors = _run(tmp_path)
    assert code == 2 and len(errors) == 1, errors
    assert "uv.lock" in errors[0] and "invalid marker 'python_version >'" in errors[0]
    assert errors[0].endswith("Expected a marker variable or quoted string"), errors[0]
    assert "^" not in errors[0] and "\\n" not in errors[0]


def _project(root: Path, size: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "requirements.txt").write_text(
        "torch==2.5.1\n" + "".join(f"pkg-{i}==1.{i}\n" for i in range(size)), encoding="utf-8")
    (root / "pyproject.toml").write_text(MACHINE + 'python = "3.11"\ndriver = "550.54.15"\n', encoding="utf-8")
    return root


@pytest.mark.timing
def test_reading_many_pinned_requirements_grows_linearly(tmp_path: Path) -> None:
    """Four times as many pinned requirements take well under sixteen times as long to turn into a machine's pins
    (a list of the names seen, searched per line, made 50,000 lines take 25 s)."""
    def make(size: int) -> object:
        root = _project(tmp_path / str(size), size)
        (machine,) = config_mod.load(root / "pyproject.toml").machines
        project = discover(root)
        assert project is not None
        return lambda: pins_for(project, machine)

    assert growth(make, 4000) < RATIO  # type: ignore[arg-type]


@pytest.mark.timing
def test_finding_each_findings_pin_grows_linearly(tmp_path: Path) -> None:
    """A finding per pin, each naming its pin in its summary, is matched to its pin in time linear in both (a
    pattern compiled per pin and per finding was quadratic)."""
    def make(size: int) -> object:
        root = _project(tmp_path / str(size), size)
        (machine,) = config_mod.load(root / "pyproject.toml").machines
        project = discover(root)
        assert project is not None
        pins = pins_for(project, machine)
        findings = [finding("EC0101", Status.FAIL, summary=f"the project pins Pkg_{i} 1.{i}, which is odd")
                    for i in range(size)]

        def match() -> object:
            index = check._PinIndex(pins)  # as check_machines builds it: once per machine
            return [check._pin_of(f, index) for f in findings]
        return match

    assert growth(make, 500) < RATIO  # type: ignore[arg-type]


def test_a_finding_is_matched_to_the_pin_its_summary_names_first(tmp_path: Path) -> None:
    """The summary's first name wins, spelled with any separator and case ("Zope_Interface" names zope.interface),
    a dotted module path names its distribution ("torch.cuda"), and a longer word does not ("torchvision-x")."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "requirements.txt").write_text("torch==2.5.1\nzope.interface==6.0\nnumpy==2.0\n", encoding="utf-8")
    (root / "pyproject.toml").write_text(MACHINE + 'python = "3.11"\n', encoding="utf-8")
    (machine,) = config_mod.load(root / "pyproject.toml").machines
    project = discover(root)
    assert project is not None
    index = check._PinIndex(pins_for(project, machine))

    def named(summary: str) -> str | None:
        pin = check._pin_of(finding("EC0101", Status.FAIL, summary=summary), index)
        return None if pin is None else pin.name

    assert named("Zope_Interface 6.0 needs numpy<2") == "zope-interface"
    assert named("numpy 2.0 breaks torch.cuda") == "numpy"
    assert named("torch.cuda fails, numpy too") == "torch"
    assert named("torchvision-x and xnumpy are not pinned") is None

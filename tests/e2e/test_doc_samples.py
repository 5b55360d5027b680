"""The console samples of the README and docs/ are real output: each is the command it shows, run here for real
(the installed `envcheck` in a child process, in a project folder with a real venv and real dist-info folders),
and compared with the block, as tests/unit/test_golden.py compares the reports.

In a markdown file, a sample is a ```console block right after `<!-- sample: NAME (CONDITIONS) -->`: its `$ ` line is
the command run, the rest its output (standard output, then standard error). A `<!-- sample-file: PATH -->` before
a fenced block makes that block the content of the file PATH in the sample's project, so the README's
configuration is the one checked. Every ```console block must be a sample: a hand-written transcript would go stale.

When the output changes on purpose (a rule's text, a reporter), regenerate the samples and read the diff:

    ENVCHECK_UPDATE_GOLDEN=1 python -m pytest tests/e2e/test_doc_samples.py

A sample that checks the local environment depends on the Python version, the platform and whether an NVIDIA
driver is present (the tally counts rules n/a or passed accordingly); CONDITIONS records those of the machine that
wrote it. Under another Python or platform the sample is compared with its counts masked, every other character
exact; where NVML answers otherwise (a GPU machine, for samples written without a driver) the GPUs change verdicts
too, so it is compared only where NVML answers the same.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from _fakes import write_dist, write_tree
from _torch import clean_env
from _venvs import VenvMaker

from envcheck.sources.live.nvml import collect_nvml

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
UPDATE = os.environ.get("ENVCHECK_UPDATE_GOLDEN") == "1"
_TIMEOUT_S = 300  # a guard against a hung child, never a timing assertion

_SAMPLE = re.compile(r"^<!-- sample: (?P<name>[\w-]+)(?: \((?P<conditions>[^)]*)\))? -->\n```console\n"
                     r"(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
_SAMPLE_FILE = re.compile(r"^<!-- sample-file: (?P<path>[\w./-]+) -->\n```\w*\n(?P<body>.*?)^```$",
                          re.MULTILINE | re.DOTALL)
_CONSOLE = re.compile(r"^(?P<before>.*)\n```console$", re.MULTILINE)
_COUNTS = re.compile(r"\b\d+ (passed|n/a|skipped|rules)\b")

# Where the samples' projects appear to be: the path a reader sees in place of this run's temporary folder.
SHOWN_HOME = "/home/me"

# What a torchvision made for torch 2.6.0 prints at import beside torch 2.13.0+cpu (torchvision 0.21.0's
# torchvision/_meta_registrations.py registers a fake for torchvision::nms; the operator is missing). Its paths
# are the sample venv's own site-packages, as the project's own run would print them, so that explain ties the log
# to the checked environment.
ERROR_LOG = """\
Traceback (most recent call last):
  File "{project}/train.py", line 3, in <module>
    import torchvision
  File "{site}/torchvision/__init__.py", line 10, in <module>
    from torchvision import _meta_registrations, datasets, io, models, ops, transforms, utils  # usort:skip
  File "{site}/torchvision/_meta_registrations.py", line 163, in <module>
    @torch.library.register_fake("torchvision::nms")
RuntimeError: operator torchvision::nms does not exist
"""


def conditions() -> str:
    """What a sample of the local environment depends on, in words."""
    return f"Python {sys.version_info[0]}.{sys.version_info[1]}, {sys.platform}, NVML {collect_nvml().status}"


@dataclass(frozen=True)
class Sample:
    """How a sample's project is made (`setup(folder, files)`, files from the sample-file blocks) and whether its
    output depends on the local machine."""

    project: str  # the project folder's name under SHOWN_HOME
    setup: Callable[[Path, dict[str, str], VenvMaker], None]
    local: bool


def _torchvision_for_another_torch(project: Path, files: dict[str, str], venv_maker: VenvMaker) -> None:
    """A project whose .venv (a real venv, with pip) holds torch 2.13.0+cpu and a torchvision 0.21.0 made for
    torch 2.6.0, as `pip install --no-deps torchvision==0.21.0` leaves it."""
    python = venv_maker.make(project / ".venv", env=clean_env())
    (site,) = (project / ".venv").glob("lib/python*/site-packages")
    write_tree(site, {"torch/__init__.py": "raise ImportError('not a real torch')\n",
                      "torch/version.py": "__version__ = '2.13.0+cpu'\ncuda = None\nhip = None\n"})
    write_dist(site, "torch", "2.13.0+cpu", top_level=["torch"])
    write_dist(site, "torchvision", "0.21.0", requires=["torch==2.6.0"], top_level=["torchvision"])
    (project / "error.log").write_text(ERROR_LOG.format(project=project, site=site), encoding="utf-8")
    assert python.is_file()
    _write(project, files)


def _write(project: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


SAMPLES: dict[str, Sample] = {
    "first-run": Sample("proj", _torchvision_for_another_torch, local=True),
    "explain": Sample("proj", _torchvision_for_another_torch, local=True),
    "machine": Sample("trainer", lambda project, files, _: _write(project, files), local=False),
    "recommend-described": Sample("work", lambda project, files, _: _write(project, files), local=False),
    "recommend-unknown-gpu": Sample("work", lambda project, files, _: _write(project, files), local=False),
}


def _run(command: str, project: Path, home: Path) -> str:
    """`command` as a user types it in `project`: `envcheck` is the one installed beside this interpreter."""
    argv = shlex.split(command)
    assert argv[0] == "envcheck", command
    argv[0] = str(Path(sys.executable).parent / ("envcheck.exe" if os.name == "nt" else "envcheck"))
    # A user's shell, not this run's: rules read variables (CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH, CONDA_PREFIX...)
    # that a CI runner or a developer's shell may set, so only what a program needs to start is passed on.
    env = {name: os.environ[name] for name in ("PATH", "SYSTEMROOT", "TMPDIR", "TEMP", "TMP") if name in os.environ}
    env.update({"ENVCHECK_CACHE_DIR": str(home / "cache"), "NO_COLOR": "1", "HOME": str(home),
                "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"})
    proc = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, encoding="utf-8",
                          timeout=_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    return proc.stdout + proc.stderr


def _files(text: str) -> dict[str, dict[str, str]]:
    """The sample-file blocks of a document: project name -> relative path -> content."""
    files: dict[str, dict[str, str]] = {}
    for match in _SAMPLE_FILE.finditer(text):
        project, _, relative = match.group("path").partition("/")
        files.setdefault(project, {})[relative] = match.group("body")
    return files


@dataclass(frozen=True)
class Rendered:
    name: str
    conditions: str | None
    expected: str
    actual: str


def _render(doc: Path, tmp: Path, venv_maker: VenvMaker) -> Iterator[Rendered]:
    text = doc.read_text(encoding="utf-8")
    files = _files(text)
    made: dict[str, Path] = {}
    for match in _SAMPLE.finditer(text):
        name = match.group("name")
        assert name in SAMPLES, f"{doc.name}: no sample is called {name!r} (tests/e2e/test_doc_samples.py: SAMPLES)"
        sample = SAMPLES[name]
        if sample.project not in made:
            project = tmp / sample.project
            project.mkdir()
            sample.setup(project, files.get(sample.project, {}), venv_maker)
            made[sample.project] = project
        project = made[sample.project]
        body = match.group("body")
        command = body.split("\n", 1)[0].removeprefix("$ ")
        output = _run(command, project, tmp)
        actual = f"$ {command}\n" + output.replace(str(tmp), SHOWN_HOME)
        yield Rendered(name, match.group("conditions") if sample.local else None, body, actual)


def _nvml(conditions: str) -> str:
    return conditions.rpartition(", NVML ")[2]


def _masked(text: str) -> str:
    return _COUNTS.sub(lambda m: f"N {m.group(1)}", text)


@pytest.mark.slow
@pytest.mark.parametrize("doc", [d for d in DOCS if _SAMPLE.search(d.read_text(encoding="utf-8"))],
                         ids=lambda d: d.name)
def test_console_samples_are_real_output(doc: Path, tmp_path: Path, venv_maker: VenvMaker) -> None:
    """Each sample's command, run for real, prints exactly the sample (its counts masked where the sample was
    written under other conditions); ENVCHECK_UPDATE_GOLDEN=1 rewrites the samples instead."""
    here = conditions()
    home = tmp_path / "me"
    home.mkdir()
    rendered = list(_render(doc, home, venv_maker))
    if UPDATE:
        queue = iter(rendered)

        def replace(match: re.Match[str]) -> str:
            sample = next(queue)
            label = f"{sample.name} ({here})" if SAMPLES[sample.name].local else sample.name
            return f"<!-- sample: {label} -->\n```console\n{sample.actual}```"

        doc.write_text(_SAMPLE.sub(replace, doc.read_text(encoding="utf-8")), encoding="utf-8")
        return
    differences, compared = [], 0
    for sample in rendered:
        if sample.conditions is not None and _nvml(sample.conditions) != _nvml(here):
            continue  # a driver's GPUs change verdicts, not only counts: compared where the driver state matches
        compared += 1
        exact = sample.conditions is None or sample.conditions == here
        expected, actual = (sample.expected, sample.actual) if exact else (_masked(sample.expected),
                                                                           _masked(sample.actual))
        if expected != actual:
            differences.append("".join(difflib.unified_diff(
                expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                f"{doc.name}: sample {sample.name} (expected)", "run now (actual)")))
    if not compared:
        pytest.skip(f"every sample of {doc.name} was written where NVML said otherwise than here ({here})")
    assert not differences, ("a sample differs from what its command prints; if the change is meant, regenerate "
                             "with ENVCHECK_UPDATE_GOLDEN=1 python -m pytest tests/e2e/test_doc_samples.py and review "
                             "the diff:\n" + "\n".join(differences))


def test_every_console_block_is_a_generated_sample() -> None:
    """No ```console block in the README or docs/ is written by hand: each one follows a sample marker."""
    loose = []
    for doc in DOCS:
        for match in _CONSOLE.finditer(doc.read_text(encoding="utf-8")):
            if not match.group("before").startswith("<!-- sample: "):
                loose.append(f"{doc.relative_to(ROOT)}: {match.group('before')!r}")
    assert loose == []


def test_every_sample_is_shown_somewhere() -> None:
    """Every sample this file knows appears in a document, each a single command line."""
    shown = {m.group("name"): m.group("body") for doc in DOCS for m in _SAMPLE.finditer(doc.read_text("utf-8"))}
    assert sorted(shown) == sorted(SAMPLES)
    assert all(body.startswith("$ envcheck ") for body in shown.values())


def test_masking_keeps_everything_but_the_counts() -> None:
    """The comparison across machines is not blind: only the numbers before passed, n/a, skipped and rules go."""
    line = "envcheck 0.1.0: 1 error; 38 passed, 139 n/a, 10 skipped (-v says why) — /home/me/proj/.venv/bin/python"
    assert _masked(line) == ("envcheck 0.1.0: 1 error; N passed, N n/a, N skipped (-v says why) — "
                             "/home/me/proj/.venv/bin/python")
    assert _masked(line) != _masked(line.replace("1 error", "2 errors"))

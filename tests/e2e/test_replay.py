"""A repeated `envcheck --static` is answered from its last run only while nothing it read has changed
(envcheck/pipeline/replay.py): each change below makes the next run check afresh, and that run's report is the fresh
one."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _fakes import write_dist
from _torch import BIN

# The command as users run it (through envcheck/cli/entry.py); at exit it says on stderr whether the run replayed: a
from envcheck.cache import signed
from envcheck.pipeline import replay as _replay

# replay never imports the rule engine.
ENTRY = ("import sys\nfrom envcheck.cli.entry import console\nsys.argv = ['envcheck', *sys.argv[1:]]\n"
         "try:\n    console()\nfinally:\n"
         "    sys.stderr.write('\\nreplayed: %s' % ('envcheck.rules.engine' not in sys.modules))\n")
# Runs are recorded only where every stat is seen (envcheck/pipeline/replay.py): elsewhere each run checks afresh.
RECORDING = (3, 11) <= sys.version_info[:2] <= (3, 13) and os.name == "posix"
RECORDED = pytest.mark.skipif(not RECORDING, reason="runs are recorded on CPython 3.11-3.13 on POSIX only")
PYPROJECT = '[project]\nname = "demo"\nversion = "1"\ndependencies = ["needed-dist>=1", "present-dist>=1"]\n'


class Project:
    """A project folder with its own `.venv` (a real venv holding real dist-info folders), checked from there with
    a private cache directory, as `envcheck --static` in a pre-commit hook checks it."""

    def __init__(self, root: Path, cache_dir: Path) -> None:
        self.root = root
        self.cache_dir = cache_dir
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("NO_COLOR", "_ENVCHECK_COMPLETE", "VIRTUAL_ENV", "CONDA_PREFIX")}
        self.env["ENVCHECK_CACHE_DIR"] = str(cache_dir)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True,
                       capture_output=True, timeout=120)
        self.site = next((root / ".venv").glob("lib*/python*/site-packages")) if os.name != "nt" else \
            root / ".venv" / "Lib" / "site-packages"
        (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
        write_dist(self.site, "present-dist", "1.0")

    def run(self, *args: str, stdout: int | None = None) -> tuple[int, str, bool]:
        """(exit code, report, whether it was replayed)."""
        proc = subprocess.run([sys.executable, "-c", ENTRY, *(args or ("--static",))], cwd=self.root, text=True,
                              env=self.env, stdout=subprocess.PIPE if stdout is None else stdout,
                              stderr=subprocess.PIPE, timeout=300, check=False)
        body, _, flag = proc.stderr.rpartition("\nreplayed: ")
        assert body == "", body  # nothing else on standard error
        return proc.returncode, proc.stdout or "", flag == "True"

    def fresh(self) -> tuple[int, str]:
        """What a check that remembers nothing answers (`--no-cache` goes through the CLI, which prints the same)."""
        code, out, replayed = self.run("--static", "--no-cache")
        assert not replayed
        return code, out


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "proj"
    root.mkdir()
    return Project(root, tmp_path / "cache")


@RECORDED
def test_a_repeated_check_is_replayed_byte_for_byte(project: Project) -> None:
    first = project.run()
    assert first[0] == 1 and "needed-dist" in first[1] and not first[2]
    second = project.run()
    assert second == (first[0], first[1], True)
    assert project.fresh() == first[:2]
    # `envcheck check --static` is its own entry point: recorded, then replayed, with the same report.
    assert project.run("check", "--static") == (first[0], first[1], False)
    assert project.run("check", "--static") == (first[0], first[1], True)


@RECORDED
def test_a_replay_writes_nothing(project: Project) -> None:
    project.run()
    project.run()

    def files() -> dict[str, tuple[int, int]]:
        return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in project.cache_dir.rglob("*")}

    before = files()
    assert project.run()[2]
    assert files() == before


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)


def _edit_same_size(path: Path, old: str, new: str) -> None:
    assert len(old) == len(new)
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")  # in place: same inode, same size


IGNORE = 'ignore = { EC98 = "not ours" }\n'
# Each change, and a word the fresh report must now contain or lack ("+word" / "-word").
CHANGES: dict[str, tuple[Callable[[Project], None], str]] = {
    "a distribution installed into the checked venv": (
        lambda p: write_dist(p.site, "needed-dist", "1.5"), "-needed-dist"),
    "a distribution's METADATA edited in place": (
        lambda p: _edit_same_size(next(p.site.glob("present_dist-*.dist-info")) / "METADATA", "Version: 1.0",
                                  "Version: 0.0"), "+present-dist"),
    "a distribution removed": (
        lambda p: shutil.rmtree(next(p.site.glob("present_dist-*.dist-info"))), "+present-dist"),
    "the project's requirements edited in place": (
        lambda p: _edit_same_size(p.root / "pyproject.toml", "needed-dist>=1", "needed-dist<=1"), "+needed-dist<=1"),
    "a requirements.txt added beside pyproject.toml": (
        lambda p: (p.root / "requirements.txt").write_text("another-dist\n", encoding="utf-8"), "+another-dist"),
    "an envcheck.toml added": (
        lambda p: (p.root / "envcheck.toml").write_text(IGNORE, encoding="utf-8"), "-needed-dist"),
    "the configuration in pyproject.toml changed": (
        lambda p: _append(p.root / "pyproject.toml", "\n[tool.envcheck]\n" + IGNORE), "-needed-dist"),
    "an environment variable set": (
        lambda p: p.env.update(NO_COLOR="1", ENVCHECK_TEST_SOMETHING="x"), ""),
    "a rule directory's rule edited": (
        lambda p: _edit_same_size(p.root / "rules" / "local.toml", 'summary = "xx"', 'summary = "yy"'), "+yy"),
}


@pytest.mark.parametrize("change", list(CHANGES))
@RECORDED
def test_each_change_is_seen(project: Project, change: str) -> None:
    """After the change, the next run checks afresh and prints the fresh report; the run after it replays that."""
    (project.root / "rules").mkdir()
    (project.root / "rules" / "local.toml").write_text(
        '[[rule]]\nid = "EC9500"\nname = "local-rule"\nseverity = "warning"\nsummary = "xx"\nwhy = "w"\nfix = "f"\n'
        'references = ["https://example.org"]\nwhen = { python = ">=3" }\n', encoding="utf-8")
    _append(project.root / "pyproject.toml", '\n[tool.envcheck]\nrule-dirs = ["rules"]\n')
    if change == "the configuration in pyproject.toml changed":
        (project.root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    before = project.run()
    assert not before[2] and project.run()[2]
    mutate, expect = CHANGES[change]
    mutate(project)
    after = project.run()
    assert not after[2], f"replayed after: {change}"
    assert after[:2] == project.fresh()
    if expect:
        assert (expect[1:] in after[1]) == (expect[0] == "+"), after[1]
        assert after[1] != before[1]
    assert project.run() == (after[0], after[1], True)


@RECORDED
def test_the_interpreter_envcheck_runs_in(tmp_path: Path) -> None:
    """Checking envcheck's own interpreter (the collector in the same process): a distribution appearing on its
    path is seen."""
    extra = tmp_path / "extra-site"
    extra.mkdir()
    (tmp_path / "work").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "VIRTUAL_ENV", "CONDA_PREFIX")}
    env.update(ENVCHECK_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(extra))

    def run() -> tuple[int, str, bool]:
        proc = subprocess.run([sys.executable, "-c", ENTRY, "--static"], cwd=tmp_path / "work", env=env, text=True,
                              capture_output=True, timeout=300, check=False)
        return proc.returncode, proc.stdout, proc.stderr.endswith("replayed: True")

    first = run()
    assert "envcheck's own interpreter" in first[1]
    assert run() == (first[0], first[1], True)
    write_dist(extra, "broken-extra", "1.0", requires=["no-such-dist-abc>=1"])
    after = run()
    assert not after[2] and "no-such-dist-abc" in after[1]
    assert run() == (after[0], after[1], True)


@RECORDED
def test_a_real_install_with_uv_is_seen(project: Project, uv: str) -> None:
    project.run()
    assert project.run()[2]
    subprocess.run([uv, "pip", "install", "--python", str(project.root / ".venv" / BIN / "python"), "six"],
                   check=True, capture_output=True, timeout=600, env=project.env)
    after = project.run()
    assert not after[2] and after[:2] == project.fresh()


@RECORDED
def test_a_new_shell_or_hook_call_still_replays(project: Project) -> None:
    """What shells, terminals, git and pre-commit set per session or per call is not part of the answer."""
    first = project.run()
    project.env.update(SHLVL="7", SSH_TTY="/dev/pts/9", GIT_INDEX_FILE=".git/next-index-4242.lock",
                       PRE_COMMIT_FROM_REF="abc", OLDPWD="/elsewhere")
    assert project.run() == (first[0], first[1], True)


@RECORDED
def test_a_terminal_is_another_answer(project: Project) -> None:
    project.run()
    assert project.run()[2]
    # Standard output a terminal: the report is coloured there, so the piped run's answer does not apply.
    leader, follower = pty.openpty()
    try:
        code, _, replayed = project.run(stdout=follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert not replayed and code == 1


@RECORDED
def test_a_tampered_or_foreign_entry_is_ignored(project: Project) -> None:
    first = project.run()
    (entry,) = project.cache_dir.glob("replay-*.signed")
    data = entry.read_bytes()
    entry.write_bytes(data.replace(b"needed-dist", b"NEEDED-dist", 1))
    assert project.run() == (first[0], first[1], False)
    assert project.run()[2]
    # The entry as it is, but the signing key another one (an entry copied from another account or machine).
    key = project.cache_dir / "key"
    key.write_bytes(os.urandom(len(key.read_bytes())))
    assert project.run() == (first[0], first[1], False)
    assert project.run()[2]


@RECORDED
def test_a_project_inside_the_cache_folder_is_still_witnessed(tmp_path: Path) -> None:
    """ENVCHECK_CACHE_DIR may name a folder that also holds the project (a home directory, a CI workspace): only
    envcheck's own entries there go unwitnessed, so an edit of the project's requirements is seen."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "proj").mkdir()
    project = Project(home / "proj", home)
    first = project.run()
    assert project.run() == (first[0], first[1], True)
    _edit_same_size(project.root / "pyproject.toml", "needed-dist>=1", "needed-dist<=1")
    after = project.run()
    assert not after[2] and "needed-dist<=1" in after[1]


def test_a_run_that_ends_in_an_error_is_not_recorded(project: Project) -> None:
    (project.root / "envcheck.toml").write_text('fail-on = "sometimes"\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", ENTRY, "--static"], cwd=project.root, env=project.env, text=True,
                          capture_output=True, timeout=300, check=False)
    assert proc.returncode == 2 and "envcheck: error:" in proc.stderr
    assert not list(project.cache_dir.glob("replay-*.signed"))


@RECORDED
def test_recording_puts_back_what_it_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wrapped os functions and stderr are the originals again after a run, and the audit hook is idle."""
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    originals = (os.stat, os.lstat, os.access, sys.stderr)
    recording = _replay.Recording.start(["--static"])
    assert recording is not None
    assert os.stat is not originals[0] and _replay.Recording.start(["--static"]) is None  # one at a time
    (tmp_path / "seen.txt").write_text("x", encoding="utf-8")
    assert (tmp_path / "seen.txt").read_text(encoding="utf-8") == "x"
    assert not (tmp_path / "missing").exists()
    recording.stop()
    assert (os.stat, os.lstat, os.access, sys.stderr) == originals
    assert recording.spoiled is not None and "written" in recording.spoiled  # seen.txt was written
    (tmp_path / "after.txt").write_text("y", encoding="utf-8")  # not recorded: the hook is idle
    assert recording.spoiled is not None and "after.txt" not in recording.spoiled


@pytest.mark.parametrize("payload", [
    b"", b"[]", b"{}", b"not json", b'{"format": 1}',
    json.dumps({"format": 1, "text": "t", "code": 5, "pack": [[], "s"], "witnesses": [],
                "collected": {"python": None, "request": {}, "digest": "d"}}).encode(),
    json.dumps({"format": 1, "text": "t", "code": 0, "pack": [[], "s"], "witnesses": [["s", "/x"]],
                "collected": {"python": None, "request": {}, "digest": "d"}}).encode(),
    json.dumps({"format": 2, "text": "t", "code": 0, "pack": [[], "s"], "witnesses": [],
                "collected": {"python": None, "request": {}, "digest": "d"}}).encode(),
    json.dumps({"format": 1, "text": "t", "code": 0, "pack": [[], "s"], "witnesses": [], "extra": 1,
                "collected": {"python": None, "request": {}, "digest": "d"}}).encode(),
    b"[" * 100_000,
])
def test_an_entry_not_exactly_as_written_is_refused(payload: bytes) -> None:
    assert _replay._entry(payload) is None


@RECORDED
def test_a_stored_entry_reads_back(project: Project) -> None:
    project.run()
    (entry,) = project.cache_dir.glob("replay-*.signed")
    name = entry.name.removesuffix(".signed")
    data = entry.read_bytes()
    stamp = data.split(b"\n", 2)[1].decode()
    previous = os.environ.get("ENVCHECK_CACHE_DIR")
    os.environ["ENVCHECK_CACHE_DIR"] = str(project.cache_dir)
    try:
        payload = signed.load_signed(name, stamp)
    finally:
        if previous is None:
            del os.environ["ENVCHECK_CACHE_DIR"]
        else:
            os.environ["ENVCHECK_CACHE_DIR"] = previous
    assert payload is not None
    parsed = _replay._entry(payload)
    assert parsed is not None and parsed["code"] == 1
    kinds = {w[0] for w in parsed["witnesses"]}
    assert {"s", "o", "d"} <= kinds  # stats (the project files looked for), opened files, listed folders
    # envcheck's own entries are verified where they are read; what else the check asked of the folder (whether it
    # lies in a Python environment) is witnessed like any read.
    own = [w[1] for w in parsed["witnesses"] if w[1].startswith(str(project.cache_dir))
           and Path(w[1]).name not in ("pyvenv.cfg", "conda-meta")]
    assert own == [], own


@RECORDED
def test_the_full_check_replays_only_with_cached_probe_results(project: Project) -> None:
    """`envcheck` with its probes: a run whose probes ran is not recorded; one whose results came from the probe
    cache is, and the cached results' file is witnessed like any other read."""
    first = project.run("check")
    assert not first[2]
    second = project.run("check")  # the probes' results from the cache: recorded
    assert second == (first[0], first[1], False)
    assert project.run("check") == (first[0], first[1], True)
    (probes,) = project.cache_dir.glob("probes-*.signed")
    probes.unlink()  # the next run must run the probes again
    assert project.run("check") == (first[0], first[1], False)
    assert project.run("check") == (first[0], first[1], False)  # recorded now, from the cache again
    assert project.run("check") == (first[0], first[1], True)


def test_only_where_every_stat_is_seen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Python 3.10's pathlib keeps its own reference to os.stat (taken at import), which the recording cannot wrap:
    no run is recorded there, nor on interpreters it was not verified on."""
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    for version in ((3, 10, 14, "final", 0), (3, 14, 0, "final", 0)):
        monkeypatch.setattr(sys, "version_info", version)
        assert _replay.Recording.start(["--static"]) is None


@RECORDED
def test_an_input_changed_during_the_run_is_not_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A file is looked at when it is opened and again when the run is stored: if it changed in between, the report
    may hold either state, and nothing is kept."""
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    read = tmp_path / "requirements.txt"
    read.write_text("a\n", encoding="utf-8")
    recording = _replay.Recording.start(["--static"])
    assert recording is not None
    try:
        assert read.read_text(encoding="utf-8") == "a\n"
    finally:
        recording.stop()
    read.write_text("ab\n", encoding="utf-8")  # another process's edit, while the check was still running
    recording.collected(None, {}, {}, _no_driver(), None)
    recording.store("report\n", 0, [])
    assert not list((tmp_path / "cache").glob("replay-*.signed"))


def _no_driver() -> object:
    from envcheck.facts.gpus import NvmlFacts
    from envcheck.sources.live.nvml import NO_DRIVER_REASON

    return NvmlFacts(status="no-driver", reason=NO_DRIVER_REASON, driver_version=None, cuda_driver_version=None,
                     devices=())


def test_a_symbolic_links_target_is_part_of_its_answer(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a", encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to("a")
    before = _replay._observe("l", str(link))
    assert before is not None and before[-1] == "a"
    link.unlink()
    link.symlink_to("b")
    assert _replay._observe("l", str(link))[-1] == "b"


STORE_FAILS = ("import sys, shutil\nfrom envcheck.pipeline import replay as _replay\n"
               "def fail(*a, **k):\n    raise FileNotFoundError('the working directory is gone')\n"
               "_replay.Recording.store = fail\n"
               "from envcheck.cli.entry import console\nsys.argv = ['envcheck', '--static']\n"
               "try:\n    console()\nfinally:\n"
               "    sys.stderr.write('\\nfd functions: %s' % shutil._use_fd_functions)\n")


def test_keeping_the_answer_never_fails_the_check(project: Project) -> None:
    """A failure while the answer is stored (the working directory removed meanwhile) leaves the check's exit code
    and report as they are; wrapping os.stat for the run does not change how shutil removes folders."""
    proc = subprocess.run([sys.executable, "-c", STORE_FAILS], cwd=project.root, env=project.env, text=True,
                          capture_output=True, timeout=300, check=False)
    assert proc.returncode == 1 and "needed-dist" in proc.stdout
    assert proc.stderr.strip() == "fd functions: True"


@RECORDED
def test_a_failing_recorder_never_fails_a_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Whatever goes wrong in the audit hook or the wrapped os functions spoils the recording, not the check's own
    open, stat or access."""
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "f").write_text("x", encoding="utf-8")
    recording = _replay.Recording.start(["--static"])
    assert recording is not None

    def broken(value: object) -> str:
        raise RuntimeError("bug in the recorder")

    monkeypatch.setattr(_replay, "_path_of", broken)
    try:
        assert (tmp_path / "f").read_text(encoding="utf-8") == "x"
        assert os.stat(tmp_path / "f").st_size == 1 and os.access(tmp_path / "f", os.R_OK)
        assert os.listdir(tmp_path)
    finally:
        recording.stop()
    assert recording.spoiled == "the recorder failed: RuntimeError"


@pytest.mark.skipif(RECORDING, reason="runs are recorded here")
def test_where_runs_are_not_recorded_each_run_checks_afresh(project: Project) -> None:
    first = project.run()
    assert project.run() == (first[0], first[1], False)
    assert not list(project.cache_dir.glob("replay-*.signed"))

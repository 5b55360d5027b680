"""`envcheck fleet` under a real torchrun (torch 2.13.0+cpu, gloo-free: the CPU build's c10d store), two ranks.

torchrun is `python -m torch.distributed.run --standalone`: one machine, a free port, the agent's store. The torch
interpreter comes from conftest's `torch_python` (ENVCHECK_TORCH_PYTHON, else a fresh venv; under CI=true a missing
torch fails the tests). This checkout is put first on its PYTHONPATH, so the code under test is this tree's.

The failing ranks are real failures, started through a small wrapper that torchrun runs for every rank and that
changes rank 1 only: a node-local rule directory that is broken (the rank's collection raises), a rank that hangs
(it sleeps instead of answering), a rank that is killed (SIGKILL, as the OOM killer does; torchrun then stops the
job with SIGTERM).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _torch import clean_env, own_torch_python

pytestmark = [pytest.mark.torch, pytest.mark.slow,
              pytest.mark.skipif(sys.platform == "win32", reason="torchrun's elastic agent is POSIX-only here")]

REPO = Path(__file__).resolve().parents[2]
_RUN_TIMEOUT_S = 600  # guards against a hung launcher; never a timing assertion
WRAPPER = '''
import os, runpy, signal, sys, time
mode, args = sys.argv[1], sys.argv[2:]
if os.environ["RANK"] == "1":
    if mode == "hang":
        time.sleep(600)
    elif mode == "killed":
        time.sleep(4)
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "broken-rules":
        args += ["--rules", os.environ["BROKEN_RULES"]]
sys.argv = ["envcheck", "fleet", *args]
runpy.run_module("envcheck", run_name="__main__")
'''


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the real fleet tests: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def fleet_python(torch_python: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The torch interpreter (a copy of the shared venv), able to import this checkout's envcheck and its
    dependencies."""
    torch_python = own_torch_python(torch_python, tmp_path_factory.mktemp("fleet-torch") / "venv")
    env = clean_env({"PYTHONPATH": str(REPO)})
    code = "import click, packaging, pynvml, torch.distributed, envcheck; print(envcheck.__file__)"
    check = [torch_python, "-c", code]
    proc = subprocess.run(check, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:  # a fresh torch venv lacks envcheck's dependencies
        install = subprocess.run([torch_python, "-m", "pip", "install", "--quiet", "click>=8.1", "packaging>=22",
                                  "nvidia-ml-py>=12.535"], capture_output=True, text=True, env=clean_env(),
                                 check=False, timeout=_RUN_TIMEOUT_S)
        if install.returncode != 0:
            _unavailable(f"cannot install envcheck's dependencies next to torch: {install.stderr.strip()[-800:]}")
        proc = subprocess.run(check, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).is_relative_to(REPO)
    return torch_python


def _torchrun(python: str, tmp_path: Path, *args: str, mode: str | None = None,
              extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = clean_env({"PYTHONPATH": str(REPO), "ENVCHECK_CACHE_DIR": str(tmp_path / "cache"), **(extra_env or {})})
    launch = [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    if mode is None:
        argv = [*launch, "-m", "envcheck", "fleet", *args]
    else:
        wrapper = tmp_path / "rank_wrapper.py"
        wrapper.write_text(WRAPPER, encoding="utf-8")
        argv = [*launch, str(wrapper), mode, *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
                          timeout=_RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)


def test_two_ranks_one_report_one_node(fleet_python: str, tmp_path: Path) -> None:
    """Two ranks on one machine: exactly one report (rank 1 prints nothing), one node with both ranks, exit 0."""
    proc = _torchrun(fleet_python, tmp_path, "--static", "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)  # a second report on stdout would make this fail
    assert proc.stdout.count('"$schema"') == 1
    (node,) = doc["nodes"]
    assert (node["ranks"], node["status"], node["group"]) == ([0, 1], "ok", 1)
    assert [m["local_rank"] for m in node["members"]] == [0, 1]
    assert doc["complete"] is True and doc["expected"] == 2
    (group,) = doc["groups"]
    assert group["facts"]["torch"] == "2.13.0+cpu"
    assert "Traceback" not in proc.stderr


def test_rank_whose_collection_raises_is_reported_failed(fleet_python: str, tmp_path: Path) -> None:
    """Rank 1's node has a broken rule directory: its collection raises, rank 0's text report names it as failed
    with the reason, exit 1; still one report."""
    broken = tmp_path / "node-rules"
    broken.mkdir()
    (broken / "local.toml").write_text('[[rule]]\nid = "X1"\n', encoding="utf-8")
    proc = _torchrun(fleet_python, tmp_path, "--static", "--no-color", mode="broken-rules",
                     extra_env={"BROKEN_RULES": str(broken)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.count("envcheck fleet: ") == 1
    assert proc.stdout.startswith("envcheck fleet: 2 nodes (2 ranks) in 1 environment, 1 node failed\n")
    assert "EC1000 fleet-nodes-not-checked" in proc.stdout
    assert f"collection failed: {broken / 'local.toml'}" in proc.stdout
    assert "(rank 1)" in proc.stdout and "INCOMPLETE" in proc.stdout


def test_rank_that_hangs_is_reported_after_the_gather_timeout(fleet_python: str, tmp_path: Path) -> None:
    """Rank 1 never answers: at --gather-timeout rank 0 reports what it has and names rank 1, exit 1."""
    proc = _torchrun(fleet_python, tmp_path, "--static", "--format", "json", "--gather-timeout", "15", mode="hang")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    by_rank = {m["rank"]: m for n in doc["nodes"] for m in n["members"]}
    assert by_rank[0]["error"] is None
    assert by_rank[1]["error"].startswith("no facts within --gather-timeout 15 s")
    assert doc["complete"] is False and doc["stopped"] is None


def test_rank_that_is_killed_still_gives_a_report(fleet_python: str, tmp_path: Path) -> None:
    """Rank 1 is SIGKILLed; torchrun stops the job with SIGTERM, and rank 0 prints the report of what it has."""
    proc = _torchrun(fleet_python, tmp_path, "--static", "--format", "json", mode="killed")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert "SIGTERM" in doc["stopped"]
    by_rank = {m["rank"]: m for n in doc["nodes"] for m in n["members"]}
    assert by_rank[1]["error"].startswith("the job was stopped before this rank answered")
    assert doc["complete"] is False

"""The real `envcheck facts`, run as a user runs it (a child process; a real torch with its probes), validates
against the snapshot's schema and loads back. The snapshot's own tests are tests/unit/test_snapshot.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_snapshot import FACTS_SCHEMA

from envcheck.facts.snapshot import SCHEMA, Facts
from envcheck.sources.live import collect as collect_mod


@pytest.mark.slow
def test_envcheck_facts_output_is_valid(tmp_path: Path) -> None:
    """The real `envcheck facts --static` of this interpreter, run as a user runs it, validates against the schema."""
    out = tmp_path / "env.json"
    proc = subprocess.run([sys.executable, "-m", "envcheck", "facts", "--static", "--no-config", "-o", str(out)],
                          capture_output=True, text=True, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    FACTS_SCHEMA.validate(data)
    assert data["schema"] == SCHEMA and data["nvml"] is not None and len(data["distributions"]) > 5


@pytest.mark.slow
@pytest.mark.torch
def test_envcheck_facts_with_real_probe_results_is_valid(torch_python: str, tmp_path: Path) -> None:
    """`envcheck facts --python` of an interpreter with a real torch, probes included, validates and loads back."""
    out = tmp_path / "env.json"
    proc = subprocess.run([sys.executable, "-m", "envcheck", "facts", "--no-config", "--python", torch_python,
                           "-o", str(out)], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    FACTS_SCHEMA.validate(data)
    assert data["probes"]["sdpa"]["cases"] and data["probes"]["torch-build"]["status"] == "ok"
    assert collect_mod.load(str(out)).probes == Facts.from_dict(data).probes

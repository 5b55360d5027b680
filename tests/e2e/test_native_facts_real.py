"""The loaded-libraries probe run in a real child of an interpreter with the real CPU torch. The native facts' own
tests are tests/unit/test_native_facts.py."""

from __future__ import annotations

import dataclasses

from _fakes import build_facts, dist_dict, torch_dict
from test_native_facts import linux

from envcheck.derived.native_libs import loaded_outside_wheels


@linux
def test_loaded_libraries_probe_with_real_torch(torch_python: str) -> None:
    """With the real CPU torch, the probe lists torch's own libraries and the OpenMP runtime it loads; a CPU torch
    has no CUDA libraries to compare, so nothing is reported from outside the wheels."""
    from _torch import clean_env

    from envcheck.sources.probes.runner import RunOptions, run

    result = run(["loaded-libraries"], RunOptions(python=torch_python, timeout_s=300.0, env=clean_env()))
    probe = result["loaded-libraries"]
    assert probe.status == "ok", probe.message
    libraries = probe.details["libraries"]
    names = [path.rsplit("/", 1)[-1] for path in libraries]
    assert "libtorch_cpu.so" in names
    assert any(name.startswith("libgomp") for name in names)
    assert len(set(libraries)) == len(libraries)
    facts = build_facts(dists=[dist_dict("torch", "2.13.0+cpu")], torch=torch_dict("2.13.0+cpu", None),
                        probes={"loaded-libraries": dataclasses.asdict(probe)})
    assert loaded_outside_wheels(facts) == []

"""Every shipped rule, evaluated on an environment where it must fire and one where it must not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _fakes import SITE, dist_dict, facts_dict

from envcheck.facts.snapshot import Facts
from envcheck.pipeline.stages import collection_request
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Status
from envcheck.support import toml

CASES: dict[str, dict[str, dict[str, Any]]] = {}
for _file in sorted((Path(__file__).parents[1] / "fixtures" / "rule_cases").glob("*.toml")):
    _loaded = toml.loads(_file.read_text(encoding="utf-8"))
    assert not set(_loaded) & set(CASES), f"{_file.name} repeats cases of {sorted(set(_loaded) & set(CASES))}"
    CASES.update(_loaded)
PACK = rule_pack.load()
BY_ID = {r.id: r for r in PACK}
REQUEST = collection_request(PACK)


def _snapshot(case: dict[str, Any]) -> Facts:
    """A Facts snapshot from a compact case spec (see the header of rule_cases.toml)."""
    dists = []
    for name, version, *rest in case.get("dists", []):
        location = rest.pop(0)[1:] if rest and rest[0].startswith("@") else SITE
        requires = [r for r in rest if not r.startswith((">=", "<"))]
        requires_python = next((r for r in rest if r.startswith((">=", "<"))), None)
        dists.append(dist_dict(name, version, *requires, location=location, requires_python=requires_python))
    for name, version, problem in case.get("bad_dists", []):
        dists.append(dist_dict(name, version, problems=[problem]))
    python = dict(case.get("python", {}))
    marker = {}
    if "version" in python:
        marker.update(python_full_version=python["version"], python_version=".".join(python["version"].split(".")[:2]))
    if "platform" in python:
        marker["sys_platform"] = python["platform"]
    torch = case.get("torch")
    found = set(case.get("modules", []))
    modules = {m: {"found": m in found, "origin": f"{SITE}/{m}" if m in found else None} for m in REQUEST["modules"]}
    sources = {}
    for spec in REQUEST["sources"]:
        matches = case.get("sources", {}).get(spec["file"])
        sources[spec["file"]] = {"path": f"{SITE}/{spec['file']}" if matches else None, "matches": matches or {}}
    data = facts_dict(dists=dists, modules=modules, sources=sources, env=case.get("env", {}),
                      torch=None if torch is None else {"location": f"{SITE}/torch", "version": torch["version"],
                                                        "cuda": torch.get("cuda"), "hip": torch.get("hip"),
                                                        "git_version": None, "debug": False, "fields": {},
                                                        "problem": None},
                      python=python)
    data["python"]["marker_environment"].update(marker)
    data["partial_installs"] = case.get("partial_installs", [])
    if "nvml" in case:
        nvml = dict(case["nvml"])
        nvml.setdefault("reason", None)
        nvml["devices"] = [{"index": i, "name": name, "uuid": f"GPU-{i}", "pci_bus_id": None,
                            "compute_capability": cc, "memory_total_mib": mib, "mig_mode": None}
                           for i, (name, cc, mib) in enumerate(nvml.get("devices", []))]
        data["nvml"] = nvml
    data["probes"] = case.get("probes", {})
    data.update(case.get("facts", {}))  # any other top-level section of the snapshot, in its JSON form
    return Facts.from_dict(data, file="<rule case>")


@pytest.mark.parametrize("rule_id", sorted(r.id for r in PACK if not r.evidence_only))
def test_every_rule_has_both_cases(rule_id: str) -> None:
    """A rule without a firing and a non-firing case fails CI: untested rules cannot ship. (An evidence-only rule's
    cases are its signatures' example and near miss: test_evidence_only_rule_fires_on_its_examples.)"""
    assert set(CASES.get(rule_id, {})) == {"fires", "passes"}, (
        f"add [{rule_id}.fires] and [{rule_id}.passes] to tests/fixtures/rule_cases/{BY_ID[rule_id].area}.toml")


EVIDENCE_ONLY = sorted(r.id for r in PACK if r.evidence_only)


@pytest.mark.parametrize("rule_id", EVIDENCE_ONLY)
def test_evidence_only_rule_fires_on_its_examples(rule_id: str) -> None:
    """A rule that only error output shows fires on each of its signatures' examples, with every placeholder
    filled in and no command that names an unstated fact, and is n/a on their near misses."""
    from envcheck.rules.signatures import scan

    rule = BY_ID[rule_id]
    empty = _snapshot({})
    for signature in rule.signatures:
        seen = [o for o in scan(signature.example, rule.signatures) if o.signature == signature.index]
        facts = Facts.from_dict({**empty.to_dict(), "observed": [o.__dict__ for o in seen]}, file="<case>")
        (finding,) = evaluate(PACK.only([rule]), facts).findings
        assert finding.status.is_finding, finding
        rendered = " ".join([finding.summary, finding.why, finding.fix, *(" ".join(a) for a in finding.commands)])
        assert "{" not in rendered.replace("{{", ""), rendered
        missed = scan(signature.near_miss, [signature])
        facts = Facts.from_dict({**empty.to_dict(), "observed": [o.__dict__ for o in missed]}, file="<case>")
        assert [f.status for f in evaluate(PACK.only([rule]), facts).findings] == [Status.NA]


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_cases_name_shipped_rules(rule_id: str) -> None:
    """A case for a rule that no longer exists is stale and must go."""
    assert rule_id in BY_ID


@pytest.mark.parametrize("rule_id", sorted(set(BY_ID) & set(CASES)))
def test_rule_fires(rule_id: str) -> None:
    """In its `fires` environment the rule reports its finding, with every placeholder filled in."""
    case = CASES[rule_id]["fires"]
    report = evaluate(PACK.only([BY_ID[rule_id]]), _snapshot(case))
    found = [f for f in report.findings if f.status.is_finding]
    assert [f.status for f in report.findings if not f.status.is_finding] == []
    assert len(found) == case.get("expect", 1)
    for finding in found:
        rendered = " ".join([finding.summary, finding.why, finding.fix, *(" ".join(a) for a in finding.commands)])
        assert "{" not in rendered.replace("{{", ""), rendered
        assert all(argv[0] == "/opt/venv/bin/python" for argv in finding.commands if argv[0].endswith("python"))


@pytest.mark.parametrize("rule_id", sorted(set(BY_ID) & set(CASES)))
def test_rule_does_not_fire(rule_id: str) -> None:
    """In its `passes` environment the rule is quiet, with exactly the verdict the case expects."""
    case = CASES[rule_id]["passes"]
    report = evaluate(PACK.only([BY_ID[rule_id]]), _snapshot(case))
    assert [f.status for f in report.findings] == [Status(case["expect"])]


def test_evidence_names_the_probe_or_the_version_range_that_decided() -> None:
    """EC0502 warns from the probe only; under --static EC0503 gives the version range's verdict as information,
    naming the probe that did not run."""
    with_probe = evaluate(PACK.only([BY_ID["EC0502"]]), _snapshot(CASES["EC0502"]["fires"])).findings[0]
    assert with_probe.status is Status.WARN
    static = {k: v for k, v in CASES["EC0503"]["fires"].items() if k != "probes"}
    pack = PACK.only([BY_ID["EC0502"], BY_ID["EC0503"]])
    by_id = {f.rule_id: f for f in evaluate(pack, _snapshot(static)).findings}
    assert not by_id["EC0502"].status.is_finding
    assert by_id["EC0503"].status is Status.INFO
    assert by_id["EC0503"].evidence.startswith("torch build: version")
    assert "probe transformer-fastpath (not run" in by_id["EC0503"].evidence


@pytest.mark.parametrize(("change", "expect"), [
    pytest.param({}, Status.INFO, id="cpu-build-with-lightning"),
    pytest.param({"dists": [["torch", "2.5.1"], ["pytorch-lightning", "2.2.0"]]}, Status.INFO,
                 id="pytorch-lightning"),
    pytest.param({"dists": [["torch", "2.5.1"]]}, Status.NA, id="no-lightning"),
    pytest.param({"torch": {"version": "2.6.0+cpu"}, "dists": [["torch", "2.6.0"], ["lightning", "2.4.0"]]},
                 Status.PASS, id="fixed-release"),
    # A CUDA build on a machine without an NVIDIA GPU computes on the CPU: Lightning autocasts there.
    pytest.param({"torch": {"version": "2.5.1+cu124", "cuda": "12.4"},
                  "nvml": {"status": "no-driver", "devices": []}}, Status.INFO, id="cuda-build-without-gpu"),
    # A GPU machine whose GPUs NVML could not list: unknown, so not said.
    pytest.param({"torch": {"version": "2.5.1+cu124", "cuda": "12.4"},
                  "nvml": {"status": "unavailable", "devices": []}}, Status.SKIPPED, id="gpus-unknown"),
])
def test_the_fastpath_note_needs_lightning_on_the_cpu(change: dict[str, Any], expect: Status) -> None:
    """EC0503 notes the CPU bf16 autocast bug from torch's version only where its mechanism is likely: Lightning is
    installed and torch computes on the CPU (a CPU build, or no GPU for its build); on a GPU, Lightning autocasts on
    CUDA, which the fast path checks, and the note stays away."""
    case = {**CASES["EC0503"]["fires"], **change}
    finding = evaluate(PACK.only([BY_ID["EC0503"]]), _snapshot(case)).findings[0]
    assert finding.status is expect, (finding.summary, finding.missing)
    if expect is Status.INFO:
        assert finding.commands[0][:5] == ("/opt/venv/bin/python", "-m", "pip", "install", "torch>=2.6")


def test_a_torch_requirement_no_wheel_satisfies_is_reported_once_without_an_install_command() -> None:
    """On an Intel Mac a project's `torch>=2.3` is EC1601 (no wheel exists), not also EC9801 with a
    `pip install 'torch>=2.3'` that cannot succeed; a requirement that can be installed stays EC9801's."""
    from envcheck.rules import generated as project_rules

    def fired(case: dict[str, Any]) -> set[str]:
        facts = _snapshot(case)
        pack = PACK.only([*PACK.rules, *project_rules.rules(facts.project)])
        return {f.rule_id for f in evaluate(pack, facts).findings if f.status.is_finding}

    case = CASES["EC1601"]["fires"]
    assert {"EC1601", "EC9801"} & fired(case) == {"EC1601"}
    # torch 2.3 needs 2.2.x here: installable, so EC9801 reports it with its command.
    installable = {**case, "facts": {"project": {**case["facts"]["project"], "requirements": [
        {"requirement": "torch>=2.2,<2.3", "source": "pyproject.toml: project.dependencies[0]", "kind": "project"}]}}}
    assert {"EC1601", "EC9801"} & fired(installable) == {"EC9801"}

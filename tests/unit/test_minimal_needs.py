"""A rule decides whenever the facts that decide it are known: every shipped rule keeps its verdict when the snapshot
lacks any fact it does not need.

Definitions (what "needs" means here):

- A *fact* is one thing a snapshot can lack, as a pasted report lacks it: torch's build, the distribution list, the
  Python version, the platform, libc, the kind of environment, the environment variables, the modules and sources
  looked up, the NVIDIA GPU list, the driver's version, each probe's result, the site-packages leftovers, and the
  AMD GPUs, network interfaces, build toolchain, native libraries and project declarations (`DROPS` makes each one
  unknown the way envcheck/sources/reports/ leaves it unknown).
- A rule *needs* the facts that its conditions' leaves read (`applies` and `when`, every leaf, whichever part of
  `any` or `first` it sits in: `LEAF_NEEDS`) and the inputs of the derived facts it reads through a `fact` leaf or
  iterates with `foreach` (`INPUTS`: what each derivation reads to decide, not the plan fields some of them carry
  for the commands). A rule's `plan`, its placeholders and its commands need nothing: a verdict never waits for the
  fix to be plannable.
- The verdict *holds* when the rule gives the same statuses, in the same number, as on the whole snapshot.

Each rule's `fires` case (tests/fixtures/rule_cases/) is evaluated whole, then without each fact it does not need,
then without all of them at once: the verdict must hold every time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from test_rule_pack import BY_ID, CASES, PACK, _snapshot

from envcheck.derived.derive import DERIVATIONS
from envcheck.facts.snapshot import Facts
from envcheck.rules.conditions import environment, machine
from envcheck.rules.conditions.core import Condition
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Rule, Status
from envcheck.rules.rule_pack import PLANS

Snapshot = dict[str, Any]
PY = ("python.version", "python.platform")  # what PEP 508 markers read


def _unknown(data: Snapshot, *what: str) -> None:
    data["unknown"] = sorted({*data.get("unknown", []), *what})


def _drop_torch(data: Snapshot) -> None:
    data["torch"] = {"location": "", "version": None, "cuda": None, "hip": None, "git_version": None, "debug": None,
                     "fields": {}, "problem": "the report does not say whether torch is installed"}


def _drop_distributions(data: Snapshot) -> None:
    data["distributions"], data["distributions_complete"] = [], False


def _drop_python(fields: Iterable[str], markers: Iterable[str], value: object = "") -> Callable[[Snapshot], None]:
    def drop(data: Snapshot) -> None:
        for name in fields:
            data["python"][name] = value
        for name in markers:
            data["python"]["marker_environment"].pop(name, None)

    return drop


def _drop_environment_kind(data: Snapshot) -> None:
    data["python"]["prefix"] = data["python"]["base_prefix"] = ""
    _unknown(data, "python.virtualenv", "python.conda", "python.externally_managed")


def _drop_env(data: Snapshot) -> None:
    data["env"] = {}
    _unknown(data, "env")


def _drop_gpus(data: Snapshot) -> None:
    data["nvml"].update(status="unavailable", reason="the report states the driver but lists no GPUs", devices=[])


def _drop_driver(data: Snapshot) -> None:
    data["nvml"].update(driver_version=None, cuda_driver_version=None)


def _drop_partial_installs(data: Snapshot) -> None:
    data["partial_installs"] = []
    _unknown(data, "partial_installs")


def _drop_section(name: str, empty: object = None) -> Callable[[Snapshot], None]:
    def drop(data: Snapshot) -> None:
        data[name] = empty

    return drop


def _drop_probe(name: str) -> Callable[[Snapshot], None]:
    def drop(data: Snapshot) -> None:
        del data["probes"][name]
        _unknown(data, "probes")

    return drop


DROPS: dict[str, Callable[[Snapshot], None]] = {
    "torch": _drop_torch,
    "distributions": _drop_distributions,
    "python.version": _drop_python(("version",), ("python_version", "python_full_version",
                                                  "implementation_version")),
    "python.platform": _drop_python(("platform", "machine", "system", "release"),
                                    ("sys_platform", "platform_system", "os_name", "platform_machine",
                                     "platform_release", "platform_version")),
    "python.libc": _drop_python(("libc",), (), None),
    "python.environment": _drop_environment_kind,
    "env": _drop_env,
    "modules": _drop_section("modules", {}),
    "sources": _drop_section("sources", {}),
    "nvml.devices": _drop_gpus,
    "nvml.driver": _drop_driver,
    "partial_installs": _drop_partial_installs,
    **{name: _drop_section(name) for name in ("rocm", "network", "toolchain", "native", "project", "conda")},
}


def _present(data: Snapshot) -> list[str]:
    """The facts this snapshot states, by the names rules need them by (a probe is `probes:NAME`)."""
    out = [name for name in DROPS if not name.startswith(("nvml.", "rocm", "network", "toolchain", "native",
                                                          "project", "conda"))]
    out += [name for name in ("rocm", "network", "toolchain", "native", "project", "conda")
            if data.get(name) is not None]
    nvml = data.get("nvml")
    if nvml is not None and nvml["status"] == "ok":
        out.append("nvml.devices")
    if nvml is not None and (nvml["driver_version"] or nvml["cuda_driver_version"]):
        out.append("nvml.driver")
    return out + [f"probes:{name}" for name in data.get("probes", {})]


def _drop(data: Snapshot, fact: str) -> None:
    if fact.startswith("probes:"):
        _drop_probe(fact.partition(":")[2])(data)
    else:
        DROPS[fact](data)


# What each derived fact reads to decide (its items' plan fields, where it carries them, are not counted).
_TOOLKIT = ("toolchain", "torch")
INPUTS: dict[str, tuple[str, ...]] = {
    "requirements.unsatisfied": ("distributions", *PY),
    "requirements.missing": ("distributions", *PY),
    "requirements.conflicting": ("distributions", "torch", *PY),
    "distributions.duplicates": ("distributions", "python.environment", *PY),
    "distributions.corrupt": ("distributions", *PY),
    "distributions.invalid-versions": ("distributions",),
    "distributions.requires-python": ("distributions", "python.version"),
    "distributions.partial-installs": ("partial_installs",),
    "project.unmet": ("project", "distributions", *PY),
    "project.lock-drift": ("project",),
    "conda.system-requirements": ("conda",),
    # the error output's failed imports (facts.observed, which no rule drops) against the installed release
    "imports.missing-from-release": ("distributions",),
    "imports.not-the-release": ("distributions",),
    "conda.unmet-system-requirements": ("conda", "nvml.devices", "nvml.driver"),
    "python.virtualenv": ("python.environment",),
    "python.conda": ("python.environment",),
    "python.externally-managed": ("python.environment",),
    "gpu.driver-vs-torch-cuda": ("torch", "nvml.driver", "python.platform"),
    "torch.recommended-build": ("torch", "distributions", "nvml.devices", "nvml.driver", "conda", *PY),
    "torch.unpublished-build": ("torch", "distributions", *PY),
    "gpu.devices-without-native-bf16": ("nvml.devices",),
    "gpu.arch-coverage": ("torch", "nvml.devices", "nvml.driver", "probes:torch-build", "python.platform",
                         "distributions", "conda"),
    "gpu.devices-not-in-build": ("torch", "nvml.devices", "nvml.driver", "probes:torch-build", "python.platform",
                                "distributions", "conda"),
    "gpu.devices-needing-ptx-jit": ("torch", "nvml.devices", "nvml.driver", "probes:torch-build", "python.platform",
                                   "distributions", "conda"),
    "companions.torch-mismatch": ("distributions", "torch", *PY),
    "companions.pinned-to-other-torch": ("distributions", "torch", *PY),
    "companions.torchvision-build-mismatch": ("distributions", "torch", "python.platform"),
    "companions.torchaudio-build-mismatch": ("distributions", "torch", "python.platform"),
    "companions.torchcodec-for-torch": ("distributions", "torch"),
    **{f"extensions.import-{kind}": ("distributions", "torch", "probes:extension-imports", *PY)
       for kind in ("undefined-symbol", "missing-operator", "numpy-abi", "missing-library", "crash", "other")},
    "extensions.import-numpy-too-old": ("distributions", "torch", "probes:extension-imports", "python.environment",
                                        *PY),
    "extensions.tag-other-torch": ("distributions", "torch"),
    "extensions.tag-other-cuda": ("distributions", "torch"),
    "extensions.tag-other-abi": ("distributions", "torch", "probes:torch-build", *PY),
    "torch.cxx11-abi": ("distributions", "torch", "probes:torch-build", *PY),
    **{f"torch.requirement-without-wheel-for-{kind}": ("project", "distributions", *PY)
       for kind in ("platform", "python", "variant")},
    "torch.index-without-wheel": ("project", "python.platform"),
    "nccl.version": ("distributions", "torch", "probes:torch-build"),
    "nccl.loaded-other-than-wheel": ("distributions", "torch", "probes:torch-build"),
    "gpu.mixed-models": ("nvml.devices",),
    "gpu.visible-devices-missing": ("env", "nvml.devices"),
    "network.nccl-socket-ifname-missing": ("env", "network"),
    "network.gloo-socket-ifname-missing": ("env", "network"),
    "bitsandbytes.cuda-override": ("env", "torch"),
    **{f"extensions.{name}-for-other-torch": ("distributions", "torch")
       for name in ("torchao", "vllm", "deepspeed", "detectron2", "bitsandbytes")},
    "extensions.flash-attn-for-other-torch": ("distributions", "torch", "probes:extension-imports"),
    "extensions.openmmlab-rejects-mmcv": ("distributions",),
    "extensions.openmmlab-rejects-mmengine": ("distributions",),
    "toolchain.cuda-toolkit": _TOOLKIT,
    "toolchain.toolkit-other-major": _TOOLKIT,
    "toolchain.nvcc-differs-from-cuda-home": _TOOLKIT,
    "toolchain.arch-list-beyond-toolkit": ("env", *_TOOLKIT),
    "toolchain.gpus-newer-than-toolkit": ("nvml.devices", *_TOOLKIT),
    "toolchain.gpus-dropped-by-toolkit": ("nvml.devices", *_TOOLKIT),
    "toolchain.gcc-newer-than-toolkit": _TOOLKIT,
    "toolchain.source-builds-without-toolkit": ("project", "distributions", *_TOOLKIT),
    **{f"libraries.{family}-older-on-ld-library-path": ("native", "distributions", "torch", "python.platform")
       for family in ("cudnn", "cublas", "nccl")},
    "libraries.loaded-outside-wheels": ("distributions", "torch", "probes:loaded-libraries"),
    "libraries.libstdcxx-too-old": ("native", "python.platform"),
    "libraries.glibc-too-old": ("native", "python.platform", "python.libc"),
    "libraries.wheels-above-glibc": ("native", "python.platform", "python.libc"),
    "windows.vc-runtime-missing": ("native", "python.platform"),
    "windows.libomp-missing": ("native", "python.platform"),
    "attention.sdpa-flash-unavailable": ("probes:sdpa", "probes:torch-build"),
    "cuda.older-toolkits-on-ld-library-path": ("env", "torch"),
    "cuda.home-toolkit-other-major": ("env", *_TOOLKIT),
    "rocm.devices": ("rocm",),
    "rocm.recommended-build": ("rocm", "torch", "distributions", "python.version"),
    "rocm.gpus-not-in-build": ("rocm", "torch", "env", "probes:torch-build"),
    "rocm.gpus-needing-override": ("rocm", "torch", "env", "probes:torch-build"),
    "rocm.override-not-in-build": ("rocm", "torch", "env", "probes:torch-build"),
    "rocm.override-on-supported-gpus": ("rocm", "torch", "env", "probes:torch-build"),
    "rocm.devices-inaccessible": ("rocm", "torch"),
    "rocm.system-rocm-other-version": ("rocm", "torch"),
    "rocm.visible-devices-out-of-range": ("env", "rocm", "torch"),
}


def _leaf_needs(leaf: Condition) -> tuple[str, ...]:
    """What one leaf reads."""
    if isinstance(leaf, (environment.Package, environment.Missing)):
        return ("distributions", *(PY if leaf.requirement.marker is not None else ()))
    if isinstance(leaf, environment.Fact):
        return INPUTS[leaf.name]
    if isinstance(leaf, machine.Driver):
        # A status is NVML's answer about the driver and the GPUs at once; `loaded` trusts no Mac.
        return ("nvml.driver", *(("nvml.devices",) if leaf.status else ()),
                *(("python.platform",) if leaf.loaded is not None else ()))
    if isinstance(leaf, machine.Probe):
        return (f"probes:{leaf.name}",)
    simple: dict[type, tuple[str, ...]] = {
        environment.Module: ("modules",), environment.Source: ("sources",), environment.MarkerCond: PY,
        environment.Python: ("python.version",), environment.Env: ("env",), environment.Torch: ("torch",),
        machine.Gpu: ("nvml.devices",),
    }
    return simple[type(leaf)]


def needs(rule: Rule) -> frozenset[str]:
    """The facts `rule` needs (see the module's docstring); its `plan` is not among them."""
    out = {need for condition in (rule.applies, rule.when) for leaf in condition.leaves() for need in _leaf_needs(leaf)}
    if rule.foreach is not None and rule.foreach not in PLANS:  # a plan iterated as a finding is still a plan
        out |= set(INPUTS[rule.foreach])
    return frozenset(out)


def _statuses(rule: Rule, data: Snapshot) -> list[Status]:
    return [f.status for f in evaluate(PACK.only([rule]), Facts.from_dict(data, file="<rule case>")).findings]


FIRING = sorted(set(BY_ID) & set(CASES))


def test_every_derived_fact_declares_its_inputs() -> None:
    """INPUTS names what every derived fact reads, in the facts DROPS can take away, so that no rule's needs are
    guessed."""
    assert sorted(set(DERIVATIONS) - set(INPUTS)) == []
    known = {*DROPS, "probes:"}
    assert [(n, i) for n, inputs in INPUTS.items() for i in inputs if i not in known and not i.startswith("probes:")] \
        == []


@pytest.mark.parametrize("rule_id", FIRING)
def test_a_verdict_holds_without_the_facts_its_rule_does_not_need(rule_id: str) -> None:
    """The rule's verdict on its `fires` case holds when the snapshot lacks any fact the rule does not need, one at a
    time and all at once."""
    rule = BY_ID[rule_id]
    whole = _snapshot(CASES[rule_id]["fires"]).to_dict()
    expected = _statuses(rule, whole)
    assert expected and all(s.is_finding for s in expected)
    unneeded = [fact for fact in _present(whole) if fact not in needs(rule)]
    changed = {}
    for fact in unneeded:
        data = _snapshot(CASES[rule_id]["fires"]).to_dict()
        _drop(data, fact)
        got = _statuses(rule, data)
        if got != expected:
            changed[fact] = got
    assert changed == {}, f"{rule_id} needs {sorted(needs(rule))}, but its verdict changed without {sorted(changed)}"
    bare = _snapshot(CASES[rule_id]["fires"]).to_dict()
    for fact in unneeded:
        _drop(bare, fact)
    assert _statuses(rule, bare) == expected, f"{rule_id}: with only {sorted(needs(rule))}"


def test_plans_are_never_needs() -> None:
    """No shipped rule iterates a plan, so no verdict waits for one; the rules that name a plan read it as `plan`."""
    assert [r.id for r in PACK if r.foreach in PLANS] == []
    assert {r.id for r in PACK if r.plan} >= {"EC0403", "EC0404", "EC0405", "EC1405", "EC1407", "EC1408", "EC1410"}

"""The machines a project deploys to: their declaration, `check --machine` on the project's pins, the per-machine
reports in every format, and `recommend --machine`; all without the machines and without a network."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner, Result

import envcheck
from envcheck.cli.click_cli import cli
from envcheck.derived.tables import CUDA_DRIVER, TORCH_BUILDS
from envcheck.errors import ConfigError
from envcheck.facts.snapshot import Facts
from envcheck.machines.facts import facts_for
from envcheck.machines.fixes import read_command
from envcheck.machines.pins import pins_for
from envcheck.rules import rule_pack
from envcheck.sources.project import config as config_mod
from envcheck.sources.project.discover import discover

SCHEMA = json.loads((Path(envcheck.__file__).parent / "schemas" / "report.schema.json").read_text(encoding="utf-8"))

# The acceptance scenario: the cu124 build pinned from its index, and three machines it is deployed to.
REQUIREMENTS = """\
--index-url https://download.pytorch.org/whl/cu124
torch==2.5.1+cu124
torchvision==0.20.1+cu124
"""
MACHINES = """\
[[machines]]
name = "rtx5090"
gpu = ["RTX 5090"]
driver = "570.86.10"
python = "3.12"
platform = "linux-x86_64"

[[machines]]
name = "train"
gpu = ["H100", "sm_90"]
driver = "550.54.15"
python = "3.11"
platform = "linux-x86_64"

[[machines]]
name = "intel-mac"
python = "3.12"
platform = "macos-x86_64"
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The acceptance project (a requirements file) as the working directory."""
    write(tmp_path / "requirements.txt", REQUIREMENTS)
    write(tmp_path / "envcheck.toml", MACHINES)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def sections(text: str) -> dict[str, str]:
    """The text report's section per machine, by name."""
    out = {}
    body = text.rsplit("\n\n", 1)[0]  # the summary of every machine comes last
    for part in body.split("== machine ")[1:]:
        out[part.split(":", 1)[0]] = part
    return out


# --- the declaration -----------------------------------------------------------------------------------------


def test_declared_machines_are_read_with_their_gpus_capabilities_and_where(tmp_path: Path) -> None:
    """[[machines]] in an envcheck.toml gives each machine its GPUs (names and capabilities), driver, Python,
    platform and the key it is declared at."""
    cfg = config_mod.load(write(tmp_path / "envcheck.toml", MACHINES))
    train = cfg.machines[1]
    assert [m.name for m in cfg.machines] == ["rtx5090", "train", "intel-mac"]
    assert train.gpus == (("H100", (9, 0)), ("sm_90", (9, 0)))
    assert (train.driver, train.python, train.platform, train.key) == ("550.54.15", "3.11", "linux-x86_64",
                                                                        "machines[1]")
    assert cfg.machines[2].gpus == () and cfg.machines[2].driver is None


def test_pyproject_machines_are_named_with_the_tool_prefix(tmp_path: Path) -> None:
    """[[tool.envcheck.machines]] in a pyproject.toml is read the same, its keys named tool.envcheck.machines[N]."""
    text = MACHINES.replace("[[machines]]", "[[tool.envcheck.machines]]")
    cfg = config_mod.load(write(tmp_path / "pyproject.toml", text))
    assert cfg.machines[0].key == "tool.envcheck.machines[0]"
    assert cfg.machines[0].gpus == (("RTX 5090", (12, 0)),)


@pytest.mark.parametrize(("body", "key", "words"), [
    pytest.param('gpu = "H100"\npython = "3.11"\nplatform = "linux-x86_64"', "machines[0]", "missing key 'name'",
                 id="name-missing"),
    pytest.param('name = "a"\npython = "3.11"\nplatform = "linux-x86_64"\n[[machines]]\nname = "a"\n'
                 'python = "3.11"\nplatform = "linux-x86_64"', "machines[1].name", "declared twice", id="name-twice"),
    pytest.param('name = "all"\npython = "3.11"\nplatform = "linux-x86_64"', "machines[0].name", "not a machine name",
                 id="name-all"),
    pytest.param('name = "a"\ngpu = ["H100", "RTX 9999"]\ndriver = "550"\npython = "3.11"\n'
                 'platform = "linux-x86_64"', "machines[0].gpu[1]", "not a GPU envcheck knows", id="gpu-unknown"),
    pytest.param('name = "a"\npython = "3.11"\nplatform = "linux-riscv"', "machines[0].platform", "expected one of",
                 id="platform"),
    pytest.param('name = "a"\npython = "three"\nplatform = "linux-x86_64"', "machines[0].python",
                 "Python version", id="python"),
    pytest.param('name = "a"\ndriver = "new"\ngpu = "H100"\npython = "3.11"\nplatform = "linux-x86_64"',
                 "machines[0].driver", "driver version", id="driver"),
    pytest.param('name = "a"\ndriver = "550.54.15"\nrocm = "6.2"\npython = "3.11"\nplatform = "linux-x86_64"',
                 "machines[0].rocm", "not both", id="driver-and-rocm"),
    pytest.param('name = "a"\ngpu = "M2"\npython = "3.12"\nplatform = "macos-arm64"', "machines[0].gpu",
                 "MPS", id="gpu-on-a-mac"),
    pytest.param('name = "a"\npython = "3.11"\nplatform = "linux-x86_64"\ncpus = 8', "machines[0].cpus",
                 "unknown key", id="unknown-key"),
])
def test_a_bad_declaration_is_one_line_naming_file_and_key(tmp_path: Path, body: str, key: str, words: str) -> None:
    """Every mistake in a machine's declaration is one ConfigError whose line names the file and the exact key."""
    path = write(tmp_path / "envcheck.toml", f"[[machines]]\n{body}\n")
    with pytest.raises(ConfigError) as caught:
        config_mod.load(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: key '{key}': ")
    assert words in message


def test_bad_declaration_through_the_cli_exits_2_with_the_key(project: Path) -> None:
    """`check --machine` with a bad declaration exits 2 with the one line naming the file and key."""
    write(project / "envcheck.toml", MACHINES.replace('"RTX 5090"', '"RTX 9999"'))
    result = run("check", "--machine", "all")
    assert result.exit_code == 2
    assert "envcheck.toml: key 'machines[0].gpu[0]': 'RTX 9999' is not a GPU envcheck knows" in result.output


def test_an_undeclared_machine_name_is_a_configuration_error(project: Path) -> None:
    """`--machine NAME` for a name the configuration does not declare exits 2 and lists the declared ones."""
    result = run("check", "--machine", "gpu-box")
    assert result.exit_code == 2
    assert "--machine gpu-box: no such machine (declared: rtx5090, train, intel-mac; or all)" in result.output


# --- the acceptance scenario: a requirements file --------------------------------------------------------------


def test_requirements_pins_fail_the_5090_and_the_mac_and_pass_the_h100(project: Path) -> None:
    """On a machine without a GPU, `check --machine all` fails the RTX 5090 (no sm_120 kernels in the cu124 build:
    the change is a cu128 torch), passes the H100, and fails the Intel Mac (no wheel for it); each finding names
    its machine and the pin's line."""
    result = run("check", "--machine", "all")
    assert result.exit_code == 1, result.output
    by_machine = sections(result.output)
    assert set(by_machine) == {"rtx5090", "train", "intel-mac"}
    rtx = by_machine["rtx5090"]
    assert "✗ EC0401 gpu-architecture-not-in-torch-build" in rtx
    assert "rtx5090: GPU 0 (RTX 5090, compute capability 12.0) has no kernels in torch 2.5.1+cu124" in rtx
    assert "[torch==2.5.1+cu124, requirements.txt:2]" in rtx
    flat = " ".join(rtx.split())
    assert "in place of torch==2.5.1+cu124 (requirements.txt:2)" in flat
    assert "+cu128" in flat and "/whl/cu128" in flat
    assert "$ " not in rtx  # no command for a local environment
    assert "✗" not in by_machine["train"] and "! EC" not in by_machine["train"]
    mac = by_machine["intel-mac"]
    assert "✗ EC1601 torch-requirement-has-no-wheel-for-this-platform" in mac
    assert "intel-mac: requirements.txt:2 requires torch==2.5.1+cu124" in mac
    tail = result.output.rsplit("3 machines checked", 1)[1]
    assert "✗ rtx5090" in tail and "✓ train" in tail and "✗ intel-mac" in tail


def test_one_healthy_machine_exits_0(project: Path) -> None:
    """Only the H100 machine checked: the cu124 pins suit it, so the gate passes."""
    result = run("check", "--machine", "train")
    assert result.exit_code == 0, result.output
    assert "1 machine checked (fail-on error):\n  ✓ train" in result.output


def test_fail_on_never_reports_but_passes(project: Path) -> None:
    """--fail-on never reports the failing machines and exits 0."""
    result = run("check", "--machine", "all", "--fail-on", "never")
    assert result.exit_code == 0
    assert "EC0401" in result.output


def test_pins_from_the_index_option_are_that_build(project: Path) -> None:
    """`torch==2.5.1` without a local tag, from the cu124 index, is the cu124 build: same verdicts."""
    write(project / "requirements.txt", REQUIREMENTS.replace("+cu124", ""))
    result = run("check", "--machine", "rtx5090", "--machine", "train")
    assert result.exit_code == 1
    by_machine = sections(result.output)
    assert "has no kernels in torch 2.5.1+cu124" in by_machine["rtx5090"]
    assert "✗" not in by_machine["train"]


def test_an_unpinned_range_is_unknown_never_guessed(project: Path) -> None:
    """`torch>=2.3` pins no build: the GPU rules are skipped for want of torch's version, not judged on a guess."""
    write(project / "requirements.txt", "torch>=2.3\n")
    result = run("check", "--machine", "rtx5090", "-v")
    assert result.exit_code == 0, result.output
    assert "EC0401 gpu-architecture-not-in-torch-build  [skipped]" in result.output


def test_markers_choose_each_machines_pin(project: Path) -> None:
    """A pin with a platform marker applies to the machines of that platform only: the Mac gets its own torch."""
    write(project / "requirements.txt",
          'torch==2.5.1+cu124; sys_platform == "linux"\ntorch==2.2.2; sys_platform == "darwin"\n')
    result = run("check", "--machine", "train", "--machine", "intel-mac")
    assert result.exit_code == 0, result.output


def test_requires_python_excluding_the_declared_python_is_found(project: Path) -> None:
    """The project's requires-python against the machine's declared Python: EC0106 names pyproject.toml's line."""
    write(project / "pyproject.toml", '[project]\nname = "demo"\nversion = "0.1.0"\nrequires-python = ">=3.12"\n'
                                      'dependencies = []\n')
    result = run("check", "--machine", "train", "--fail-on", "warning")
    assert result.exit_code == 1
    assert "train: demo 0.1.0 requires Python >=3.12, but this is Python 3.11" in result.output
    assert "pyproject.toml:4" in result.output


def test_machine_excludes_facts_and_report(project: Path) -> None:
    """--machine judges the pins, not one environment: --facts beside it is a usage error (exit 2)."""
    result = run("check", "--machine", "all", "--facts", "x.json")
    assert result.exit_code == 2
    assert "excludes --facts" in result.output


# --- reports per machine -------------------------------------------------------------------------------------


def test_json_has_one_schema_valid_report_per_machine_with_each_findings_pin(project: Path) -> None:
    """--format json: one report per machine, each valid against report.schema.json, with the pin each finding is
    about."""
    result = run("check", "--machine", "all", "--format", "json")
    data = json.loads(result.output)
    assert [m["name"] for m in data["machines"]] == ["rtx5090", "train", "intel-mac"]
    for machine in data["machines"]:
        jsonschema.validate(machine["report"], SCHEMA)
        assert len(machine["about"]) == len(machine["report"]["findings"])
    rtx = data["machines"][0]
    failed = [i for i, f in enumerate(rtx["report"]["findings"]) if f["status"] == "fail"]
    assert [rtx["report"]["findings"][i]["id"] for i in failed] == ["EC0401"]
    assert rtx["about"][failed[0]] == "torch"
    assert {"name": "torch", "written": "torch==2.5.1+cu124", "version": "2.5.1+cu124", "file": "requirements.txt",
            "line": 2, "index": "https://download.pytorch.org/whl/cu124", "also": []} in rtx["pins"]
    assert all(not f["commands"] for m in data["machines"] for f in m["report"]["findings"])


def test_junit_has_a_suite_per_machine(project: Path) -> None:
    """--format junit: one testsuite per machine, its failures that machine's."""
    result = run("check", "--machine", "all", "--format", "junit")
    root = ET.fromstring(result.output)
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"envcheck machine rtx5090", "envcheck machine train", "envcheck machine intel-mac"}
    assert [suites[f"envcheck machine {n}"].get("failures") for n in ("rtx5090", "train", "intel-mac")] == \
        ["1", "0", "2"]
    assert root.get("failures") == "3"
    failed = [c.get("classname") for c in suites["envcheck machine rtx5090"].iter("testcase")
              if c.find("failure") is not None]
    assert failed == ["envcheck.rtx5090.gpu"]


def test_github_annotations_are_on_the_pins_line(project: Path) -> None:
    """--format github: each problem is annotated on the pin's line of requirements.txt, titled with its machine."""
    result = run("check", "--machine", "all", "--format", "github")
    errors = [line for line in result.output.splitlines() if line.startswith("::error ")]
    assert [line.split("::", 2)[1] for line in errors] == [
        "error file=requirements.txt,line=2,title=EC0401 gpu-architecture-not-in-torch-build on rtx5090",
        "error file=requirements.txt,line=2,title=EC1601 torch-requirement-has-no-wheel-for-this-platform on "
        "intel-mac",
    ]


def test_markdown_and_also_write_every_machine(project: Path) -> None:
    """--also markdown=FILE writes the same machines' reports as the Action's job summary."""
    result = run("check", "--machine", "all", "--format", "github", "--also", "markdown=summary.md")
    assert result.exit_code == 1
    summary = (project / "summary.md").read_text(encoding="utf-8")
    assert "## Machine `rtx5090`" in summary and "## Machine `intel-mac`" in summary
    assert "- ✗ rtx5090" in summary and "- ✓ train" in summary


# --- recommend --machine -------------------------------------------------------------------------------------


def test_recommend_for_each_machine_keeps_what_suits_it(project: Path) -> None:
    """recommend --machine: the 5090 gets a cu128 build, the H100 keeps the pinned cu124 one, the Mac the last
    torch with a wheel for it."""
    result = run("recommend", "--machine", "all")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    rtx = next(line for line in lines if line.startswith("rtx5090 "))
    assert "+cu128" in rtx and rtx.endswith("/whl/cu128")
    assert next(line for line in lines if line.startswith("train ")).endswith(
        "the pinned torch 2.5.1+cu124 already suits it (nothing to change)")
    assert next(line for line in lines if line.startswith("intel-mac ")).startswith(
        "intel-mac (no GPU, Python 3.12, macos-x86_64): torch==2.2.2 torchvision==0.17.2 from")


def test_recommend_all_gives_one_set_per_platform_when_none_suits_all(project: Path) -> None:
    """No one build runs on the Mac and the 5090: the answer is one set per platform, each pin with its marker."""
    result = run("recommend", "--machine", "all")
    assert "no one torch build installs and runs on all of them" in result.output
    assert 'torch==2.2.2; sys_platform == "darwin" and platform_machine == "x86_64"' in result.output
    assert "train: native code, driver 550.54.15 through CUDA minor-version compatibility" in result.output


def test_recommend_one_set_for_linux_machines(project: Path) -> None:
    """The 5090 and the H100 together: one cu128 set that both run (the H100 through minor-version
    compatibility)."""
    result = run("recommend", "--machine", "rtx5090", "--machine", "train", "--format", "json")
    data = json.loads(result.output)
    together = data["together"]
    assert together["machines"] == ["rtx5090", "train"]
    assert together["variant"] == "cu128"
    assert together["requirements"][0].startswith("torch==") and together["requirements"][0].endswith("+cu128")


# --- the facts a machine would have, and other locks ------------------------------------------------------------


def _facts(root: Path, name: str) -> Facts:
    cfg = config_mod.load(root / "envcheck.toml")
    machine = next(m for m in cfg.machines if m.name == name)
    project = discover(root)
    assert project is not None
    tables = rule_pack.load(()).tables
    return facts_for(machine, pins_for(project, machine), tables[TORCH_BUILDS], tables[CUDA_DRIVER])


def test_machine_facts_state_only_the_declaration_and_the_pins(project: Path) -> None:
    """The 5090's snapshot: the pinned cu124 build with the lines it was read from, the declared GPU and driver
    (whose CUDA comes from the driver table), a partial distribution list, and no probe or environment facts."""
    facts = _facts(project, "rtx5090")
    assert facts.torch is not None and (facts.torch.version, facts.torch.cuda) == ("2.5.1+cu124", "12.4")
    assert facts.nvml is not None and facts.nvml.cuda_driver_version == "12.8"
    assert [(d.name, d.version) for d in facts.distributions] == [("torch", "2.5.1+cu124"),
                                                                  ("torchvision", "0.20.1+cu124")]
    assert not facts.distributions_complete and {"probes", "env"} <= set(facts.unknown)
    assert facts.provenance["torch.version"] == "requirements.txt:2"
    assert facts.provenance["nvml.devices"] == f"{project / 'envcheck.toml'}: machines[0].gpu"
    assert facts.origin == "machine:rtx5090"
    mac = _facts(project, "intel-mac")
    assert mac.torch is None and mac.active("torchvision") is None  # no wheel there: not installed


def test_rocm_machine_has_its_amd_gpus_and_the_rocm_build(project: Path) -> None:
    """rocm = "6.2" with gfx targets: the AMD GPUs are the machine's, torch's HIP is the pin's ROCm build."""
    write(project / "envcheck.toml", '[[machines]]\nname = "mi300"\ngpu = ["gfx942"]\nrocm = "6.2"\n'
                                     'python = "3.11"\nplatform = "linux-x86_64"\n')
    write(project / "requirements.txt", "torch==2.5.1+rocm6.2\n")
    facts = _facts(project, "mi300")
    assert facts.torch is not None and (facts.torch.cuda, facts.torch.hip) == (None, "6.2")
    assert facts.rocm is not None and [d.gfx_target for d in facts.rocm.devices] == ["gfx942"]
    assert facts.nvml is not None and facts.nvml.devices == ()


PYLOCK = """\
lock-version = "1.0"
requires-python = ">=3.11"
created-by = "test"

[[packages]]
name = "torch"
version = "2.5.1+cu124"
marker = "sys_platform == 'linux'"
index = "https://download.pytorch.org/whl/cu124"

[[packages]]
name = "torch"
version = "2.2.2"
marker = "sys_platform == 'darwin'"
index = "https://download.pytorch.org/whl/cpu"
"""


def test_pylock_gives_each_machine_the_entry_its_markers_choose(project: Path) -> None:
    """A pylock.toml with a Linux and a macOS torch: each machine's pin is its own entry, with its line and index;
    the Mac then passes (torch 2.2.2 has a wheel there)."""
    write(project / "pylock.toml", PYLOCK)
    cfg = config_mod.load(project / "envcheck.toml")
    found = discover(project)
    assert found is not None
    linux, mac = (pins_for(found, m).get("torch") for m in (cfg.machines[1], cfg.machines[2]))
    assert linux is not None and (linux.version, linux.where, linux.index) == (
        "2.5.1+cu124", "pylock.toml:6", "https://download.pytorch.org/whl/cu124")
    assert mac is not None and (mac.version, mac.where) == ("2.2.2", "pylock.toml:12")
    result = run("check", "--machine", "intel-mac", "--machine", "train")
    assert result.exit_code == 0, result.output
    assert "pins from pylock.toml" in result.output


def test_lock_fix_names_the_lock_tools_command(project: Path) -> None:
    """With a poetry.lock, the 5090's fix is the lock's change and `poetry update --lock torch torchvision`."""
    write(project / "poetry.lock", '[[package]]\nname = "torch"\nversion = "2.5.1+cu124"\n\n[package.source]\n'
                                   'type = "legacy"\nurl = "https://download.pytorch.org/whl/cu124"\n\n'
                                   '[[package]]\nname = "torchvision"\nversion = "0.20.1+cu124"\n\n'
                                   '[metadata]\nlock-version = "2.1"\n')
    result = run("check", "--machine", "rtx5090")
    flat = " ".join(result.output.split())
    assert "[torch 2.5.1+cu124, poetry.lock:2]" in flat
    assert "`poetry update --lock torch torchvision`" in flat


@pytest.mark.parametrize(("argv", "install", "remove", "index"), [
    pytest.param(("python", "-m", "pip", "install", "torch==2.7.1+cu128", "--index-url", "https://x/whl/cu128"),
                 ["torch==2.7.1+cu128"], [], "https://x/whl/cu128", id="pip-install"),
    pytest.param(("uv", "pip", "install", "--python", "/p/python", "numpy<2"), ["numpy<2"], [], None, id="uv"),
    pytest.param(("python", "-m", "pip", "uninstall", "-y", "apex"), [], ["apex"], None, id="uninstall"),
])
def test_commands_are_read_as_pin_changes(argv: tuple[str, ...], install: list[str], remove: list[str],
                                          index: str | None) -> None:
    """A finding's pip or uv pip command is read as what it installs, removes, and from which index."""
    change = read_command(argv)
    assert change is not None
    assert ([str(r) for r in change.install], list(change.remove), change.index) == (install, remove, index)


def test_other_commands_are_no_pin_change() -> None:
    """A command that is no pip install (`rm -rf`, a path to install) says nothing of the pins."""
    assert read_command(("rm", "-rf", "/site/~orch")) is None
    assert read_command(("python", "-m", "pip", "install", "./wheel.whl")) is None


def test_machine_without_a_configuration_says_where_to_declare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               ) -> None:
    """`--machine all` where no configuration file is found exits 2 and says where machines are declared."""
    write(tmp_path / "requirements.txt", REQUIREMENTS)
    monkeypatch.chdir(tmp_path)
    result = run("check", "--machine", "all", "--no-config")
    assert result.exit_code == 2
    assert "envcheck: error: --machine: no configuration file was found, so no machine is declared: add " \
           "[[tool.envcheck.machines]] to pyproject.toml" in result.output

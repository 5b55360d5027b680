"""Pasted reports in, facts out: every parser over real outputs from public issue threads (tests/fixtures/reports/
SOURCES.md cites each), the unknowns a report leaves, and `envcheck check --report` end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.derived.derive import Derived
from envcheck.rules.conditions import parse
from envcheck.rules.conditions.core import Context
from envcheck.rules.conditions.where import Where
from envcheck.sources.reports import ReportError, read_report
from envcheck.sources.reports.gpu_names import capability_of
from envcheck.sources.reports.text import MAX_BYTES

REPORTS = Path(__file__).parents[1] / "fixtures" / "reports"

# fixture -> (torch version, torch CUDA, driver, [(GPU name, compute capability)], python version, sys.platform)
EXPECTED = [
    pytest.param("torch-1.1-macos.txt", "1.1.0a0+4335aac", "10.0", "1.1.0",
                 [("GeForce GTX 1060 with Max-Q Design", "6.1")], "3.7", "darwin", id="collect_env-1.1"),
    pytest.param("torch-1.3-titanxp-cut.txt", "1.3.1", "10.1", "410.48", [("TITAN Xp", "6.1")] * 8, "3.6", "linux",
                 id="collect_env-1.3-cut"),
    pytest.param("torch-1.4-gtx980.txt", "1.4.0", "10.1", "460.32.03", [("GeForce GTX 980", "5.2")], "3.7",
                 "linux", id="collect_env-1.4"),
    pytest.param("torch-1.5-windows-quadro.txt", "1.5.0+cu101", "10.1", "426.25", [("Quadro P1000", "6.1")],
                 "3.7", "", id="collect_env-1.5-os-unknown"),
    pytest.param("torch-1.7-rocm.txt", "1.7.0a0+9ddd3df", None, None, None, "3.6", "linux", id="collect_env-1.7-rocm"),
    pytest.param("torch-2.0-windows-crlf.txt", "2.0.1+cu117", "11.7", "535.98",
                 [("NVIDIA GeForce GTX 1050 Ti", "6.1")], "3.9.16", "win32", id="collect_env-2.0-windows"),
    pytest.param("torch-2.6-rtx5090d.txt", "2.6.0+cu126", "12.6", "570.124.04",
                 [("NVIDIA GeForce RTX 5090 D", "12.0")], "3.12.9", "linux", id="collect_env-2.6"),
    pytest.param("nvidia-smi-535-quadro-cut.txt", None, None, "535.129.03", [("Quadro RTX 4000", "7.5")] * 2, "", "",
                 id="nvidia-smi-535-cut"),
    pytest.param("nvidia-smi-610-b200.txt", None, None, "610.43.02", [("NVIDIA B200", "10.0")] * 2, "", "",
                 id="nvidia-smi-610"),
    pytest.param("nvidia-smi-q-450-gtx780.txt", None, None, "450.66", [("GeForce GTX 780", "3.5")], "", "",
                 id="nvidia-smi-q-450"),
    pytest.param("nvidia-smi-q-442-windows.txt", None, None, "442.92", [("GeForce GTX 1080 Ti", "6.1")], "", "",
                 id="nvidia-smi-q-442"),
    pytest.param("conda-list-1.4-cut.md", "1.4.0", "10.1", None, None, "3.7.6", "", id="conda-list"),
    pytest.param("conda-grep-1.11-cpu.md", "1.11.0", None, None, None, "", "", id="conda-grep"),
    pytest.param("transformers-env-4.33.md", "2.0.1+cu117", "11.7", None, None, "3.9.18", "linux",
                 id="transformers-env"),
    pytest.param("vllm-collect-env-rtx5090.md", "2.7.1+cu128", "12.8", "575.64.03",
                 [("NVIDIA GeForce RTX 5090", "12.0")], "3.12.11", "linux", id="vllm-collect-env"),
    pytest.param("ds-report-0.15.txt", "2.3.0+cu121", "12.1", None, None, "", "", id="ds_report"),
    pytest.param("accelerate-env-0.16.txt", "1.12.1+cu116", "11.6", None, None, "3.9.16", "linux",
                 id="accelerate-env"),
]


@pytest.mark.parametrize(("fixture", "torch", "cuda", "driver", "gpus", "python", "platform"), EXPECTED)
def test_real_reports_give_the_stated_facts(fixture: str, torch: str | None, cuda: str | None, driver: str | None,
                                            gpus: list[tuple[str, str]] | None, python: str, platform: str) -> None:
    """Each real report yields the torch build, driver, GPUs with capabilities and Python it states."""
    facts = read_report((REPORTS / fixture).read_bytes(), fixture)
    assert (facts.torch.version if facts.torch else None) == torch
    assert (facts.torch.cuda if facts.torch else None) == cuda
    assert (facts.nvml.driver_version if facts.nvml else None) == driver
    got = [(d.name, d.compute_capability) for d in facts.nvml.devices] if facts.nvml and facts.nvml.devices else None
    assert got == gpus
    assert (facts.python.version, facts.python.platform) == (python, platform)


def test_nvidia_smi_states_the_drivers_cuda() -> None:
    """The table's and -q's "CUDA Version" is the driver's CUDA; the 610 layout's "CUDA UMD Version" too."""
    cudas = {f: read_report((REPORTS / f).read_bytes(), f).nvml.cuda_driver_version  # type: ignore[union-attr]
             for f in ("nvidia-smi-535-quadro-cut.txt", "nvidia-smi-610-b200.txt", "nvidia-smi-q-450-gtx780.txt")}
    assert cudas == {"nvidia-smi-535-quadro-cut.txt": "12.2", "nvidia-smi-610-b200.txt": "13.3",
                     "nvidia-smi-q-450-gtx780.txt": "11.0"}


def test_collect_env_could_not_collect_lists_no_package() -> None:
    """collect_env's "[pip] Could not collect" and "[conda] Could not collect" lines name no package ("Could")."""
    facts = read_report((REPORTS / "torch-1.5-windows-quadro.txt").read_bytes(), "r")
    assert [(d.name, d.version) for d in facts.distributions] == [("torch", "1.5.0+cu101")]


def test_an_nvidia_smi_banner_without_gpu_rows_leaves_the_gpus_unknown() -> None:
    """nvidia-smi's banner pasted alone states the driver and its CUDA; the GPUs are unknown, not "none"."""
    facts = read_report((REPORTS / "prose" / "pytorch-85332-cu102.md").read_bytes(), "r")
    assert facts.nvml is not None
    assert (facts.nvml.driver_version, facts.nvml.cuda_driver_version) == ("450.51.05", "11.0")
    assert not facts.nvml.devices_known


def test_pip_freeze_reads_versions_and_url_installs() -> None:
    """A freeze gives each `name==version`; a `name @ URL` install is listed with its version unknown."""
    facts = read_report((REPORTS / "pip-freeze-cut.txt").read_bytes(), "freeze")
    assert facts.active("numpy").version == "1.24.2"  # type: ignore[union-attr]
    assert facts.active("certifi").version == ""  # type: ignore[union-attr]
    assert not facts.distributions_complete  # an unfenced paste that ends mid-line is not known to be whole


def test_a_cut_pip_list_is_partial() -> None:
    """A `pip list` whose last row lost its version was cut: listed packages are read, the list is partial."""
    facts = read_report((REPORTS / "pip-list-cut.txt").read_bytes(), "list")
    assert facts.active("jinja2").version == "3.1.2"  # type: ignore[union-attr]
    assert not facts.distributions_complete
    assert facts.torch is not None and facts.torch.problem  # torch's presence is not known


def test_hf_env_reads_library_versions() -> None:
    """`transformers env` lists library versions, read as installed distributions."""
    facts = read_report((REPORTS / "transformers-env-4.33.md").read_bytes(), "env")
    assert {d.name: d.version for d in facts.distributions}["safetensors"] == "0.3.3"
    assert facts.python.marker_environment["platform_machine"] == "x86_64"


def _outcome(facts: object, condition: dict[str, object]) -> bool | None:
    return parse(condition, Where("t", None, "when")).evaluate(Context(facts)).value  # type: ignore[arg-type]


def test_a_partial_list_makes_absence_unknown_but_presence_known() -> None:
    """With collect_env's selection, an unlisted package is unknown and a listed one is decided."""
    facts = read_report((REPORTS / "torch-1.4-gtx980.txt").read_bytes(), "r")
    assert _outcome(facts, {"package": "torchvision>=0.5"}) is True
    assert _outcome(facts, {"missing": "safetensors"}) is None
    assert _outcome(facts, {"package": "safetensors"}) is None


def test_a_complete_pip_list_decides_absence() -> None:
    """A fenced, whole `pip list` makes an unlisted package not installed, and the requirement walk unknown."""
    text = "```\nPackage    Version\n---------- -------\nnumpy      1.26.4\ntorch      2.5.1+cu121\n```\n"
    facts = read_report(text.encode(), "r")
    assert facts.distributions_complete
    assert _outcome(facts, {"missing": "safetensors"}) is True
    assert facts.torch is not None and facts.torch.cuda == "12.1"
    # Requires-Dist is unknown, not empty: no "missing requirement" is reported, and none is denied either.
    assert Derived(facts).get("requirements.missing") is None


def test_unstated_os_makes_markers_unknown() -> None:
    """A report without its OS leaves sys_platform markers unknown instead of using envcheck's own."""
    facts = read_report((REPORTS / "torch-1.5-windows-quadro.txt").read_bytes(), "r")
    assert _outcome(facts, {"marker": "sys_platform == 'linux'"}) is None
    assert _outcome(facts, {"marker": "python_version >= '3.7'"}) is True


def test_facts_record_where_they_came_from() -> None:
    """Provenance names the block and lines of each fact, and the GPU-name table for a capability."""
    facts = read_report((REPORTS / "torch-2.6-rtx5090d.txt").read_bytes(), "r")
    assert facts.provenance["torch.version"].startswith("block 1 (collect_env, lines ")
    assert "GPU-name table" in facts.provenance["nvml.devices.0.compute_capability"]
    assert facts.probes["torch-build"].details["arch_list"][-1] == "sm_90"


@pytest.mark.parametrize(("name", "capability"), [
    ("NVIDIA GeForce RTX 5090", "12.0"), ("NVIDIA H100 80GB HBM3", "9.0"), ("GeForce GTX 108...", "6.1"),
    ("NVIDIA RTX 6000 Ada Generation", "8.9"), ("Quadro RTX 6000", "7.5"), ("NVIDIA A100-SXM4-80GB", "8.0"),
    ("Device 66a1", None), ("TITAN X", None),
])
def test_gpu_name_table(name: str, capability: str | None) -> None:
    """A name gives NVIDIA's compute capability only when every entry it matches agrees."""
    assert capability_of(name) == capability


def test_issue_body_end_to_end(tmp_path: Path) -> None:
    """A markdown issue body with collect_env and nvidia-smi fires the architecture rule for an RTX 5090 D."""
    body = ("### Bug\nno kernel image\n\n### Versions\n\n```text\n"
            + (REPORTS / "torch-2.6-rtx5090d.txt").read_text()
            + "```\n\n<details>\n\n```\n"
            "| NVIDIA-SMI 570.124.04     Driver Version: 570.124.04     CUDA Version: 12.8     |\n"
            "|   0  NVIDIA GeForce RTX 5090 D      Off |   00000000:01:00.0  On |        N/A |\n```\n")
    issue = tmp_path / "issue.md"
    issue.write_text(body.replace("\n", "\r\n"), encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--report", str(issue), "--format", "json", "--select", "EC0401"])
    assert result.exit_code == 1, result.output
    assert '"EC0401"' in result.output and '"fail"' in result.output


def test_facts_report_writes_a_schema_3_snapshot() -> None:
    """`envcheck facts --report -` reads standard input and writes the snapshot with its provenance."""
    data = (REPORTS / "nvidia-smi-610-b200.txt").read_bytes()
    result = CliRunner().invoke(cli, ["facts", "--report", "-"], input=data)
    assert result.exit_code == 0, result.output
    assert '"schema": 3' in result.output and '"distributions_complete": false' in result.output


@pytest.mark.parametrize(("data", "message"), [
    pytest.param(b"\x00\x01\x02binary", "binary data", id="binary"),
    pytest.param(b"x" * (MAX_BYTES + 1), "too large", id="too-large"),
])
def test_unreadable_input_is_one_error(data: bytes, message: str) -> None:
    """Binary or oversized input is one ReportError naming the file."""
    with pytest.raises(ReportError, match=message):
        read_report(data, "r.txt")


def test_adversarial_reports_give_partial_facts() -> None:
    """Nested fences, ANSI colours and a claim of 10,000 GPUs give partial facts, never a traceback."""
    rows = "".join(f"|  {i:>4}  NVIDIA H100 80GB HBM3           On  |   00000000:{i % 256:02X}:00.0 Off |  0 |\n"
                   for i in range(10_000))
    text = ("````\n```\n\x1b[31mPyTorch version: 2.5.1+cu124\x1b[0m\nCUDA used to build PyTorch: 12.4\n```\n````\n"
            "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |\n" + rows)
    facts = read_report(text.encode(), "r")
    assert facts.torch is not None and facts.torch.version == "2.5.1+cu124"
    assert facts.nvml is not None and not facts.nvml.devices_known
    assert any("10000 GPUs" in p for p in facts.problems)

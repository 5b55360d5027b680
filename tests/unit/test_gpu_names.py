"""One GPU table: rules/data/gpus.toml names GPUs for `envcheck recommend --gpu` and for reports alike
(envcheck/derived/nvidia_gpus.py, envcheck/sources/reports/gpu_names.py)."""

from __future__ import annotations

import pytest

from envcheck.derived import nvidia_gpus
from envcheck.sources.reports import read_report
from envcheck.sources.reports.gpu_names import capability_of

# Every product the report reader's own regular-expression table (envcheck/sources/reports/gpu_names.py until it read
# rules/data/gpus.toml) answered for, as NVML, collect_env and nvidia-smi print the name, with its answer then.
OLD_TABLE = [
    ("GB10", "12.1"), ("NVIDIA GeForce RTX 5090", "12.0"), ("NVIDIA GeForce RTX 5090 D", "12.0"),
    ("NVIDIA GeForce RTX 5080", "12.0"), ("NVIDIA GeForce RTX 5070 Ti", "12.0"), ("NVIDIA GeForce RTX 5070", "12.0"),
    ("NVIDIA GeForce RTX 5060 Ti", "12.0"), ("NVIDIA GeForce RTX 5060", "12.0"), ("NVIDIA GeForce RTX 5050", "12.0"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"), ("NVIDIA RTX PRO 5000 Blackwell", "12.0"),
    ("NVIDIA RTX PRO 4500 Blackwell", "12.0"), ("NVIDIA RTX PRO 4000 Blackwell", "12.0"),
    ("NVIDIA RTX PRO 2000 Blackwell", "12.0"), ("NVIDIA B100", "10.0"), ("NVIDIA B200", "10.0"),
    ("NVIDIA GB200", "10.0"), ("NVIDIA B300", "10.3"), ("NVIDIA GB300", "10.3"), ("NVIDIA Jetson Thor", "11.0"),
    ("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA H100 PCIe", "9.0"), ("NVIDIA H100 NVL", "9.0"),
    ("NVIDIA H200", "9.0"), ("NVIDIA H800", "9.0"), ("NVIDIA H20", "9.0"), ("NVIDIA GH200 480GB", "9.0"),
    ("NVIDIA GeForce RTX 4090", "8.9"), ("NVIDIA GeForce RTX 4090 D", "8.9"), ("NVIDIA GeForce RTX 4080 SUPER", "8.9"),
    ("NVIDIA GeForce RTX 4080", "8.9"), ("NVIDIA GeForce RTX 4070 Ti SUPER", "8.9"),
    ("NVIDIA GeForce RTX 4070 Ti", "8.9"), ("NVIDIA GeForce RTX 4070 SUPER", "8.9"), ("NVIDIA GeForce RTX 4070", "8.9"),
    ("NVIDIA GeForce RTX 4060 Ti", "8.9"), ("NVIDIA GeForce RTX 4060", "8.9"),
    ("NVIDIA GeForce RTX 4050 Laptop GPU", "8.9"), ("NVIDIA RTX 6000 Ada Generation", "8.9"),
    ("NVIDIA RTX 5000 Ada Generation", "8.9"), ("NVIDIA RTX 4500 Ada Generation", "8.9"),
    ("NVIDIA RTX 4000 Ada Generation", "8.9"), ("NVIDIA L4", "8.9"), ("NVIDIA L40", "8.9"), ("NVIDIA L40S", "8.9"),
    ("NVIDIA L20", "8.9"), ("NVIDIA A100-SXM4-80GB", "8.0"), ("NVIDIA A100-PCIE-40GB", "8.0"),
    ("NVIDIA A100 80GB PCIe", "8.0"), ("NVIDIA A800-SXM4-80GB", "8.0"), ("NVIDIA A800 80GB PCIe", "8.0"),
    ("NVIDIA A30", "8.0"), ("NVIDIA GeForce RTX 3090 Ti", "8.6"), ("NVIDIA GeForce RTX 3090", "8.6"),
    ("NVIDIA GeForce RTX 3080 Ti", "8.6"), ("NVIDIA GeForce RTX 3080", "8.6"), ("NVIDIA GeForce RTX 3070 Ti", "8.6"),
    ("NVIDIA GeForce RTX 3070", "8.6"), ("NVIDIA GeForce RTX 3060 Ti", "8.6"), ("NVIDIA GeForce RTX 3060", "8.6"),
    ("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6"), ("NVIDIA GeForce RTX 3050", "8.6"),
    ("NVIDIA GeForce RTX 3050 Ti Laptop GPU", "8.6"), ("NVIDIA RTX A6000", "8.6"), ("NVIDIA RTX A5500", "8.6"),
    ("NVIDIA RTX A5000", "8.6"), ("NVIDIA RTX A4500", "8.6"), ("NVIDIA RTX A4000", "8.6"), ("NVIDIA RTX A2000", "8.6"),
    ("NVIDIA RTX A2000 12GB", "8.6"), ("NVIDIA RTX A1000", "8.6"), ("NVIDIA A40", "8.6"), ("NVIDIA A10", "8.6"),
    ("NVIDIA A10G", "8.6"), ("NVIDIA A16", "8.6"), ("NVIDIA A2", "8.6"), ("Orin", "8.7"),
    ("NVIDIA Jetson AGX Orin", "8.7"), ("NVIDIA Jetson Orin Nano", "8.7"), ("Tesla T4", "7.5"), ("NVIDIA T1000", "7.5"),
    ("NVIDIA T600", "7.5"), ("NVIDIA T400", "7.5"), ("NVIDIA GeForce RTX 2080 Ti", "7.5"),
    ("NVIDIA GeForce RTX 2080 SUPER", "7.5"), ("NVIDIA GeForce RTX 2080", "7.5"),
    ("NVIDIA GeForce RTX 2070 SUPER", "7.5"), ("NVIDIA GeForce RTX 2070", "7.5"),
    ("NVIDIA GeForce RTX 2060 SUPER", "7.5"), ("NVIDIA GeForce RTX 2060", "7.5"), ("NVIDIA GeForce GTX 1660 Ti", "7.5"),
    ("NVIDIA GeForce GTX 1660 SUPER", "7.5"), ("NVIDIA GeForce GTX 1660", "7.5"), ("NVIDIA GeForce GTX 1650", "7.5"),
    ("NVIDIA GeForce GTX 1650 Ti", "7.5"), ("NVIDIA TITAN RTX", "7.5"), ("Quadro RTX 8000", "7.5"),
    ("Quadro RTX 6000", "7.5"), ("Quadro RTX 5000", "7.5"), ("Quadro RTX 4000", "7.5"),
    ("Tesla V100-SXM2-16GB", "7.0"), ("Tesla V100-PCIE-32GB", "7.0"), ("NVIDIA TITAN V", "7.0"), ("Xavier", "7.2"),
    ("NVIDIA Jetson AGX Xavier", "7.2"), ("Tesla P100-PCIE-16GB", "6.0"), ("NVIDIA GeForce GTX 1080 Ti", "6.1"),
    ("NVIDIA GeForce GTX 1080", "6.1"), ("NVIDIA GeForce GTX 1070 Ti", "6.1"), ("NVIDIA GeForce GTX 1070", "6.1"),
    ("NVIDIA GeForce GTX 1060 6GB", "6.1"), ("GeForce GTX 1060 with Max-Q Design", "6.1"),
    ("NVIDIA GeForce GTX 1050 Ti", "6.1"), ("NVIDIA GeForce GTX 1050", "6.1"), ("Tesla P40", "6.1"),
    ("Tesla P4", "6.1"), ("Tesla P6", "6.1"), ("Quadro P1000", "6.1"), ("Quadro P2000", "6.1"), ("Quadro P4000", "6.1"),
    ("Quadro P5000", "6.1"), ("Quadro P6000", "6.1"), ("Quadro P620", "6.1"), ("Quadro P400", "6.1"),
    ("TITAN Xp", "6.1"), ("NVIDIA TITAN X (Pascal)", "6.1"), ("GeForce GTX 980 Ti", "5.2"), ("GeForce GTX 980", "5.2"),
    ("GeForce GTX 970", "5.2"), ("GeForce GTX 960", "5.2"), ("GeForce GTX 950", "5.2"), ("Tesla M40", "5.2"),
    ("Tesla M60", "5.2"), ("Tesla M4", "5.2"), ("GeForce GTX TITAN X", "5.2"), ("GeForce GTX 750 Ti", "5.0"),
    ("GeForce GTX 750", "5.0"), ("Tesla K80", "3.7"), ("Tesla K20", "3.5"), ("GeForce GTX 780 Ti", "3.5"),
    ("GeForce GTX 780", "3.5"), ("GeForce GTX 108...", "6.1"), ("NVIDIA GeForce RTX 3060 ...", "8.6"),
    ("GeForce GTX 105...", "6.1"), ("NVIDIA GeForce RTX 208...", "7.5"),
    # What the old table did not answer: ambiguous ("TITAN X": Maxwell or Pascal), or not a GPU's name.
    ("TITAN X", None), ("Device 66a1", None), ("Tesla K40m", None), ("Tesla K20Xm", None),
]
# Names the old table did not answer that rules/data/gpus.toml does.
BETTER = {"Tesla K40m": "3.5", "Tesla K20Xm": "3.5"}


@pytest.mark.parametrize(("name", "old"), OLD_TABLE)
def test_every_name_the_old_table_knew_answers_the_same_or_better(name: str, old: str | None) -> None:
    """rules/data/gpus.toml gives every name the old regular-expression table knew the same capability, and some
    it did not know one."""
    assert capability_of(name) == (BETTER.get(name) if old is None else old)


@pytest.mark.parametrize(("name", "capability"), [
    pytest.param("NVIDIA RTX 6000 A...", None, id="cut-could-be-ada-or-turing"),
    pytest.param("NVIDIA RTX 6000 Ada Generation", "8.9", id="longest-listed-name-wins"),
    pytest.param("NVIDIA GeForce RTX 4090 " + "x" * 2000, None, id="longer-than-any-name"),
    pytest.param("", None, id="empty"),
    pytest.param("...", None, id="only-the-cut-mark"),
])
def test_names_the_table_does_not_answer_for(name: str, capability: str | None) -> None:
    """A cut name whose completions disagree, and text too long to be a GPU's name, answer nothing."""
    assert capability_of(name) == capability


def test_the_table_a_rule_directory_ships_names_the_gpus_of_a_report() -> None:
    """A report's GPUs get their capability from the table the rule pack loaded (a newer gpus.toml), not a copy."""
    newer = nvidia_gpus.parse({"schema": 1, "capability": {"13.0": ["RTX 6090"]}}, "gpus.toml")
    text = b"| NVIDIA-SMI 600.10   Driver Version: 600.10   CUDA Version: 13.1 |\n" \
           b"|   0  NVIDIA GeForce RTX 6090     Off |   00000000:01:00.0  On |   N/A |\n"
    assert read_report(text, "r").nvml.devices[0].compute_capability is None  # type: ignore[union-attr]
    facts = read_report(text, "r", gpu_names=newer)
    assert facts.nvml is not None and facts.nvml.devices[0].compute_capability == "13.0"
    assert "rules/data/gpus.toml" in facts.provenance["nvml.devices.0.compute_capability"]

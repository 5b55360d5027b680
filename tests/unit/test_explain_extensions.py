"""Error output of compiled extensions (flash-attn, NumPy, xformers, bitsandbytes, apex) pasted into `envcheck
explain` or an issue body names the cause and the fix, from the text alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from envcheck.cli.click_cli import cli
from envcheck.errors import RuleError
from envcheck.rules.captures import YIELDS
from envcheck.rules.conditions.where import Where
from envcheck.rules.rule_pack import load
from envcheck.rules.signatures import parse_signatures, scan
from envcheck.sources.reports import read_report

FLASH_ATTN = """Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/flash_attn/flash_attn_interface.py", line 15, in <module>
    import flash_attn_2_cuda as flash_attn_gpu
ImportError: /opt/venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: \
undefined symbol: _ZNK3c1010TensorImpl27throw_data_ptr_access_errorEv
"""


def _explain(tmp_path: Path, text: str, *args: str) -> tuple[int, str]:
    log = tmp_path / "error.log"
    log.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["explain", str(log), "--static", *args])
    return result.exit_code, " ".join(result.output.split())


def test_flash_attn_built_for_another_torch_is_named_with_its_symbol_and_fix(tmp_path: Path) -> None:
    """The undefined symbol of flash-attn's module is EC1101: flash-attn, the demangled symbol, the torch release it
    belongs to (2.1, so the installed torch is older) and a reinstall for this torch, without a guessed command."""
    code, out = _explain(tmp_path, FLASH_ATTN, "--select", "EC1101")
    assert code == 1
    assert "recognised EC1101 at line 4" in out
    assert "flash-attn's compiled module (flash_attn_2_cuda) was built against torch 2.1 or later" in out
    assert "`c10::TensorImpl::throw_data_ptr_access_error() const`" in out
    assert "_ZNK3c1010TensorImpl27throw_data_ptr_access_errorEv" in out
    assert "Reinstall flash-attn built for the installed torch" in out
    assert "--no-build-isolation" in out
    assert "$ " not in out  # no command: the release to install is not in the text


def test_flash_attn_issue_body_reads_the_error_as_a_report(tmp_path: Path) -> None:
    """`check --report` of an issue body that only holds the traceback recognises the same failure, and the Python
    the module was built for (cpython-311) is read into the report's facts."""
    report = tmp_path / "issue.md"
    report.write_text(f"flash-attn stopped working after an upgrade:\n\n```\n{FLASH_ATTN}```\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--report", str(report), "--select", "EC1101", "--format", "json"])
    assert result.exit_code == 1, result.output
    assert '"id": "EC1101"' in result.output
    assert "built against torch 2.1 or later" in result.output
    facts = read_report(report.read_bytes(), "issue.md", [s for rule in load(()) for s in rule.signatures])
    assert facts.python.version == "3.11"


@pytest.mark.parametrize(
    ("text", "rule", "expected"),
    [
        pytest.param(
            "ImportError: /venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
            "undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs\n",
            "EC1109", "built with the pre-C++11 ABI", id="flash-attn-old-abi"),
        pytest.param(
            "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.1.3 as it may crash. To support both "
            "1.x and 2.x\n", "EC1103", "cannot run with NumPy 2.1.3", id="numpy-1-module"),
        pytest.param(
            "/usr/lib/python3.11/site-packages/torch/nn/modules/transformer.py:20: UserWarning: Failed to initialize "
            "NumPy: _ARRAY_API not found (Triggered internally at ../torch/csrc/utils/tensor_numpy.cpp:84.)\n",
            "EC0303", "torch was built against NumPy 1.x", id="torch-numpy-2"),
        pytest.param(
            "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 2.2.0+cu121 with CUDA 1201 (you have 2.2.0+cpu)\n    Python  3.11.7 (you have 3.11.0)\n",
            "EC0705", "torch 2.2.0+cpu is a CPU-only build", id="xformers-cpu-torch"),
        pytest.param(
            "/opt/conda/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cpu.so: undefined symbol: "
            "cadam32bit_grad_fp32\n", "EC1808", "bitsandbytes loaded its CPU library", id="bitsandbytes-cpu"),
        pytest.param(
            "ImportError: cannot import name 'UnencryptedCookieSessionFactoryConfig' from 'pyramid.session' "
            "(unknown location)\n", "EC1117", "PyPI's unrelated Pyramid toolkit", id="apex-impostor"),
    ],
)
def test_error_output_names_cause_and_fix(tmp_path: Path, text: str, rule: str, expected: str) -> None:
    """Each pasted error is its rule's finding, whose summary names the cause."""
    code, out = _explain(tmp_path, text, "--select", rule)
    assert code == (0 if rule == "EC1117" else 1), out  # EC1117 is a warning, the others errors
    assert f"recognised {rule}" in out and expected in out


def test_a_signature_why_replaces_the_rule_s_why() -> None:
    """A signature's `why` (filled from its captures) is what a finding made from its text explains with; a `why`
    naming a group the pattern lacks is refused where it is loaded."""
    raw = {"anchor": "went wrong", "pattern": r"the (?P<thing>\w+) went wrong", "why": "the {thing} broke",
           "source": "https://example.org/src#L1", "thread": "https://example.org/issues/1",
           "example": "Error: the engine went wrong", "near_miss": "it went wrong"}
    (signature,) = parse_signatures([raw], "EC9000", Where("f", "EC9000", "signatures"))
    (seen,) = scan(raw["example"], [signature])
    assert signature.explains(seen.captures) == "the engine broke"
    with pytest.raises(RuleError, match=r"why.*no group"):
        parse_signatures([{**raw, "why": "the {part} broke"}], "EC9000", Where("f", "EC9000", "signatures"))


@pytest.mark.parametrize(("words", "cuda"), [("cu121", "12.1"), ("cu118", "11.8"), ("cuda124", "12.4"),
                                             ("cu92", "9.2"), ("cpu", None), ("cu1210", None)])
def test_a_cuda_tag_states_torch_s_cuda(words: str, cuda: str | None) -> None:
    """A wheel's or library's CUDA tag (`+cu121`, `libbitsandbytes_cuda124`) reads as the CUDA version it names."""
    assert YIELDS["torch.cuda"](words) == cuda

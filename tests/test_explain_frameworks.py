"""Framework failures pasted as they were printed: `envcheck explain` and `check --report` name the rule, the cause
in the text's own words (versions, GPU), the fix, and what the text states about its environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import envcheck_on_text, folded

DIA = ("Inference failed: Expected query, key, and value to have the same dtype, but got query.dtype: float, "
       "key.dtype: struct c10::Half, and value.dtype: struct c10::Half instead.\n")
COMFYUI_SDPA = ("!!! Exception during processing !!! Expected query, key, and value to have the same dtype, but got "
                "query.dtype: float key.dtype: struct c10::Half and value.dtype: struct c10::Half instead.\n")
DEEPSPEED = ("deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed CUDA version "
             "12.2 does not match the version torch was compiled with 11.7, unable to compile cuda/cpp extensions "
             "without a matching cuda version.\n")
TRANSFORMERS = "Disabling PyTorch because PyTorch >= 2.1 is required but found 2.0.1\n"
RESOLVER = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are "
            "installed. This behaviour is the source of the following dependency conflicts.\n")
VLLM_BF16 = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 "
             "GPU has compute capability 7.5.\n")


def test_dia_sdpa_dtype_error_is_explained_as_dia_s_kv_cache_bug(tmp_path: Path) -> None:
    """Dia's Gradio error (fp32 query, fp16 keys and values) is EC0308, with the reinstall from Dia's source in
    words: the line names nothing of the checked environment, so no command is written for it."""
    result = envcheck_on_text(tmp_path, DIA, "explain", "--static", "--select", "EC0308")
    flat = folded(result)
    assert result.exit_code == 1, result.output
    assert "recognised EC0308 at line 1; the error output cannot be tied to the checked environment" in flat
    assert "Dia computed attention queries in fp32 against its fp16 KV cache" in flat
    assert "Reinstall Dia from its current source" in flat
    assert "git+https://github.com/nari-labs/dia.git" not in flat


def test_the_same_sdpa_message_from_another_program_is_not_dia(tmp_path: Path) -> None:
    """The SDPA dtype message without Dia's own wrapper (ComfyUI here) is not taken for Dia's bug."""
    result = envcheck_on_text(tmp_path, COMFYUI_SDPA, "explain", "--static", "--select", "EC0308")
    assert "recognised EC0308" not in folded(result), result.output


def test_deepspeed_cuda_mismatch_names_both_cuda_versions_and_states_torch_s(tmp_path: Path) -> None:
    """DeepSpeed's op-builder refusal is EC1301 with the toolkit's and torch's CUDA, and the text's torch CUDA is
    what the report states."""
    result = envcheck_on_text(tmp_path, DEEPSPEED, "check", "--select", "EC1301", "--fail-on", "warning")
    flat = folded(result)
    assert result.exit_code == 1, result.output
    assert "DeepSpeed refuses to compile its ops: the CUDA toolkit it found is 12.2, torch was built with CUDA 11.7" \
        in flat
    assert "DS_SKIP_CUDA_CHECK=1" in flat
    facts = json.loads(envcheck_on_text(tmp_path, DEEPSPEED, "facts").output)
    assert [o["facts"] for o in facts["observed"]] == [{"torch.cuda": "11.7"}]


def test_transformers_disabling_torch_states_the_torch_it_found(tmp_path: Path) -> None:
    """transformers' 'Disabling PyTorch' warning is EC0304, and torch 2.0.1 becomes the report's torch version."""
    result = envcheck_on_text(tmp_path, TRANSFORMERS, "check", "--select", "EC0304")
    assert result.exit_code == 1, result.output
    assert "transformers disables PyTorch support: it needs torch >= 2.1, and found torch 2.0.1" in folded(result)
    facts = json.loads(envcheck_on_text(tmp_path, TRANSFORMERS, "facts").output)
    assert facts["torch"]["version"] == "2.0.1"


@pytest.mark.parametrize(
    ("conflict", "rule", "other", "says"),
    [
        pytest.param("transformers 4.51.3 requires tokenizers<0.22,>=0.21, but you have tokenizers 0.22.2 which is "
                     "incompatible.", "EC0101", "EC0702",
                     "transformers 4.51.3 requires tokenizers<0.22,>=0.21, but tokenizers 0.22.2 is installed",
                     id="library-pin"),
        pytest.param("torchvision 0.19.1 requires torch==2.4.1, but you have torch 2.5.1 which is incompatible.",
                     "EC0702", "EC0101", "torchvision 0.19.1 pins torch==2.4.1, but torch 2.5.1 is installed",
                     id="companion-pin-on-torch"),
    ],
)
def test_pip_resolver_conflicts_are_named_by_the_rule_that_owns_them(tmp_path: Path, conflict: str, rule: str,
                                                                     other: str, says: str) -> None:
    """A pasted resolver warning names the conflict; a companion's pin on torch is the companion rule's (keep torch),
    not the generic conflict's (which would install the pinned torch)."""
    result = envcheck_on_text(tmp_path, RESOLVER + conflict + "\n", "check", "--select", f"{rule},{other}")
    flat = folded(result)
    assert result.exit_code == 1, result.output
    assert says in flat
    assert f"{rule}'s error message at line 2" in flat and f"{other}'s error message" not in flat


def test_the_library_pin_gets_the_install_that_satisfies_it(tmp_path: Path) -> None:
    """The generic conflict writes the install of the requirement the message names."""
    conflict = ("transformers 4.51.3 requires tokenizers<0.22,>=0.21, but you have tokenizers 0.22.2 which is "
                "incompatible.\n")
    result = envcheck_on_text(tmp_path, RESOLVER + conflict, "check", "--select", "EC0101")
    assert "-m pip install 'tokenizers<0.22,>=0.21'" in folded(result), result.output


def test_vllm_bf16_refusal_states_the_gpu(tmp_path: Path) -> None:
    """vLLM's bf16 refusal puts the GPU it names into the report, where EC0407 finds it, with vLLM's float16 option."""
    result = envcheck_on_text(tmp_path, VLLM_BF16, "check", "--select", "EC0407", "--fail-on", "info")
    assert result.exit_code == 1, result.output
    flat = folded(result)
    assert "GPU 0 (Tesla T4, compute capability 7.5) has no native bfloat16" in flat
    assert "vLLM `--dtype half`" in flat
    facts = json.loads(envcheck_on_text(tmp_path, VLLM_BF16, "facts").output)
    assert [(d["name"], d["compute_capability"]) for d in facts["nvml"]["devices"]] == [("Tesla T4", "7.5")]


def test_mmcv_rejection_installs_the_range_mmdet_asks_for(tmp_path: Path) -> None:
    """mmdet's assertion becomes EC1115's install of exactly the mmcv range it names (its closing period left out)."""
    text = "AssertionError: MMCV==2.2.0 is used but incompatible. Please install mmcv>=2.0.0rc4, <2.2.0.\n"
    result = envcheck_on_text(tmp_path, text, "check", "--select", "EC1115")
    assert result.exit_code == 1, result.output
    assert "-m pip install --no-build-isolation 'mmcv<2.2.0,>=2.0.0rc4'" in folded(result)

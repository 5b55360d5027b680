"""Version skew from real release data (EC1903, envcheck/derived/release_names.py): the table made from the
libraries' released wheels (rules/data/release-names.json, bench/release_names.py) states known facts, and a failed
import in error output is judged against it: added in, removed in, the release installed or stated, the package
whose import failed, and the install that has the name.

The messages are real ones, from the threads each signature cites (rules/framework-errors.toml) and:
- https://github.com/huggingface/transformers/issues/44351 (HybridCache gone in transformers 5)
- https://github.com/intel/ipex-llm/pull/10835 (transformers.cache_utils before 4.36)
- https://github.com/docling-project/docling/issues/654 (torch.compiler.is_compiling)
- https://github.com/huggingface/peft/issues/1748 (peft's `(unknown location)`)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _fakes import collect_facts, envcheck_on_text, folded, write_dist

from envcheck.derived import release_table
from envcheck.derived.release_table import FILE, load, parse
from envcheck.errors import RuleError
from envcheck.facts.snapshot import Facts
from envcheck.rules import rule_pack
from envcheck.rules.engine import evaluate
from envcheck.rules.model import Finding
from envcheck.rules.signatures import scan
from envcheck.sources.logs.join import joined, with_observations
from envcheck.sources.logs.log import read_log
from envcheck.support import resources

SHIPPED = str(resources.data_dir() / FILE)

_LLAVA_SITE = "/home_data/home/geyx2023/.conda/envs/llava/lib/python3.10/site-packages"
LLAVA = (f'Traceback (most recent call last):\n  File "<stdin>", line 1, in <module>\n'
         f'  File "{_LLAVA_SITE}/peft/__init__.py", line 22, in <module>\n    from .auto import (\n'
         f'  File "{_LLAVA_SITE}/peft/peft_model.py", line 37, in <module>\n'
         "    from transformers import Cache, DynamicCache, EncoderDecoderCache, PreTrainedModel\n"
         "ImportError: cannot import name 'EncoderDecoderCache' from 'transformers' "
         f"({_LLAVA_SITE}/transformers/__init__.py)\n")
HYBRID = ("ImportError: cannot import name 'HybridCache' from 'transformers' "
          "(/opt/conda/envs/python3.10.13/lib/python3.10/site-packages/transformers/__init__.py)\n")
CACHE_UTILS = "ModuleNotFoundError: No module named 'transformers.cache_utils'\n"
COMPILER = "AttributeError: module 'torch' has no attribute 'compiler'\n"
IS_COMPILING = "AttributeError: module 'torch.compiler' has no attribute 'is_compiling'\n"


def _table() -> release_table.ReleaseNames:
    return load(SHIPPED)


def _lib(dist: str) -> release_table.Library:
    library = _table().libraries.get(dist)
    assert library is not None, f"{dist} is not in {FILE}"
    return library


# --- the table: real data, known facts ---------------------------------------------------------------------------

def test_the_table_covers_the_libraries_people_hit_most() -> None:
    wanted = {"torch", "torchvision", "transformers", "huggingface-hub", "diffusers", "accelerate", "peft", "trl",
              "tokenizers", "numpy", "pydantic", "protobuf", "vllm", "xformers", "bitsandbytes"}
    assert wanted <= set(_table().libraries)
    assert all(len(_lib(d).releases) >= 5 for d in wanted)


def test_huggingface_hub_removed_cached_download_in_0_26() -> None:
    span = _lib("huggingface-hub").name("huggingface_hub", "cached_download")
    assert span is not None and span.removed == "0.26.0" and span.last.startswith("0.25.")


def test_torch_compiler_arrived_in_2_1() -> None:
    span = _lib("torch").module("torch.compiler")
    assert span is not None and span.first == "2.1.0" and span.removed == ""


def test_numpy_float__went_in_2_0() -> None:
    span = _lib("numpy").name("numpy", "float_")
    assert span is not None and span.removed == "2.0.0"
    assert _lib("numpy").name("numpy", "float64") is not None  # the name it stands for stays


def test_transformers_cache_utils_arrived_in_4_36() -> None:
    span = _lib("transformers").module("transformers.cache_utils")
    assert span is not None and span.first == "4.36.0"


def test_a_name_is_matched_whole() -> None:
    """`float` is not found inside `float_` or `float64`."""
    assert _lib("numpy").name("numpy", "float") != _lib("numpy").name("numpy", "float_")


def test_the_table_is_small() -> None:
    assert Path(SHIPPED).stat().st_size < 600_000


# --- the reader refuses a malformed file in one line naming the file and key -------------------------------------

@pytest.mark.parametrize(("data", "key"), [
    ({"format": 2, "libraries": {}}, "format"),
    ({"format": 1, "libraries": {}}, "libraries"),
    ({"format": 1, "libraries": {"numpy": {"package": "numpy"}}}, "libraries.numpy"),
    ({"format": 1, "libraries": {"numpy": {"package": "numpy", "releases": ["1.0.0", "not a version"],
                                           "modules": {}, "names": {}}}}, "libraries.numpy.releases"),
    ({"format": 1, "libraries": {"numpy": {"package": "numpy", "releases": ["1.0.0"],
                                           "modules": {"1.0.0..9.9.9": "numpy"}, "names": {}}}},
     "libraries.numpy.modules.1.0.0..9.9.9"),
    ({"format": 1, "libraries": {"numpy": {"package": "numpy", "releases": ["1.0.0"], "modules": {},
                                           "names": {"numpy": {"1.0.0..": ["float_"]}}}}},
     "libraries.numpy.names.numpy.1.0.0.."),
])
def test_a_malformed_table_is_one_error_naming_file_and_key(data: object, key: str) -> None:
    with pytest.raises(RuleError) as error:
        parse(data, "release-names.json")
    assert "release-names.json" in str(error.value) and key in str(error.value)
    assert "\n" not in str(error.value)


def test_a_file_that_is_not_json_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / FILE
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(RuleError, match="not JSON"):
        load(str(path))


# --- a failed import judged against the releases -----------------------------------------------------------------

def _judged(text: str, facts: Facts) -> list[Finding]:
    pack = rule_pack.load(use_cache=False)
    rules = [r for r in pack.rules if r.id == "EC1903"]
    seen = scan(text, [s for r in rules for s in r.signatures], source="pasted")
    report = evaluate(pack, with_observations(facts, seen))  # a log tied to these facts
    return [f for f in report.findings if f.rule_id in ("EC1903", "EC1904") and f.status.is_finding]


def test_peft_needs_a_newer_transformers_with_the_installed_version_and_the_command(site: Path) -> None:
    """LLaVA's traceback: peft imports EncoderDecoderCache from a transformers that is too old for it."""
    write_dist(site, "transformers", "4.38.2")
    [finding] = _judged(LLAVA, collect_facts(site))
    first = _lib("transformers").name("transformers", "EncoderDecoderCache")
    assert first is not None and first.first
    assert f"added in transformers {first.first}" in finding.summary
    assert "the installed transformers is 4.38.2: peft needs transformers>=" in finding.summary
    assert finding.item is not None and finding.item["importer"] == "peft"
    assert finding.commands and finding.commands[0][-1] == f"transformers>={first.first}"


def test_a_removed_name_gives_the_range_below_its_removal(site: Path) -> None:
    write_dist(site, "transformers", "5.2.0")
    [finding] = _judged(HYBRID, collect_facts(site))
    span = _lib("transformers").name("transformers", "HybridCache")
    assert span is not None and span.removed
    assert f"removed in {span.removed}" in finding.summary and "transformers is 5.2.0" in finding.summary
    assert finding.commands and f"<{span.removed}" in finding.commands[0][-1]


def test_a_missing_submodule_and_a_missing_attribute(site: Path) -> None:
    write_dist(site, "transformers", "4.32.1")
    write_dist(site, "torch", "2.0.1")
    findings = {f.item["qualified"]: f for f in _judged(CACHE_UTILS + COMPILER, collect_facts(site)) if f.item}
    assert "added in transformers 4.36.0" in findings["transformers.cache_utils"].summary
    assert "added in torch 2.1.0" in findings["torch.compiler"].summary
    assert findings["torch.compiler"].commands[0][-1] == "torch>=2.1.0"


def test_the_installed_release_that_has_the_name_is_not_blamed(site: Path) -> None:
    write_dist(site, "torch", "2.4.0")
    [finding] = _judged(COMPILER, collect_facts(site))
    assert "has it: the failure is not the release" in finding.summary and not finding.commands
    assert (finding.rule_id, finding.status.value) == ("EC1904", "info")  # not an environment finding


def test_no_version_known_says_which_releases_have_it_and_what_to_check(site: Path) -> None:
    [finding] = _judged(IS_COMPILING, collect_facts(site))
    assert finding.rule_id == "EC1903" and "which torch is installed is not known" in finding.summary
    assert "pip show torch" in finding.fix and not finding.commands


def test_a_name_no_release_ever_had_is_a_typo_or_another_library(site: Path) -> None:
    write_dist(site, "transformers", "4.46.0")
    [finding] = _judged("ImportError: cannot import name 'AutoModelForCasualLM' from 'transformers' "
                        "(/x/site-packages/transformers/__init__.py)\n", collect_facts(site))
    assert "no release of transformers from" in finding.summary
    assert "a typo, a name of another library" in finding.why and not finding.commands
    assert (finding.rule_id, finding.status.value) == ("EC1904", "info")


def test_a_private_name_is_said_to_be_private(site: Path) -> None:
    write_dist(site, "transformers", "4.46.0")
    [finding] = _judged("ImportError: cannot import name '_expand_mask' from "
                        "'transformers.models.clip.modeling_clip' (/x/transformers/models/clip/modeling_clip.py)\n",
                        collect_facts(site))
    assert "is private" in finding.why and "changes without notice" in finding.why


def test_a_message_another_rule_explains_is_left_to_it(tmp_path: Path) -> None:
    """diffusers' import of cached_download is EC1201's (it names the diffusers that fixed it): EC1903 is silent."""
    text = ('  File "/u/.venv/lib/python3.11/site-packages/diffusers/utils/dynamic_modules_utils.py", line 28, '
            'in <module>\n    from huggingface_hub import cached_download, hf_hub_download, model_info\n'
            "ImportError: cannot import name 'cached_download' from 'huggingface_hub' "
            "(/u/.venv/lib/python3.11/site-packages/huggingface_hub/__init__.py)\n")
    result = envcheck_on_text(tmp_path, text, "explain", "--static", "--select", "EC1201,EC1903", "--format",
                              "json")
    found = {f["id"]: f["status"] for f in json.loads(result.output)["findings"]}
    assert found["EC1201"] == "fail" and found["EC1903"] == "n/a", result.output


def test_a_stated_version_in_a_pasted_report_is_called_stated(tmp_path: Path) -> None:
    text = f"huggingface_hub==0.28.1\n{'ImportError: cannot import name'} 'cached_download' from 'huggingface_hub'\n"
    result = envcheck_on_text(tmp_path, text, "check", "--select", "EC1903")
    flat = folded(result)
    assert "removed in 0.26.0; the report states huggingface-hub 0.28.1" in flat, flat


def test_a_check_without_error_output_never_reads_the_table(site: Path) -> None:
    load.cache_clear()
    pack = rule_pack.load(use_cache=False)
    report = evaluate(pack, collect_facts(site))
    assert [f.status.value for f in report.findings if f.rule_id in ("EC1903", "EC1904")] == ["n/a", "n/a"]
    assert load.cache_info().currsize == 0


def test_a_check_without_error_output_never_imports_the_table() -> None:
    """The static check imports release_names (the derivation), never release_table (the reader and judgement)."""
    import subprocess
    import sys

    code = ("import sys, envcheck.rules.engine, envcheck.derived.derive; "
            "print('envcheck.derived.release_table' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"


def test_unknown_location_is_a_stray_folder_not_a_release(site: Path) -> None:
    """peft#1748: `cannot import name 'get_peft_config' from 'peft' (unknown location)`."""
    write_dist(site, "peft", "0.10.0")
    [finding] = _judged("ImportError: cannot import name 'get_peft_config' from 'peft' (unknown location)\n",
                        collect_facts(site))
    assert "unknown location" in finding.summary and "No release of peft is to blame" in finding.why
    assert not finding.commands


def test_a_foreign_log_is_judged_on_its_own_versions_with_no_command(site: Path) -> None:
    """mDPO's error (transformers 4.32.1 stated) from a Python 3.10 conda environment, explained in another one
    whose own transformers has the module: the finding is the log's, with no command for this environment."""
    write_dist(site, "transformers", "4.46.0")
    pack = rule_pack.load(use_cache=False)
    text = ('transformers==4.32.1\n  File "/opt/conda/lib/python3.10/site-packages/bunny/model.py", line 3, in '
            "<module>\n    from transformers.cache_utils import Cache\n" + CACHE_UTILS)
    log = read_log(text, "pasted", [s for r in pack.rules for s in r.signatures])
    join = joined(collect_facts(site), log)
    assert join.foreign is not None, join.explained
    report = evaluate(pack, join.facts, foreign=join.foreign)
    [finding] = [f for f in report.findings if f.rule_id == "EC1903" and f.status.is_finding]
    assert "was added in transformers 4.36.0; the report states transformers 4.32.1" in finding.summary
    assert finding.commands == ()
    assert not [f for f in report.findings if f.rule_id == "EC1904" and f.status.is_finding]

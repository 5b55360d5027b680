"""The AMD GPU table: rules/data/amd-gpus.toml gives the gfx target of an AMD GPU a report names
(envcheck/derived/amd_gpus.py)."""

from __future__ import annotations

from typing import Any

import pytest

from envcheck.derived import amd_gpus
from envcheck.errors import RuleError
from envcheck.facts.rocm import gfx_version


@pytest.mark.parametrize(("name", "target"), [
    pytest.param("AMD Radeon RX 5700 XT", "gfx1010", id="rdna1"),
    pytest.param("Radeon RX 6800", "gfx1030", id="rdna2"),
    pytest.param("AMD Radeon RX 7900 XTX", "gfx1100", id="longest-name-wins"),
    pytest.param("Radeon RX 7900 XT", "gfx1100", id="shorter-name"),
    pytest.param("RX 7800 XT", "gfx1101", id="navi32"),
    pytest.param("AMD Radeon RX 7600", "gfx1102", id="navi33"),
    pytest.param("AMD Instinct MI100", "gfx908", id="cdna1"),
    pytest.param("AMD Instinct MI250X", "gfx90a", id="cdna2"),
    pytest.param("AMD Instinct MI300X", "gfx942", id="cdna3"),
    pytest.param("AMD Radeon RX 7900", None, id="no-such-product"),
    pytest.param("NVIDIA GeForce RTX 4090", None, id="an-nvidia-gpu"),
])
def test_names_give_their_gfx_target(name: str, target: str | None) -> None:
    """A listed name gives its target, matched without AMD / Radeon / Instinct, longest name first."""
    found = amd_gpus.lookup(amd_gpus.shipped(), name)
    assert (found[1] if found else None) == target


def test_every_listed_target_is_a_gfx_target() -> None:
    """Every target the shipped table lists is one the ROCm facts can read."""
    assert all(gfx_version(target) for _, target in amd_gpus.shipped().names.values())


@pytest.mark.parametrize(("data", "key"), [
    pytest.param({"schema": 1, "gfx": {"gfx1100": ["RX 7900 XTX"]}, "extra": 1}, "extra", id="unknown-key"),
    pytest.param({"schema": 2, "gfx": {"gfx1100": ["RX 7900 XTX"]}}, "schema", id="wrong-schema"),
    pytest.param({"schema": 1, "gfx": {}}, "gfx", id="empty"),
    pytest.param({"schema": 1, "gfx": {"navi31": ["RX 7900 XTX"]}}, "gfx.navi31", id="not-a-target"),
    pytest.param({"schema": 1, "gfx": {"gfx1100": "RX 7900 XTX"}}, "gfx.gfx1100", id="not-a-list"),
    pytest.param({"schema": 1, "gfx": {"gfx1100": ["AMD Radeon"]}}, "gfx.gfx1100", id="a-name-of-noise-words"),
    pytest.param({"schema": 1, "gfx": {"gfx1100": ["RX 7900 XTX"], "gfx1101": ["Radeon RX 7900 XTX"]}},
                 "gfx.gfx1101", id="listed-twice"),
])
def test_a_malformed_table_is_one_rule_error(data: dict[str, Any], key: str) -> None:
    """A malformed table is a RuleError naming the file and the key."""
    with pytest.raises(RuleError) as raised:
        amd_gpus.parse(data, "amd-gpus.toml")
    assert raised.value.key == key

"""The scripts in .ci/ as modules, for the tests: verify_dist (the built distributions' check) and release_notes
(the tag and the CHANGELOG section). Loaded under their own names, as release_notes imports verify_dist when run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

CI = Path(__file__).resolve().parent.parent / ".ci"


def _module(name: str) -> ModuleType:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, CI / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


verify_dist = _module("verify_dist")
release_notes = _module("release_notes")

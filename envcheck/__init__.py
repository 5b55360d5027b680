"""envcheck: check a PyTorch environment against known incompatibilities before anything crashes."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

"""envcheck: check a PyTorch environment against known incompatibilities before anything crashes.

The library entry point is `envcheck.check()` (defined in envcheck/api.py). Importing the package imports nothing
else: `check` and `__version__` (envcheck/version.py, a leaf) are resolved on first use (PEP 562 module
`__getattr__`), so an install script pays for envcheck's machinery only when it calls it.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing typing alone would triple the cost of `import envcheck`. Type checkers
# treat any constant named TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from envcheck.api import check
    from envcheck.version import __version__

__all__ = ["__version__", "check"]


def __getattr__(name: str) -> object:
    if name == "__version__":
        from envcheck.version import __version__ as version

        globals()["__version__"] = version
        return version
    if name == "check":
        from envcheck.api import check as function

        globals()["check"] = function  # resolved once; later lookups are plain attribute reads
        return function
    raise AttributeError(f"module 'envcheck' has no attribute {name!r}")

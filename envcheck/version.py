"""envcheck's version: the one place it is written (pyproject.toml and the release scripts in .ci/ read it here).

A leaf module: what stamps a cache entry or a report with the version imports it, never the package itself, whose
`__init__` resolves `envcheck.check` from the API module.
"""

__version__ = "0.1.0"

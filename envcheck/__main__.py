"""`python -m envcheck` runs the same CLI as the `envcheck` command."""

from __future__ import annotations

from envcheck.cli.entry import console

if __name__ == "__main__":
    console()

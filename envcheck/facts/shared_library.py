"""A CUDA library file in an LD_LIBRARY_PATH folder (envcheck/facts/native.py's `NativeFacts.loader_path`).
Imported where one is found or read: a check where LD_LIBRARY_PATH holds no CUDA library never defines the class."""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.facts._reader import Reader


@dataclass(frozen=True)
class SharedLibrary:
    """A CUDA library file in an LD_LIBRARY_PATH folder."""

    directory: str  # the LD_LIBRARY_PATH entry
    name: str  # the soname-style file name found there: "libcudnn.so.9"
    version: str | None  # from the file it resolves to ("libcudnn.so.9.1.0" -> "9.1.0"); None when not named

    @classmethod
    def from_reader(cls, r: Reader) -> SharedLibrary:
        return cls(directory=r.text("directory"), name=r.text("name"), version=r.opt_text("version"))

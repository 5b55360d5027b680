"""Strict, typed access to a snapshot's JSON: every value is checked and none is coerced.

Each `from_reader` in the snapshot model reads its fields through these methods only, so one malformed value
anywhere in a snapshot is one FactsError naming the file and the key path, in one line:

    env.json: key 'nvml.devices[0].index': expected an integer of at least 0, got "x"

An absent key or `null` is accepted exactly where a method's name says optional (`opt_*`) or its docstring gives
what it reads as; elsewhere it is an error ("missing", "got null"). Keys the reader does not ask for are ignored
(a snapshot may carry `derived`, or `top_level` of schema 1). envcheck/schemas/facts.schema.json states the same
rules for other tools; a test keeps the two in agreement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from envcheck.errors import FactsError

T = TypeVar("T")

_MAX_SHOWN = 60  # characters of a bad value, or of a map key, echoed in an error: one line, whatever the input
_MISSING = object()


def show(value: object) -> str:
    """A bad value as the error line shows it: JSON spelling for scalars, the kind for containers, cut short."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN - 3] + "..."


def _short(name: str) -> str:
    return name if len(name) <= _MAX_SHOWN else name[:_MAX_SHOWN - 3] + "..."


class Reader:
    """One JSON object of a snapshot, at key path `key` ("" for the top) of `file`."""

    __slots__ = ("_data", "file", "key")

    def __init__(self, data: object, file: str, key: str = "") -> None:
        if not isinstance(data, dict):
            raise FactsError(file, f"expected an object, got {show(data)}", key=key or None)
        self._data: dict[str, Any] = data
        self.file = file
        self.key = key

    def at(self, name: str) -> str:
        """The key path of member `name`: "nvml.devices[0].index"."""
        return f"{self.key}.{_short(name)}" if self.key else _short(name)

    def error(self, name: str, message: str) -> FactsError:
        return FactsError(self.file, message, key=self.at(name))

    def as_dict(self) -> dict[str, Any]:
        """This object as it is (a copy), for free-form parts once their typed keys are checked."""
        return dict(self._data)

    def has(self, name: str) -> bool:
        """Whether `name` is present and not null."""
        return self._data.get(name) is not None

    def _value(self, name: str, wanted: str, ok: Callable[[Any], bool], *, optional: bool) -> Any:
        value = self._data.get(name, _MISSING)
        if value is _MISSING or value is None:
            if optional:
                return None
            raise self.error(name, "missing" if value is _MISSING else f"expected {wanted}, got null")
        if not ok(value):
            raise self.error(name, f"expected {wanted}, got {show(value)}")
        return value

    # --- scalars ----------------------------------------------------------------------------------------------

    # The common case is checked first, inline: `fleet merge` reads a thousand snapshots of hundreds of
    # distributions, and a call per field doubled its time (bench/fleet.py).

    def text(self, name: str) -> str:
        value = self._data.get(name)
        if type(value) is str:
            return value
        checked: str = self._value(name, "a string", _is_str, optional=False)
        return checked

    def opt_text(self, name: str) -> str | None:
        value = self._data.get(name)
        if value is None or type(value) is str:
            return value
        checked: str | None = self._value(name, "a string", _is_str, optional=True)
        return checked

    def choice(self, name: str, allowed: Collection[str]) -> str:
        """A string that must be one of `allowed` (a status)."""
        value = self.text(name)
        if value not in allowed:
            raise self.error(name, f"expected one of {', '.join(sorted(allowed))}, got {show(value)}")
        return value

    def flag(self, name: str, default: bool = False) -> bool:
        value = self._data.get(name)
        if value is None:
            return default
        if value is True or value is False:
            return value
        checked: bool = self._value(name, "true or false", _is_bool, optional=True)
        return checked

    def opt_flag(self, name: str) -> bool | None:
        value: bool | None = self._value(name, "true or false", _is_bool, optional=True)
        return value

    def integer(self, name: str, *, minimum: int | None = None) -> int:
        value = self._integer(name, minimum, optional=False)
        assert value is not None
        return value

    def opt_integer(self, name: str, *, minimum: int | None = None) -> int | None:
        return self._integer(name, minimum, optional=True)

    def _integer(self, name: str, minimum: int | None, *, optional: bool) -> int | None:
        wanted = "an integer" if minimum is None else f"an integer of at least {minimum}"
        value: int | None = self._value(
            name, wanted, lambda v: _is_int(v) and (minimum is None or v >= minimum), optional=optional)
        return value

    def opt_number(self, name: str, *, minimum: float | None = None) -> float | None:
        wanted = "a finite number" if minimum is None else f"a finite number of at least {minimum:g}"
        value = self._value(name, wanted, lambda v: _is_number(v) and (minimum is None or v >= minimum),
                            optional=True)
        return None if value is None else float(value)

    # --- containers -------------------------------------------------------------------------------------------

    def obj(self, name: str) -> Reader:
        return Reader(self._value(name, "an object", _is_dict, optional=False), self.file, self.at(name))

    def opt_obj(self, name: str) -> Reader | None:
        value = self._value(name, "an object", _is_dict, optional=True)
        return None if value is None else Reader(value, self.file, self.at(name))

    def json_object(self, name: str) -> dict[str, Any]:
        """A free-form JSON object (probe details, torch's version.py fields); absent or null reads as {}."""
        value = self._value(name, "an object", _is_dict, optional=True)
        return {} if value is None else dict(value)

    def list_of(self, name: str, item: Callable[[Reader], T], *, optional: bool = False) -> tuple[T, ...]:
        """A list of objects, each read by `item`; an absent list is an error unless `optional` (then empty)."""
        values = self._value(name, "a list", _is_list, optional=optional) or []
        path = self.at(name)
        return tuple(item(Reader(v, self.file, f"{path}[{i}]")) for i, v in enumerate(values))

    def map_of(self, name: str, item: Callable[[Reader], T]) -> dict[str, T]:
        """An object whose values are objects, each read by `item`; absent or null reads as {}."""
        values = self._value(name, "an object", _is_dict, optional=True) or {}
        path = self.at(name)
        return {k: item(Reader(v, self.file, f"{path}.{_short(k)}")) for k, v in values.items()}

    def texts(self, name: str) -> tuple[str, ...]:
        """A list of strings; absent or null reads as empty."""
        values = self._data.get(name)
        if type(values) is list and all(type(v) is str for v in values):
            return tuple(values)
        values = self._value(name, "a list", _is_list, optional=True) or []
        for i, v in enumerate(values):
            if not isinstance(v, str):
                raise FactsError(self.file, f"expected a string, got {show(v)}", key=f"{self.at(name)}[{i}]")
        return tuple(values)

    def text_map(self, name: str) -> dict[str, str]:
        """An object of strings; absent or null reads as {}."""
        return self._scalar_map(name, "a string", _is_str)

    def flag_map(self, name: str) -> dict[str, bool]:
        """An object of booleans; absent or null reads as {}."""
        return self._scalar_map(name, "true or false", _is_bool)

    def _scalar_map(self, name: str, wanted: str, ok: Callable[[Any], bool]) -> dict[str, Any]:
        values = self._value(name, "an object", _is_dict, optional=True) or {}
        for k, v in values.items():
            if not ok(v):
                raise FactsError(self.file, f"expected {wanted}, got {show(v)}", key=f"{self.at(name)}.{_short(k)}")
        return dict(values)


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


def _is_int(value: object) -> bool:
    # bool is an int subclass: `true` is not an index or a schema number.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) and math.isfinite(value)


def _is_dict(value: object) -> bool:
    return isinstance(value, dict)


def _is_list(value: object) -> bool:
    return isinstance(value, list)

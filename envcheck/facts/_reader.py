"""Typed access to a JSON object, for reading snapshots: every error names the file and the dotted key."""

from __future__ import annotations

from typing import Any

from envcheck.errors import FactsError


class Reader:
    """Typed access to one JSON object, raising FactsError that names the file and the dotted key."""

    def __init__(self, data: object, file: str, key: str) -> None:
        if not isinstance(data, dict):
            raise FactsError(file, f"expected an object, got {type(data).__name__}", key=key or None)
        self.data: dict[str, Any] = data
        self.file = file
        self.key = key

    def _path(self, name: str) -> str:
        return f"{self.key}.{name}" if self.key else name

    def _get(self, name: str, kinds: tuple[type, ...], *, optional: bool, default: Any = None) -> Any:
        if name not in self.data:
            if optional:
                return default
            raise FactsError(self.file, "missing", key=self._path(name))
        value = self.data[name]
        if value is None and optional:
            return default
        # bool is an int subclass: refuse it where a number is expected, accept it only where bool is asked.
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            wanted = " or ".join(k.__name__ for k in kinds)
            raise FactsError(self.file, f"expected {wanted}, got {type(value).__name__}", key=self._path(name))
        return value

    def req_str(self, name: str) -> str:
        return str(self._get(name, (str,), optional=False))

    def opt_str(self, name: str) -> str | None:
        value = self._get(name, (str,), optional=True)
        return None if value is None else str(value)

    def flag(self, name: str, default: bool = False) -> bool:
        return bool(self._get(name, (bool,), optional=True, default=default))

    def str_list(self, name: str) -> tuple[str, ...]:
        items = self._get(name, (list,), optional=True, default=[])
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise FactsError(self.file, "expected a string", key=f"{self._path(name)}[{i}]")
        return tuple(items)

    def str_map(self, name: str) -> dict[str, str]:
        items = self._get(name, (dict,), optional=True, default={})
        for k, v in items.items():
            if not isinstance(v, str):
                raise FactsError(self.file, "expected a string", key=f"{self._path(name)}.{k}")
        return dict(items)

    def obj(self, name: str, *, optional: bool = False) -> Reader | None:
        value = self._get(name, (dict,), optional=optional)
        return None if value is None else Reader(value, self.file, self._path(name))

    def raw(self, name: str) -> Any:
        return self.data.get(name)

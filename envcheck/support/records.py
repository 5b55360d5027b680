"""`@record`: a frozen dataclass whose comparison, hash, repr and immutability are shared, not compiled per class.

For each `@dataclass(frozen=True)` class, CPython 3.10-3.12 writes the source of six methods (`__init__`,
`__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__`) and compiles each with its own `exec`: about 0.6 ms a
class. A static check defines about a hundred of them, and that compiling was over a quarter of the instructions a
first run executes (bench/README.md). A `record` lets `dataclasses` generate only `__init__`, the one method whose
signature is the class's own (its parameters, defaults, factories and `__post_init__`, with the standard library's
checks and messages), and gives every record the same five others, which read the class's fields at run time.

What a record is, for everything but its cost, is a frozen dataclass:
- `dataclasses.fields`, `asdict`, `replace`, `is_dataclass`, pickling and copying work as they do on one;
- `==`, `hash` and `repr` give what the generated methods give (fields with `compare=False`, `hash=False` or
  `repr=False` left out in the same way; another class never equal);
- assigning or deleting a field, or setting any other attribute, raises `dataclasses.FrozenInstanceError`;
- type checkers see a frozen dataclass (`dataclass_transform`).

One difference: `__init__` assigns each field once through `__setattr__`, which refuses a field already set; so
`__post_init__` sets a field with `object.__setattr__`, as it must on a frozen dataclass. A method the class defines
itself is kept.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_kwargs: object) -> Any:
        return lambda decorated: decorated

__all__ = ["record"]

_T = TypeVar("_T")


def _settable(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def _setattr(self: Any, name: str, value: Any) -> None:
    # Only `__init__` gets here: each field is assigned once, when it is not yet in the instance's dict.
    if name in self.__dict__ or name not in type(self).__record_fields__:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__record_repr__)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = type(self).__record_compare__
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in type(self).__record_hash__))


_SHARED = {"__setattr__": _setattr, "__delattr__": _delattr, "__repr__": _repr, "__eq__": _eq, "__hash__": _hash}


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: type[_T]) -> type[_T]:
    """Make `cls` a frozen dataclass (see the module's docstring)."""
    own = {name for name in _SHARED if name in cls.__dict__}
    made: Any = dataclasses.dataclass(repr=False, eq=False)(cls)
    fields = dataclasses.fields(made)
    made.__record_fields__ = _settable(made)
    made.__record_repr__ = tuple(f.name for f in fields if f.repr)
    made.__record_compare__ = tuple(f.name for f in fields if f.compare)
    # As dataclasses hashes a frozen class: a field's `hash`, or its `compare` where `hash` is None.
    made.__record_hash__ = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    for name, method in _SHARED.items():
        if name not in own:
            setattr(made, name, method)
    return made  # type: ignore[no-any-return]

"""`@record`: a frozen dataclass whose comparison, hash, repr and immutability are shared, not compiled per class.

For each `@dataclass(frozen=True)` class, CPython 3.10-3.12 writes the source of six methods (`__init__`,
`__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__`) and compiles each with its own `exec`: about 0.6 ms a
class. A static check defines about a hundred of them, and that compiling was over a quarter of the instructions its
first run executed (bench/README.md). `dataclasses` still reads a record's fields; the six methods are written
once, here, and read the class's fields (kept on the class at decoration) when they run.

What a record is, for everything but its cost, is a frozen dataclass:
- `dataclasses.fields`, `asdict`, `replace`, `is_dataclass`, pickling and copying work as they do on one;
- `__init__` takes the fields in order, positionally or by keyword, fills defaults and factories (a fresh value
  each time), sets the `init=False` fields' defaults, then calls `__post_init__`; a wrong call raises the
  TypeError, with the message, that the generated one raises;
- `==`, `hash` and `repr` give what the generated methods give (fields with `compare=False`, `hash=False` or
  `repr=False` left out in the same way; another class never equal);
- assigning or deleting an attribute raises `dataclasses.FrozenInstanceError`, so `__post_init__` sets a field with
  `object.__setattr__`, as on a frozen dataclass;
- type checkers see a frozen dataclass (`dataclass_transform`).

Keyword-only fields and `InitVar` pseudo-fields are not supported (envcheck has none); `kw_only` is refused at
decoration. A method the class defines itself is kept. tests/test_records.py holds records to frozen dataclasses.
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


_NO_DEFAULT = object()


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    # The generated __init__ of a frozen dataclass, for any record: its fields in order, positional or by keyword,
    # defaults and factories, the init=False fields' defaults, then __post_init__; the same TypeErrors.
    cls = type(self)
    names: tuple[str, ...] = cls.__record_init__
    if len(args) > len(names):
        raise TypeError(_too_many(cls, len(args)))
    defaults: dict[str, Any] = cls.__record_defaults__
    factories: dict[str, Any] = cls.__record_factories__
    setter = object.__setattr__
    for name, value in zip(names, args, strict=False):  # args may be fewer
        setter(self, name, value)
    used = 0
    missing = []
    for name in names[len(args):]:
        if name in kwargs:
            setter(self, name, kwargs[name])
            used += 1
        elif name in defaults:
            setter(self, name, defaults[name])
        elif name in factories:
            setter(self, name, factories[name]())
        else:
            missing.append(name)
    if used != len(kwargs):
        for name in kwargs:
            if name in names[:len(args)]:
                raise TypeError(f"{cls.__qualname__}.__init__() got multiple values for argument {name!r}")
            if name not in names:
                raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword argument {name!r}")
    if missing:
        quoted = [repr(name) for name in missing]
        listed = quoted[0] if len(quoted) == 1 else (
            f"{quoted[0]} and {quoted[1]}" if len(quoted) == 2 else f"{', '.join(quoted[:-1])}, and {quoted[-1]}")
        plural = "s" if len(missing) > 1 else ""
        raise TypeError(f"{cls.__qualname__}.__init__() missing {len(missing)} required positional "
                        f"argument{plural}: {listed}")
    for name, default, factory in cls.__record_later__:
        setter(self, name, factory() if default is _NO_DEFAULT else default)
    if hasattr(self, "__post_init__"):
        self.__post_init__()


def _too_many(cls: Any, given: int) -> str:
    names = cls.__record_init__
    most = len(names) + 1  # counting self, as Python does
    least = most - len(cls.__record_defaults__) - len(cls.__record_factories__)
    takes = str(most) if least == most else f"from {least} to {most}"
    plural = "" if most == 1 else "s"
    return (f"{cls.__qualname__}.__init__() takes {takes} positional argument{plural} but {given + 1} "
            f"{'was' if given + 1 == 1 else 'were'} given")


def _setattr(self: Any, name: str, _value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


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


_SHARED = {"__init__": _init, "__setattr__": _setattr, "__delattr__": _delattr, "__repr__": _repr, "__eq__": _eq,
           "__hash__": _hash}


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: type[_T]) -> type[_T]:
    """Make `cls` a frozen dataclass (see the module's docstring)."""
    own = {name for name in _SHARED if name in cls.__dict__}
    # Without a docstring, dataclasses would write one from inspect.signature of the class, here object's own
    # __init__, whose text signature is parsed with the tokenizer: its regex compiled, ~5 ms, for a help text.
    undocumented = not cls.__doc__
    if undocumented:
        cls.__doc__ = cls.__name__
    made: Any = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(made)
    if undocumented:
        made.__doc__ = f"{made.__name__}({', '.join(f.name for f in fields)})"
    if any(f.kw_only is True for f in fields):
        raise TypeError(f"{made.__qualname__}: a record's fields are positional or keyword, none keyword-only")
    defaulted = False
    for f in fields:  # what the generated __init__'s signature would refuse, refused here
        if not f.init:
            continue
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            if defaulted:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            defaulted = True
    made.__record_init__ = tuple(f.name for f in fields if f.init)
    made.__record_defaults__ = {f.name: f.default for f in fields if f.init and f.default is not dataclasses.MISSING}
    made.__record_factories__ = {f.name: f.default_factory for f in fields
                                 if f.init and f.default_factory is not dataclasses.MISSING}
    made.__record_later__ = tuple(
        (f.name, _NO_DEFAULT if f.default is dataclasses.MISSING else f.default, f.default_factory)
        for f in fields if not f.init and (f.default is not dataclasses.MISSING
                                           or f.default_factory is not dataclasses.MISSING))
    made.__record_repr__ = tuple(f.name for f in fields if f.repr)
    made.__record_compare__ = tuple(f.name for f in fields if f.compare)
    # As dataclasses hashes a frozen class: a field's `hash`, or its `compare` where `hash` is None.
    made.__record_hash__ = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    for name, method in _SHARED.items():
        if name not in own:
            setattr(made, name, method)
    return made  # type: ignore[no-any-return]

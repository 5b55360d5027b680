"""`@record`: a frozen dataclass whose comparison, hash, repr and immutability are shared, not compiled per class.

For each `@dataclass(frozen=True)` class, CPython 3.10-3.12 writes the source of six methods (`__init__`,
`__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__`) and compiles each with its own `exec`: about 0.6 ms a
class. A static check defines about a hundred of them, and that compiling was over a quarter of the instructions its
first run executed (bench/README.md). `dataclasses` still reads a record's fields; its six methods are closures over
them, made without writing or compiling any source.

What a record is, for everything but its cost, is a frozen dataclass:
- `dataclasses.fields`, `asdict`, `replace`, `is_dataclass`, pickling and copying work as they do on one;
- `__init__` takes the fields in order, positionally or by keyword, fills defaults and factories (a fresh value
  each time), sets the `init=False` fields' defaults, then calls `__post_init__`; a wrong call raises the
  TypeError, with the message, that the generated one raises, and a required field after a defaulted one is
  refused when the class is made;
- `==`, `hash` and `repr` give what the generated methods give (fields with `compare=False`, `hash=False` or
  `repr=False` left out in the same way; another class never equal);
- assigning or deleting a field raises `dataclasses.FrozenInstanceError`, so `__post_init__` sets a field with
  `object.__setattr__`, as on a frozen dataclass; a plain subclass may set attributes of its own;
- each method belongs to its class, as a generated one does (`super().__init__(...)` in a subclass fills the
  base's fields), and a method the class defines itself is kept (defining `__setattr__` is refused);
- type checkers see a frozen dataclass (`dataclass_transform`).

What differs: `inspect.signature` shows `__init__(*args, **kwargs)`, and `__dataclass_params__` describes a
non-frozen dataclass without generated methods, so records and `@dataclass` classes do not inherit from each other
(envcheck has no frozen dataclass left: tests/test_records.py). Keyword-only fields and `InitVar` are refused.
tests/test_records.py holds records to frozen dataclasses, on every Python envcheck supports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_kwargs: object) -> Any:
        return lambda decorated: decorated

__all__ = ["record"]

_T = TypeVar("_T")


def _methods(cls: Any, fields: tuple[dataclasses.Field[Any], ...]) -> dict[str, Any]:
    """The six methods of the record `cls`, closures over its fields: no source written, nothing compiled. Each
    belongs to `cls` as a generated one would (`super().__init__` in a subclass runs the base's fields only)."""
    names = tuple(f.name for f in fields if f.init)
    defaults = {f.name: f.default for f in fields if f.init and f.default is not dataclasses.MISSING}
    factories = {f.name: f.default_factory for f in fields
                 if f.init and f.default_factory is not dataclasses.MISSING}
    later = tuple((f.name, f.default, f.default_factory) for f in fields
                  if not f.init and (f.default is not dataclasses.MISSING
                                     or f.default_factory is not dataclasses.MISSING))
    post_init = getattr(cls, "__post_init__", None)
    all_names = frozenset(f.name for f in fields)
    qualname = cls.__qualname__
    shown = tuple(f.name for f in fields if f.repr)
    compared = _values(tuple(f.name for f in fields if f.compare))
    # As dataclasses hashes a frozen class: a field's `hash`, or its `compare` where `hash` is None.
    hashed = _values(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))
    setter = object.__setattr__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(_too_many(__init__.__qualname__, len(names), len(defaults) + len(factories), len(args)))
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
                    raise TypeError(f"{__init__.__qualname__}() got multiple values for argument {name!r}")
                if name not in names:
                    raise TypeError(f"{__init__.__qualname__}() got an unexpected keyword argument {name!r}")
        if missing:
            raise TypeError(_missing(__init__.__qualname__, missing))
        for name, default, factory in later:
            setter(self, name, factory() if callable(factory) else default)  # MISSING is not callable
        if post_init is not None:
            self.__post_init__()

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in all_names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # a plain subclass's own attribute, as on a frozen dataclass

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in all_names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    def __repr__(self: Any) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in shown)})"

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return compared(self) == compared(other)

    def __hash__(self: Any) -> int:
        return hash(hashed(self))

    made = {"__init__": __init__, "__setattr__": __setattr__, "__delattr__": __delattr__, "__repr__": __repr__,
            "__eq__": __eq__, "__hash__": __hash__}
    for name, method in made.items():
        method.__qualname__ = f"{qualname}.{name}"
    return made


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The named fields' values as a tuple, read in C (one name: attrgetter gives the value, not a 1-tuple)."""
    if len(names) == 1:
        (name,) = names
        return lambda obj: (getattr(obj, name),)
    if not names:
        return lambda obj: ()
    return attrgetter(*names)


# The messages Python writes for a call that does not fit a function's parameters, `function` its __qualname__.
def _missing(function: str, missing: list[str]) -> str:
    quoted = [repr(name) for name in missing]
    listed = quoted[0] if len(quoted) == 1 else (
        f"{quoted[0]} and {quoted[1]}" if len(quoted) == 2 else f"{', '.join(quoted[:-1])}, and {quoted[-1]}")
    plural = "s" if len(missing) > 1 else ""
    return f"{function}() missing {len(missing)} required positional argument{plural}: {listed}"


def _too_many(function: str, fields: int, optional: int, given: int) -> str:
    most = fields + 1  # counting self, as Python does
    least = most - optional
    takes = str(most) if least == most else f"from {least} to {most}"
    plural = "" if most == 1 else "s"
    return (f"{function}() takes {takes} positional argument{plural} but {given + 1} "
            f"{'was' if given + 1 == 1 else 'were'} given")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: type[_T]) -> type[_T]:
    """Make `cls` a frozen dataclass (see the module's docstring)."""
    body = cls.__dict__
    for name in ("__setattr__", "__delattr__"):
        if name in body:  # as dataclasses refuses it for a frozen class
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    # What the class defines is kept, as dataclasses keeps it; a __hash__ of None that Python put there because the
    # class defines __eq__ is not the class's own.
    own = {name for name in ("__init__", "__repr__", "__eq__", "__hash__") if name in body}
    if body.get("__hash__", 0) is None and "__eq__" in body:
        own.discard("__hash__")
    # Without a docstring, dataclasses would write one from inspect.signature of the class, here object's own
    # __init__, whose text signature is parsed with the tokenizer: its regex compiled, ~5 ms, for a help text.
    undocumented = not cls.__doc__
    if undocumented:
        cls.__doc__ = cls.__name__
    made: Any = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(made)
    if undocumented:
        made.__doc__ = f"{made.__name__}({', '.join(f.name for f in fields)})"
    for f in made.__dataclass_fields__.values():  # ClassVar and InitVar pseudo-fields too, which fields() leaves out
        if f.kw_only is True:
            raise TypeError(f"{made.__qualname__}: a record's fields are positional or keyword, none keyword-only")
        if isinstance(f.type, dataclasses.InitVar) or (isinstance(f.type, str) and "InitVar" in f.type):
            raise TypeError(f"{made.__qualname__}: a record has no InitVar pseudo-fields")
    defaulted = False
    for f in fields:  # what the generated __init__'s signature would refuse, refused here
        if not f.init:
            continue
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            if defaulted:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            defaulted = True
    for name, method in _methods(made, fields).items():
        if name not in own:
            setattr(made, name, method)
    return made  # type: ignore[no-any-return]

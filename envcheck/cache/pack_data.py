"""A validated rule pack as plain JSON data: what the cache holds instead of a pickle.

A pickle names the callables that rebuild it, so loading one runs whatever code its bytes choose; the signature
that guarded it was only as safe as the key beside it, and restoring a whole cache folder (CI's `actions/cache` of
~/.cache) brings the key along. This format names no code. It is two lines of JSON: the shapes of the objects it
holds, `[[class, [attribute, ...]], ...]`, then the value. Each value is JSON, or a one-key JSON object that says
what to rebuild:

    {"t": [...]} a tuple   {"s": [...]} a set   {"z": [...]} a frozenset   {"d": [k, v, k, v, ...]} a dict
    {"e": [class, value]} an enum member          {"n": [class, [...]]} a named tuple, from its fields
    {"o": [shape, value, ...]} an object of the n-th shape, its attributes set as they were (no __init__ runs)
    {"r": n} the n-th object again, counted in the order their encodings end (shared objects stay shared)

A pack is written in parts (`dumps_parts`): its rules, then each data table on its own (objects are shared, and
numbered, within a part), so that a table is decoded when a derivation first reads it (`OnFirstUse`), and a check
that reads no conda, ROCm or GPU-name table neither decodes those tables nor defines their classes.

The shapes are written once, not with each of the pack's ~3,000 objects, and an object equal to one written before
(with nothing mutable in it) as a reference to that one: that is 40% less for `loads` to parse, and a third fewer
objects to make (bench/README.md, "The static first run against cafd119").

A class is named as "module:qualname" and is found only in the modules of ALLOWED (envcheck's conditions, model,
tables and signatures, and packaging's version, specifier, marker and requirement types): a name anywhere else, a
function, or a class that is not plain data is refused, and the entry is a miss. So a forged entry can at worst
describe a rule pack; it runs nothing. Rebuilding is envcheck's own code: `cls.__new__`, then the attributes.
"""

from __future__ import annotations

import enum
import importlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

__all__ = ["ALLOWED", "NotData", "OnFirstUse", "dumps", "dumps_parts", "loads", "parts"]

# The modules whose classes a cached pack may hold: where the pack's values are defined. A class defined elsewhere
# makes the pack uncacheable (dumps raises NotData), which a test of the shipped pack would show.
ALLOWED = frozenset({
    "envcheck.rules.model", "envcheck.rules.rule_pack", "envcheck.rules.signatures",
    "envcheck.rules.conditions.core", "envcheck.rules.conditions.environment", "envcheck.rules.conditions.machine",
    "envcheck.derived.common", "envcheck.derived.build_matrix", "envcheck.derived.companions",
    "envcheck.derived.extension_releases", "envcheck.derived.gpu_compat", "envcheck.derived.nvidia_gpus",
    "envcheck.derived.amd_gpus", "envcheck.derived.rocm_archs", "envcheck.derived.conda_forge_table",
    "packaging.version", "packaging.specifiers", "packaging.requirements", "packaging.markers",
    "packaging._parser", "packaging._structures", "packaging._tokenizer", "packaging.utils",
})
_PLAIN = (str, int, float, bool, type(None))


class NotData(ValueError):
    """A value this format does not hold (dumps), or an entry that is not one it wrote (loads)."""


def _name(cls: type) -> str:
    if cls.__module__ not in ALLOWED:
        raise NotData(f"{cls.__module__}.{cls.__qualname__} is not a class a cached pack may hold")
    return f"{cls.__module__}:{cls.__qualname__}"


def _attributes(value: object) -> dict[str, object]:
    """The object's attributes: its __dict__ and every slot that is set, of its class and its bases."""
    out = dict(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot not in ("__dict__", "__weakref__") and hasattr(value, slot):
                out[slot] = getattr(value, slot)
    return out


def dumps(value: object) -> bytes:
    """`value` (a rule pack) as this format's JSON bytes; NotData when it holds anything else."""
    memo: dict[int, int | None] = {}  # id -> the object's number; None while its attributes are written
    objects: list[object] = []  # the objects in the order their encoding ends, as `loads` numbers them
    done: list[object] = []  # and those written as an equal earlier one: all alive, as the memo is by id
    shapes: dict[tuple[str, tuple[str, ...]], int] = {}  # (class, attribute names) -> the shape's number
    # Equal immutable objects are written once: the pack's 600 version specifiers are 330 different ones, its 215
    # build variants 41. An object's value is its shape and its values' (an object's by its number), so an object
    # is equal to an earlier one only when everything it holds is already written, and writing it as a reference
    # leaves the numbering as it was. Anything holding a list, a dict or a set is never merged (it could change).
    by_value: dict[object, int] = {}
    numbered: dict[int, int] = {}  # id of an object's encoding -> the object's number
    kept: list[object] = []  # every encoding whose id is in `numbered`, alive

    def value_of(encoded: object) -> object:
        """The encoded value as a hashable key, objects by their number; None for a mutable one."""
        if type(encoded) in _PLAIN:  # a float by its repr: 0.0 and -0.0 are equal, and not the same value
            return (type(encoded), repr(encoded) if type(encoded) is float else encoded)
        if type(encoded) is not dict:
            return None  # a list
        if id(encoded) in numbered:
            return ("#", numbered[id(encoded)])
        ((tag, body),) = encoded.items()
        if tag in ("t", "z", "n", "e"):
            parts = tuple(value_of(x) for x in (body[1] if tag == "n" else body))
            if None in parts:
                return None
            return (tag, body[0] if tag in ("n", "e") else None, frozenset(parts) if tag == "z" else parts)
        return None  # a dict or a set

    def numbering(encoded: dict[str, object], number: int) -> dict[str, object]:
        numbered[id(encoded)] = number
        kept.append(encoded)
        return encoded

    def encode(item: object) -> object:
        kind = type(item)
        if kind in _PLAIN:
            return item
        if kind is list:
            return [encode(x) for x in item]  # type: ignore[attr-defined]
        if kind is tuple:
            return {"t": [encode(x) for x in item]}  # type: ignore[attr-defined]
        if kind is dict:
            return {"d": [encode(part) for pair in item.items() for part in pair]}  # type: ignore[attr-defined]
        if kind is set or kind is frozenset:
            return {"s" if kind is set else "z": [encode(x) for x in item]}  # type: ignore[attr-defined]
        if isinstance(item, enum.Enum):
            return {"e": [_name(kind), encode(item.value)]}
        if isinstance(item, tuple) and hasattr(kind, "_fields"):
            return {"n": [_name(kind), [encode(x) for x in item]]}
        if isinstance(item, (list, tuple, dict, set, frozenset, str, int, float, bytes, type)) or callable(item):
            raise NotData(f"{kind.__module__}.{kind.__qualname__} is not plain data")
        if id(item) in memo:
            number = memo[id(item)]
            if number is None:
                raise NotData(f"{kind.__qualname__} refers to itself")
            return numbering({"r": number}, number)
        name = _name(kind)
        memo[id(item)] = None
        attributes = _attributes(item)
        shape = shapes.setdefault((name, tuple(attributes)), len(shapes))
        values = [encode(v) for v in attributes.values()]
        parts = tuple(value_of(v) for v in values)
        key = None if None in parts else (shape, parts)
        if key is not None and key in by_value:
            memo[id(item)] = by_value[key]
            done.append(item)  # alive: its id stays in the memo
            return numbering({"r": by_value[key]}, by_value[key])
        number = memo[id(item)] = len(objects)
        objects.append(item)
        if key is not None:
            by_value[key] = number
        return numbering({"o": [shape, *values]}, number)

    encoded = json.dumps(encode(value), ensure_ascii=False, separators=(",", ":"))
    header = json.dumps([[name, list(names)] for name, names in shapes], ensure_ascii=False, separators=(",", ":"))
    return f"{header}\n{encoded}".encode()


def _class(name: object) -> type:
    """The class "module:qualname" names, from an ALLOWED module only."""
    if not isinstance(name, str) or name.count(":") != 1:
        raise NotData(f"not a class name: {name!r}")
    module, qualname = name.split(":")
    if module not in ALLOWED:
        raise NotData(f"{module} is not a module a cached pack may name")
    found: object = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if not isinstance(found, type) or found.__module__ != module or issubclass(found, BaseException):
        raise NotData(f"{name} is not a class a cached pack may hold")
    return found


_NOT_PLAIN = (enum.Enum, tuple, list, dict, set, frozenset, str, int, float, bytes)


def _by_dict(cls: type, names: list[str]) -> bool:
    """Whether setting these attributes through the instance's __dict__ is what object.__setattr__ would do: no
    class of its MRO has __slots__, and no name is a descriptor that handles setting (a property, say)."""
    for klass in cls.__mro__[:-1]:
        if "__slots__" in klass.__dict__:
            return False
    for name in names:
        for klass in cls.__mro__:
            if name in klass.__dict__:
                found = type(klass.__dict__[name])
                if hasattr(found, "__set__") or hasattr(found, "__delete__"):
                    return False
                break
    return True


def _shapes(line: bytes) -> list[tuple[type, list[str], bool]]:
    """The first line's shapes: each class (from an ALLOWED module, plain data), its attribute names, and whether
    they can be set through the instance's __dict__."""
    shapes = json.loads(line)
    if type(shapes) is not list:
        raise NotData("the first line is not a list of shapes")
    out = []
    for shape in shapes:
        name, names = shape  # ValueError unless two
        cls = _class(name)
        if issubclass(cls, _NOT_PLAIN):
            raise NotData(f"{name} is not a plain class")
        if type(names) is not list or not all(type(n) is str and n.isidentifier() and not n.startswith("__")
                                              for n in names):
            raise NotData(f"{name}: attribute names {names!r}")
        out.append((cls, names, _by_dict(cls, names)))
    return out


def loads(data: bytes) -> Any:
    """The value `dumps` wrote; NotData for anything that is not this format, or names a class it may not.

    Rebuilt as json parses it: each JSON object (a tag) is turned into its value when its closing brace is read,
    innermost first, so an object's attributes are ready when it is made, and objects are numbered in that order,
    as `dumps` numbered them."""
    objects: list[object] = []
    classes: dict[object, type] = {}
    setter = object.__setattr__
    new = object.__new__

    def cls_of(name: object) -> type:
        found = classes.get(name) if isinstance(name, str) else None
        if found is None:
            found = classes[name] = _class(name)
        return found

    def obj(body: list[Any]) -> object:
        if type(body[0]) is not int:
            raise NotData(f"a shape that is no number: {body[0]!r}")
        cls, names, by_dict = shapes[body[0]]  # IndexError: no such shape
        made: object = new(cls)
        if by_dict:  # ValueError (strict) unless one value a name
            made.__dict__.update(zip(names, body[1:], strict=True))
        else:
            for name, value in zip(names, body[1:], strict=True):
                setter(made, name, value)
        objects.append(made)
        return made

    def ref(body: int) -> object:
        if type(body) is not int or body < 0:
            raise NotData(f"a reference to no object: {body!r}")
        return objects[body]  # IndexError: a reference to no object yet

    def enum_member(body: list[Any]) -> object:
        name, value = body
        cls = cls_of(name)
        if not issubclass(cls, enum.Enum):
            raise NotData(f"{name} is not an enum")
        return cls(value)

    def named_tuple(body: list[Any]) -> object:
        name, values = body
        cls = cls_of(name)
        if not (issubclass(cls, tuple) and hasattr(cls, "_fields")) or type(values) is not list:
            raise NotData(f"{name} is not a named tuple")
        return cls(*values)

    rebuilders: dict[str, Any] = {
        "t": tuple, "o": obj, "r": ref, "d": lambda body: dict(zip(body[::2], body[1::2], strict=True)),
        "s": set, "z": frozenset, "e": enum_member, "n": named_tuple,
    }

    def rebuild(item: dict[str, Any]) -> object:
        (tag,) = item  # ValueError unless one key
        body = item[tag]
        if tag != "r" and type(body) is not list:
            raise NotData(f"{tag!r} of {type(body).__name__}")
        return rebuilders[tag](body)  # KeyError: an unknown tag

    try:
        header, _, document = data.partition(b"\n")
        shapes = _shapes(header)
        return json.loads(document, object_hook=rebuild)
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:
        raise NotData(str(exc)) from None  # NotData is a ValueError


def dumps_parts(values: Sequence[object]) -> bytes:
    """Several values, each as `dumps` writes it, after a first line that lists their lengths in bytes; `parts`
    splits them again, and each is given to `loads` when it is needed."""
    encoded = [dumps(v) for v in values]
    return json.dumps([len(e) for e in encoded]).encode() + b"\n" + b"".join(encoded)


def parts(data: bytes) -> list[bytes]:
    """The values `dumps_parts` wrote, each still encoded; NotData when the lengths do not add up."""
    head, _, rest = data.partition(b"\n")
    try:
        sizes = json.loads(head)
    except ValueError as exc:
        raise NotData(f"the lengths of the parts: {exc}") from None
    if type(sizes) is not list or not all(type(n) is int and n >= 0 for n in sizes) or sum(sizes) != len(rest):
        raise NotData("the lengths of the parts do not add up")
    out, at = [], 0
    for size in sizes:
        out.append(rest[at:at + size])
        at += size
    return out


class OnFirstUse(Mapping[str, Any]):
    """Named values written by `dumps`, each decoded by `loads` when it is first read, then kept: a cached pack's
    data tables, most of which a check never reads. A value that is not this format (a forged part of a signed
    entry) is a miss, as a whole entry is: `again(name)` makes it afresh (the table parsed from its file)."""

    def __init__(self, encoded: Mapping[str, bytes], again: Callable[[str], Any]) -> None:
        self._encoded = dict(encoded)
        self._again = again
        self._decoded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._decoded:
            encoded = self._encoded[name]  # KeyError: no such value
            try:
                self._decoded[name] = loads(encoded)
            except NotData:
                self._decoded[name] = self._again(name)
        return self._decoded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._encoded)

    def __len__(self) -> int:
        return len(self._encoded)

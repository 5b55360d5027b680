"""envcheck/support/records.py: a `@record` behaves as the `@dataclass(frozen=True)` it replaces, class by class, in
everything the code and the caches rely on; and envcheck's frozen classes are records."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError, field
from typing import Any, ClassVar

import pytest
from _sources import in_process_sources

from envcheck.support.records import record


def _pair(decorate: Any) -> dict[str, type]:
    """The same classes, decorated by `decorate`: every shape envcheck's frozen classes have."""

    @decorate
    class Plain:
        name: str
        version: str | None = None
        extras: tuple[str, ...] = ()

    @decorate
    class Factories:
        items: tuple[int, ...]
        table: dict[str, int] = field(default_factory=dict)
        hidden: str = field(default="secret", repr=False)
        ignored: int = field(default=0, compare=False)
        unhashed: int = field(default=0, hash=False)
        LIMIT: ClassVar[int] = 3

    @decorate
    class Derived:
        text: str
        length: int = field(init=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "length", len(self.text))

    @decorate
    class Base:
        a: int

    @decorate
    class Child(Base):
        b: str = "x"

    @decorate
    class Three:
        a: int
        b: int
        c: int

    @decorate
    class Later:
        name: str
        tags: tuple[str, ...] = field(default=(), init=False)
        seen: list[str] = field(default_factory=list, init=False)

    @decorate
    class Holder:
        inner: Any
        many: tuple[Any, ...] = ()

    return {"Plain": Plain, "Factories": Factories, "Derived": Derived, "Base": Base, "Child": Child,
            "Three": Three, "Later": Later, "Holder": Holder}


RECORDS = _pair(record)
DATACLASSES = _pair(dataclasses.dataclass(frozen=True))
for _name in RECORDS:  # module-level names, so that pickle finds the records (and both sets repr alike)
    RECORDS[_name].__qualname__ = DATACLASSES[_name].__qualname__ = _name
    for _made in (RECORDS[_name], DATACLASSES[_name]):  # their __init__s were named when they were made
        _made.__init__.__qualname__ = f"{_name}.__init__"
    globals()[_name] = RECORDS[_name]


def _instances(classes: dict[str, type]) -> list[Any]:
    c = classes
    return [c["Plain"]("torch"), c["Plain"]("torch", "2.5.1", ("cu121",)), c["Plain"](name="apex", extras=("x",)),
            c["Factories"]((1, 2)), c["Factories"]((1,), {"a": 1}, "s", 5, 6), c["Derived"]("abc"), c["Child"](1),
            c["Child"](a=2, b="y"), c["Three"](1, 2, c=3), c["Later"]("n"),
            c["Holder"](c["Plain"]("numpy"), (c["Child"](3),))]


@pytest.mark.parametrize("index", range(len(_instances(RECORDS))))
def test_repr_equality_and_hash_are_the_frozen_dataclasses(index: int) -> None:
    mine, theirs = _instances(RECORDS)[index], _instances(DATACLASSES)[index]
    assert repr(mine) == repr(theirs)
    again = _instances(RECORDS)[index]
    assert mine == again and (mine != again) is False
    if not any(isinstance(v, (dict, list)) for v in vars(mine).values()):  # such a field: both unhashable
        assert hash(mine) == hash(again)
        assert hash(mine) == hash(theirs)  # the same tuple hashed: the same value across the two
    assert dataclasses.asdict(mine) == dataclasses.asdict(theirs)
    assert [f.name for f in dataclasses.fields(mine)] == [f.name for f in dataclasses.fields(theirs)]
    assert type(mine).__match_args__ == type(theirs).__match_args__


def test_fields_left_out_of_comparison_and_hash_are_left_out_alike() -> None:
    for classes in (RECORDS, DATACLASSES):
        plain, factories = classes["Plain"], classes["Factories"]
        assert factories((1,), ignored=1) == factories((1,), ignored=2)
        assert factories((1,), unhashed=1) != factories((1,), unhashed=2)
        assert plain("a") != plain("b") and plain("a") != classes["Child"](1)
        assert plain("a") != ("a", None, ())  # never equal to a tuple, or to another class with the same values
        with pytest.raises(TypeError, match="unhashable"):
            hash(factories((1,)))  # its dict field


@pytest.mark.parametrize("classes", [RECORDS, DATACLASSES], ids=["record", "dataclass"])
def test_a_record_cannot_be_changed(classes: dict[str, type]) -> None:
    item = classes["Plain"]("torch", "2.5.1")
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'version'"):
        item.version = "2.6.0"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        item.other = 1  # type: ignore[attr-defined]
    with pytest.raises(FrozenInstanceError, match="cannot delete field 'name'"):
        del item.name  # type: ignore[misc]
    assert (item.name, item.version) == ("torch", "2.5.1")
    derived = classes["Derived"]("abcd")
    assert derived.length == 4
    with pytest.raises(FrozenInstanceError):
        derived.length = 1  # type: ignore[misc]


def _error(make: Any) -> str:
    with pytest.raises(TypeError) as caught:
        make()
    return str(caught.value)


@pytest.mark.parametrize("call", [
    lambda c: c["Plain"](),
    lambda c: c["Plain"](nmae="x"),
    lambda c: c["Plain"]("a", name="b"),
    lambda c: c["Plain"]("a", "b", (), "d"),
    lambda c: c["Base"](1, 2),
    lambda c: c["Base"](),
    lambda c: c["Factories"](),
    lambda c: c["Derived"]("a", length=3),
    lambda c: c["Child"](b="y"),
    lambda c: c["Holder"](inner=1, many=(), other=2),
    lambda c: c["Three"](),
    lambda c: c["Three"](1),
])
def test_a_wrong_call_raises_what_the_generated_init_raises(call: Any) -> None:
    assert _error(lambda: call(RECORDS)) == _error(lambda: call(DATACLASSES))


@pytest.mark.parametrize("classes", [RECORDS, DATACLASSES], ids=["record", "dataclass"])
def test_init_fills_defaults_factories_and_later_fields(classes: dict[str, type]) -> None:
    factories = classes["Factories"]
    assert factories((1,)).table is not factories((1,)).table  # a fresh default from the factory each time
    assert (factories((1,)).hidden, factories((1,), hidden="h").hidden) == ("secret", "h")
    assert classes["Later"]("x").tags == () and classes["Later"]("x").seen == []
    assert classes["Later"]("x").seen is not classes["Later"]("y").seen
    assert classes["Three"](1, 2, 3) == classes["Three"](c=3, b=2, a=1)


@pytest.mark.parametrize("decorate", [record, dataclasses.dataclass(frozen=True)], ids=["record", "dataclass"])
def test_a_required_field_after_a_defaulted_one_is_refused(decorate: Any) -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @decorate
        class Misordered:
            a: int = 0
            b: str  # type: ignore[misc]


def test_keyword_only_fields_are_refused() -> None:
    with pytest.raises(TypeError, match="keyword-only"):
        @record
        class Keywords:
            name: str = field(kw_only=True)


@pytest.mark.parametrize("index", range(len(_instances(RECORDS))))
def test_replace_pickle_and_copy_keep_a_record(index: int) -> None:
    item = _instances(RECORDS)[index]
    for clone in (pickle.loads(pickle.dumps(item)), copy.copy(item), copy.deepcopy(item)):
        assert clone == item and type(clone) is type(item) and repr(clone) == repr(item)
        with pytest.raises(FrozenInstanceError):
            clone.other = 1
    first = dataclasses.fields(item)[0]
    changed = dataclasses.replace(item, **{first.name: item.__dict__[first.name]})
    assert changed == item and changed is not item


def test_pickled_records_load_without_calling_init() -> None:
    # The rule pack and the tables are cached as pickles: loading them must not run __setattr__'s once-only check.
    item = RECORDS["Derived"]("xyz")
    assert pickle.loads(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)).length == 3


def test_a_method_the_class_defines_is_kept() -> None:
    @record
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert repr(Named("x")) == "<x>" and Named("x") == Named("x")


def test_envchecks_frozen_classes_are_records() -> None:
    # `@dataclass(frozen=True)` costs six compiled methods a class at import; a record one (see records.py).
    left = [relative for relative, path in in_process_sources()
            if relative != "support/records.py" and "dataclass(frozen=True)" in path.read_text("utf-8")]
    assert left == [], f"use envcheck.support.records.record: {left}"


def test_a_record_without_a_docstring_is_described_by_its_fields() -> None:
    @record
    class Bare:
        name: str
        version: str = ""

    @record
    class Told:
        """Said here."""

        name: str

    assert (Bare.__doc__, Told.__doc__) == ("Bare(name, version)", "Said here.")


@pytest.mark.parametrize("decorate", [record, dataclasses.dataclass(frozen=True)], ids=["record", "dataclass"])
def test_what_a_class_defines_itself_behaves_alike(decorate: Any) -> None:
    @decorate
    class OwnEq:
        a: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OwnEq) and other.a % 10 == self.a % 10

    assert OwnEq(1) == OwnEq(11)
    assert hash(OwnEq(1)) == hash((1,))  # Python's implicit __hash__ = None is not the class's own

    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        @decorate
        class OwnSetattr:
            a: int

            def __setattr__(self, name: str, value: object) -> None:
                object.__setattr__(self, name, value)


@pytest.mark.parametrize("decorate", [record, dataclasses.dataclass(frozen=True)], ids=["record", "dataclass"])
def test_subclasses_behave_alike(decorate: Any) -> None:
    @decorate
    class Base:
        a: int

    @decorate
    class Child(Base):
        b: int

        def __init__(self, a: int) -> None:  # its own __init__, calling the base's: the base's fields only
            super().__init__(a)
            object.__setattr__(self, "b", a * 2)

    child = Child(2)
    assert (child.a, child.b) == (2, 4)
    assert super(Child, child).__repr__().endswith("Child(a=2)")  # the instance's class, the base's fields

    class Plain(Base):  # not a dataclass: its own attributes may be set, the fields not
        pass

    plain = Plain(1)
    plain.extra = 5
    assert plain.extra == 5
    with pytest.raises(FrozenInstanceError):
        plain.a = 2


def test_init_var_is_refused() -> None:
    with pytest.raises(TypeError, match="InitVar"):
        @record
        class WithInitVar:
            a: int
            b: dataclasses.InitVar[int] = 0

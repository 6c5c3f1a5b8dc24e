"""Records share `Record`'s repr and `Value`'s equality and hash (core/_record.py).

attrs would compile all three for each class; the shared ones must print and
compare exactly as attrs' generated methods do, and every attrs class toolreel
ships must use them (or it pays attrs' compiling at import again).
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolreel.core
import toolreel.shell
from toolreel.core.record import Record, Value


def _twins(**fields: Any) -> tuple[type, type]:
    """Two classes named `Sample` with the same fields: attrs' methods, and ours."""

    def build(base: type | None) -> type:
        if base is None:
            return attrs.frozen(kw_only=True)(type("Sample", (), _body(fields)))
        return attrs.frozen(kw_only=True, repr=False, eq=False)(
            type("Sample", (base,), _body(fields))
        )

    return build(None), build(Value)


def _body(fields: dict[str, Any]) -> dict[str, Any]:
    """A class body: the fields, declared in order."""
    return {"__annotations__": dict.fromkeys(fields, "Any"), **fields}


def _hidden(value: object) -> str:
    return "<hidden>"


FIELDS = {
    "plain": attrs.field(),
    "secret": attrs.field(default="sk-1", repr=False),
    "shown": attrs.field(default=3, repr=_hidden),
    "ignored": attrs.field(default=0, eq=False),
    "folded": attrs.field(default="A", eq=str.lower),
    "derived": attrs.field(init=False, default=7),
}
THEIRS, OURS = _twins(**FIELDS)

values = st.one_of(
    st.integers(),
    st.text(max_size=5),
    st.floats(allow_nan=True),
    st.none(),
    st.tuples(st.integers(), st.text(max_size=3)),
)


@given(plain=values, shown=values, ignored=values, folded=st.sampled_from(["a", "A", "b"]))
def test_prints_as_attrs_does(plain: Any, shown: Any, ignored: Any, folded: str) -> None:
    kwargs = {"plain": plain, "shown": shown, "ignored": ignored, "folded": folded}
    assert repr(OURS(**kwargs)) == repr(THEIRS(**kwargs))


@given(a=values, b=values, ignored=values, fa=st.sampled_from("aAb"), fb=st.sampled_from("aAb"))
def test_compares_and_hashes_as_attrs_does(a: Any, b: Any, ignored: Any, fa: str, fb: str) -> None:
    def pair(cls: type) -> tuple[Any, Any]:
        return cls(plain=a, folded=fa, ignored=ignored), cls(plain=b, folded=fb)

    ours, theirs = pair(OURS), pair(THEIRS)
    assert (ours[0] == ours[1]) == (theirs[0] == theirs[1])
    assert (ours[0] != ours[1]) == (theirs[0] != theirs[1])
    if ours[0] == ours[1]:
        assert hash(ours[0]) == hash(ours[1])


def test_records_that_differ_hash_apart() -> None:
    """Equal records hash alike (above); unequal ones spread, as attrs' hash did."""
    assert len({hash(OURS(plain=n)) for n in range(200)}) == 200
    _, twin = _twins(**FIELDS)
    assert hash(OURS(plain=1)) != hash(twin(plain=1))  # the class is hashed too, as in attrs


def test_a_field_left_out_of_the_hash_still_compares() -> None:
    @attrs.frozen(repr=False, eq=False)
    class Counted(Value):
        name: str
        seen: int = attrs.field(hash=False)

    assert Counted("a", 1) != Counted("a", 2)
    assert hash(Counted("a", 1)) == hash(Counted("a", 2))
    assert hash(Counted("a", 1)) != hash(Counted("b", 1))


def test_equality_is_within_one_class() -> None:
    _, other = _twins(**FIELDS)
    assert OURS(plain=1) != other(plain=1)
    assert OURS(plain=1).__eq__(other(plain=1)) is NotImplemented
    assert OURS(plain=1) != (1,)
    assert OURS(plain=math.nan) != OURS(plain=math.nan)  # as attrs: == field by field


def test_a_record_met_inside_itself_prints_as_dots() -> None:
    @attrs.define(repr=False)
    class Box(Record):
        items: list[Any]

    @attrs.define
    class Theirs:
        items: list[Any]

    mine, theirs = Box(items=[1]), Theirs(items=[1])
    mine.items.append(mine)
    theirs.items.append(theirs)
    assert repr(mine) == "Box(items=[1, ...])"
    assert repr(mine).replace("Box", "Theirs") == repr(theirs)


def test_a_secret_stays_out_of_the_repr() -> None:
    connection = toolreel.shell.Connection(api_key="sk-do-not-show")
    assert "sk-do-not-show" not in repr(connection)


PACKAGES = [
    "toolreel.core",
    "toolreel.adapters",
    "toolreel.shell",
    "toolreel.cli",
    "toolreel.testing",
    "toolreel.otel",
    "toolreel.web",
    "toolreel.open_agent",
    "toolreel.mcp",
    "toolreel.a2a",
    "toolreel.temporal",
]


def _imported(name: str) -> Any:
    """The module, or None when an extra it needs is not installed here."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if (exc.name or "").startswith("toolreel"):
            raise
        return None


def _shipped_classes() -> list[type]:
    """Every attrs class defined in toolreel's packages (those whose extras are installed)."""
    found: dict[str, type] = {}
    for package in map(_imported, PACKAGES):
        if package is None:
            continue
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = _imported(info.name)
            if module is None:
                continue
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and attrs.has(value)
                    and value.__module__ == module.__name__
                ):
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


def _generated(method: Callable[..., Any] | None) -> bool:
    """Whether attrs wrote and compiled this method."""
    code = getattr(method, "__code__", None)
    return code is not None and code.co_filename.startswith("<attrs generated")


def test_every_shipped_record_uses_the_shared_methods() -> None:
    classes = _shipped_classes()
    assert len(classes) > 200  # the walk found the packages' records
    compiled = []
    for cls in classes:
        if not issubclass(cls, Record) or _generated(cls.__repr__):
            compiled.append(f"{cls.__module__}.{cls.__qualname__}: __repr__")
        if _generated(cls.__eq__) and cls.__hash__ is not None:  # frozen: Value's
            compiled.append(f"{cls.__module__}.{cls.__qualname__}: __eq__/__hash__")
        if _generated(cls.__hash__):
            compiled.append(f"{cls.__module__}.{cls.__qualname__}: __hash__")
    assert compiled == []


@pytest.mark.parametrize(
    "record",
    [
        toolreel.core.ToolCall(id="c1", name="add", arguments='{"a": 1}'),
        toolreel.core.Usage(input_tokens=3, output_tokens=4),
    ],
    ids=["ToolCall", "Usage"],
)
def test_a_core_record_is_a_value(record: Any) -> None:
    twin = attrs.evolve(record)
    assert twin == record and hash(twin) == hash(record) and twin is not record
    assert repr(record).startswith(type(record).__name__ + "(")
    assert eval(repr(record), vars(toolreel.core)) == record

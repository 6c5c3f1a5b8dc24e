"""Strict checks of the model's JSON values against declared types: no lossy coercions.

Each check turns a JSON value into a value of its type or raises `Mismatch`
(shell/_problems.py): no "false" -> True, no 1.5 -> 1, no "5" -> 5, no string
taken for a list of its characters. `direct(kind)` builds the check of a type
made of these alone — str, int, float, bool, None, Any, Literal, Enum,
datetime/date/time, UUID, Decimal, and unions, lists, tuples, sets and dicts
of them — so a tool of such parameters converts its arguments without cattrs.
The same checks serve as hooks of the cattrs converter for the rest (records),
with `convert_item` converting an item through it (shell/_conversion.py).
"""

from __future__ import annotations

import collections.abc
import datetime
import enum
import math
import types
import typing
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import decimal
    import uuid

from ._named_types import DECIMAL, UUID, Name, name_of
from ._problems import Mismatch, Problem, join, shown, under, wrong

Convert = Callable[[Any], Any]
#: How a container converts its items: a type -> the conversion to it.
ItemConvert = Callable[[Any], Convert]


def _integer(value: Any) -> int:
    """An int from a JSON number without a fraction (2.0 is 2; 2.5 and True are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong("an integer", value)
    if not (math.isfinite(value) and value == int(value)):
        raise wrong("an integer", value)
    return int(value)


def _float(value: Any) -> float:
    """A float from a JSON number (True is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong("a number", value)
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float
        raise wrong("a number", value) from None


def _exact(expected: type, label: str) -> Convert:
    """A check that the value already is of `expected` (a JSON string, a JSON boolean)."""

    def check(value: Any) -> Any:
        if not isinstance(value, expected):
            raise wrong(label, value)
        return value

    return check


def _iso(kind: Any, label: str) -> Convert:
    """A date, time or date-time from its ISO 8601 text."""

    def parse(value: Any) -> Any:
        if not isinstance(value, str):
            raise wrong(f"an ISO 8601 {label} string", value)
        try:
            return kind.fromisoformat(value)
        except ValueError:
            raise wrong(f"an ISO 8601 {label}", value) from None

    return parse


def _uuid(value: Any) -> uuid.UUID:
    """A UUID from its text."""
    import uuid  # noqa: PLC0415 - loaded: the tool's annotation names it (_named_types.py)

    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            pass
    raise wrong("a UUID", value)


def _decimal(value: Any) -> decimal.Decimal:
    """A Decimal from a JSON number or a numeric string."""
    import decimal  # noqa: PLC0415 - loaded: the tool's annotation names it

    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise wrong("a decimal number", value)
    try:
        return decimal.Decimal(str(value))
    except decimal.InvalidOperation:
        raise wrong("a decimal number", value) from None


def _anything(value: Any) -> Any:
    """`Any` and `object`: the value as it is."""
    return value


#: The scalar checks, by type.
SCALARS: dict[Any, Convert] = {
    int: _integer,
    float: _float,
    str: _exact(str, "a string"),
    bool: _exact(bool, "true or false"),
    type(None): _exact(type(None), "null"),
    datetime.datetime: _iso(datetime.datetime, "date-time"),
    datetime.date: _iso(datetime.date, "date"),
    datetime.time: _iso(datetime.time, "time"),
    object: _anything,
}
#: The checks of the standard classes toolreel does not import, by name (shell/_named_types.py).
NAMED_SCALARS: dict[Name, Convert] = {UUID: _uuid, DECIMAL: _decimal}


def _same(value: Any, option: Any) -> bool:
    """Whether a JSON value is a constant option (True is not 1, 1 is 1.0)."""
    return value == option and isinstance(value, bool) == isinstance(option, bool)


def _one_of(options: Sequence[Any], results: Sequence[Any]) -> Convert:
    """A check that the value is one of `options`; gives the matching one of `results`."""
    listed = [repr(option) for option in options]
    expected = listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} or {listed[-1]}"

    def check(value: Any) -> Any:
        for option, result in zip(options, results, strict=True):
            if _same(value, option):
                return result
        raise Mismatch([("$", f"expected {expected}, got {shown(value)}")])

    return check


def literal(kind: Any) -> Convert:
    """The check of a Literal's values (an Enum member among them: by its value)."""
    values = typing.get_args(kind)
    options = [value.value if isinstance(value, enum.Enum) else value for value in values]
    return _one_of(options, values)


def enumeration(kind: type[enum.Enum]) -> Convert:
    """The check of an Enum: one of its members' values gives that member."""
    members = list(kind)
    return _one_of([member.value for member in members], members)


_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def union(kind: Any, convert_item: ItemConvert) -> Convert:
    """A check of a union: None for an Optional's None, else its members tried in order.

    An Optional of one type reports that type's own problems; a wider union,
    when no member takes the value, says what it accepts.
    """
    members = typing.get_args(kind)
    rest = [member for member in members if member is not type(None)]
    nullable = len(rest) < len(members)
    converts = [convert_item(member) for member in rest]
    names = [_NAMES.get(member, getattr(member, "__name__", repr(member))) for member in rest]
    expected = " or ".join([*names, "null"] if nullable else names)

    def check(value: Any) -> Any:
        if value is None and nullable:
            return None
        if len(converts) == 1:
            return converts[0](value)
        for convert in converts:
            try:
                return convert(value)
            except Exception:  # this member does not take it; the next may
                continue
        raise Mismatch([("$", f"expected {expected}, got {shown(value)}")])

    return check


def _inside(
    part: str | int, exc: Exception, problems: Callable[[Exception], list[Problem]]
) -> list[Problem]:
    """The problems of one item, under its index or key."""
    return under(join("$", part), problems(exc))


def sequence(
    kind: Any, convert_item: ItemConvert, problems: Callable[[Exception], list[Problem]]
) -> Convert:
    """A list, tuple or set from a JSON array, each item converted (all problems told)."""
    origin = typing.get_origin(kind) or kind
    args = typing.get_args(kind)
    fixed = origin is tuple and bool(args) and args[-1] is not Ellipsis
    converts = [convert_item(arg) for arg in (args if fixed else args[:1] or (Any,))]
    make: Callable[[list[Any]], Any] = list
    if issubclass(origin, tuple):
        make = tuple
    elif issubclass(origin, frozenset):
        make = frozenset
    elif issubclass(origin, collections.abc.Set):
        make = set

    def check(value: Any) -> Any:
        if not isinstance(value, list):
            raise wrong("a list", value)
        if fixed and len(value) != len(converts):
            raise wrong(f"a list of {len(converts)} items", value)
        items, found = [], []
        for index, item in enumerate(value):
            try:
                items.append(converts[index if fixed else 0](item))
            except Exception as exc:
                found.extend(_inside(index, exc, problems))
        if found:
            raise Mismatch(found)
        return make(items)

    return check


def mapping(
    kind: Any, convert_item: ItemConvert, problems: Callable[[Exception], list[Problem]]
) -> Convert:
    """A dict from a JSON object, each value converted (its keys are strings)."""
    args = typing.get_args(kind)
    convert = convert_item(args[1] if len(args) == 2 else Any)

    def check(value: Any) -> Any:
        if not isinstance(value, dict):
            raise wrong("an object", value)
        items, found = {}, []
        for key, item in value.items():
            try:
                items[key] = convert(item)
            except Exception as exc:
                found.extend(_inside(key, exc, problems))
        if found:
            raise Mismatch(found)
        return items

    return check


def is_sequence(kind: Any) -> bool:
    """Whether `kind` is a list, tuple, set or abstract sequence type (not str, bytes)."""
    origin = typing.get_origin(kind) or kind
    return (
        isinstance(origin, type)
        and issubclass(origin, collections.abc.Sequence | collections.abc.Set)
        and not issubclass(origin, str | bytes | bytearray)
        and not hasattr(origin, "_fields")  # a NamedTuple is a record, not a list
    )


def is_mapping(kind: Any) -> bool:
    """Whether `kind` is a dict or abstract mapping type (a TypedDict is a record)."""
    origin = typing.get_origin(kind) or kind
    return (
        isinstance(origin, type)
        and issubclass(origin, collections.abc.Mapping)
        and not typing.is_typeddict(origin)
    )


def is_literal(kind: Any) -> bool:
    """Whether `kind` is a `Literal[...]`."""
    origin: Any = typing.get_origin(kind)
    return origin is typing.Literal


def is_union(kind: Any) -> bool:
    """Whether `kind` is a union (`X | Y`, `Optional[X]`)."""
    return typing.get_origin(kind) in (typing.Union, types.UnionType)


def is_enum(kind: Any) -> bool:
    """Whether `kind` is an Enum class."""
    return isinstance(kind, type) and issubclass(kind, enum.Enum)


def direct(kind: Any, problems: Callable[[Exception], list[Problem]]) -> Convert | None:
    """The check of a type made of the kinds above alone, or None when it needs more."""
    if kind is Any:
        return _anything
    if isinstance(kind, type) and kind in SCALARS:
        return SCALARS[kind]
    if name_of(kind) in NAMED_SCALARS:
        return NAMED_SCALARS[name_of(kind)]
    if typing.get_origin(kind) is typing.Annotated:
        return direct(typing.get_args(kind)[0], problems)
    if is_literal(kind):
        return literal(kind)
    if is_enum(kind):
        return enumeration(kind)
    if not (is_union(kind) or is_sequence(kind) or is_mapping(kind)):
        return None
    items = [(arg, direct(arg, problems)) for arg in typing.get_args(kind) if arg is not Ellipsis]
    if any(check is None for _, check in items):
        return None

    def item(wanted: Any) -> Convert:
        for arg, check in items:
            if arg == wanted and check is not None:
                return check
        return _anything  # a bare list or dict: items as they are

    if is_union(kind):
        return union(kind, item)
    if is_sequence(kind):
        return sequence(kind, item, problems)
    return mapping(kind, item, problems)

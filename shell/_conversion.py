"""The model's JSON values turned into the declared Python types, or told what is wrong.

`converter_for(kind)` is built once per parameter (when `@tool` runs) and
called per argument. Three ways, chosen by the type:

- scalars and what is made of them alone — str, int, float, bool, None, Any,
  Literal, Enum, datetime/date/time, UUID, Decimal, unions of these — are
  checked here directly: a tool of such parameters never loads cattrs;
- a type that uses Pydantic (shell/_pydantic.py) is Pydantic's to validate;
- everything else (lists, dicts, tuples, sets, TypedDict, attrs classes,
  dataclasses, nested) goes through `strict_converter()`, a cattrs converter
  built on first use with the same checks as hooks.

The checks refuse lossy coercions: no "false" -> True, no 1.5 -> 1, no "5" -> 5.
A mismatch raises `Mismatch` with problems as (path, what): "$" is the value
itself, "$.lines[0].amount" a part of it. `problems(exc, kind)` gives the same
pairs for any conversion error; `argument_problem` and `output_problems` word
them for a tool's argument and for an output.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import functools
import json
import math
import sys
import types
import typing
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import _pydantic
from ._pydantic import shown

if TYPE_CHECKING:
    import cattrs

Convert = Callable[[Any], Any]
Problem = tuple[str, str]


class Mismatch(ValueError):
    """A value that is not of its declared type: the problems, as (path, what)."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        """Keep the problems; the message lists them."""
        self.problems = tuple(problems)
        super().__init__("; ".join(_at(path, what) for path, what in self.problems))


def _wrong(what: str, value: Any) -> Mismatch:
    """The value itself is wrong: `what` was expected, `value` came."""
    return Mismatch([("$", f"expected {what}, got {shown(value)}")])


def _integer(value: Any) -> int:
    """An int from a JSON number without a fraction (2.0 is 2; 2.5 and True are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong("an integer", value)
    if not (math.isfinite(value) and value == int(value)):
        raise _wrong("an integer", value)
    return int(value)


def _float(value: Any) -> float:
    """A float from a JSON number (True is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong("a number", value)
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float
        raise _wrong("a number", value) from None


def _exact(expected: type, label: str) -> Convert:
    """A check that the value already is of `expected` (a JSON string, a JSON boolean)."""

    def check(value: Any) -> Any:
        if not isinstance(value, expected):
            raise _wrong(label, value)
        return value

    return check


def _iso(kind: Any, label: str) -> Convert:
    """A date, time or date-time from its ISO 8601 text."""

    def parse(value: Any) -> Any:
        if not isinstance(value, str):
            raise _wrong(f"an ISO 8601 {label} string", value)
        try:
            return kind.fromisoformat(value)
        except ValueError:
            raise _wrong(f"an ISO 8601 {label}", value) from None

    return parse


def _uuid(value: Any) -> uuid.UUID:
    """A UUID from its text."""
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            pass
    raise _wrong("a UUID", value)


def _decimal(value: Any) -> decimal.Decimal:
    """A Decimal from a JSON number or a numeric string."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _wrong("a decimal number", value)
    try:
        return decimal.Decimal(str(value))
    except decimal.InvalidOperation:
        raise _wrong("a decimal number", value) from None


#: The scalar checks, by type: each turns a JSON value into one, or raises Mismatch.
_SCALARS: dict[Any, Convert] = {
    int: _integer,
    float: _float,
    str: _exact(str, "a string"),
    bool: _exact(bool, "true or false"),
    type(None): _exact(type(None), "null"),
    datetime.datetime: _iso(datetime.datetime, "date-time"),
    datetime.date: _iso(datetime.date, "date"),
    datetime.time: _iso(datetime.time, "time"),
    uuid.UUID: _uuid,
    decimal.Decimal: _decimal,
}


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


def _literal(kind: Any) -> Convert:
    """The check of a Literal's values."""
    values = typing.get_args(kind)
    options = [value.value if isinstance(value, enum.Enum) else value for value in values]
    return _one_of(options, values)


def _enum(kind: type[enum.Enum]) -> Convert:
    """The check of an Enum: one of its members' values gives that member."""
    members = list(kind)
    return _one_of([member.value for member in members], members)


_UNION_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def _union(kind: Any, convert: Callable[[Any, Any], Any]) -> Convert:
    """A check of a union: None for an Optional's None, else its members tried in order.

    `convert(value, member)` converts to one member. An Optional of one type
    reports that type's own problems; a wider union, when no member takes the
    value, lists what it accepts.
    """
    members = typing.get_args(kind)
    rest = [member for member in members if member is not type(None)]
    nullable = len(rest) < len(members)
    names = [_UNION_NAMES.get(m, getattr(m, "__name__", repr(m))) for m in rest]
    if nullable:
        names.append("null")
    expected = " or ".join(names)

    def check(value: Any) -> Any:
        if value is None and nullable:
            return None
        if len(rest) == 1:
            return convert(value, rest[0])
        for member in rest:
            try:
                return convert(value, member)
            except Exception:  # this member does not take it; the next may
                continue
        raise Mismatch([("$", f"expected {expected}, got {shown(value)}")])

    return check


def _is_literal(kind: Any) -> bool:
    """Whether `kind` is a `Literal[...]`."""
    origin: Any = typing.get_origin(kind)
    return origin is typing.Literal


def _is_union(kind: Any) -> bool:
    """Whether `kind` is a union (`X | Y`, `Optional[X]`)."""
    return typing.get_origin(kind) in (typing.Union, types.UnionType)


def _is_enum(kind: Any) -> bool:
    """Whether `kind` is an Enum class."""
    return isinstance(kind, type) and issubclass(kind, enum.Enum)


def _direct(kind: Any) -> Convert | None:
    """The check of a type made of scalars alone, or None when it needs more."""
    if kind in (Any, object):
        return lambda value: value
    if isinstance(kind, type) and kind in _SCALARS:
        return _SCALARS[kind]
    origin = typing.get_origin(kind)
    if origin is typing.Annotated:
        return _direct(typing.get_args(kind)[0])
    if origin is typing.Literal:
        return _literal(kind)
    if _is_enum(kind):
        return _enum(kind)
    if _is_union(kind):
        checks: dict[Any, Convert] = {}
        for member in typing.get_args(kind):
            check = _direct(member)
            if check is None:
                return None
            checks[member] = check
        return _union(kind, lambda value, member: checks[member](value))
    return None


def converter_for(kind: Any) -> Convert:
    """How to turn the model's JSON value into a `kind` (raising on a mismatch)."""
    if _pydantic.uses_pydantic(kind):
        return _pydantic_converter(kind)
    return _direct(kind) or (lambda value: strict_converter().structure(value, kind))


def _pydantic_converter(kind: Any) -> Convert:
    """Pydantic's validation, its errors as a Mismatch in toolreel's words."""
    validate = _pydantic.validator(kind)

    def convert(value: Any) -> Any:
        try:
            return validate(value)
        except Exception as exc:
            if _pydantic.is_validation_error(exc):
                raise Mismatch(_pydantic.problems(exc)) from exc
            raise

    return convert


@functools.cache
def strict_converter() -> cattrs.Converter:
    """A cattrs converter with the checks above as hooks (no lossy coercions).

    Built on first use: cattrs loads with the first value that needs it, not
    with toolreel.shell nor with a tool of scalar parameters.
    """
    import cattrs  # noqa: PLC0415 - see above

    converter = cattrs.Converter()
    for kind, check in _SCALARS.items():
        converter.register_structure_hook(kind, _hook(check))
    converter.register_structure_hook_factory(_is_literal, lambda kind: _hook(_literal(kind)))
    converter.register_structure_hook_factory(_is_enum, lambda kind: _hook(_enum(kind)))
    converter.register_structure_hook_factory(
        _is_union, lambda kind: _hook(_union(kind, converter.structure))
    )
    converter.register_unstructure_hook_func(
        _pydantic.is_model, lambda model: model.model_dump(mode="json")
    )
    return converter


def _hook(check: Convert) -> Callable[[Any, Any], Any]:
    """A check as a cattrs structure hook (which is also given the type)."""
    return lambda value, _: check(value)


def problems(exc: Exception, kind: Any) -> list[Problem]:
    """What a conversion error says is wrong, as (path, what), whoever raised it."""
    if isinstance(exc, Mismatch):
        return list(exc.problems)
    if "cattrs" not in sys.modules:  # only the cattrs converter raises anything else
        return [("$", str(exc) or type(exc).__name__)]
    import cattrs  # noqa: PLC0415 - loaded already

    if isinstance(exc, cattrs.BaseValidationError):
        found = cattrs.transform_error(exc, path="$", format_exception=_describe)
        return [_split(problem) for problem in found]
    return [("$", _describe(exc, kind))]


def _describe(exc: BaseException, kind: Any) -> str:
    """One problem inside a cattrs error: the checks' own words where they have them."""
    if isinstance(exc, Mismatch):
        return "; ".join(what for _, what in exc.problems)
    from cattrs.v import format_exception  # noqa: PLC0415 - loaded with the converter

    return format_exception(exc, kind)


def _split(problem: str) -> Problem:
    """cattrs' "what @ $.where" as ($.where, what)."""
    what, at, where = problem.rpartition(" @ ")
    return (where, what) if at else ("$", problem)


def _at(path: str, what: str) -> str:
    """A problem as a tool argument's error says it: "what", or "what @ $.where"."""
    return what if path == "$" else f"{what} @ {path}"


def argument_problem(name: str, exc: Exception, kind: Any) -> str:
    """What is wrong with one argument, for the model: "argument 'b': expected ..."."""
    return f"argument {name!r}: " + "; ".join(_at(*problem) for problem in problems(exc, kind))


def output_problems(exc: Exception, kind: Any) -> list[str]:
    """What is wrong with an output, one line per problem: "$.total: expected ..."."""
    return [f"{path}: {what}" for path, what in problems(exc, kind)]


def json_text(value: Any, unstructure: Callable[[Any], Any], default: Callable[[Any], Any]) -> str:
    """`value` as JSON: plain JSON values at once, others through `unstructure` first."""
    try:
        return json.dumps(value, ensure_ascii=False, default=_not_plain)
    except _NotPlain:
        return json.dumps(unstructure(value), ensure_ascii=False, default=default)


class _NotPlain(Exception):
    """A value that is not made of JSON's own types alone."""


def _not_plain(value: Any) -> Any:
    """`json.dumps`'s fallback for what it cannot write: signal it, to unstructure first."""
    raise _NotPlain

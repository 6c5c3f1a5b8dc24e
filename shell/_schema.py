"""JSON Schema from Python type annotations, for the tools the model is offered.

Covers what tool arguments are made of: str, int, float, bool, None, Any,
list / tuple / set / dict (str keys), Optional and unions, Literal, Enum,
datetime / date / time, UUID, Decimal, TypedDict, attrs classes and
dataclasses (nested), `Annotated[T, "description"]`; a type that uses
Pydantic (shell/_pydantic.py) gets Pydantic's own schema. A type it cannot
describe raises `Undescribable` saying which part and why — never an
unconstrained `{}` the model would guess at (`Any` asks for that explicitly).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from . import _pydantic
from ._named_types import DECIMAL, UUID, Name, name_of

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    Any: {},
    object: {},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.time: {"type": "string", "format": "time"},
}
#: The standard classes whose modules toolreel does not import (shell/_named_types.py).
_NAMED_SCALARS: dict[Name, dict[str, Any]] = {
    UUID: {"type": "string", "format": "uuid"},
    DECIMAL: {"anyOf": [{"type": "number"}, {"type": "string"}]},
}
#: What a tool's parameter may be, as a ConfigError says it.
DESCRIBABLE = (
    "a type toolreel can describe to the model: str, int, float, bool, None, Any, "
    "lists, tuples, sets, dicts with str keys, Literal, Enum, datetime/date/time, UUID, "
    "Decimal, unions, TypedDict, attrs classes, dataclasses or Pydantic models"
)
#: `Required[...]`, `NotRequired[...]` and `ReadOnly[...]` wrap a TypedDict's field types.
_TYPED_DICT_WRAPPERS = {
    getattr(typing, name)
    for name in ("Required", "NotRequired", "ReadOnly")
    if hasattr(typing, name)
}


class Undescribable(TypeError):
    """A type with no JSON Schema here; the message names the part that has none and why."""


def type_schema(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of values of `annotation` (Undescribable if it has none).

    A recursive Pydantic model's schema carries its `$defs` at its root.
    """
    if _pydantic.uses_pydantic(annotation):
        try:
            return _pydantic.schema(annotation)
        except TypeError as exc:
            raise Undescribable(f"{_name(annotation)}: {exc}") from exc
    return _schema(annotation, ())


def _schema(annotation: Any, within: tuple[Any, ...]) -> dict[str, Any]:
    """`type_schema` of a type inside the records in `within` (a record in it recurses)."""
    if _hashable(annotation) and annotation in _SCALARS:
        return dict(_SCALARS[annotation])
    if name_of(annotation) in _NAMED_SCALARS:
        return dict(_NAMED_SCALARS[name_of(annotation)])
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _annotated_schema(args[0], args[1:], within)
    if origin is typing.Literal:
        return _literal_schema(args, annotation)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_schema(arg, within) for arg in args]}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _literal_schema(tuple(member.value for member in annotation), annotation)
    if _is_record(annotation):
        if annotation in within:
            raise Undescribable(
                f"{_name(annotation)} contains itself: a recursive type needs a Pydantic model"
            )
        return _record_schema(annotation, (*within, annotation))
    return _container_schema(annotation, origin, args, within)


def _hashable(annotation: Any) -> bool:
    """Whether `annotation` can be looked up in a dict (a stray dict or list cannot)."""
    try:
        hash(annotation)
    except TypeError:
        return False
    return True


def _annotated_schema(
    base: Any, metadata: tuple[Any, ...], within: tuple[Any, ...]
) -> dict[str, Any]:
    """`Annotated[T, "description"]`: T's schema with the description."""
    schema = _schema(base, within)
    description = _description(metadata)
    if description:
        schema["description"] = description
    return schema


def annotated_description(annotation: Any) -> str | None:
    """The description an `Annotated` gives its type: a str, `Doc(...)`, `Field(description=)`."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return None
    return _description(typing.get_args(annotation)[1:])


def _description(metadata: Sequence[Any]) -> str | None:
    """The last description among an `Annotated`'s metadata, if any."""
    for item in reversed(metadata):
        if isinstance(item, str):
            return item
        for attribute in ("description", "documentation"):  # pydantic's Field, PEP 727's Doc
            text = getattr(item, attribute, None)
            if isinstance(text, str):
                return text
    return None


def _literal_schema(values: tuple[Any, ...], annotation: Any) -> dict[str, Any]:
    """An enum of constant values, typed when they share a JSON type."""
    values = tuple(value.value if isinstance(value, enum.Enum) else value for value in values)
    for value in values:
        if value is not None and not isinstance(value, str | int | float):
            raise Undescribable(
                f"{_name(annotation)}: {value!r} is not a JSON value (str, number, bool, None)"
            )
    kinds = {_json_type(value) for value in values}
    schema: dict[str, Any] = {"enum": list(values)}
    if len(kinds) == 1 and "null" not in kinds:
        schema["type"] = kinds.pop()
    return schema


def _json_type(value: Any) -> str:
    """The JSON type of a constant."""
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, kind):
            return name
    return "null"


def _container_schema(
    annotation: Any, origin: Any, args: tuple[Any, ...], within: tuple[Any, ...]
) -> dict[str, Any]:
    """Arrays and objects; bare `list`/`dict` are unconstrained inside."""
    container = origin or annotation
    if container is tuple and args and args[-1] is not Ellipsis:
        items = [_schema(arg, within) for arg in args]
        return {
            "type": "array",
            "prefixItems": items,
            "minItems": len(items),
            "maxItems": len(items),
        }
    if not isinstance(container, type):
        raise Undescribable(f"{_name(annotation)} has no JSON Schema")
    if issubclass(container, str | bytes):
        return {"type": "string"}
    if issubclass(container, Mapping):
        schema: dict[str, Any] = {"type": "object"}
        if len(args) == 2:
            if args[0] not in (str, Any):
                raise Undescribable(f"{_name(annotation)}: JSON object keys are strings")
            schema["additionalProperties"] = _schema(args[1], within)
        return schema
    if issubclass(container, Sequence | set | frozenset):
        schema = {"type": "array"}
        if args:
            schema["items"] = _schema(args[0], within)
        return schema
    raise Undescribable(f"{_name(annotation)} has no JSON Schema")


def _is_record(annotation: Any) -> bool:
    """Whether `annotation` is an attrs class, a dataclass or a TypedDict (by its fields)."""
    return isinstance(annotation, type) and (
        attrs.has(annotation)
        or dataclasses.is_dataclass(annotation)
        or typing.is_typeddict(annotation)
    )


def _record_schema(cls: Any, within: tuple[Any, ...]) -> dict[str, Any]:
    """An object with one property per field of an attrs class, dataclass or TypedDict."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:  # a name only imported under TYPE_CHECKING, a typo
        raise Undescribable(f"{_name(cls)}: its field types cannot be resolved ({exc})") from exc
    if typing.is_typeddict(cls):
        names = list(hints)
        required = [name for name in names if name in cls.__required_keys__]
        hints = {name: _unwrapped(hint) for name, hint in hints.items()}
    elif attrs.has(cls):
        fields = attrs.fields(cls)
        names = [field.name for field in fields]
        required = [field.name for field in fields if field.default is attrs.NOTHING]
    else:
        names = [field.name for field in dataclasses.fields(cls)]
        required = [
            field.name
            for field in dataclasses.fields(cls)
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        ]
    return object_schema({name: _schema(hints[name], within) for name in names}, required)


def _unwrapped(hint: Any) -> Any:
    """A TypedDict field's type without `Required`/`NotRequired`/`ReadOnly`."""
    while typing.get_origin(hint) in _TYPED_DICT_WRAPPERS:
        hint = typing.get_args(hint)[0]
    return hint


def _name(annotation: Any) -> str:
    """A type as a person writes it: `Location`, `list[int]`."""
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")


def object_schema(
    properties: Mapping[str, Mapping[str, Any]], required: Sequence[str]
) -> dict[str, Any]:
    """An object schema from its properties' schemas, listing the required ones.

    The `$defs` a property's schema carries (a recursive Pydantic model's) move
    to the object's root, where its `#/$defs/...` references look for them.
    """
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    defs: dict[str, Any] = {}
    for name, property_schema in properties.items():
        own = dict(property_schema)
        for def_name, definition in own.pop("$defs", {}).items():
            if defs.setdefault(def_name, definition) != definition:
                raise Undescribable(
                    f"two different types are both named {def_name!r}: rename one of them"
                )
        schema["properties"][name] = own
    if required:
        schema["required"] = list(required)
    if defs:
        schema["$defs"] = defs
    return schema


def signature_types(function: Callable[..., Any]) -> tuple[dict[str, Any], list[str]]:
    """A function's parameter types (unannotated: Any) and the parameters without defaults.

    `Annotated` is kept (it may carry a description); a NameError or
    SyntaxError from an annotation that cannot be resolved propagates.
    """
    hints = typing.get_type_hints(function, include_extras=True)
    types_: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        types_[name] = hints.get(name, Any)
        if parameter.default is parameter.empty:
            required.append(name)
    return types_, required

"""JSON Schema from Python type annotations, for the tools the model is offered.

Covers what tool arguments are made of: str, int, float, bool, None, list /
tuple / set / dict, Optional and unions, Literal, Enum, attrs classes and
dataclasses (nested). Anything else becomes an unconstrained schema (`{}`).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    Any: {},
}


def type_schema(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of values of `annotation`."""
    if annotation in _SCALARS:
        return dict(_SCALARS[annotation])
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_schema(args[0])
    if origin is typing.Literal:
        return _literal_schema(args)
    if origin in (typing.Union, types.UnionType):
        return _union_schema(args)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _literal_schema(tuple(member.value for member in annotation))
    if attrs.has(annotation) or dataclasses.is_dataclass(annotation):
        return _record_schema(annotation)
    return _container_schema(annotation, origin, args)


def _literal_schema(values: tuple[Any, ...]) -> dict[str, Any]:
    """An enum of constant values, typed when they share a JSON type."""
    kinds = {type_schema(type(value)).get("type") for value in values}
    schema: dict[str, Any] = {"enum": list(values)}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


def _union_schema(args: tuple[Any, ...]) -> dict[str, Any]:
    """`anyOf` the members (Optional[X] included)."""
    return {"anyOf": [type_schema(arg) for arg in args]}


def _container_schema(annotation: Any, origin: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    """Arrays and objects; bare `list`/`dict` are unconstrained inside."""
    container = origin or annotation
    if container is tuple and args and args[-1] is not Ellipsis:
        items = [type_schema(arg) for arg in args]
        return {
            "type": "array",
            "prefixItems": items,
            "minItems": len(items),
            "maxItems": len(items),
        }
    if isinstance(container, type) and issubclass(container, str | bytes):
        return {"type": "string"}
    if isinstance(container, type) and issubclass(container, Mapping):
        schema: dict[str, Any] = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = type_schema(args[1])
        return schema
    if isinstance(container, type) and issubclass(container, Sequence | set | frozenset):
        schema = {"type": "array"}
        if args:
            schema["items"] = type_schema(args[0])
        return schema
    return {}


def _record_schema(cls: Any) -> dict[str, Any]:
    """An object with one property per field of an attrs class or dataclass."""
    hints = typing.get_type_hints(cls)
    if attrs.has(cls):
        fields = [(f.name, f.default is attrs.NOTHING) for f in attrs.fields(cls)]
    else:
        fields = [
            (f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
            for f in dataclasses.fields(cls)
        ]
    return object_schema({name: hints[name] for name, _ in fields}, [n for n, req in fields if req])


def object_schema(properties: Mapping[str, Any], required: Sequence[str]) -> dict[str, Any]:
    """An object schema from property types, listing the required ones."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: type_schema(kind) for name, kind in properties.items()},
    }
    if required:
        schema["required"] = list(required)
    return schema


def signature_types(function: Callable[..., Any]) -> tuple[dict[str, Any], list[str]]:
    """A function's parameter types (unannotated: Any) and the parameters without defaults."""
    hints = typing.get_type_hints(function)
    types_: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        types_[name] = hints.get(name, Any)
        if parameter.default is parameter.empty:
            required.append(name)
    return types_, required

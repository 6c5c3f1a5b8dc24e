"""Checking a JSON value against a JSON Schema, for output tools declared by schema.

A dependency-free subset that covers what tool schemas use: `type` (one or a
list), `enum`, `const`, `properties`, `required`, `additionalProperties`
(false or a schema), `items`, `minItems`/`maxItems`, `minimum`/`maximum`,
`minLength`/`maxLength` and `anyOf`. Other keywords are not checked. Each
problem names the place it was found: `$.lines[0].amount: expected number, got "x"`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "integer": lambda value: (
        isinstance(value, int | float) and not isinstance(value, bool) and value == int(value)
    ),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
}


def schema_problems(schema: Mapping[str, Any], value: Any, path: str = "$") -> list[str]:
    """What is wrong with `value` under `schema`, each problem with its path (none: valid)."""
    type_problem = _type_problem(schema, value, path)
    if type_problem:
        return [type_problem]
    problems = _value_problems(schema, value, path)
    if isinstance(value, dict):
        problems += _object_problems(schema, value, path)
    if isinstance(value, list):
        problems += _array_problems(schema, value, path)
    if "anyOf" in schema and all(
        schema_problems(option, value, path) for option in schema["anyOf"]
    ):
        problems.append(f"{path}: matches none of the allowed forms")
    return problems


def _shown(value: Any) -> str:
    """A value as JSON, cut short."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_problem(schema: Mapping[str, Any], value: Any, path: str) -> str | None:
    """A mismatch of the `type` keyword, or None."""
    expected = schema.get("type")
    if expected is None:
        return None
    names = [expected] if isinstance(expected, str) else list(expected)
    if any(_TYPES.get(name, lambda _: True)(value) for name in names):
        return None
    return f"{path}: expected {' or '.join(names)}, got {_shown(value)}"


def _value_problems(schema: Mapping[str, Any], value: Any, path: str) -> list[str]:
    """`enum`, `const` and the numeric and length bounds."""
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_shown(option) for option in schema["enum"])
        problems.append(f"{path}: expected one of {allowed}, got {_shown(value)}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path}: expected {_shown(schema['const'])}, got {_shown(value)}")
    if _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path}: must be at least {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path}: must be at most {schema['maximum']}, got {value}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{path}: must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{path}: must have at most {schema['maxLength']} characters")
    return problems


def _object_problems(schema: Mapping[str, Any], value: dict[str, Any], path: str) -> list[str]:
    """Required fields, each property's schema, and fields the schema does not allow."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    problems = [
        f"{path}.{name}: required field missing"
        for name in schema.get("required", ())
        if name not in value
    ]
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            problems += schema_problems(properties[name], item, f"{path}.{name}")
        elif extra is False:
            problems.append(f"{path}.{name}: unexpected field")
        elif isinstance(extra, Mapping):
            problems += schema_problems(extra, item, f"{path}.{name}")
    return problems


def _array_problems(schema: Mapping[str, Any], value: list[Any], path: str) -> list[str]:
    """Length bounds, then each item's schema."""
    problems: list[str] = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        problems.append(f"{path}: must have at least {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        problems.append(f"{path}: must have at most {schema['maxItems']} items")
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            problems += schema_problems(items, item, f"{path}[{index}]")
    return problems

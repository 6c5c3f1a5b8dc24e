"""Pydantic types as tool parameters and outputs: described and validated by Pydantic itself.

A type *uses Pydantic* when it is (or holds, anywhere inside: a list of them,
an optional one, a dataclass field) a Pydantic model, a Pydantic dataclass, a
type with its own Pydantic schema, or an `Annotated` with Pydantic metadata
(`Field(gt=0, description=...)`, annotated-types constraints). Such a
parameter (or output) is Pydantic's alone, so that what the model is offered
and what is checked agree exactly: its schema is the `TypeAdapter`'s JSON
Schema, and the model's JSON is validated with `validate_json` (JSON mode:
what Pydantic does with JSON input, lax unless the model says strict).

The schema is made valid for every provider: `$ref`s into `$defs` are inlined,
but for a recursive model's, which stay as `$defs` at the schema's root;
OpenAPI's `discriminator` (its mapping names `$defs`) is dropped; properties
lose the titles Pydantic derives from their names (as pydantic-ai does).
Validation errors become problems in toolreel's words (path, what).

Nothing here imports Pydantic until a type that uses it is met: a program with
no Pydantic type never loads it, and one that has one has loaded it already.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from toolreel.core.record import Record

from ._problems import join, shown

#: Keywords whose value is one schema, a map of schemas, or a list of schemas.
_ONE = frozenset(
    {"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"}
    | {"unevaluatedItems", "unevaluatedProperties", "additionalItems"}
)
_MAP = frozenset({"properties", "patternProperties", "dependentSchemas"})
_LIST = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_DEFS = "#/$defs/"
_METADATA_MODULES = frozenset({"pydantic", "pydantic_core", "annotated_types"})


def uses_pydantic(kind: Any) -> bool:
    """Whether `kind` is, or holds, something only Pydantic can describe and check."""
    if "pydantic" not in sys.modules and "annotated_types" not in sys.modules:
        return False  # no such type can exist yet
    return _uses(kind, set())


#: Types that hold nothing: the common parameter types, answered at once.
_PLAIN = frozenset({str, int, float, bool, type(None), bytes})


def _uses(kind: Any, seen: set[int]) -> bool:
    """`uses_pydantic`, remembering the classes already looked into (recursive types)."""
    if isinstance(kind, type) and kind in _PLAIN:
        return False
    if isinstance(kind, type) and (
        hasattr(kind, "__pydantic_core_schema__") or hasattr(kind, "__get_pydantic_core_schema__")
    ):
        return True
    origin = typing.get_origin(kind)
    if origin is typing.Annotated:
        base, *metadata = typing.get_args(kind)
        return any(map(_is_metadata, metadata)) or _uses(base, seen)
    if origin is typing.Literal:
        return False
    if any(_uses(arg, seen) for arg in typing.get_args(kind)):
        return True
    if not isinstance(kind, type) or id(kind) in seen or not _has_fields(kind):
        return False
    seen.add(id(kind))
    try:
        hints = typing.get_type_hints(kind, include_extras=True)
    except Exception:  # unresolvable: the describer says so, naming the type
        return False
    return any(_uses(hint, seen) for hint in hints.values())


def is_model(kind: Any) -> bool:
    """Whether `kind` is a Pydantic model class (`BaseModel` subclass)."""
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(kind, type) and issubclass(kind, pydantic.BaseModel)


def _has_fields(kind: type) -> bool:
    """Whether `kind` is a record whose field types could hold a Pydantic type."""
    return attrs.has(kind) or dataclasses.is_dataclass(kind) or typing.is_typeddict(kind)


def _is_metadata(item: Any) -> bool:
    """Whether an `Annotated` item is Pydantic's (`Field(...)`, a validator, a constraint)."""
    return type(item).__module__.partition(".")[0] in _METADATA_MODULES


def schema(kind: Any) -> dict[str, Any]:
    """Pydantic's JSON Schema of `kind`, made valid for every provider (see above).

    Raises TypeError when Pydantic cannot describe it, with Pydantic's reason.
    """
    from pydantic import TypeAdapter  # noqa: PLC0415 - loaded by whoever made the type

    try:
        raw = TypeAdapter(kind).json_schema()
    except Exception as exc:  # PydanticSchemaGenerationError, PydanticInvalidForJsonSchema, ...
        raise TypeError(f"Pydantic cannot describe it: {_first_line(exc)}") from exc
    return inline_refs(raw)


def validator(kind: Any) -> Callable[[Any], Any]:
    """The model's JSON value -> a `kind` (raises pydantic's ValidationError)."""
    from pydantic import TypeAdapter  # noqa: PLC0415 - loaded by whoever made the type

    adapter = TypeAdapter(kind)

    def validate(value: Any) -> Any:
        return adapter.validate_json(json.dumps(value))

    return validate


def is_validation_error(exc: BaseException) -> bool:
    """Whether `exc` is Pydantic's ValidationError (without importing Pydantic)."""
    core = sys.modules.get("pydantic_core")
    return core is not None and isinstance(exc, core.ValidationError)


def problems(exc: Any) -> list[tuple[str, str]]:
    """A ValidationError's errors as (path, what), in toolreel's words."""
    return [
        (_path(error["loc"]), _what(error["type"], error["msg"], error.get("input"), error))
        for error in exc.errors(include_url=False)
    ]


#: Pydantic's error types in toolreel's words (what its own converter says of the same input).
_WORDS = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
    "dict_type": "expected an object",
    "dataclass_type": "expected an object",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "set_type": "expected a list",
}


def _what(kind: str, message: str, value: Any, error: Mapping[str, Any]) -> str:
    """One error's text: toolreel's words where it has them, else Pydantic's."""
    if kind == "missing":
        return "required field missing"
    if kind == "extra_forbidden":
        return "unexpected field"
    if kind in ("literal_error", "enum"):
        return f"expected {error.get('ctx', {}).get('expected', '?')}, got {shown(value)}"
    if kind in _WORDS:
        return f"{_WORDS[kind]}, got {shown(value)}"
    if message.startswith("Input should be "):
        message = "must be " + message.removeprefix("Input should be ")
    return f"{message}, got {shown(value)}"


def _path(location: tuple[str | int, ...]) -> str:
    """Pydantic's `loc` as a JSON path: `$.stops[0].city`."""
    path = "$"
    for part in location:
        path = join(path, part)
    return path


def _first_line(exc: BaseException) -> str:
    """An exception's first line (Pydantic's messages go on with links and advice)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def inline_refs(root: Mapping[str, Any]) -> dict[str, Any]:
    """`root` with its `#/$defs/` references inlined; a recursive one's defs stay at the root."""
    defs: Mapping[str, Any] = root.get("$defs", {})
    kept: dict[str, Any] = {}
    rest = {key: value for key, value in root.items() if key != "$defs"}
    body: dict[str, Any] = _Inliner(defs, kept).walk(rest, ())
    if kept:
        body["$defs"] = kept
    return body


@attrs.define(repr=False)
class _Inliner(Record):
    """One walk over a schema: refs replaced by their definitions, but for recursive ones."""

    defs: Mapping[str, Any]
    kept: dict[str, Any]

    def walk(self, node: Any, within: tuple[str, ...]) -> Any:
        """`node` (a schema) with its refs inlined; `within`: the definitions being inlined."""
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS) and ref[len(_DEFS) :] in self.defs:
            name = ref[len(_DEFS) :]
            if name in within:  # recursive: a reference it stays, its definition at the root
                self._keep(name)
                return dict(node)
            siblings = {k: self.walk(v, within) for k, v in node.items() if k != "$ref"}
            return {**self.walk(self.defs[name], (*within, name)), **siblings}
        return {k: self._value(k, v, within) for k, v in node.items() if k != "discriminator"}

    def _value(self, key: str, value: Any, within: tuple[str, ...]) -> Any:
        """One keyword's value: schemas in it walked, data (`default`, `enum`) as it is."""
        if key in _ONE:
            return self.walk(value, within)
        if key in _MAP and isinstance(value, Mapping):
            return {
                name: self.walk(_untitled(sub) if key == "properties" else sub, within)
                for name, sub in value.items()
            }
        if key in _LIST and isinstance(value, list):
            return [self.walk(sub, within) for sub in value]
        return value

    def _keep(self, name: str) -> None:
        """Put a recursive definition at the root, itself inlined but for its recursion."""
        if name not in self.kept:
            self.kept[name] = {}  # claimed first: the walk below may come back to it
            self.kept[name] = self.walk(self.defs[name], (name,))


def _untitled(schema: Any) -> Any:
    """A property's schema without the title Pydantic derives from the property's name."""
    if isinstance(schema, Mapping) and isinstance(schema.get("title"), str):
        return {k: v for k, v in schema.items() if k != "title"}
    return schema

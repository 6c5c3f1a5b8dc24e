"""TestModel's arguments satisfy the tool's JSON Schema: hand-picked shapes, then generated ones.

Every value is checked with `jsonschema` (Draft 2020-12), the validator the
agents' output tools use; a schema no value can be made for is a UsageError
naming the tool and the keyword, from the model call itself.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreel.core import ModelRequest, ToolCallArgumentsDelta, ToolSpec, UsageError
from toolreel.shell import AgentOptions, run, tool
from toolreel.testing import TestModel

SCHEMAS: dict[str, dict[str, Any]] = {
    "scalars": {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
            "z": {"type": "null"},
        },
        "required": ["s", "i", "n", "b", "z"],
    },
    "bounds": {
        "type": "object",
        "properties": {
            "age": {"type": "integer", "minimum": 18, "maximum": 20},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "step": {"type": "integer", "minimum": 1, "maximum": 100, "multipleOf": 7},
            "half": {"type": "number", "minimum": 0, "maximum": 3, "multipleOf": 0.5},
            "code": {"type": "string", "minLength": 3, "maxLength": 3},
            "big": {"type": "integer", "minimum": 1000000},
            "neg": {"type": "number", "maximum": -5},
        },
        "required": ["age", "ratio", "step", "half", "code", "big", "neg"],
    },
    "enums and consts": {
        "type": "object",
        "properties": {
            "unit": {"enum": ["c", "f"]},
            "mixed": {"enum": [1, "two", None]},
            "fixed": {"const": {"k": [1, 2]}},
        },
        "required": ["unit", "mixed", "fixed"],
    },
    "arrays": {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 3},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
            "ids": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": 3},
                "minItems": 4,
                "uniqueItems": True,
            },
            "none": {"type": "array", "maxItems": 0},
        },
        "required": ["tags", "pair", "ids", "none"],
    },
    "nested, refs and optional": {
        "type": "object",
        "$defs": {
            "Line": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                "required": ["sku", "qty"],
                "additionalProperties": False,
            }
        },
        "properties": {
            "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}, "minItems": 1},
            "first": {"$ref": "#/$defs/Line"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "kind": {"oneOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]},
            "both": {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "integer"}}},
                    {"required": ["a"]},
                ]
            },
            "maybe": {"type": ["integer", "null"]},
        },
        "required": ["lines", "first", "kind", "both"],
        "additionalProperties": False,
    },
    "formats and patterns": {
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "mail": {"type": "string", "format": "email"},
            "id": {"type": "string", "format": "uuid"},
            "digits": {"type": "string", "pattern": "^[0-9]+$"},
            "upper": {"type": "string", "pattern": "^[A-Z]+$"},
        },
        "required": ["day", "at", "mail", "id", "digits", "upper"],
    },
    "recursive": {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    "parent": {"$ref": "#/$defs/Node"},
                },
                "required": ["name"],
            }
        },
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
    },
    "empty": {"type": "object", "properties": {}},
    "unconstrained": {"type": "object", "properties": {"anything": {}}, "required": ["anything"]},
}


def first_call_arguments(schema: dict[str, Any], seed: int = 0, name: str = "t") -> Any:
    """The arguments TestModel sends in its first response to a request offering one tool."""
    request = ModelRequest(
        model="m",
        system=None,
        messages=(),
        tools=(ToolSpec(name=name, parameters=schema),),
    )

    async def collect() -> str:
        fragments = [
            event.fragment
            async for event in TestModel(seed=seed).stream(request)
            if isinstance(event, ToolCallArgumentsDelta)
        ]
        return "".join(fragments)

    return json.loads(anyio.run(collect))


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_arguments_validate_against_the_schema(name: str, seed: int) -> None:
    schema = SCHEMAS[name]
    arguments = first_call_arguments(schema, seed)
    jsonschema.Draft202012Validator(schema).validate(arguments)


def test_the_same_seed_gives_the_same_arguments_and_another_seed_others() -> None:
    schema = SCHEMAS["bounds"]
    assert first_call_arguments(schema, 7) == first_call_arguments(schema, 7)
    assert {json.dumps(first_call_arguments(schema, s)) for s in range(4)} != {
        json.dumps(first_call_arguments(schema, 0))
    }


#: JSON Schemas of the shapes tools declare, drawn by hypothesis.
scalar_schemas = st.one_of(
    st.just({"type": "string"}),
    st.builds(
        lambda low, span: {"type": "integer", "minimum": low, "maximum": low + span},
        st.integers(-1000, 1000),
        st.integers(0, 50),
    ),
    st.builds(
        lambda low, span: {"type": "number", "minimum": low, "maximum": low + span},
        st.floats(-1e6, 1e6, allow_nan=False),
        st.floats(0, 100, allow_nan=False),
    ),
    st.builds(
        lambda low, span: {"type": "string", "minLength": low, "maxLength": low + span},
        st.integers(0, 20),
        st.integers(0, 5),
    ),
    st.just({"type": "boolean"}),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), min_size=1, max_size=4).map(
        lambda values: {"enum": values}
    ),
)


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An object schema of these properties, requiring those named that exist."""
    return {
        "type": "object",
        "properties": properties,
        "required": sorted({name for name in required if name in properties}),
    }


schemas = st.recursive(
    scalar_schemas,
    lambda inner: st.one_of(
        st.builds(
            lambda items, low: {"type": "array", "items": items, "minItems": low},
            inner,
            st.integers(0, 3),
        ),
        st.builds(
            _object,
            st.dictionaries(st.sampled_from("abcdef"), inner, max_size=4),
            st.lists(st.sampled_from("abcdef")),
        ),
        st.lists(inner, min_size=1, max_size=3).map(lambda options: {"anyOf": options}),
    ),
    max_leaves=8,
)
tool_schemas = st.builds(
    _object,
    st.dictionaries(st.sampled_from(["x", "y", "z", "w"]), schemas, max_size=4),
    st.lists(st.sampled_from(["x", "y", "z", "w"])),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=tool_schemas, seed=st.integers(0, 3))
def test_arguments_generated_for_any_tool_schema_validate(
    schema: dict[str, Any], seed: int
) -> None:
    arguments = first_call_arguments(schema, seed)
    jsonschema.Draft202012Validator(schema).validate(arguments)


@pytest.mark.parametrize(
    ("schema", "keyword"),
    [
        (
            {
                "type": "object",
                "properties": {"s": {"type": "string", "pattern": "^x{4}@$"}},
                "required": ["s"],
            },
            "pattern",
        ),
        (
            {
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}},
                "required": ["n"],
            },
            "maximum",
        ),
        (
            {
                "type": "object",
                "properties": {"n": {"not": {"type": "integer"}, "type": "integer"}},
                "required": ["n"],
            },
            "not",
        ),
        ({"type": "object", "properties": {"e": {"enum": []}}, "required": ["e"]}, "enum"),
    ],
    ids=["pattern", "maximum", "not", "enum"],
)
def test_a_schema_it_cannot_satisfy_is_a_usage_error_naming_tool_and_keyword(
    schema: dict[str, Any], keyword: str
) -> None:
    with pytest.raises(UsageError) as raised:
        first_call_arguments(schema, name="lookup")
    message = str(raised.value)
    assert "'lookup'" in message
    assert f"keyword {keyword!r}" in message
    assert "TestModel(args=" in message  # says how to get past it


def test_through_run_the_usage_error_reaches_the_caller_not_a_failed_turn() -> None:
    @tool(
        "lookup",
        "Look up",
        {"type": "object", "properties": {"e": {"enum": []}}, "required": ["e"]},
    )
    def lookup(args: dict[str, Any]) -> str:
        return "x"

    with pytest.raises(UsageError, match=r"'lookup'.*keyword 'enum'"):
        anyio.run(functools.partial(run, "hi", AgentOptions(tools=[lookup]), model=TestModel()))


def test_pinned_arguments_are_not_generated_so_they_get_past_such_a_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^x{4}@$"}, "n": {"type": "integer"}},
        "required": ["s", "n"],
    }
    request = ModelRequest(
        model="m", system=None, messages=(), tools=(ToolSpec(name="t", parameters=schema),)
    )

    async def collect() -> Any:
        model = TestModel(args={"t": {"s": "xxxx@"}})
        fragments = [
            e.fragment async for e in model.stream(request) if isinstance(e, ToolCallArgumentsDelta)
        ]
        return json.loads("".join(fragments))

    arguments = anyio.run(collect)
    assert arguments["s"] == "xxxx@"
    jsonschema.Draft202012Validator(schema).validate(arguments)

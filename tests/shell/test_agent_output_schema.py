"""OutputTool.from_schema: outputs checked against the JSON Schema (jsonschema, Draft 2020-12).

The model reads every problem, each with its path; a schema that is not valid
is refused when the output tool is built, not in the middle of a run.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from returns.result import Failure, Success

from toolreel.core import ConfigError
from toolreel.shell import OutputTool
from toolreel.shell.engine import check_output

INVOICE = {
    "type": "object",
    "properties": {
        "number": {"type": "string", "pattern": "^INV-[0-9]+$"},
        "currency": {"enum": ["EUR", "USD"]},
        "lines": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/line"},
        },
        "total": {"type": "number", "minimum": 0},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["number", "currency", "lines", "total"],
    "additionalProperties": False,
    "$defs": {
        "line": {
            "type": "object",
            "properties": {"amount": {"type": "number"}, "quantity": {"type": "integer"}},
            "required": ["amount"],
        }
    },
}
GOOD = {"number": "INV-7", "currency": "EUR", "lines": [{"amount": 5}], "total": 5}


def problems(value: Any, schema: dict[str, Any] = INVOICE) -> list[str]:
    """What the model is told about `value` (none: it is the output)."""
    match OutputTool.from_schema(schema).structure(json.dumps(value)):
        case Failure(found):
            return list(found)
        case Success(_):
            return []
    raise AssertionError("a Result is a Success or a Failure")


def test_a_valid_output_is_the_arguments_as_a_dict() -> None:
    assert OutputTool.from_schema(INVOICE).structure(json.dumps(GOOD)) == Success(GOOD)


def test_every_problem_is_listed_with_its_path() -> None:
    given = {**GOOD, "currency": "JPY", "total": "5", "lines": [{"amount": 1}, {"amount": "x"}]}
    assert problems(given) == [
        '$.currency: expected one of "EUR", "USD", got "JPY"',
        '$.lines[1].amount: expected number, got "x"',
        '$.total: expected number, got "5"',
    ]


def test_missing_and_unexpected_fields_are_named_one_by_one() -> None:
    assert problems({"number": "INV-1", "lines": [{}], "wind": 4, "rain": 0}) == [
        "$.lines[0].amount: required field missing",
        "$.currency: required field missing",
        "$.total: required field missing",
        "$.wind: unexpected field",
        "$.rain: unexpected field",
    ]


def test_bounds_and_alternatives_say_what_is_allowed() -> None:
    given = {**GOOD, "lines": [], "total": -1, "note": 3}
    assert problems(given) == [
        "$.lines: must have at least 1 items",
        "$.total: must be at least 0, got -1",
        "$.note: matches none of the allowed forms",
    ]


def test_keywords_beyond_the_old_subset_are_checked_too() -> None:
    """`pattern`, `$ref`/`$defs`, `multipleOf`, `uniqueItems`: jsonschema's own words."""
    given = {**GOOD, "number": "7", "lines": [{"amount": 1, "quantity": 1.5}]}
    assert problems(given) == [
        "$.number: '7' does not match '^INV-[0-9]+$'",
        "$.lines[0].quantity: expected integer, got 1.5",
    ]
    tags = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    assert problems({"tags": ["a", "a"]}, tags) == ["$.tags: ['a', 'a'] has non-unique elements"]


def test_arguments_that_are_not_json_are_one_problem() -> None:
    assert OutputTool.from_schema(INVOICE).structure("{") == Failure(
        [
            "$: not valid JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)"
        ]
    )


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "object", "properties": {"a": {"type": "strnig"}}}, "schema.properties.a.type"),
        ({"type": "object", "required": "a"}, "schema.required"),
        ({"type": "object", "minProperties": -1}, "schema.minProperties"),
    ],
)
def test_an_invalid_schema_is_refused_when_the_tool_is_built(
    schema: dict[str, Any], where: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        OutputTool.from_schema(schema)
    assert raised.value.field == "schema"
    assert f"a valid JSON Schema ({where}: " in str(raised.value)


def test_validators_see_the_checked_dict_and_add_their_problems() -> None:
    def balanced(output: dict[str, Any]) -> list[str]:
        lines = sum(line["amount"] for line in output["lines"])
        return [] if lines == output["total"] else [f"lines add up to {lines}"]

    tool = OutputTool.from_schema(INVOICE)
    ok = anyio.run(check_output, tool, [balanced], json.dumps(GOOD))
    off = anyio.run(check_output, tool, [balanced], json.dumps({**GOOD, "total": 6}))
    assert (ok, off) == (Success(GOOD), Failure(("lines add up to 5",)))


def test_reflection_on_a_schema_output_lists_the_problems_first() -> None:
    tool = OutputTool.from_schema(INVOICE, reflection_handler=lambda output: output["number"])
    good = anyio.run(tool.reflect, json.dumps(GOOD))
    bad = anyio.run(tool.reflect, json.dumps({**GOOD, "total": "5"}))
    assert good == Success("INV-7")
    assert bad == Failure(
        'The output does not match the schema of output:\n- $.total: expected number, got "5"'
    )


def test_field_names_that_are_not_identifiers_are_quoted_in_paths() -> None:
    schema = {
        "type": "object",
        "properties": {"unit price": {"type": "number"}, "o'clock": {"type": "string"}},
        "required": ["unit price", "o'clock"],
        "additionalProperties": False,
    }
    assert problems({"unit price": "x", "_id": 1}, schema) == [
        "$['unit price']: expected number, got \"x\"",
        "$['o\\'clock']: required field missing",
        "$['_id']: unexpected field",
    ]

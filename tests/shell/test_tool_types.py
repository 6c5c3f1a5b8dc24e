"""What a tool's parameter types offer the model and what its arguments become: one case
per kind of type (schema, a good value converted, a bad one refused in toolreel's words),
and the types that have no schema refused when the tool is declared."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import typing
import uuid
from typing import Annotated, Any, Literal, TypedDict

import anyio
import attrs
import jsonschema
import pydantic
import pytest
from pydantic import BaseModel, Field
from returns.result import Failure

from toolreel.core import ConfigError
from toolreel.shell import OutputTool, Tool, tool


class Opaque:
    """A class with no fields toolreel can see."""


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 2


class _Point(TypedDict):
    x: float


class Point(_Point, total=False):  # NotRequired[str] works only without `from __future__`
    label: str


@dataclasses.dataclass
class Span:
    start: int
    end: int = 0


@attrs.frozen
class Box:
    corner: Span
    tags: list[str] = attrs.field(factory=list)


class Place(BaseModel):
    """A place."""

    name: str
    population: int = Field(default=0, ge=0)


class Node(BaseModel):
    value: int
    children: list[Node] = []


def with_parameter(kind: Any) -> Tool:
    """A tool whose one parameter `x` has type `kind`."""

    def handler(x: Any) -> Any:
        return x

    handler.__annotations__ = {"x": kind, "return": Any}
    return tool(handler)


def schema_of(kind: Any) -> Any:
    return with_parameter(kind).parameters["properties"]["x"]


def converted(kind: Any, value: Any) -> Any:
    """The value the handler gets, or the error text the model reads."""
    result = with_parameter(kind).convert({"x": value})
    return result.failure() if isinstance(result, Failure) else result.unwrap()["x"]


# kind, its schema, a good value and what it becomes, a bad value and the problem told
CASES: list[tuple[Any, dict[str, Any], Any, Any, Any, str]] = [
    (str, {"type": "string"}, "a", "a", 1, "expected a string, got 1"),
    (int, {"type": "integer"}, 2.0, 2, 2.5, "expected an integer, got 2.5"),
    (float, {"type": "number"}, 2, 2.0, True, "expected a number, got True"),
    (bool, {"type": "boolean"}, False, False, "false", "expected true or false, got 'false'"),
    (Any, {}, {"a": [1]}, {"a": [1]}, None, ""),
    (
        Literal["a", "b"],
        {"enum": ["a", "b"], "type": "string"},
        "b",
        "b",
        "c",
        "expected 'a' or 'b', got 'c'",
    ),
    (Literal[1, True], {"enum": [1, True]}, True, True, 2, "expected 1 or True, got 2"),
    (Color, {"enum": ["red", "blue"], "type": "string"}, "blue", Color.BLUE, "RED", ""),
    (Size, {"enum": [1, 2], "type": "integer"}, 2, Size.LARGE, 3, "expected 1 or 2, got 3"),
    (
        datetime.datetime,
        {"type": "string", "format": "date-time"},
        "2025-06-01T12:30:00Z",
        datetime.datetime(2025, 6, 1, 12, 30, tzinfo=datetime.UTC),
        "noon",
        "expected an ISO 8601 date-time, got 'noon'",
    ),
    (
        datetime.date,
        {"type": "string", "format": "date"},
        "2025-06-01",
        datetime.date(2025, 6, 1),
        20250601,
        "expected an ISO 8601 date string, got 20250601",
    ),
    (
        datetime.time,
        {"type": "string", "format": "time"},
        "12:30",
        datetime.time(12, 30),
        "25:00",
        "expected an ISO 8601 time, got '25:00'",
    ),
    (
        uuid.UUID,
        {"type": "string", "format": "uuid"},
        "12345678-1234-5678-1234-567812345678",
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "1234",
        "expected a UUID, got '1234'",
    ),
    (
        decimal.Decimal,
        {"anyOf": [{"type": "number"}, {"type": "string"}]},
        "1.10",
        decimal.Decimal("1.10"),
        "one",
        "expected a decimal number, got 'one'",
    ),
    (
        int | None,
        {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        None,
        None,
        "1",
        "expected an integer, got '1'",
    ),
    (
        int | str,
        {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "7",
        "7",
        1.5,
        "expected an integer or a string, got 1.5",
    ),
    (
        list[dict[str, int]],
        {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "integer"}}},
        [{"a": 1}],
        [{"a": 1}],
        [{"a": 1}, {"b": "2"}],
        "expected an integer, got '2' @ $[1].b",
    ),
    (
        tuple[int, str],
        {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "minItems": 2,
            "maxItems": 2,
        },
        [1, "a"],
        (1, "a"),
        [1, 2],
        "expected a string, got 2 @ $[1]",
    ),
    (
        set[Color],
        {"type": "array", "items": {"enum": ["red", "blue"], "type": "string"}},
        ["red"],
        {Color.RED},
        ["green"],
        "expected 'red' or 'blue', got 'green' @ $[0]",
    ),
    (
        Point,
        {
            "type": "object",
            "properties": {"x": {"type": "number"}, "label": {"type": "string"}},
            "required": ["x"],
        },
        {"x": 1},
        {"x": 1.0},
        {"label": 3},
        "required field missing @ $.x; expected a string, got 3 @ $.label",
    ),
    (
        Box,
        {
            "type": "object",
            "properties": {
                "corner": {
                    "type": "object",
                    "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}},
                    "required": ["start"],
                },
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["corner"],
        },
        {"corner": {"start": 1}},
        Box(corner=Span(start=1)),
        {"corner": {"start": "1"}, "tags": [None]},
        "expected an integer, got '1' @ $.corner.start; expected a string, got None @ $.tags[0]",
    ),
    (
        Annotated[int, "How many"],
        {"type": "integer", "description": "How many"},
        3,
        3,
        3.5,
        "expected an integer, got 3.5",
    ),
    (
        list[Annotated[int, "One"]] | None,
        {
            "anyOf": [
                {"type": "array", "items": {"type": "integer", "description": "One"}},
                {"type": "null"},
            ]
        },
        [1],
        [1],
        [1.5],
        "expected an integer, got 1.5 @ $[0]",
    ),
]


@pytest.mark.parametrize(("kind", "schema", "good", "value", "bad", "problem"), CASES)
def test_each_kind_has_its_schema_and_its_values_are_checked(
    kind: Any, schema: dict[str, Any], good: Any, value: Any, bad: Any, problem: str
) -> None:
    assert schema_of(kind) == schema
    jsonschema.Draft202012Validator(schema).validate(good)  # what is offered takes it too
    got = converted(kind, good)
    assert got == value
    assert type(got) is type(value)
    if problem:
        assert converted(kind, bad) == f"argument 'x': {problem}"


@pytest.mark.parametrize(
    ("kind", "bad", "problem"),
    [
        (list[str], "abc", "expected a list, got 'abc'"),
        (list[int], {"a": 1}, "expected a list, got {'a': 1}"),
        (dict[str, object], [1], "expected an object, got [1]"),
        (tuple[int, int], [1], "expected a list of 2 items, got [1]"),
        (dict[str, int], {"a b": "1"}, "expected an integer, got '1' @ $['a b']"),
        (list[Box], "x", "expected a list, got 'x'"),
        (Box, {"corner": {"start": 1}, "tags": "ab"}, "expected a list, got 'ab' @ $.tags"),
    ],
)
def test_a_container_takes_only_its_json_kind(kind: Any, bad: Any, problem: str) -> None:
    assert converted(kind, bad) == f"argument 'x': {problem}"


def test_containers_of_scalars_are_converted_without_cattrs() -> None:
    kinds = [list[int], dict[str, list[float | None]], tuple[str, ...], set[Literal["a"]]]
    assert [with_parameter(kind).converters["x"].__module__ for kind in kinds] == [
        "toolreel.shell._strict"
    ] * len(kinds)
    assert with_parameter(Box).converters["x"].__module__ == "toolreel.shell._conversion"


def test_an_enum_refuses_a_members_name() -> None:
    assert converted(Color, "RED") == "argument 'x': expected 'red' or 'blue', got 'RED'"


def test_a_pydantic_model_is_described_and_validated_by_pydantic() -> None:
    assert schema_of(Place) == {
        "title": "Place",
        "description": "A place.",
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "population": {"type": "integer", "default": 0, "minimum": 0},
        },
        "required": ["name"],
    }
    assert converted(Place, {"name": "Delft"}) == Place(name="Delft")
    assert converted(Place, {"population": -1}) == (
        "argument 'x': required field missing @ $.name; "
        "must be greater than or equal to 0, got -1 @ $.population"
    )
    assert converted(Place, [1]) == "argument 'x': expected an object, got [1]"


def test_pydantic_metadata_makes_a_plain_type_pydantics() -> None:
    kind = Annotated[int, Field(gt=0, description="A count")]
    assert schema_of(kind) == {"type": "integer", "exclusiveMinimum": 0, "description": "A count"}
    assert converted(kind, 3) == 3
    assert converted(kind, 0) == "argument 'x': must be greater than 0, got 0"


@dataclasses.dataclass
class Trip:
    stops: list[Place]


def test_models_inside_containers_and_dataclasses_are_pydantics_whole() -> None:
    assert schema_of(dict[str, Place])["additionalProperties"]["title"] == "Place"
    assert converted(Trip, {"stops": [{"name": "A"}]}) == Trip(stops=[Place(name="A")])
    assert converted(Trip, {"stops": [{"name": 1}]}) == (
        "argument 'x': expected a string, got 1 @ $.stops[0].name"
    )


class Pair(BaseModel):
    left: Place
    right: Place


def test_pydantic_refs_are_inlined_and_a_recursive_models_defs_go_to_the_tools_root() -> None:
    @tool
    def visit(pair: Pair, tree: Node) -> str:
        return "ok"

    parameters = visit.parameters
    assert "$ref" not in json.dumps(parameters["properties"]["pair"])
    assert parameters["properties"]["pair"]["properties"]["left"]["title"] == "Place"
    assert parameters["$defs"]["Node"]["properties"]["children"]["items"] == {
        "$ref": "#/$defs/Node"
    }
    assert parameters["properties"]["tree"]["properties"]["children"]["items"] == {
        "$ref": "#/$defs/Node"
    }
    validator = jsonschema.Draft202012Validator(parameters)  # its refs resolve where they are
    left, right = {"name": "A"}, {"name": "B", "population": 2}
    validator.validate({"pair": {"left": left, "right": right}, "tree": {"value": 1}})
    deep = {"value": 1, "children": [{"value": 2, "children": [{"value": "x"}]}]}
    assert {e.json_path for e in validator.iter_errors({"pair": {}, "tree": deep})} == {
        "$.pair",  # left and right missing
        "$.tree.children[0].children[0].value",
    }
    assert converted(Node, {"value": 1, "children": [{"value": "x"}]}) == (
        "argument 'x': expected an integer, got 'x' @ $.children[0].value"
    )


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


def test_a_discriminated_union_keeps_its_branches_but_not_openapis_discriminator() -> None:
    pet = Annotated[Cat | Dog, Field(discriminator="kind")]
    schema = schema_of(pet)
    assert "discriminator" not in schema
    assert [branch["title"] for branch in schema["oneOf"]] == ["Cat", "Dog"]
    assert converted(pet, {"kind": "dog", "good": True}) == Dog(kind="dog", good=True)


def test_only_the_pydantic_parameters_go_through_pydantic() -> None:
    @tool
    def place(where: Place, count: int) -> str:
        return "ok"

    assert place.convert({"where": {"name": "a"}, "count": "2"}).failure() == (
        "argument 'count': expected an integer, got '2'"
    )


#: What Counted's validator was given, call by call.
seen: list[object] = []


class Counted(BaseModel):
    value: int

    @pydantic.model_validator(mode="before")
    @classmethod
    def count(cls, data: object) -> object:
        seen.append(data)
        return data


def test_each_argument_is_converted_once_per_run() -> None:
    seen.clear()

    @tool
    def use(item: Counted) -> int:
        return item.value

    assert anyio.run(use.run, '{"item": {"value": 4}}').unwrap() == "4"
    assert seen == [{"value": 4}]


def test_a_pydantic_return_value_is_sent_as_its_json() -> None:
    @tool
    def find(name: str) -> Place:
        return Place(name=name, population=5)

    assert anyio.run(find.run, '{"name": "Delft"}').unwrap() == (
        '{"name": "Delft", "population": 5}'
    )


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        (Opaque, "Opaque has no JSON Schema"),
        (list[Opaque], "Opaque has no JSON Schema"),
        (dict[int, str], "dict[int, str]: JSON object keys are strings"),
        (Literal[b"x"], "Literal[b'x']: b'x' is not a JSON value"),
        (typing.Callable[[int], int], "Callable[[int], int] has no JSON Schema"),
    ],
)
def test_a_type_with_no_schema_is_a_config_error_naming_function_and_parameter(
    kind: Any, why: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        with_parameter(kind)
    assert caught.value.field == "with_parameter.<locals>.handler(x)"
    assert caught.value.value == kind
    assert why in caught.value.allowed
    assert caught.value.allowed.startswith("a type toolreel can describe to the model: str, ")


@dataclasses.dataclass
class Chain:
    next: Chain | None


def test_a_recursive_dataclass_is_refused_with_a_way_out() -> None:
    with pytest.raises(ConfigError, match="contains itself: a recursive type needs a Pydantic"):
        with_parameter(Chain)


class Holder(BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    thing: Opaque


def test_a_model_pydantic_cannot_describe_is_refused_with_pydantics_reason() -> None:
    with pytest.raises(ConfigError, match=r"Holder: Pydantic cannot describe it: "):
        with_parameter(Holder)


def test_an_annotation_that_cannot_be_resolved_is_a_config_error() -> None:
    def handler(x: Missing) -> None:  # type: ignore[name-defined]  # noqa: F821
        return None

    with pytest.raises(ConfigError, match=r"NameError: name 'Missing' is not defined"):
        tool(handler)


def test_the_short_form_refuses_a_type_with_no_schema_too() -> None:
    with pytest.raises(ConfigError) as caught:
        tool("use", "Use it", {"x": Opaque})(lambda args: args)
    assert caught.value.field == "use(x)"


def test_an_output_tool_takes_a_typed_dict_and_refuses_what_is_not_an_object() -> None:
    output = OutputTool.of(Point)
    assert output.parameters["required"] == ["x"]
    assert output.structure('{"x": "1"}').failure() == ["$.x: expected a number, got '1'"]
    for kind in (list[int], int, Opaque):
        with pytest.raises(ConfigError, match="a Pydantic model, a TypedDict, an attrs class"):
            OutputTool.of(kind)

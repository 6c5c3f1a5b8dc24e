"""A pydantic-ai-style tool module (pydantic_tools.py) and a Pydantic output, end to end:
through `Client`/`execute_agent`, the real OpenAI adapter and HTTP on 127.0.0.1 (the
scripted server). What is checked is what crossed the wire — the schemas the model
was offered, the errors it was sent back — and what the tools and the agent received."""

from __future__ import annotations

import datetime
import json
from typing import Any

import anyio
import pydantic_tools
import pytest
from pydantic_tools import Forecast, Location, pack, to_fahrenheit, weather

from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    OutputTool,
    execute_agent,
    run,
)
from toolreel.shell.scripted import ScriptedServer, text, tool_calls

LOCATION_SCHEMA = {
    "title": "Location",
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city's name, e.g. 'Delft'"},
        "country": {"type": "string", "default": "NL", "minLength": 2, "maxLength": 2},
    },
    "required": ["city"],
}


@pytest.fixture(autouse=True)
def _clear_received() -> None:
    pydantic_tools.calls.clear()


def offered(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tools a request offered, by name: description and parameters."""
    return {t["function"]["name"]: t["function"] for t in request["tools"]}


def tool_message(request: dict[str, Any], call_id: str) -> str:
    [message] = [m for m in request["messages"] if m.get("tool_call_id") == call_id]
    return str(message["content"])


def options(server: ScriptedServer, **extra: Any) -> AgentOptions:
    return AgentOptions(
        model="test",
        base_url=server.url,
        api_key="sk-test",
        auto_execute_tools=True,
        tools=[weather, to_fahrenheit, pack],
        **extra,
    )


def test_the_model_is_offered_pydantics_schemas_and_the_docstrings_descriptions() -> None:
    with ScriptedServer([text("Hello.")]) as server:
        anyio.run(run, "hi", options(server))
        tools = offered(server.requests[0])
    assert tools["weather"] == {
        "name": "weather",
        "description": (
            "Get the weather forecast for a place and a day.\n\n"
            "Use this before answering any question about the weather.\n\n"
            "Returns:\n    The forecast."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "loc": {**LOCATION_SCHEMA, "description": "Where to forecast."},
                "day": {
                    "type": "string",
                    "format": "date",
                    "description": "The day to forecast (ISO 8601).",
                },
                "units": {
                    "type": "string",
                    "enum": ["metric", "imperial"],
                    "description": "The unit system of the temperatures.",
                },
            },
            "required": ["loc", "day"],
        },
    }
    assert tools["to_fahrenheit"]["description"] == "Convert a temperature to degrees Fahrenheit."
    assert tools["to_fahrenheit"]["parameters"]["properties"] == {
        "celsius": {"type": "number", "minimum": -273.15, "description": "Degrees Celsius"}
    }
    assert tools["pack"]["parameters"]["properties"] == {
        "stops": {
            "type": "array",
            "items": {**LOCATION_SCHEMA, "description": "A place on Earth."},
            "description": "The places visited, in order.",
        },
        "nights": {"type": "integer", "description": "Nights away"},
        "note": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "Anything the traveller said.",
        },
    }


def test_invalid_arguments_are_sent_back_and_the_corrected_call_gets_pydantic_models() -> None:
    wrong = {"loc": {"city": "delft", "country": "NLD"}, "day": "tomorrow", "units": "kelvin"}
    right = {"loc": {"city": "Delft"}, "day": "2025-06-01"}
    script = [
        tool_calls(("c1", "weather", wrong)),
        tool_calls(("c2", "weather", right), ("c3", "to_fahrenheit", {"celsius": 21.5})),
        text("Sunny, 21.5 °C (70.7 °F)."),
    ]
    with ScriptedServer(script) as server:
        result = anyio.run(run, "Weather in Delft on 1 June?", options(server))
        requests = server.requests
    assert tool_message(requests[1], "c1") == (
        "Invalid arguments for tool weather: "
        "argument 'loc': Value error, write the city with a capital letter, got 'delft' @ $.city; "
        "String should have at most 2 characters, got 'NLD' @ $.country; "
        "argument 'day': expected an ISO 8601 date, got 'tomorrow'; "
        "argument 'units': expected 'metric' or 'imperial', got 'kelvin'. "
        "Fix the arguments and call the tool again."
    )
    assert sorted(pydantic_tools.calls, key=lambda call: call[0]) == [  # run concurrently
        ("to_fahrenheit", (21.5,)),
        ("weather", (Location(city="Delft", country="NL"), datetime.date(2025, 6, 1), "metric")),
    ]
    assert json.loads(tool_message(requests[2], "c2")) == {
        "location": {"city": "Delft", "country": "NL"},
        "day": "2025-06-01",
        "high_c": 21.5,
        "conditions": "sunny",
    }
    assert tool_message(requests[2], "c3") == "70.7"
    assert result.text == "Sunny, 21.5 °C (70.7 °F)."


def test_a_list_of_models_and_a_field_constraint_are_checked_by_pydantic() -> None:
    script = [
        tool_calls(
            ("c1", "pack", {"stops": [{"city": "Delft"}, {"town": "Gouda"}], "nights": 2.5}),
            ("c2", "to_fahrenheit", {"celsius": -300}),
        ),
        tool_calls(("c3", "pack", {"stops": [{"city": "Delft"}, {"city": "Gouda"}], "nights": 2})),
        text("Pack light."),
    ]
    with ScriptedServer(script) as server:
        anyio.run(run, "Pack for Delft and Gouda", options(server))
        requests = server.requests
    assert tool_message(requests[1], "c1") == (
        "Invalid arguments for tool pack: "
        "argument 'stops': required field missing @ $[1].city; "
        "argument 'nights': expected an integer, got 2.5. "
        "Fix the arguments and call the tool again."
    )
    assert tool_message(requests[1], "c2") == (
        "Invalid arguments for tool to_fahrenheit: "
        "argument 'celsius': must be greater than or equal to -273.15, got -300. "
        "Fix the arguments and call the tool again."
    )
    assert pydantic_tools.calls == [
        ("pack", ([Location(city="Delft"), Location(city="Gouda")], 2, None)),
    ]
    assert tool_message(requests[2], "c3") == "2 nights: Delft, Gouda"


def forecast_agent() -> AgentDefinition[str, Forecast]:
    return AgentDefinition(
        system_prompt="You forecast the weather.",
        build_prompt=lambda question: question,
        helpers=[weather],
        output=OutputTool.of(Forecast, name="record_forecast", description="Record it."),
    )


def test_a_pydantic_output_is_offered_its_schema_validated_and_corrected() -> None:
    wrong = {
        "location": {"city": "Delft"},
        "day": "2025-13-01",
        "high_c": "warm",
        "conditions": "snow",
    }
    right = {**wrong, "day": "2025-06-01", "high_c": 21.5, "conditions": "sunny"}
    script = [
        tool_calls(("c1", "weather", {"loc": {"city": "Delft"}, "day": "2025-06-01"})),
        tool_calls(("c2", "record_forecast", wrong)),
        tool_calls(("c3", "record_forecast", right)),
    ]
    with ScriptedServer(script) as server:
        result = anyio.run(
            lambda: execute_agent(
                forecast_agent(),
                "Weather in Delft on 1 June?",
                AgentOptions(model="test", base_url=server.url, api_key="sk-test"),
            )
        )
        requests = server.requests
    output_tool = offered(requests[0])["record_forecast"]
    assert output_tool["parameters"] == {
        "title": "Forecast",
        "description": "The weather expected at a place on a day.",
        "type": "object",
        "properties": {
            "location": LOCATION_SCHEMA | {"description": "A place on Earth."},
            "day": {"type": "string", "format": "date"},
            "high_c": {"type": "number"},
            "conditions": {"type": "string", "enum": ["sunny", "cloudy", "rain"]},
        },
        "required": ["location", "day", "high_c", "conditions"],
    }
    problems = (
        "$.day: must be a valid date or datetime, month value is outside expected range "
        "of 1-12, got '2025-13-01'",
        "$.high_c: expected a number, got 'warm'",
        "$.conditions: expected 'sunny', 'cloudy' or 'rain', got 'snow'",
    )
    assert isinstance(result, AgentSuccess)
    assert result.metadata.validation_errors[0].problems == problems
    fed_back = requests[2]["messages"][-1]
    assert fed_back["role"] == "user"
    assert all(problem in fed_back["content"] for problem in problems)
    assert result.output == Forecast(
        location=Location(city="Delft"),
        day=datetime.date(2025, 6, 1),
        high_c=21.5,
        conditions="sunny",
    )

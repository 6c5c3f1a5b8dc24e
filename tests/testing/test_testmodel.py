"""TestModel as a user meets it: in `run`, a `Client`, `execute_agent`, journals and replay."""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

import anyio
import attrs
import pytest

from toolreel.adapters import MemoryJournal
from toolreel.core import ConfigError, ModelRequest, ToolSpec
from toolreel.core.outcomes import FinishReason
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    Client,
    Connection,
    OutputTool,
    Recording,
    execute_agent,
    run,
    tool,
    verify,
)
from toolreel.testing import TestModel

seen: list[tuple[str, dict[str, Any]]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    seen.append(("add", {"a": a, "b": b}))
    return a + b


@tool
def forecast(city: str, unit: Literal["c", "f"] = "c", days: int = 1) -> str:
    """The weather."""
    seen.append(("forecast", {"city": city, "unit": unit, "days": days}))
    return f"sunny in {city}"


@attrs.frozen
class Report:
    city: str
    temperature: float
    tags: list[str]


def go(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run an async API call to its end."""
    return anyio.run(functools.partial(function, *args, **kwargs))


@pytest.fixture(autouse=True)
def _forget() -> None:
    seen.clear()


def test_run_calls_each_tool_once_in_one_round_then_answers_with_the_results_as_json() -> None:
    result = go(run, "Plan my day", AgentOptions(tools=[add, forecast]), model=TestModel())
    [round_] = result.rounds
    assert sorted(call.name for call in round_.tool_calls) == ["add", "forecast"]
    assert sorted(name for name, _ in seen) == ["add", "forecast"]  # really executed, once
    total = next(args["a"] + args["b"] for name, args in seen if name == "add")
    city = next(args["city"] for name, args in seen if name == "forecast")
    assert json.loads(result.text) == {"add": total, "forecast": f"sunny in {city}"}
    assert result.reason is FinishReason.COMPLETED


def test_pinned_arguments_call_tools_and_text_are_used() -> None:
    model = TestModel(call_tools=["add"], args={"add": {"a": 2, "b": 3}}, text="done")
    result = go(run, "Add", AgentOptions(tools=[add, forecast]), model=model)
    assert seen == [("add", {"a": 2, "b": 3})]
    assert result.text == "done"


def test_the_same_seed_makes_the_same_session_and_each_turn_calls_again() -> None:
    async def two_turns(seed: int) -> list[Any]:
        options = AgentOptions(tools=[forecast], auto_execute_tools=True)
        async with Client(options, model=TestModel(seed=seed)) as client:
            for prompt in ("one", "two"):
                await client.query(prompt)
                await client.wait()
            return [m.tool_rounds for m in client.history if m.role == "assistant"]

    first = anyio.run(two_turns, 5)
    assert len(first) == 2 and all(len(rounds) == 1 for rounds in first)  # one round per turn
    assert anyio.run(two_turns, 5) == first


def test_tool_choice_none_means_text_only() -> None:
    options = AgentOptions(tools=[add], tool_choice="none")
    result = go(run, "Hi", options, model=TestModel(text="hello"))
    assert (result.text, result.rounds, seen) == ("hello", (), [])


def test_an_agent_calls_its_helpers_then_the_output_tool_with_a_valid_output() -> None:
    definition = AgentDefinition(
        build_prompt=lambda city: f"Report on {city}",
        output=OutputTool.of(Report, name="report"),
        helpers=[forecast],
    )
    result = go(execute_agent, definition, "Oslo", Connection(), model=TestModel())
    assert isinstance(result, AgentSuccess)
    assert isinstance(result.output, Report) and isinstance(result.output.tags, list)
    [attempt] = [m for m in result.metadata.history if m.role == "assistant"]
    names = [[call.name for call in round_.tool_calls] for round_ in attempt.tool_rounds]
    assert names == [["forecast"], ["report"]]
    assert result.metadata.attempts == 1


def test_a_reflective_agent_gets_its_output_then_submit_and_a_given_output_is_used() -> None:
    shown: list[Report] = []
    definition = AgentDefinition(
        build_prompt=lambda city: city,
        output=OutputTool.of(Report, reflection_handler=shown.append),
    )
    given = {"city": "Oslo", "temperature": 4.5, "tags": ["cold"]}
    result = go(execute_agent, definition, "x", Connection(), model=TestModel(output=given))
    assert isinstance(result, AgentSuccess)
    assert result.output == Report(city="Oslo", temperature=4.5, tags=["cold"]) == shown[0]
    [attempt] = [m for m in result.metadata.history if m.role == "assistant"]
    assert [r.tool_calls[0].name for r in attempt.tool_rounds] == ["output", "submit"]


def test_an_agent_from_a_json_schema_output_validates_with_jsonschema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 1, "maximum": 5},
            "verdict": {"enum": ["keep", "drop"]},
        },
        "required": ["score", "verdict"],
        "additionalProperties": False,
    }
    definition = AgentDefinition(build_prompt=str, output=OutputTool.from_schema(schema))
    result = go(execute_agent, definition, "x", Connection(), model=TestModel(seed=3))
    assert isinstance(result, AgentSuccess)
    assert 1 <= result.output["score"] <= 5 and result.output["verdict"] in ("keep", "drop")


def test_a_session_it_played_is_journaled_replays_and_reruns_offline() -> None:
    journal = MemoryJournal()
    options = AgentOptions(tools=[add, forecast], journal=journal, session_id="s")
    result = go(run, "Plan", options, model=TestModel())
    verify(journal, "s")  # the recorded session replays through the reducer
    recording = Recording(journal, "s")
    seen.clear()
    offline = AgentOptions(tools=[add, forecast], auto_execute_tools=True)
    assert go(recording.rerun, offline) == [result.reason]
    assert recording.history == result.history
    assert seen == []  # the recorded outputs answered


def test_it_records_what_it_was_asked() -> None:
    model = TestModel(text="ok")
    go(run, "Hi", AgentOptions(system_prompt="Be brief."), model=model)
    [request] = model.requests
    assert isinstance(request, ModelRequest)
    assert (request.system, request.messages[-1].content) == ("Be brief.", "Hi")


@pytest.mark.parametrize(
    ("given", "field"),
    [({"call_tools": "add"}, "call_tools"), ({"args": {"add": 1}}, "args")],
)
def test_bad_settings_are_config_errors(given: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as raised:
        TestModel(**given)
    assert raised.value.field == field


def test_a_tool_spec_is_read_from_the_request_not_from_python() -> None:
    spec = ToolSpec(
        name="remote",
        parameters={
            "type": "object",
            "properties": {"q": {"type": "string", "minLength": 2}},
            "required": ["q"],
        },
    )
    request = ModelRequest(model="m", system=None, messages=(), tools=(spec,))

    async def events() -> list[Any]:
        return [event async for event in TestModel().stream(request)]

    started, arguments, done = anyio.run(events)
    assert (started.name, done.finish_reason) == ("remote", "tool_calls")
    assert len(json.loads(arguments.fragment)["q"]) >= 2

"""FunctionModel(fn): a Python function plays the model, given the messages and the tools."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import attrs
import pytest

from toolreel.adapters import EventModel
from toolreel.core import (
    ChatMessage,
    ConfigError,
    ModelRequest,
    ModelResponded,
    TextDelta,
    UsageError,
)
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    Connection,
    OutputTool,
    execute_agent,
    run,
    tool,
)
from toolreel.testing import Call, FunctionModel, ModelInfo, ToolCalls, call


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def go(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run an async API call to its end."""
    return anyio.run(functools.partial(function, *args, **kwargs))


def calculator(messages: tuple[ChatMessage, ...], info: ModelInfo) -> str | ToolCalls:
    """Call add on the first call; then say what it returned."""
    if not messages[-1].tool_rounds:
        return ToolCalls([call("add", a=1, b=2), call("add", a=3, b=4)], text="Adding.")
    results = [r.content for r in messages[-1].tool_rounds[0].results]
    return f"{' and '.join(results)} ({', '.join(spec.name for spec in info.tools)})"


def test_a_sync_function_gets_messages_and_tools_and_returns_text_or_calls() -> None:
    model = FunctionModel(calculator)
    result = go(run, "Add", AgentOptions(tools=[add], system_prompt="Be exact."), model=model)
    assert result.text == "3 and 7 (add)"
    [round_] = result.rounds
    assert round_.assistant_text == "Adding."
    assert [(c.id, c.arguments) for c in round_.tool_calls] == [
        ("call_1", '{"a": 1, "b": 2}'),
        ("call_2", '{"a": 3, "b": 4}'),
    ]
    assert [r.system for r in model.requests] == ["Be exact.", "Be exact."]


def test_an_async_function_works_the_same() -> None:
    async def answer(messages: tuple[ChatMessage, ...], info: ModelInfo) -> Any:
        await anyio.sleep(0)
        return calculator(messages, info)

    result = go(run, "Add", AgentOptions(tools=[add]), model=FunctionModel(answer))
    assert result.text == "3 and 7 (add)"


def test_a_list_mixes_text_and_calls_and_ids_stay_unique_across_rounds() -> None:
    def answer(messages: tuple[ChatMessage, ...], info: ModelInfo) -> Any:
        rounds = messages[-1].tool_rounds
        if len(rounds) < 2:
            return ["Round ", str(len(rounds)), call("add", a=len(rounds), b=1)]
        return "done"

    result = go(run, "Go", AgentOptions(tools=[add]), model=FunctionModel(answer))
    assert [r.assistant_text for r in result.rounds] == ["Round 0", "Round 1"]
    assert [r.tool_calls[0].id for r in result.rounds] == ["call_1", "call_2"]


def test_a_generator_streams_its_pieces_as_they_come() -> None:
    def sync_stream(messages: tuple[ChatMessage, ...], info: ModelInfo) -> Iterator[str]:
        yield "Hel"
        yield "lo"

    async def async_stream(
        messages: tuple[ChatMessage, ...], info: ModelInfo
    ) -> AsyncIterator[Any]:
        for piece in ("Hel", "lo"):
            await anyio.sleep(0)
            yield piece

    request = ModelRequest(model="m", system=None, messages=(), tools=())
    for function in (sync_stream, async_stream):

        async def events(model: FunctionModel) -> list[Any]:
            return [event async for event in model.stream(request)]

        *deltas, end = anyio.run(events, FunctionModel(function))
        assert deltas == [TextDelta(text="Hel"), TextDelta(text="lo")]
        assert isinstance(end, ModelResponded) and end.finish_reason == "stop"
        assert go(run, "Hi", AgentOptions(), model=FunctionModel(function)).text == "Hello"


def test_an_agent_tells_the_function_its_output_tool_apart_from_the_helpers() -> None:
    told: list[tuple[list[str], list[str]]] = []

    def answer(messages: tuple[ChatMessage, ...], info: ModelInfo) -> Call:
        told.append(([s.name for s in info.tools], [s.name for s in info.output_tools]))
        return Call(name="output", arguments={"total": 7})

    @attrs.frozen
    class Sum:
        total: int

    definition = AgentDefinition(build_prompt=str, output=OutputTool.of(Sum), helpers=[add])
    result = go(execute_agent, definition, "x", Connection(), model=FunctionModel(answer))
    assert isinstance(result, AgentSuccess) and result.output == Sum(total=7)
    assert told == [(["add"], ["output"])]
    go(run, "Hi", AgentOptions(tools=[add]), model=FunctionModel(lambda m, info: "ok"))
    # outside an agent, no tool is an output tool (the context is left as it was)


@pytest.mark.parametrize("wrong", [5, None, {"text": "hi"}, [call("add"), 3.5]])
def test_returning_a_wrong_type_is_a_usage_error_saying_what_to_return(wrong: object) -> None:
    model = FunctionModel(lambda messages, info: wrong)
    with pytest.raises(UsageError, match=r"FunctionModel's function gave a .*return \(or yield\)"):
        go(run, "Hi", AgentOptions(tools=[add]), model=model)


def test_a_function_is_required() -> None:
    with pytest.raises(ConfigError) as raised:
        FunctionModel("not a function")  # type: ignore[arg-type]
    assert raised.value.field == "function"


def test_the_low_level_event_model_still_plays_core_events() -> None:
    model = EventModel(lambda request: [TextDelta(text="hi"), ModelResponded()])
    assert go(run, "Hi", AgentOptions(), model=model).text == "hi"

"""Text tool calls recovered end to end: a scripted OpenAI-compatible server on 127.0.0.1.

The server streams (or sends whole) answers whose calls are written as text,
the way a small local model without a tool parser does; a `Client` with
`tool_call_recovery` runs them, the journal replays exactly, and the command
line passes `--tool-call-recovery` on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner

from toolreel.adapters._providers import HttpModel, OllamaCodec, with_recovery
from toolreel.cli import cli
from toolreel.core import (
    ConfigError,
    Finish,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolRound,
    ToolSpec,
)
from toolreel.shell import AgentOptions, Client, Connection, open_journal, replay, tool
from toolreel.shell._replay import Session
from toolreel.testing import MakeScriptedModel, ScriptedModel, text

WEATHER_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
asked: list[str] = []


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    asked.append(city)
    return f"sunny in {city}"


def one_turn(model: ScriptedModel, prompt: str = "Weather in Paris?", **options: Any) -> Finish:
    """One turn through a Client over HTTP, tools executed."""
    opts = model.options(tools=[get_weather], auto_execute_tools=True, **options)

    async def turn() -> Finish:
        async with Client(opts) as client:
            await client.query(prompt)
            finish = await client.wait()
            assert finish is not None
            return finish

    return anyio.run(turn)


def only_round(finish: Finish) -> ToolRound:
    """The turn's one tool round."""
    [tool_round] = finish.rounds
    return tool_round


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_client_runs_the_call_a_model_wrote_as_hermes_text(
    scripted_model: MakeScriptedModel, stream: bool
) -> None:
    asked.clear()
    model = scripted_model([text("Let me check.\n" + WEATHER_CALL), text("It is sunny.")])
    finish = one_turn(model, tool_call_recovery="hermes", stream=stream)
    assert finish.text == "It is sunny."
    tool_round = only_round(finish)
    assert tool_round.assistant_text == "Let me check.\n"
    assert [(call.name, json.loads(call.arguments)) for call in tool_round.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert asked == ["Paris"]
    follow_up = model.requests[1]["messages"]
    assert follow_up[-2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert follow_up[-1] == {
        "role": "tool",
        "tool_call_id": tool_round.tool_calls[0].id,
        "content": "sunny in Paris",
    }


def test_without_recovery_the_text_is_the_answer(scripted_model: MakeScriptedModel) -> None:
    asked.clear()
    model = scripted_model([text(WEATHER_CALL)])
    finish = one_turn(model)
    assert (finish.text, finish.rounds, asked) == (WEATHER_CALL, (), [])


def test_a_broken_call_is_answered_with_the_problem_for_the_model_to_read(
    scripted_model: MakeScriptedModel,
) -> None:
    asked.clear()
    broken = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"</tool_call>'
    model = scripted_model([text(broken), text("Sorry.")])
    finish = one_turn(model, tool_call_recovery="auto")
    [result] = only_round(finish).results
    assert result.is_error and "arguments are not valid JSON" in result.content
    assert asked == []
    assert "not valid JSON" in model.requests[1]["messages"][-1]["content"]


def test_a_bare_llama_json_answer_naming_a_tool_is_a_call_and_the_journal_replays(
    scripted_model: MakeScriptedModel, tmp_path: Path
) -> None:
    asked.clear()
    bare = '{"name": "get_weather", "parameters": {"city": "Oslo"}}'
    model = scripted_model([text(bare), text("Sunny.")])
    path = tmp_path / "session.jsonl"
    one_turn(model, tool_call_recovery="llama3", journal=str(path), session_id="s")
    assert asked == ["Oslo"]
    journal = open_journal(path)
    try:
        rebuilt = replay(journal, "s")
    finally:
        journal.close()
    assert isinstance(rebuilt, Session)


def test_recovery_is_refused_for_a_provider_with_native_tool_calls() -> None:
    with pytest.raises(ConfigError, match="tool_call_recovery"):
        Connection(provider="anthropic", tool_call_recovery="auto")
    with pytest.raises(ConfigError, match="tool_call_recovery"):
        AgentOptions(model="m", tool_call_recovery="qwen")  # type: ignore[arg-type]


def test_the_command_line_passes_tool_call_recovery_on(scripted_model: MakeScriptedModel) -> None:
    call = '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'
    model = scripted_model([text(call), text("5")])
    assert model.server is not None
    args = ["run", "2 + 3?", "--base-url", model.server.url, "--model", "scripted"]
    args += ["--tools", "toolreel.shell.demo:TOOLS", "--tool-call-recovery", "hermes"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith("5")
    assert model.requests[1]["messages"][-1]["role"] == "tool"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_the_ollama_codec_recovers_a_mistral_call_through_the_http_driver(stream: bool) -> None:
    content = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Rome"}}]'
    if stream:
        pieces = [content[i : i + 5] for i in range(0, len(content), 5)]
        lines = [{"message": {"content": piece}, "done": False} for piece in pieces]
        lines.append({"message": {"content": ""}, "done": True, "done_reason": "stop"})
    else:
        lines = [{"message": {"content": content}, "done": True, "done_reason": "stop"}]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    transport = httpx2.MockTransport(lambda _: httpx2.Response(200, content=body))
    codec = with_recovery(OllamaCodec(), "mistral")
    spec = ToolSpec(name="get_weather")
    request = ModelRequest(model="m", system=None, messages=(), tools=(spec,))

    async def events() -> list[ModelEvent]:
        model = HttpModel(codec, stream=stream, transport=transport)
        try:
            return [event async for event in model.stream(request)]
        finally:
            await model.aclose()

    assert anyio.run(events) == [
        ToolCallStarted(index=0, call_id="", name="get_weather"),
        ToolCallArgumentsDelta(index=0, fragment='{"city": "Rome"}'),
        ModelResponded(finish_reason="stop"),
    ]

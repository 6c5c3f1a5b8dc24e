"""Ollama native /api/chat codec against the recorded examples (Ollama's own API reference).

Ollama's OpenAI-compatible /v1 traffic (`ollama_openai_compat_*`) is tested with
the OpenAI codec in test_openai.py. The live test runs only against a real server.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_openai import MULTIPLY, assert_multiplied, config_of, drive, multiply, terminal_last
from traffic import TRAFFIC, chunkings, decode_stream, jsonable, load, response_bytes

from toolreel.adapters import HttpModel, OllamaCodec
from toolreel.core import (
    CallModel,
    ChatMessage,
    LoopConfig,
    ModelCallFailed,
    ModelRequest,
    ModelResponded,
    PromptSubmitted,
    RunTool,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolResult,
    ToolRound,
    Usage,
    initial_state,
    step,
)

CODEC = OllamaCodec()
STREAMS = ["ollama_native_chat_stream_tool_call"]
BODIES = ["ollama_native_chat_nonstream_tool_call", "ollama_native_chat_tool_result_followup"]


def test_every_native_capture_is_covered() -> None:
    names = {p.name.split(".")[0] for p in TRAFFIC.iterdir() if p.name.startswith("ollama_native_")}
    assert names == {*STREAMS, *BODIES}


# 1. Decoding ---------------------------------------------------------------------


@pytest.mark.parametrize("case", STREAMS)
def test_stream_decodes_alike_in_every_chunking(case: str, snapshot: Any) -> None:
    body = response_bytes(load(case))
    decoded = {how: decode_stream(CODEC, chunks) for how, chunks in chunkings(body).items()}
    assert decoded["lines"] == decoded["whole"]
    assert decoded["bytes"] == decoded["whole"]
    assert decoded["random"] == decoded["whole"]
    assert terminal_last(decoded["whole"])
    assert jsonable(decoded["whole"]) == snapshot


@pytest.mark.parametrize("case", BODIES)
def test_body_decodes(case: str, snapshot: Any) -> None:
    events = CODEC.decode_body(response_bytes(load(case)))
    assert terminal_last(events)
    # The reference shows the body pretty-printed: a whole body is parsed, not split in lines.
    pretty = json.dumps(load(case)["response"]["body"], indent=2).encode()
    assert CODEC.decode_body(pretty) == events
    assert jsonable(events) == snapshot


def test_streamed_call_arrives_whole_with_object_arguments_and_no_id() -> None:
    events = decode_stream(CODEC, [response_bytes(load("ollama_native_chat_stream_tool_call"))])
    assert events == [
        # No id: the core assigns call_<turn>_<iteration>_<index>.
        ToolCallStarted(index=0, call_id="", name="get_weather"),
        ToolCallArgumentsDelta(index=0, fragment='{"city": "Tokyo"}'),
        # done_reason is "stop" although the model called a tool.
        ModelResponded(finish_reason="stop", usage=Usage(input_tokens=169, output_tokens=15)),
    ]


def test_the_core_gives_the_id_less_call_an_id() -> None:
    config = config_of(load("ollama_native_chat_stream_tool_call")["request"]["body"])
    state, _ = step(initial_state(config), PromptSubmitted(text="what is the weather in tokyo?"))
    events = decode_stream(CODEC, [response_bytes(load("ollama_native_chat_stream_tool_call"))])
    for event in events:
        state, effects = step(state, event)
    [run] = [e for e in effects if isinstance(e, RunTool)]
    assert run.call == ToolCall(id="call_1_1_0", name="get_weather", arguments='{"city": "Tokyo"}')


def test_final_answer_text_and_usage() -> None:
    events = CODEC.decode_body(response_bytes(load("ollama_native_chat_tool_result_followup")))
    assert events == [
        TextDelta(text="The current temperature in Toronto is 11°C."),
        ModelResponded(finish_reason="stop", usage=Usage(input_tokens=94, output_tokens=11)),
    ]


# 2. Encoding ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "case", ["ollama_native_chat_stream_tool_call", "ollama_native_chat_nonstream_tool_call"]
)
def test_core_first_request_encodes_as_captured(case: str) -> None:
    captured = load(case)["request"]["body"]
    state, effects = step(
        initial_state(config_of(captured)), PromptSubmitted(text=captured["messages"][0]["content"])
    )
    [call] = [e for e in effects if isinstance(e, CallModel)]
    assert CODEC.encode(call.request, stream=captured["stream"]) == captured


def test_tool_result_followup_encodes_as_captured() -> None:
    captured = load("ollama_native_chat_tool_result_followup")["request"]["body"]
    # The history as the core stores it: the turn so far is one assistant message
    # with one round (no text, the call with the id the core assigned, its result).
    weather = ToolCall(id="call_1_1_0", name="get_weather", arguments='{"city": "Toronto"}')
    request = ModelRequest(
        model="llama3.2",
        system=None,
        messages=(
            ChatMessage(role="user", content="what is the weather in Toronto?"),
            ChatMessage(
                role="assistant",
                content="",
                tool_rounds=(
                    ToolRound(
                        assistant_text="",
                        tool_calls=(weather,),
                        results=(
                            ToolResult(
                                call_id="call_1_1_0",
                                name="get_weather",
                                content="11 degrees celsius",
                            ),
                        ),
                    ),
                ),
            ),
        ),
        tools=config_of(captured).tools,
    )
    # Identical, key for key: Ollama pairs results with calls by `tool_name`, so the id stays home.
    assert CODEC.encode(request, stream=False) == captured


# 3. Properties over the captures -----------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(cut=st.floats(0, 1), points=st.lists(st.integers(0, 10_000), max_size=30))
def test_truncated_and_rechunked_stream_keeps_the_contract(cut: float, points: list[int]) -> None:
    body = response_bytes(load("ollama_native_chat_stream_tool_call"))
    whole = decode_stream(CODEC, [body])
    marks = sorted(min(p, len(body)) for p in points)
    pieces = [body[a:b] for a, b in zip([0, *marks], [*marks, len(body)], strict=True)]
    assert decode_stream(CODEC, pieces) == whole
    events = decode_stream(CODEC, [body[: int(len(body) * cut)]])
    assert terminal_last(events)


@settings(max_examples=100, deadline=None)
@given(case=st.sampled_from(BODIES), cut=st.integers(0, 10_000))
def test_truncated_bodies_fail_without_raising(case: str, cut: int) -> None:
    body = response_bytes(load(case)).rstrip()
    events = CODEC.decode_body(body[: min(cut, len(body) - 1)])
    assert terminal_last(events) and isinstance(events[-1], ModelCallFailed)


# Live ------------------------------------------------------------------------------


@pytest.mark.live
def test_live_ollama_two_leg_tool_conversation() -> None:
    """Set TOOLREEL_OLLAMA_BASE_URL (e.g. http://127.0.0.1:11434) and TOOLREEL_OLLAMA_MODEL
    (a model with tool support, e.g. qwen3:4b or llama3.2)."""
    base_url = os.environ.get("TOOLREEL_OLLAMA_BASE_URL")
    model_name = os.environ.get("TOOLREEL_OLLAMA_MODEL")
    if not base_url or not model_name:
        pytest.skip(
            "live: set TOOLREEL_OLLAMA_BASE_URL and TOOLREEL_OLLAMA_MODEL to talk to Ollama"
        )
    config = LoopConfig(model=model_name, tools=(MULTIPLY,), max_iterations=3)
    prompt = "What is 1231 * 2331? Use the multiply tool, then answer with the number."
    model = HttpModel(OllamaCodec(), base_url=base_url)
    assert_multiplied(asyncio.run(drive(model, config, prompt, {"multiply": multiply})))

"""The Anthropic codec on hand-made requests and responses (the corpus is in conformance/)."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreel.adapters import AnthropicCodec, HttpModel, Secret
from toolreel.core import (
    CallModel,
    ChatMessage,
    Event,
    Finish,
    LoopConfig,
    ModelCallFailed,
    ModelRequest,
    ModelResponded,
    PromptSubmitted,
    Reasoning,
    ReasoningDelta,
    RunTool,
    StartTimer,
    TextDelta,
    TimerFired,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolResult,
    ToolRound,
    ToolSpec,
    Usage,
    initial_state,
    step,
)
from toolreel.core.outcomes import FinishReason

CODEC = AnthropicCodec()
WEATHER = ToolSpec(
    name="weather",
    description="Weather in a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def request(*messages: ChatMessage, **overrides: Any) -> ModelRequest:
    overrides.setdefault("tools", (WEATHER,))
    overrides.setdefault("system", None)
    return ModelRequest(model="claude-x", messages=messages, **overrides)


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def call(call_id: str, arguments: str = '{"city": "Paris"}') -> ToolCall:
    return ToolCall(id=call_id, name="weather", arguments=arguments)


def result(call_id: str, content: str = "sunny", is_error: bool = False) -> ToolResult:
    return ToolResult(call_id=call_id, name="weather", content=content, is_error=is_error)


def sse(*payloads: dict[str, Any]) -> bytes:
    """A named event stream of the payloads."""
    frames = [f"event: {p['type']}\ndata: {json.dumps(p)}\n\n" for p in payloads]
    return "".join(frames).encode()


def decode(body: bytes) -> list[Any]:
    decoder = CODEC.stream_decoder()
    return decoder.feed(body) + decoder.close()


START = {"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}
STOP = {"type": "message_stop"}


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": fields}


def block(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": fields}


def finished(reason: str, **usage: int) -> dict[str, Any]:
    return {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": usage}


# Request -------------------------------------------------------------------


def test_endpoint_and_headers_send_the_key_only_when_given() -> None:
    assert CODEC.endpoint("https://api.anthropic.com/", request(), stream=True) == (
        "https://api.anthropic.com/v1/messages"
    )
    assert CODEC.headers(None) == {
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
    }
    assert CODEC.headers("sk-test")["x-api-key"] == "sk-test"


def test_a_first_request_has_system_tools_default_max_tokens_and_user_text_blocks() -> None:
    body = CODEC.encode(
        request(user("Weather in Paris?"), system="Be brief.", temperature=0.2), stream=True
    )
    assert body == {
        "model": "claude-x",
        "max_tokens": 4096,
        "system": "Be brief.",
        "temperature": 0.2,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        "tools": [
            {
                "name": "weather",
                "description": "Weather in a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "tool_choice": {"type": "auto"},
        "stream": True,
    }


def test_no_tools_means_no_tools_and_no_tool_choice_and_no_stream_flag() -> None:
    body = CODEC.encode(request(user("hi"), tools=(), max_tokens=50), stream=False)
    assert body == {
        "model": "claude-x",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ("weather", {"type": "tool", "name": "weather"}),
    ],
)
def test_tool_choice_maps_to_anthropic_types_and_none_keeps_the_tools(
    choice: str, wire: dict[str, str]
) -> None:
    body = CODEC.encode(request(user("hi"), tool_choice=choice), stream=False)
    assert body["tool_choice"] == wire
    assert [tool["name"] for tool in body["tools"]] == ["weather"]


def test_thinking_option_adds_the_thinking_setting() -> None:
    codec = AnthropicCodec(thinking_budget=2048, thinking_display="summarized")
    body = codec.encode(request(user("hi")), stream=False)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048, "display": "summarized"}


def test_a_round_is_one_assistant_message_then_one_user_message_of_results() -> None:
    rounds = (
        ToolRound(
            assistant_text="Checking.",
            tool_calls=(call("t1"), call("t2", '{"city": "Rome"}')),
            results=(result("t1"), result("t2", "boom", is_error=True)),
            reasoning=(Reasoning(text="think", signature="sig"), Reasoning(redacted="opaque")),
        ),
    )
    history = (
        user("Paris and Rome?"),
        ChatMessage(role="assistant", content="", tool_rounds=rounds),
    )
    assert CODEC.encode(request(*history), stream=False)["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "think", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "t2", "name": "weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": True},
            ],
        },
    ]


def test_empty_assistant_text_is_left_out_and_bad_arguments_go_as_an_empty_object() -> None:
    rounds = (
        ToolRound(assistant_text="", tool_calls=(call("t1", "{oops"),), results=(result("t1"),)),
    )
    history = (user("hi"), ChatMessage(role="assistant", content="", tool_rounds=rounds))
    assistant = CODEC.encode(request(*history), stream=False)["messages"][1]
    assert assistant["content"] == [
        {"type": "tool_use", "id": "t1", "name": "weather", "input": {}}
    ]


def test_a_user_text_after_results_joins_their_user_message() -> None:
    rounds = (ToolRound(assistant_text="", tool_calls=(call("t1"),), results=(result("t1"),)),)
    history = (
        user("hi"),
        ChatMessage(role="assistant", content="", tool_rounds=rounds),
        user("Answer now."),
    )
    body = CODEC.encode(request(*history, tool_choice="none"), stream=False)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
        {"type": "text", "text": "Answer now."},
    ]


def test_consecutive_same_role_messages_merge_and_a_final_answer_follows_the_rounds() -> None:
    rounds = (ToolRound(assistant_text="", tool_calls=(call("t1"),), results=(result("t1"),)),)
    history = (
        user("one"),
        user("two"),
        ChatMessage(role="assistant", content="Sunny.", tool_rounds=rounds),
        ChatMessage(role="assistant", content="More?"),
        user("three"),
    )
    messages = CODEC.encode(request(*history), stream=False)["messages"]
    assert messages == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Paris"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Sunny."}, {"type": "text", "text": "More?"}],
        },
        {"role": "user", "content": [{"type": "text", "text": "three"}]},
    ]


def test_a_tool_schema_that_is_not_an_object_is_a_caller_error() -> None:
    bad = ToolSpec(name="bad", parameters="[1]")
    with pytest.raises(ValueError, match="bad"):
        CODEC.encode(request(user("hi"), tools=(bad,)), stream=False)


# Stream --------------------------------------------------------------------


def test_text_thinking_and_tool_blocks_stream_as_core_events() -> None:
    body = sse(
        START,
        block(0, type="thinking", thinking="", signature=""),
        delta(0, type="thinking_delta", thinking="Hmm"),
        delta(0, type="signature_delta", signature="SIG"),
        {"type": "content_block_stop", "index": 0},
        block(1, type="redacted_thinking", data="OPAQUE"),
        {"type": "content_block_stop", "index": 1},
        block(2, type="text", text=""),
        delta(2, type="text_delta", text="Let me look."),
        {"type": "content_block_stop", "index": 2},
        block(3, type="tool_use", id="toolu_1", name="weather", input={}),
        delta(3, type="input_json_delta", partial_json=""),
        delta(3, type="input_json_delta", partial_json='{"city": '),
        delta(3, type="input_json_delta", partial_json='"Paris"}'),
        {"type": "content_block_stop", "index": 3},
        {"type": "ping"},
        finished("tool_use", output_tokens=42, cache_read_input_tokens=7),
        STOP,
    )
    assert decode(body) == [
        ReasoningDelta(provider="anthropic", text="Hmm"),
        ReasoningDelta(provider="anthropic", signature="SIG"),
        ReasoningDelta(provider="anthropic", redacted="OPAQUE"),
        TextDelta(text="Let me look."),
        ToolCallStarted(index=3, call_id="toolu_1", name="weather"),
        ToolCallArgumentsDelta(index=3, fragment='{"city": '),
        ToolCallArgumentsDelta(index=3, fragment='"Paris"}'),
        ModelResponded(
            finish_reason="tool_use",
            usage=Usage(input_tokens=17, output_tokens=42, cache_read_tokens=7),
        ),
    ]


def test_a_thinking_block_without_signature_is_closed_at_its_stop() -> None:
    body = sse(
        START,
        block(0, type="thinking", thinking="a"),
        {"type": "content_block_stop", "index": 0},
        block(1, type="thinking", thinking="b", signature="S"),
        {"type": "content_block_stop", "index": 1},
        finished("end_turn"),
        STOP,
    )
    assert decode(body)[:4] == [
        ReasoningDelta(provider="anthropic", text="a"),
        ReasoningDelta(provider="anthropic", signature=""),
        ReasoningDelta(provider="anthropic", text="b"),
        ReasoningDelta(provider="anthropic", signature="S"),
    ]


def test_unknown_events_blocks_and_fields_are_ignored() -> None:
    body = sse(
        START,
        {"type": "future_event", "x": 1},
        block(0, type="server_tool_use", id="srv", name="web_search"),
        delta(0, type="citations_delta", citation={}),
        {"type": "content_block_stop", "index": 0},
        finished("end_turn"),
        STOP,
    )
    assert decode(body) == [
        ModelResponded(finish_reason="end_turn", usage=Usage(input_tokens=10, output_tokens=1))
    ]


@pytest.mark.parametrize(
    ("kind", "retryable"),
    [
        ("overloaded_error", True),
        ("api_error", True),
        ("rate_limit_error", True),
        ("invalid_request_error", False),
    ],
)
def test_an_error_event_inside_a_200_stream_fails_the_call(kind: str, retryable: bool) -> None:
    error = {"type": "error", "error": {"type": kind, "message": "Overloaded"}}
    events = decode(sse(START, block(0, type="text", text="Hi"), error, STOP))
    assert events == [
        TextDelta(text="Hi"),
        ModelCallFailed(retryable=retryable, message=f"{kind}: Overloaded"),
    ]


def test_a_stream_cut_before_message_stop_is_a_retryable_failure() -> None:
    body = sse(START, block(0, type="text", text=""), delta(0, type="text_delta", text="Hi"))
    events = decode(body)
    assert events[0] == TextDelta(text="Hi")
    assert isinstance(events[-1], ModelCallFailed)
    assert events[-1].retryable
    assert len(events) == 2


def test_garbage_bytes_are_a_fatal_failure() -> None:
    events = decode(b"event: message_start\ndata: \x00\xff not json\n\n")
    assert len(events) == 1
    assert isinstance(events[0], ModelCallFailed)
    assert not events[0].retryable
    assert "malformed message_start event" in events[0].message


def test_an_event_too_deeply_nested_to_parse_is_a_fatal_failure() -> None:
    events = decode(b"event: message_start\ndata: " + b"[" * 100_000 + b"\n\n")
    assert len(events) == 1
    assert isinstance(events[0], ModelCallFailed)
    assert not events[0].retryable


def test_nothing_is_decoded_after_the_terminal_event() -> None:
    decoder = CODEC.stream_decoder()
    events = decoder.feed(sse(START, finished("end_turn"), STOP))
    assert decoder.feed(sse(block(0, type="text", text="late"))) == []
    assert decoder.close() == []
    assert len(events) == 1


# Whole body ----------------------------------------------------------------


def test_a_whole_message_gives_the_events_its_stream_would_have() -> None:
    body = {
        "type": "message",
        "content": [
            {"type": "thinking", "thinking": "Hmm", "signature": "SIG"},
            {"type": "redacted_thinking", "data": "OPAQUE"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "output_tokens": 9, "cache_creation_input_tokens": 3},
    }
    assert CODEC.decode_body(json.dumps(body).encode()) == [
        ReasoningDelta(provider="anthropic", text="Hmm"),
        ReasoningDelta(provider="anthropic", signature="SIG"),
        ReasoningDelta(provider="anthropic", redacted="OPAQUE"),
        TextDelta(text="Looking."),
        ToolCallStarted(index=3, call_id="toolu_1", name="weather"),
        ToolCallArgumentsDelta(index=3, fragment='{"city": "Paris"}'),
        ModelResponded(
            finish_reason="tool_use",
            usage=Usage(input_tokens=8, output_tokens=9, cache_write_tokens=3),
        ),
    ]


@pytest.mark.parametrize(
    ("body", "retryable", "message"),
    [
        (b"<html>oops</html>", False, "malformed response body: not JSON"),
        (b"[1, 2]", False, "malformed response body: not a JSON object"),
        (b'{"type": "message"}', False, "malformed response body: no content list"),
        (b'{"content": [1]}', False, "malformed response"),
        (b"[" * 100_000, False, "maximum recursion depth"),
        (
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            True,
            "overloaded_error: Overloaded",
        ),
    ],
)
def test_a_body_that_is_not_a_message_is_a_failure(
    body: bytes, retryable: bool, message: str
) -> None:
    events = CODEC.decode_body(body)
    assert len(events) == 1
    assert isinstance(events[0], ModelCallFailed)
    assert events[0].retryable is retryable
    assert message in events[0].message


# HTTP errors ---------------------------------------------------------------


def error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def test_429_is_retryable_after_the_wait_the_provider_asked_for() -> None:
    failure = CODEC.decode_error(
        429, {"Retry-After": "12"}, error_body("rate_limit_error", "Slow down")
    )
    assert failure == ModelCallFailed(
        retryable=True,
        message="HTTP 429: rate_limit_error: Slow down",
        status=429,
        retry_after=12.0,
    )


def test_529_overloaded_is_retryable() -> None:
    failure = CODEC.decode_error(529, {}, error_body("overloaded_error", "Overloaded"))
    assert failure == ModelCallFailed(
        retryable=True, message="HTTP 529: overloaded_error: Overloaded", status=529
    )


def test_500_is_retryable_even_without_a_json_body() -> None:
    failure = CODEC.decode_error(500, {}, b"Internal Server Error")
    assert failure == ModelCallFailed(
        retryable=True, message="HTTP 500: Internal Server Error", status=500
    )
    assert CODEC.decode_error(502, {}, b"").message == "HTTP 502: (empty body)"


def test_401_is_fatal_with_the_provider_message() -> None:
    body = error_body("authentication_error", "invalid x-api-key")
    assert CODEC.decode_error(401, {}, body) == ModelCallFailed(
        retryable=False, message="HTTP 401: authentication_error: invalid x-api-key", status=401
    )


def test_an_error_body_too_deeply_nested_to_parse_still_becomes_a_failure() -> None:
    failure = CODEC.decode_error(400, {}, b"[" * 100_000)
    assert not failure.retryable
    assert failure.status == 400


# Live ----------------------------------------------------------------------

ADD = ToolSpec(
    name="add",
    description="Add two integers",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


async def run_live_turn(model: HttpModel, cfg: LoopConfig, prompt: str) -> Finish:
    """Carry out the effects of one turn against the real API until it finishes."""
    state, effects = step(initial_state(cfg), PromptSubmitted(text=prompt))
    queue = list(effects)
    while queue:
        effect = queue.pop(0)
        events: list[Event] = []
        match effect:
            case Finish():
                return effect
            case CallModel(request=request):
                events = [event async for event in model.stream(request)]
            case RunTool(call=call):
                arguments = json.loads(call.arguments)
                events = [
                    ToolFinished(call_id=call.id, output=str(arguments["a"] + arguments["b"]))
                ]
            case StartTimer(token=token, seconds=seconds):
                await asyncio.sleep(seconds)
                events = [TimerFired(token=token)]
        for event in events:
            state, more = step(state, event)
            queue += more
    raise AssertionError("the turn never finished")


@pytest.mark.live
@pytest.mark.skipif(
    not os.environ.get("ANTHROPIC_API_KEY"),
    reason="live Anthropic test: set ANTHROPIC_API_KEY (and optionally TOOLREEL_ANTHROPIC_MODEL)",
)
def test_live_two_leg_tool_conversation() -> None:
    cfg = LoopConfig(
        model=os.environ.get("TOOLREEL_ANTHROPIC_MODEL", "claude-3-5-haiku-latest"),
        tools=(ADD,),
        max_tokens=512,
    )

    async def main() -> Finish:
        model = HttpModel(AnthropicCodec(), api_key=Secret(os.environ["ANTHROPIC_API_KEY"]))
        try:
            return await run_live_turn(
                model, cfg, "Use the add tool to add 1234 and 4321, then tell me the sum."
            )
        finally:
            await model.aclose()

    finish = asyncio.run(main())
    assert finish.reason is FinishReason.COMPLETED, finish.error
    assert [call.name for r in finish.rounds for call in r.tool_calls][:1] == ["add"]
    assert "5555" in finish.text.replace(",", "")


# Robustness ----------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 5) | st.sampled_from(["", "x", "text", "{"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "index", "delta", "text", "thinking", "signature", "data"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)
BLOCK_TYPES = ["text", "thinking", "redacted_thinking", "tool_use", "server_tool_use"]
DELTA_TYPES = ["text_delta", "thinking_delta", "signature_delta", "input_json_delta"]
PAYLOADS = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("content_block_start"), "index": st.integers(0, 3)},
        optional={"content_block": st.fixed_dictionaries({"type": st.sampled_from(BLOCK_TYPES)})},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("content_block_delta"),
            "index": st.integers(0, 3) | JSON_VALUES,
            "delta": st.fixed_dictionaries(
                {"type": st.sampled_from(DELTA_TYPES)},
                optional={"text": JSON_VALUES, "partial_json": JSON_VALUES},
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                ["message_start", "message_delta", "content_block_stop", "message_stop", "ping"]
            )
        },
        optional={"message": JSON_VALUES, "usage": JSON_VALUES, "delta": JSON_VALUES},
    ),
    st.fixed_dictionaries({"type": st.just("error")}, optional={"error": JSON_VALUES}),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(PAYLOADS, max_size=10), st.integers(1, 64))
def test_well_framed_events_of_any_shape_never_raise_and_end_with_one_terminal(
    payloads: list[dict[str, Any]], size: int
) -> None:
    body = sse(*payloads)
    decoder = CODEC.stream_decoder()
    events = []
    for start in range(0, len(body), size):
        events += decoder.feed(body[start : start + size])
    events += decoder.close()
    terminals = [e for e in events if isinstance(e, ModelResponded | ModelCallFailed)]
    assert len(terminals) == 1
    assert events[-1] is terminals[0]

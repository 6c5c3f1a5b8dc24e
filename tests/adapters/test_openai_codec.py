"""OpenAI chat.completions codec: encoding, failures and stream edge cases beyond the captures."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreel.adapters import OpenAICodec
from toolreel.core import (
    ChatMessage,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    Reasoning,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolResult,
    ToolRound,
    ToolSpec,
    Usage,
)

CODEC = OpenAICodec()
ADD = ToolSpec(
    name="add",
    description="Add two numbers",
    parameters={"type": "object", "properties": {"a": {"type": "number"}}},
)


def request(*messages: ChatMessage, **fields: Any) -> ModelRequest:
    """A request with the `add` tool unless told otherwise."""
    fields.setdefault("tools", (ADD,))
    return ModelRequest(model="m", system=fields.pop("system", None), messages=messages, **fields)


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def sse(*payloads: Any, done: bool = True) -> bytes:
    """An SSE body of JSON chunks, with the `[DONE]` terminator unless told otherwise."""
    frames = [f"data: {json.dumps(p)}\n\n" for p in payloads]
    if done:
        frames.append("data: [DONE]\n\n")
    return "".join(frames).encode()


def delta(**fields: Any) -> dict[str, Any]:
    """A chunk with one choice carrying `fields` as its delta (finish_reason separately)."""
    finish = fields.pop("finish_reason", None)
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


def decode(body: bytes, codec: OpenAICodec = CODEC) -> list[ModelEvent]:
    decoder = codec.stream_decoder()
    return decoder.feed(body) + decoder.close()


# Endpoint and headers ----------------------------------------------------------------


def test_endpoint_appends_chat_completions_to_the_v1_base() -> None:
    assert CODEC.endpoint("http://localhost:11434/v1/", request(), stream=True) == (
        "http://localhost:11434/v1/chat/completions"
    )
    assert OpenAICodec.default_base_url == "https://api.openai.com/v1"


def test_bearer_header_only_with_a_key() -> None:
    assert CODEC.headers(None) == {"content-type": "application/json"}
    assert CODEC.headers("sk-test")["Authorization"] == "Bearer sk-test"


# Encoding --------------------------------------------------------------------------


def test_minimal_body_without_tools_has_no_tool_fields() -> None:
    body = CODEC.encode(request(user("hi"), tools=()), stream=False)
    assert body == {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False}


def test_streaming_asks_for_the_usage_chunk() -> None:
    body = CODEC.encode(request(user("hi")), stream=True)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "stream_options" not in OpenAICodec(stream_usage=False).encode(request(), stream=True)


def test_system_prompt_comes_first_and_settings_are_sent() -> None:
    body = CODEC.encode(
        request(user("hi"), system="Be brief.", max_tokens=100, temperature=0.2), stream=False
    )
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["max_tokens"] == 100
    assert body["temperature"] == 0.2


def test_reasoning_models_take_max_completion_tokens() -> None:
    codec = OpenAICodec(max_tokens_field="max_completion_tokens")
    body = codec.encode(request(max_tokens=64), stream=False)
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body


def test_tools_carry_the_parsed_schema() -> None:
    body = CODEC.encode(request(), stream=False)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers",
                "parameters": {"type": "object", "properties": {"a": {"type": "number"}}},
            },
        }
    ]


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("add", {"type": "function", "function": {"name": "add"}}),
    ],
)
def test_tool_choice(choice: str, sent: Any) -> None:
    assert CODEC.encode(request(tool_choice=choice), stream=False)["tool_choice"] == sent


ROUND = ToolRound(
    assistant_text="Let me add.",
    tool_calls=(
        ToolCall(id="call_1", name="add", arguments='{"a":1}'),
        ToolCall(id="call_2", name="divide", arguments='{"a":1,"b":0}'),
    ),
    results=(
        ToolResult(call_id="call_1", name="add", content="1"),
        ToolResult(call_id="call_2", name="divide", content="division by zero", is_error=True),
    ),
    reasoning=(Reasoning(text="Think."),),
)


def test_a_round_is_one_assistant_message_then_one_tool_message_per_result() -> None:
    turn = ChatMessage(role="assistant", content="It is 1.", tool_rounds=(ROUND,))
    messages = CODEC.encode(request(user("add"), turn), stream=False)["messages"]
    assert messages == [
        {"role": "user", "content": "add"},
        {
            "role": "assistant",
            "content": "Let me add.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":1}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "divide", "arguments": '{"a":1,"b":0}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "1"},
        # An error result is a string like any other: its text says what failed.
        {"role": "tool", "tool_call_id": "call_2", "content": "division by zero"},
        {"role": "assistant", "content": "It is 1."},
    ]


def test_calls_without_text_send_null_content() -> None:
    silent = ToolRound(
        assistant_text="",
        tool_calls=(ToolCall(id="c", name="add"),),
        results=(ToolResult(call_id="c", name="add", content="0"),),
    )
    turn = ChatMessage(role="assistant", content="", tool_rounds=(silent,))
    messages = CODEC.encode(request(user("x"), turn), stream=False)["messages"]
    assert messages[1]["content"] is None
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_reasoning_goes_back_only_in_the_configured_field() -> None:
    turn = ChatMessage(role="assistant", content="", tool_rounds=(ROUND,))
    plain = CODEC.encode(request(user("x"), turn), stream=False)["messages"][1]
    assert "reasoning" not in plain and "reasoning_content" not in plain
    deepseek = OpenAICodec(reasoning_field="reasoning_content")
    assert (
        deepseek.encode(request(user("x"), turn), stream=False)["messages"][1]["reasoning_content"]
        == "Think."
    )


def test_a_reasoning_only_answer_is_skipped_unless_reasoning_is_sent_back() -> None:
    turn = ChatMessage(role="assistant", content="", reasoning=(Reasoning(text="Hmm."),))
    assert len(CODEC.encode(request(user("x"), turn), stream=False)["messages"]) == 1
    codec = OpenAICodec(reasoning_field="reasoning")
    assert codec.encode(request(user("x"), turn), stream=False)["messages"][1] == {
        "role": "assistant",
        "content": "",
        "reasoning": "Hmm.",
    }


# HTTP errors -------------------------------------------------------------------------


def error(message: str, type_: str | None = None, code: str | None = None) -> bytes:
    return json.dumps(
        {"error": {"message": message, "type": type_, "param": None, "code": code}}
    ).encode()


def test_rate_limit_is_retryable_and_honours_retry_after() -> None:
    body = error("Rate limit reached for gpt-4o-mini", "requests", "rate_limit_exceeded")
    failure = CODEC.decode_error(429, {"Retry-After": "7"}, body)
    assert failure == ModelCallFailed(
        retryable=True,
        status=429,
        retry_after=7.0,
        message="HTTP 429: Rate limit reached for gpt-4o-mini "
        "(type=requests, code=rate_limit_exceeded)",
    )
    assert CODEC.decode_error(429, {"retry-after-ms": "1500"}, body).retry_after == 1.5


def test_a_429_out_of_quota_is_fatal() -> None:
    body = error("You exceeded your current quota", "insufficient_quota", "insufficient_quota")
    failure = CODEC.decode_error(429, {}, body)
    assert not failure.retryable and failure.status == 429
    assert "You exceeded your current quota" in failure.message


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_retryable(status: int) -> None:
    failure = CODEC.decode_error(status, {}, error("The server had an error", "server_error"))
    assert failure.retryable and failure.status == status


def test_a_bad_key_is_fatal() -> None:
    failure = CODEC.decode_error(
        401,
        {},
        error("Incorrect API key provided: sk-...", "invalid_request_error", "invalid_api_key"),
    )
    assert not failure.retryable
    assert failure.message.startswith("HTTP 401: Incorrect API key provided")


def test_non_json_error_bodies_are_shown_as_text() -> None:
    failure = CODEC.decode_error(502, {}, b"<html><body>502 Bad Gateway</body></html>")
    assert failure.retryable
    assert failure.message == "HTTP 502: <html><body>502 Bad Gateway</body></html>"
    assert CODEC.decode_error(503, {}, b"").message == "HTTP 503: (empty body)"


def test_other_servers_error_shapes() -> None:
    ollama = CODEC.decode_error(404, {}, b'{"error": "model \\"llama9\\" not found"}')
    assert ollama.message == 'HTTP 404: model "llama9" not found' and not ollama.retryable
    vllm = json.dumps(
        {
            "object": "error",
            "message": "max_tokens is too large",
            "type": "BadRequestError",
            "code": 400,
        }
    ).encode()
    assert CODEC.decode_error(400, {}, vllm).message.startswith("HTTP 400: max_tokens is too large")


# Stream decoding ------------------------------------------------------------------------


def test_error_payload_inside_a_200_stream() -> None:
    quota = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}
    [failure] = decode(sse(quota, done=False))
    assert isinstance(failure, ModelCallFailed) and not failure.retryable
    assert failure.message.startswith("You exceeded your current quota")
    server = {"error": {"message": "The server had an error", "type": "server_error"}}
    events = decode(sse(delta(content="Hel"), server, done=False))
    assert events[0] == TextDelta(text="Hel")
    assert isinstance(events[1], ModelCallFailed) and events[1].retryable


def test_openrouter_mid_stream_error_with_a_status_code() -> None:
    chunk = {
        "error": {"code": 502, "message": "Provider returned error"},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    }
    [failure] = decode(sse(chunk, done=False))
    assert isinstance(failure, ModelCallFailed) and failure.retryable
    assert failure.message == "Provider returned error (code=502)"


def test_a_cut_stream_is_a_retryable_failure() -> None:
    events = decode(sse(delta(content="Hello"), done=False))
    assert events[0] == TextDelta(text="Hello")
    assert isinstance(events[1], ModelCallFailed) and events[1].retryable


def test_a_stream_without_done_but_with_a_finish_reason_is_complete() -> None:
    events = decode(sse(delta(content="Hi"), delta(finish_reason="stop"), done=False))
    assert events == [TextDelta(text="Hi"), ModelResponded(finish_reason="stop")]


def test_garbage_is_a_fatal_failure() -> None:
    [failure] = decode(b"data: {not json\n\n")
    assert isinstance(failure, ModelCallFailed) and not failure.retryable
    [failure] = decode(b"data: [1, 2]\n\n")
    assert isinstance(failure, ModelCallFailed) and not failure.retryable


def test_reasoning_fields_become_reasoning_deltas() -> None:
    events = decode(
        sse(
            delta(reasoning_content="Deep"),
            delta(reasoning="Seek"),
            # vLLM in transition sends both: one delta, not two.
            delta(reasoning_content="!", reasoning="!"),
            delta(content="Answer", finish_reason="stop"),
        )
    )
    assert events == [
        ReasoningDelta(provider="openai", text="Deep"),
        ReasoningDelta(provider="openai", text="Seek"),
        ReasoningDelta(provider="openai", text="!"),
        TextDelta(text="Answer"),
        ModelResponded(finish_reason="stop"),
    ]


def test_cached_prompt_tokens_are_counted_and_extras_kept_only_when_nonzero() -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 50,
        "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    events = decode(sse(delta(finish_reason="stop"), {"choices": [], "usage": usage}))
    assert events == [
        ModelResponded(
            finish_reason="stop",
            usage=Usage(input_tokens=100, output_tokens=50, cache_read_tokens=64),
        )
    ]
    both = {**usage, "completion_tokens_details": {"reasoning_tokens": 30}}
    [done] = decode(sse(delta(finish_reason="stop"), {"choices": [], "usage": both}))
    assert isinstance(done, ModelResponded)
    assert done.usage.extra == (("reasoning_tokens", 30),)
    assert done.usage.cache_read_tokens == 64


def test_calls_without_index_are_numbered_in_arrival_order() -> None:
    first = {"id": "a", "function": {"name": "add", "arguments": '{"a":'}}
    more = {"function": {"arguments": "1}"}}
    second = {"id": "b", "function": {"name": "add", "arguments": "{}"}}
    events = decode(
        sse(delta(tool_calls=[first]), delta(tool_calls=[more]), delta(tool_calls=[second]))
    )
    assert events == [
        ToolCallStarted(index=0, call_id="a", name="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a":'),
        ToolCallArgumentsDelta(index=0, fragment="1}"),
        ToolCallStarted(index=1, call_id="b", name="add"),
        ToolCallArgumentsDelta(index=1, fragment="{}"),
        ModelResponded(finish_reason="tool_calls"),
    ]


def test_a_start_is_repeated_only_when_it_adds_the_id_or_name() -> None:
    events = decode(
        sse(
            delta(tool_calls=[{"index": 0, "id": "c1", "function": {"arguments": ""}}]),
            delta(tool_calls=[{"index": 0, "id": "c1", "function": {"name": "add"}}]),
            delta(tool_calls=[{"index": 0, "id": "c1", "function": {"name": "add"}}]),
        )
    )
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [
        ToolCallStarted(index=0, call_id="c1", name=""),
        ToolCallStarted(index=0, call_id="c1", name="add"),
    ]


def test_only_the_first_choice_is_read() -> None:
    chunk = {
        "choices": [
            {"index": 1, "delta": {"content": "other"}},
            {"index": 0, "delta": {"content": "mine"}, "finish_reason": "stop"},
        ]
    }
    assert decode(sse(chunk)) == [TextDelta(text="mine"), ModelResponded(finish_reason="stop")]


# Whole bodies --------------------------------------------------------------------------


def test_body_events_in_order_reasoning_text_calls() -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "reasoning_content": "Plan.",
                    "content": "Calling.",
                    "tool_calls": [
                        {
                            "id": "x",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a":1}'},
                        },
                        {
                            "id": "y",
                            "type": "function",
                            "function": {"name": "add", "arguments": ""},
                        },
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
    }
    assert CODEC.decode_body(json.dumps(body).encode()) == [
        ReasoningDelta(provider="openai", text="Plan."),
        TextDelta(text="Calling."),
        ToolCallStarted(index=0, call_id="x", name="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a":1}'),
        ToolCallStarted(index=1, call_id="y", name="add"),
        ModelResponded(finish_reason="tool_calls", usage=Usage(input_tokens=3, output_tokens=4)),
    ]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"<html>oops</html>", "response body is not JSON"),
        (b"[]", "response body is not a JSON object"),
    ],
)
def test_bad_bodies_are_fatal_failures(body: bytes, says: str) -> None:
    [failure] = CODEC.decode_body(body)
    assert isinstance(failure, ModelCallFailed) and not failure.retryable
    assert failure.message.startswith(says)


NO_CHOICE = ModelCallFailed(retryable=True, message="response has no choices")


@pytest.mark.parametrize("body", [b'{"choices": []}', b'{"id": "x"}'])
def test_a_body_without_a_choice_is_a_retryable_failure(body: bytes) -> None:
    assert CODEC.decode_body(body) == [NO_CHOICE]


def test_a_stream_without_a_choice_fails_as_the_same_body_does() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 0}
    assert decode(sse({"choices": []}, {"choices": [], "usage": usage})) == [NO_CHOICE]
    assert decode(sse({"choices": [{"index": 1, "delta": {"content": "other"}}]})) == [NO_CHOICE]


def test_choiceless_chunks_around_a_choice_are_fine() -> None:
    prompt_filter = {"choices": [], "prompt_filter_results": [{"prompt_index": 0}]}
    usage = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    events = decode(sse(prompt_filter, delta(content="Hi", finish_reason="stop"), usage))
    assert events == [
        TextDelta(text="Hi"),
        ModelResponded(finish_reason="stop", usage=Usage(input_tokens=3, output_tokens=1)),
    ]


def test_error_object_in_a_200_body() -> None:
    body = error("The server had an error", "server_error")
    [failure] = CODEC.decode_body(body)
    assert isinstance(failure, ModelCallFailed) and failure.retryable


# Properties ------------------------------------------------------------------------------

SSE_PIECES = st.sampled_from(
    [
        b"data: ",
        b"data: [DONE]",
        b"\n",
        b"\r\n",
        b"\n\n",
        b": keep-alive\n",
        b"event: error\n",
        b'{"choices":[{"index":0,"delta":{"content":"x"}}]}',
        b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{"}}]}}]}',
        b'{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]},"finish_reason":"tool_calls"}]}',
        b'{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":true}}',
        b'{"error":{"message":"boom","code":500}}',
        b'{"choices":[{"index":"0","delta":null}]}',
        b'{"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]}',
        b"null",
        b"\xff\xfe",
    ]
)


def terminal_last(events: list[ModelEvent]) -> bool:
    terminals = [e for e in events if isinstance(e, ModelResponded | ModelCallFailed)]
    return len(terminals) == 1 and events[-1] is terminals[0]


@settings(max_examples=200, deadline=None)
@given(body=st.one_of(st.binary(max_size=500), st.lists(SSE_PIECES, max_size=40).map(b"".join)))
def test_any_bytes_end_in_exactly_one_terminal_event(body: bytes) -> None:
    events = decode(body)
    assert terminal_last(events)
    assert terminal_last(CODEC.decode_body(body))


@settings(max_examples=100, deadline=None)
@given(pieces=st.lists(SSE_PIECES, max_size=30), cuts=st.lists(st.integers(0, 2000), max_size=10))
def test_chunking_never_changes_the_events(pieces: list[bytes], cuts: list[int]) -> None:
    body = b"".join(pieces)
    points = sorted({min(c, len(body)) for c in cuts})
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    decoder = CODEC.stream_decoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)] + decoder.close()
    assert events == decode(body)


def test_deepseeks_cache_hit_tokens_are_counted_as_cached() -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "prompt_cache_hit_tokens": 80,
        "prompt_cache_miss_tokens": 20,
    }
    [done] = decode(sse(delta(finish_reason="stop"), {"choices": [], "usage": usage}))
    assert isinstance(done, ModelResponded)
    assert done.usage == Usage(input_tokens=100, output_tokens=5, cache_read_tokens=80)

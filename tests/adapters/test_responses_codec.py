"""The OpenAI Responses codec on hand-written streams and requests (the captures are in
tests/conformance/test_openai_responses.py): reasoning items carried back, the request
options, failures inside a 200 stream, and malformed streams."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolreel.adapters import PROVIDERS, ResponsesCodec, codec_for
from toolreel.core import (
    CallModel,
    ChatMessage,
    LoopConfig,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    PromptSubmitted,
    Reasoning,
    ReasoningDelta,
    RunTool,
    TextDelta,
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

CODEC = ResponsesCodec()
ADD = ToolSpec(
    name="add",
    description="Add two integers.",
    parameters={"type": "object", "properties": {"a": {"type": "integer"}}},
)


def sse(*payloads: Any) -> bytes:
    """Named server-sent events, one per payload (a str is sent as the data as it is)."""
    frames = []
    for payload in payloads:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        kind = payload.get("type", "message") if isinstance(payload, dict) else "message"
        frames.append(f"event: {kind}\ndata: {data}\n\n")
    return "".join(frames).encode()


def decode(body: bytes, *, per_byte: bool = True) -> list[ModelEvent]:
    """Decode a stream; fed byte by byte, it must decode as when whole."""
    decoder = CODEC.stream_decoder()
    whole = decoder.feed(body) + decoder.close()
    if per_byte:
        decoder = CODEC.stream_decoder()
        events = [e for i in range(len(body)) for e in decoder.feed(body[i : i + 1])]
        assert events + decoder.close() == whole
    return whole


def completed(**usage: Any) -> dict[str, Any]:
    """A `response.completed` event."""
    return {"type": "response.completed", "response": {"status": "completed", "usage": usage}}


REASONING_ITEM = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [
        {"type": "summary_text", "text": "First part."},
        {"type": "summary_text", "text": "Second part."},
    ],
    "encrypted_content": "gAAAA-opaque",
}
CALL_ITEM = {
    "id": "fc_1",
    "type": "function_call",
    "call_id": "call_1",
    "name": "add",
    "arguments": "",
}


def reasoning_then_call_stream() -> bytes:
    """A reasoning item with a two-part summary, then a function call, as the API streams it."""
    done_call = {**CALL_ITEM, "arguments": '{"a":1}'}
    return sse(
        {"type": "response.created", "response": {"status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning", "summary": []},
        },
        {"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0},
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "summary_index": 0,
            "delta": "First ",
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "summary_index": 0,
            "delta": "part.",
        },
        {
            "type": "response.reasoning_summary_text.done",
            "output_index": 0,
            "summary_index": 0,
            "text": "First part.",
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "summary_index": 1,
            "delta": "Second part.",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": REASONING_ITEM},
        {"type": "response.output_item.added", "output_index": 1, "item": CALL_ITEM},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": '{"a":'},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "1}"},
        {"type": "response.output_item.done", "output_index": 1, "item": done_call},
        completed(
            input_tokens=10,
            output_tokens=30,
            input_tokens_details={"cached_tokens": 4},
            output_tokens_details={"reasoning_tokens": 20},
        ),
    )


SIGNATURE = '{"type":"reasoning","id":"rs_1","encrypted_content":"gAAAA-opaque"}'


def test_reasoning_summary_and_call_decode_with_reasoning_tokens() -> None:
    assert decode(reasoning_then_call_stream()) == [
        ReasoningDelta(provider="openai-responses", text="First "),
        ReasoningDelta(provider="openai-responses", text="part."),
        ReasoningDelta(provider="openai-responses", text="\n\nSecond part."),
        ReasoningDelta(provider="openai-responses", signature=SIGNATURE),
        ToolCallStarted(index=0, call_id="call_1", name="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a":'),
        ToolCallArgumentsDelta(index=0, fragment="1}"),
        ModelResponded(
            finish_reason="tool_calls",
            usage=Usage(
                input_tokens=10,
                output_tokens=30,
                extra=(("reasoning_tokens", 20),),
                cache_read_tokens=4,
            ),
        ),
    ]


def test_reasoning_item_goes_back_with_its_encrypted_content() -> None:
    """Stateless: the next request carries the reasoning item before the call it led to."""
    config = LoopConfig(model="gpt-5-mini", tools=(ADD,))
    state, effects = step(initial_state(config), PromptSubmitted(text="add 1"))
    for event in decode(reasoning_then_call_stream(), per_byte=False):
        state, effects = step(state, event)
    [run] = [e for e in effects if isinstance(e, RunTool)]
    state, effects = step(state, ToolFinished(call_id=run.call.id, output="1"))
    [call] = [e for e in effects if isinstance(e, CallModel)]
    # The compact record keeps the item in the reasoning block's signature.
    [tool_round] = call.request.messages[-1].tool_rounds
    assert tool_round.reasoning == (
        Reasoning(
            text="First part.\n\nSecond part.", signature=SIGNATURE, provider="openai-responses"
        ),
    )
    body = CODEC.encode(call.request, stream=True)
    assert body["input"] == [
        {"role": "user", "content": "add 1"},
        REASONING_ITEM,
        {"type": "function_call", "call_id": "call_1", "name": "add", "arguments": '{"a":1}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "1"},
    ]
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]


def request_with(*reasoning: Reasoning, **fields: Any) -> ModelRequest:
    """A request whose history holds one answered call after the given reasoning blocks."""
    tool_round = ToolRound(
        assistant_text="Let me add.",
        tool_calls=(ToolCall(id="c1", name="add", arguments='{"a":1}'),),
        results=(ToolResult(call_id="c1", name="add", content="boom", is_error=True),),
        reasoning=reasoning,
    )
    fields.setdefault("model", "gpt-5-mini")
    return ModelRequest(
        system=fields.pop("system", None),
        messages=(
            ChatMessage(role="user", content="hi"),
            ChatMessage(role="assistant", content="", tool_rounds=(tool_round,)),
        ),
        tools=(ADD,),
        **fields,
    )


def test_reasoning_the_api_cannot_read_back_is_not_sent() -> None:
    """Another provider's block, and (without `store`) an item without encrypted content."""
    anthropic = Reasoning(text="thinking", signature="EqQBCkYIBxgCKkB")
    gemini = Reasoning(text="thought")
    unencrypted = Reasoning(text="s", signature='{"type":"reasoning","id":"rs_2"}')
    request = request_with(anthropic, gemini, unencrypted)
    assert [item.get("type") for item in CODEC.encode(request, stream=False)["input"]] == [
        None,
        None,
        "function_call",
        "function_call_output",
    ]
    # With `store`, the API finds the item by its id.
    stored = ResponsesCodec(store=True).encode(request, stream=False)
    assert stored["input"][1] == {
        "type": "reasoning",
        "id": "rs_2",
        "summary": [{"type": "summary_text", "text": "s"}],
    }
    assert stored["store"] is True and "include" not in stored


def test_request_options_map_to_responses_fields() -> None:
    request = request_with(
        system="Be brief.", max_tokens=99, temperature=0.5, tool_choice="add", model="gpt-4.1"
    )
    body = ResponsesCodec(reasoning_effort="high", reasoning_summary="auto").encode(
        request, stream=True
    )
    assert body == {
        "model": "gpt-4.1",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Let me add."},
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":1}'},
            {"type": "function_call_output", "call_id": "c1", "output": "boom"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "add",
                "description": "Add two integers.",
                "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
            }
        ],
        "tool_choice": {"type": "function", "name": "add"},
        "max_output_tokens": 99,
        "temperature": 0.5,
        "reasoning": {"effort": "high", "summary": "auto"},
        "store": False,
        "stream": True,
    }  # gpt-4.1 is no reasoning model: encrypted reasoning is not asked for


@pytest.mark.parametrize(
    ("model", "option", "asked"),
    [
        ("gpt-5-mini", None, True),
        ("o4-mini", None, True),
        ("gpt-4o-mini", None, False),
        ("ft:gpt-4.1:acme::x", None, False),
        ("gpt-4o-mini", True, True),
        ("gpt-5", False, False),
    ],
)
def test_encrypted_reasoning_is_asked_of_reasoning_models(
    model: str, option: bool | None, asked: bool
) -> None:
    body = ResponsesCodec(encrypted_reasoning=option).encode(request_with(model=model), stream=True)
    assert ("include" in body) is asked


def test_registered_as_openai_responses_reading_openai_api_key() -> None:
    assert PROVIDERS["openai-responses"] is ResponsesCodec
    codec = codec_for("openai-responses")
    assert codec.api_key_env == ("OPENAI_API_KEY",)
    assert codec.endpoint("http://h/v1/", request_with(), stream=True) == "http://h/v1/responses"


# Endings --------------------------------------------------------------------------


def test_text_message_and_incomplete_response() -> None:
    events = decode(
        sse(
            {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message"}},
            {"type": "response.output_text.delta", "output_index": 0, "delta": "Hel"},
            {"type": "response.output_text.delta", "output_index": 0, "delta": "lo"},
            {
                "type": "response.incomplete",
                "response": {
                    "status": "incomplete",
                    "incomplete_details": {"reason": "max_output_tokens"},
                    "usage": {"input_tokens": 3, "output_tokens": 2},
                },
            },
        )
    )
    assert events == [
        TextDelta(text="Hel"),
        TextDelta(text="lo"),
        ModelResponded(
            finish_reason="max_output_tokens", usage=Usage(input_tokens=3, output_tokens=2)
        ),
    ]


def test_text_sent_only_whole_is_not_lost() -> None:
    """A server that skips the deltas: the `done` events carry the text."""
    message = {"type": "message", "content": [{"type": "output_text", "text": "Hi there"}]}
    events = decode(
        sse(
            {"type": "response.output_item.done", "output_index": 0, "item": message},
            completed(),
        )
    )
    assert events == [TextDelta(text="Hi there"), ModelResponded(finish_reason="stop")]


def failed(code: str, message: str = "x") -> dict[str, Any]:
    """A `response.failed` event."""
    error = {"code": code, "message": message}
    return {"type": "response.failed", "response": {"status": "failed", "error": error}}


@pytest.mark.parametrize(
    ("payload", "retryable", "message"),
    [
        ({"type": "error", "code": "server_error", "message": "Oops"}, True, "Oops"),
        ({"type": "error", "code": "rate_limit_exceeded", "message": "Slow"}, True, "Slow"),
        ({"type": "error", "code": "context_length_exceeded", "message": "Long"}, False, "Long"),
        (failed("server_error", "Down"), True, "Down"),
        (failed("vector_store_timeout"), True, "x"),
        (failed("invalid_prompt", "Flagged"), False, "Flagged"),
        (failed("image_too_large"), False, "x"),
    ],
)
def test_failures_inside_a_200_stream(
    payload: dict[str, Any], retryable: bool, message: str
) -> None:
    """Whatever follows the failure (here a `completed`) is not read."""
    events = decode(sse({"type": "response.created", "response": {}}, payload, completed()))
    [failure] = events
    assert isinstance(failure, ModelCallFailed)
    assert failure.retryable is retryable
    assert (
        failure.message
        == f"{message} (code={payload.get('code') or payload['response']['error']['code']})"
    )


def test_documented_error_event_says_its_code_not_its_type() -> None:
    [failure] = decode(sse({"type": "error", "code": "server_error", "message": "Oops"}))
    assert failure == ModelCallFailed(retryable=True, message="Oops (code=server_error)")


# Bad input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"event: response.created\ndata: {not json\n\n", "malformed response.created event"),
        (b"data: [1, 2]\n\n", "not a JSON object"),
        (b'data: "text"\n\n', "not a JSON object"),
    ],
)
def test_garbage_in_the_stream_is_a_fatal_failure(body: bytes, says: str) -> None:
    [failure] = decode(body)
    assert isinstance(failure, ModelCallFailed) and not failure.retryable
    assert says in failure.message


def test_unknown_events_and_missing_fields_are_read_leniently() -> None:
    """Unknown types are ignored (the API adds events); missing fields read as empty."""
    events = decode(
        sse(
            {"type": "response.web_search_call.searching", "output_index": 0},
            {"type": "response.output_item.added", "output_index": 0},
            {"type": "response.output_item.added", "item": {"type": "function_call"}},
            {"type": "response.function_call_arguments.delta", "delta": 5},
            {"type": "response.output_text.delta", "output_index": "x", "delta": None},
            {"type": "response.completed", "response": {"usage": {"input_tokens": -1}}},
        )
    )
    assert events == [
        ToolCallStarted(index=0, call_id="", name=""),  # the core invents an id
        ModelResponded(finish_reason="tool_calls"),
    ]


def test_arguments_before_the_call_item_still_start_the_call() -> None:
    """Pieces may come first: the start that follows fills in the call's id and name."""
    events = decode(
        sse(
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"},
            {"type": "response.output_item.added", "output_index": 0, "item": CALL_ITEM},
            completed(),
        )
    )
    assert events == [
        ToolCallArgumentsDelta(index=0, fragment="{}"),
        ToolCallStarted(index=0, call_id="call_1", name="add"),
        ModelResponded(finish_reason="tool_calls"),
    ]


def test_stream_without_its_end_is_a_retryable_truncation() -> None:
    [*_, failure] = decode(sse({"type": "response.output_text.delta", "delta": "Hi"}))
    assert isinstance(failure, ModelCallFailed) and failure.retryable
    assert "ended before" in failure.message


# Whole bodies and HTTP errors ---------------------------------------------------------


def test_whole_body_with_reasoning_text_and_call() -> None:
    body = {
        "status": "completed",
        "output": [
            REASONING_ITEM,
            {"type": "message", "content": [{"type": "output_text", "text": "Adding."}]},
            {**CALL_ITEM, "arguments": '{"a":2}'},
        ],
        "usage": {"input_tokens": 5, "output_tokens": 6},
    }
    assert CODEC.decode_body(json.dumps(body).encode()) == [
        ReasoningDelta(provider="openai-responses", text="First part."),
        ReasoningDelta(provider="openai-responses", text="\n\nSecond part."),
        ReasoningDelta(provider="openai-responses", signature=SIGNATURE),
        TextDelta(text="Adding."),
        ToolCallStarted(index=0, call_id="call_1", name="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a":2}'),
        ModelResponded(finish_reason="tool_calls", usage=Usage(input_tokens=5, output_tokens=6)),
    ]


@pytest.mark.parametrize(
    ("body", "failure"),
    [
        (b"not json", "malformed response body"),
        (b"[]", "not a JSON object"),
        (b'{"status": "completed"}', "no output list"),
        (
            b'{"status": "failed", "error": {"code": "server_error", "message": "Down"}}',
            "Down (code=server_error)",
        ),
    ],
)
def test_bad_whole_bodies_fail(body: bytes, failure: str) -> None:
    [event] = CODEC.decode_body(body)
    assert isinstance(event, ModelCallFailed) and failure in event.message


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (429, "insufficient_quota", False),
        (429, "rate_limit_exceeded", True),
        (400, "invalid_request_error", False),
        (500, "server_error", True),
    ],
)
def test_http_error_bodies(status: int, code: str, retryable: bool) -> None:
    error = {"error": {"message": "No.", "type": code, "param": None, "code": code}}
    failure = CODEC.decode_error(status, {"retry-after": "2"}, json.dumps(error).encode())
    assert failure == ModelCallFailed(
        retryable=retryable,
        status=status,
        retry_after=2.0,
        message=f"HTTP {status}: No. (type={code}, code={code})",
    )


def test_http_error_body_that_is_not_json() -> None:
    failure = CODEC.decode_error(502, {}, b"<html>Bad gateway</html>")
    assert failure.retryable and failure.message == "HTTP 502: <html>Bad gateway</html>"

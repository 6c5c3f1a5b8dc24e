"""Ollama native /api/chat codec: encoding, failures and stream cases beyond the doc examples."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolreel.adapters import OllamaCodec
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

CODEC = OllamaCodec()
ADD = ToolSpec(name="add", description="Add", parameters={"type": "object", "properties": {}})


def request(*messages: ChatMessage, **fields: Any) -> ModelRequest:
    """A request with the `add` tool unless told otherwise."""
    fields.setdefault("tools", (ADD,))
    return ModelRequest(
        model="llama3.2", system=fields.pop("system", None), messages=messages, **fields
    )


def ndjson(*objects: Any) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objects).encode()


def decode(body: bytes) -> list[ModelEvent]:
    decoder = CODEC.stream_decoder()
    return decoder.feed(body) + decoder.close()


def piece(**message: Any) -> dict[str, Any]:
    """A done:false line carrying `message`."""
    return {"model": "m", "message": {"role": "assistant", "content": "", **message}, "done": False}


DONE = {
    "model": "m",
    "message": {"role": "assistant", "content": ""},
    "done": True,
    "done_reason": "stop",
    "prompt_eval_count": 12,
    "eval_count": 7,
}


# Encoding ----------------------------------------------------------------------------


def test_endpoint_and_headers() -> None:
    assert CODEC.endpoint("http://127.0.0.1:11434/", request(), stream=True) == (
        "http://127.0.0.1:11434/api/chat"
    )
    assert CODEC.headers(None) == {"content-type": "application/json"}
    assert CODEC.headers("k")["Authorization"] == "Bearer k"
    assert OllamaCodec.api_key_env == ()


def test_settings_go_under_options() -> None:
    body = CODEC.encode(
        request(
            ChatMessage(role="user", content="hi"),
            system="Be brief.",
            max_tokens=64,
            temperature=0.1,
        ),
        stream=True,
    )
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["options"] == {"temperature": 0.1, "num_predict": 64}
    assert body["stream"] is True
    assert "tool_choice" not in body


def test_no_options_no_think_unless_set() -> None:
    body = CODEC.encode(request(tools=()), stream=False)
    assert body == {"model": "llama3.2", "messages": [], "stream": False}
    assert OllamaCodec(think=True).encode(request(), stream=False)["think"] is True


def test_tool_choice_none_leaves_the_tools_out_and_others_are_ignored() -> None:
    assert "tools" not in CODEC.encode(request(tool_choice="none"), stream=False)
    for choice in ("auto", "required", "add"):
        assert (
            CODEC.encode(request(tool_choice=choice), stream=False)["tools"][0]["function"]["name"]
            == "add"
        )


def test_history_sends_object_arguments_thinking_and_tool_names() -> None:
    round_ = ToolRound(
        assistant_text="Adding.",
        tool_calls=(
            ToolCall(id="call_1_1_0", name="add", arguments='{"a": 1}'),
            ToolCall(id="call_1_1_1", name="add", arguments="{not json"),
        ),
        results=(
            ToolResult(call_id="call_1_1_0", name="add", content="1"),
            ToolResult(
                call_id="call_1_1_1",
                name="add",
                content="arguments are not valid JSON: ...",
                is_error=True,
            ),
        ),
        reasoning=(Reasoning(text="Let me think."),),
    )
    turn = ChatMessage(role="assistant", content="Done: 1.", tool_rounds=(round_,))
    messages = CODEC.encode(request(ChatMessage(role="user", content="add"), turn), stream=False)[
        "messages"
    ]
    assert messages == [
        {"role": "user", "content": "add"},
        {
            "role": "assistant",
            "content": "Adding.",
            "thinking": "Let me think.",
            "tool_calls": [
                {"function": {"name": "add", "arguments": {"a": 1}}},
                # Ollama requires an object: text that is not one goes back as {}.
                {"function": {"name": "add", "arguments": {}}},
            ],
        },
        {"role": "tool", "content": "1", "tool_name": "add"},
        {"role": "tool", "content": "arguments are not valid JSON: ...", "tool_name": "add"},
        {"role": "assistant", "content": "Done: 1."},
    ]


# Stream decoding --------------------------------------------------------------------------


def test_text_thinking_and_done() -> None:
    events = decode(ndjson(piece(thinking="Hmm"), piece(content="Hel"), piece(content="lo"), DONE))
    assert events == [
        ReasoningDelta(provider="ollama", text="Hmm"),
        TextDelta(text="Hel"),
        TextDelta(text="lo"),
        ModelResponded(finish_reason="stop", usage=Usage(input_tokens=12, output_tokens=7)),
    ]


def test_calls_on_separate_lines_get_increasing_indexes() -> None:
    call = {"function": {"name": "add", "arguments": {"a": 1}}}
    events = decode(ndjson(piece(tool_calls=[call]), piece(tool_calls=[call, call]), DONE))
    assert [e.index for e in events if isinstance(e, ToolCallStarted)] == [0, 1, 2]


def test_newer_servers_id_and_index_are_used() -> None:
    call = {"id": "call_abc", "function": {"index": 3, "name": "add", "arguments": {}}}
    events = decode(ndjson(piece(tool_calls=[call]), DONE))
    assert events[:2] == [
        ToolCallStarted(index=3, call_id="call_abc", name="add"),
        ToolCallArgumentsDelta(index=3, fragment="{}"),
    ]


def test_length_done_reason_is_passed_on() -> None:
    events = decode(ndjson({**DONE, "done_reason": "length"}))
    assert events == [
        ModelResponded(finish_reason="length", usage=Usage(input_tokens=12, output_tokens=7))
    ]


def test_error_line_in_a_stream_is_retryable() -> None:
    events = decode(
        ndjson(piece(content="Hi"), {"error": "an error was encountered while running the model"})
    )
    assert events[0] == TextDelta(text="Hi")
    assert events[1] == ModelCallFailed(
        retryable=True, message="an error was encountered while running the model"
    )


def test_a_cut_stream_is_retryable_and_garbage_is_fatal() -> None:
    [cut] = decode(ndjson(piece(content="")))
    assert isinstance(cut, ModelCallFailed) and cut.retryable
    [garbage] = decode(b"<html>\n")
    assert isinstance(garbage, ModelCallFailed) and not garbage.retryable


def test_a_last_line_without_newline_still_counts() -> None:
    events = decode(json.dumps(DONE).encode())
    assert isinstance(events[-1], ModelResponded)


# Whole bodies and errors ----------------------------------------------------------------


def test_an_unfinished_whole_body_is_fatal() -> None:
    events = CODEC.decode_body(json.dumps(piece(content="partial")).encode())
    assert events[0] == TextDelta(text="partial")
    assert isinstance(events[1], ModelCallFailed) and not events[1].retryable


def test_bodies_that_are_not_objects_are_fatal() -> None:
    for body in (b"", b"[]", b"nope"):
        [failure] = CODEC.decode_body(body)
        assert isinstance(failure, ModelCallFailed) and not failure.retryable


def test_http_errors() -> None:
    missing = CODEC.decode_error(
        404, {}, b'{"error":"model \\"x\\" not found, try pulling it first"}'
    )
    assert missing == ModelCallFailed(
        retryable=False,
        status=404,
        message='HTTP 404: model "x" not found, try pulling it first',
    )
    assert CODEC.decode_error(500, {}, b'{"error":"llama runner process has terminated"}').retryable
    busy = CODEC.decode_error(503, {"retry-after": "2"}, b"server busy")
    assert busy.retryable and busy.retry_after == 2.0 and busy.message == "HTTP 503: server busy"
    assert CODEC.decode_error(401, {}, b"").message == "HTTP 401: (empty body)"


# Properties --------------------------------------------------------------------------------

LINES = st.sampled_from(
    [
        json.dumps(piece(content="x")).encode(),
        json.dumps(piece(thinking="t")).encode(),
        json.dumps(
            piece(tool_calls=[{"function": {"name": "f", "arguments": {"a": [1]}}}])
        ).encode(),
        json.dumps(piece(tool_calls=[{"function": {"index": True, "arguments": "x"}}])).encode(),
        json.dumps(DONE).encode(),
        b'{"error": {"nested": 1}}',
        b'{"message": null, "done": "yes"}',
        b"\n",
        b"\r\n",
        b"\xc3",
        b"[1]",
    ]
)


def terminal_last(events: list[ModelEvent]) -> bool:
    terminals = [e for e in events if isinstance(e, ModelResponded | ModelCallFailed)]
    return len(terminals) == 1 and events[-1] is terminals[0]


@settings(max_examples=200, deadline=None)
@given(body=st.one_of(st.binary(max_size=500), st.lists(LINES, max_size=30).map(b"".join)))
def test_any_bytes_end_in_exactly_one_terminal_event(body: bytes) -> None:
    assert terminal_last(decode(body))
    assert terminal_last(CODEC.decode_body(body))


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(LINES, max_size=20), cuts=st.lists(st.integers(0, 3000), max_size=10))
def test_chunking_never_changes_the_events(lines: list[bytes], cuts: list[int]) -> None:
    body = b"\n".join(lines)
    points = sorted({min(c, len(body)) for c in cuts})
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    decoder = CODEC.stream_decoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)] + decoder.close()
    assert events == decode(body)

"""The Gemini codec on hand-written inputs: encoding rules, decoding edge cases, error mapping."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreel.adapters import GeminiCodec
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

CODEC = GeminiCodec()
BASE = "https://generativelanguage.googleapis.com"
ADD = ToolSpec(
    name="add",
    description="Add two numbers",
    parameters={"type": "object", "properties": {"a": {"type": "number"}}},
)
USER = ChatMessage(role="user", content="2 plus 3?")


def request(*messages: ChatMessage, **fields: Any) -> ModelRequest:
    """A request for `gemini-2.5-flash` with the `add` tool unless told otherwise."""
    fields.setdefault("model", "gemini-2.5-flash")
    fields.setdefault("system", None)
    fields.setdefault("tools", (ADD,))
    return ModelRequest(messages=messages or (USER,), **fields)


def assistant(*rounds: ToolRound, text: str = "", reasoning: tuple[Reasoning, ...] = ()):
    """An assistant message: its rounds, then its final text."""
    return ChatMessage(role="assistant", content=text, tool_rounds=rounds, reasoning=reasoning)


def stream(*responses: Any, sse: bool = True) -> bytes:
    """GenerateContentResponse objects framed as SSE (CRLF) or as a streamed JSON array."""
    if sse:
        return b"".join(f"data: {json.dumps(r)}\r\n\r\n".encode() for r in responses)
    return ("[" + "\n,\r\n".join(json.dumps(r, indent=2) for r in responses) + "\n]").encode()


def chunk(*parts: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """One response chunk with the given parts."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], **extra}


def decode(body: bytes, pieces: int = 0) -> list[ModelEvent]:
    """Decode a body fed whole, or one byte at a time when `pieces` is 1."""
    decoder = CODEC.stream_decoder()
    chunks = [body[i : i + 1] for i in range(len(body))] if pieces == 1 else [body]
    events: list[ModelEvent] = []
    for piece in chunks:
        events += decoder.feed(piece)
    return events + decoder.close()


# --- Endpoint and headers ---------------------------------------------------------------------


def test_endpoint_streams_over_sse_and_calls_generate_content_otherwise() -> None:
    assert CODEC.endpoint(BASE, request(), stream=True) == (
        f"{BASE}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert CODEC.endpoint(BASE, request(), stream=False) == (
        f"{BASE}/v1beta/models/gemini-2.5-flash:generateContent"
    )


def test_a_model_given_with_its_collection_is_not_prefixed_again() -> None:
    tuned = request(model="tunedModels/my-model")
    assert CODEC.endpoint(BASE, tuned, stream=False) == (
        f"{BASE}/v1beta/tunedModels/my-model:generateContent"
    )


def test_the_key_goes_in_a_header_only_when_given() -> None:
    assert CODEC.headers("k-123") == {"content-type": "application/json", "x-goog-api-key": "k-123"}
    assert CODEC.headers(None) == {"content-type": "application/json"}
    assert "k-123" not in CODEC.endpoint(BASE, request(), stream=True)


# --- Encoding ---------------------------------------------------------------------------------


def test_a_plain_request_has_only_contents() -> None:
    assert CODEC.encode(request(tools=()), stream=True) == {
        "contents": [{"role": "user", "parts": [{"text": "2 plus 3?"}]}]
    }


def test_system_tools_and_generation_config() -> None:
    body = CODEC.encode(request(system="Be brief.", max_tokens=256, temperature=0.2), stream=False)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "add",
                    "description": "Add two numbers",
                    "parametersJsonSchema": {
                        "type": "object",
                        "properties": {"a": {"type": "number"}},
                    },
                }
            ]
        }
    ]
    assert "toolConfig" not in body
    assert body["generationConfig"] == {"maxOutputTokens": 256, "temperature": 0.2}


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("none", {"functionCallingConfig": {"mode": "NONE"}}),
        ("required", {"functionCallingConfig": {"mode": "ANY"}}),
        ("add", {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["add"]}}),
    ],
)
def test_tool_choice_becomes_the_function_calling_mode(choice: str, config: dict) -> None:
    assert CODEC.encode(request(tool_choice=choice), stream=True)["toolConfig"] == config


def test_no_tool_config_without_tools() -> None:
    assert "toolConfig" not in CODEC.encode(request(tools=(), tool_choice="none"), stream=True)


PARALLEL = ToolRound(
    assistant_text="Let me add.",
    tool_calls=(
        ToolCall(id="call_1_0_0", name="add", arguments='{"a": 2, "b": 3}', signature="SIG"),
        ToolCall(id="call_1_0_1", name="add", arguments="{}"),
    ),
    results=(
        ToolResult(call_id="call_1_0_0", name="add", content="5"),
        ToolResult(call_id="call_1_0_1", name="add", content="missing a", is_error=True),
    ),
)


def test_a_round_is_one_model_content_and_one_user_content_of_responses() -> None:
    body = CODEC.encode(request(USER, assistant(PARALLEL, text="It is 5.")), stream=True)
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "2 plus 3?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Let me add."},
                {
                    "functionCall": {"name": "add", "args": {"a": 2, "b": 3}},
                    "thoughtSignature": "SIG",
                },
                {"functionCall": {"name": "add", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "add", "response": {"output": "5"}}},
                {"functionResponse": {"name": "add", "response": {"error": "missing a"}}},
            ],
        },
        {"role": "model", "parts": [{"text": "It is 5."}]},
    ]


def test_a_prompt_after_results_merges_into_the_same_user_content() -> None:
    final = ChatMessage(role="user", content="Answer now.")
    contents = CODEC.encode(request(USER, assistant(PARALLEL), final), stream=True)["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[-1]["parts"][-1] == {"text": "Answer now."}
    assert len(contents[-1]["parts"]) == 3


def test_text_signature_goes_back_on_the_text_part_and_thought_text_stays_home() -> None:
    reasoning = (Reasoning(text="I should greet.", signature="S1"), Reasoning(text="unsigned"))
    body = CODEC.encode(request(USER, assistant(text="Hi!", reasoning=reasoning)), stream=True)
    assert body["contents"][-1] == {
        "role": "model",
        "parts": [{"text": "Hi!", "thoughtSignature": "S1"}],
    }


def test_signatures_without_text_ride_on_empty_text_parts_before_the_calls() -> None:
    call = ToolCall(id="c", name="add", arguments="{}")
    round_ = ToolRound(
        assistant_text="",
        tool_calls=(call,),
        results=(ToolResult(call_id="c", name="add", content="0"),),
        reasoning=(Reasoning(signature="S1"), Reasoning(signature="S2")),
    )
    model = CODEC.encode(request(USER, assistant(round_)), stream=True)["contents"][1]
    assert model["parts"] == [
        {"text": "", "thoughtSignature": "S1"},
        {"text": "", "thoughtSignature": "S2"},
        {"functionCall": {"name": "add", "args": {}}},
    ]


def test_arguments_that_are_not_an_object_go_back_as_an_empty_object() -> None:
    call = ToolCall(id="c", name="add", arguments='{"a": 1')
    round_ = ToolRound(
        assistant_text="",
        tool_calls=(call,),
        results=(ToolResult(call_id="c", name="add", content="bad JSON", is_error=True),),
    )
    model = CODEC.encode(request(USER, assistant(round_)), stream=True)["contents"][1]
    assert model["parts"] == [{"functionCall": {"name": "add", "args": {}}}]


# --- Decoding ---------------------------------------------------------------------------------

USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 4, "totalTokenCount": 14}


@pytest.mark.parametrize("sse", [True, False], ids=["sse", "json-array"])
def test_text_thoughts_and_signatures(sse: bool) -> None:
    body = stream(
        chunk({"text": "Thinking about it", "thought": True}, usageMetadata=USAGE),
        chunk({"text": "Hello", "thoughtSignature": "S1"}),
        chunk({"text": ""}, finish="STOP", usageMetadata={**USAGE, "candidatesTokenCount": 6}),
        sse=sse,
    )
    expected = [
        ReasoningDelta(provider="gemini", text="Thinking about it"),
        TextDelta(text="Hello"),
        ReasoningDelta(provider="gemini", signature="S1"),
        ModelResponded(finish_reason="STOP", usage=Usage(input_tokens=10, output_tokens=6)),
    ]
    assert decode(body) == expected
    assert decode(body, pieces=1) == expected


def test_calls_are_indexed_per_response_and_missing_args_mean_empty() -> None:
    body = stream(
        chunk({"functionCall": {"name": "a"}, "thoughtSignature": "S"}),
        chunk({"functionCall": {"name": "b", "args": {"q": "ü"}, "id": "srv-1"}}, finish="STOP"),
    )
    assert decode(body) == [
        ToolCallStarted(index=0, call_id="", name="a", signature="S"),
        ToolCallArgumentsDelta(index=0, fragment="{}"),
        ToolCallStarted(index=1, call_id="srv-1", name="b"),
        ToolCallArgumentsDelta(index=1, fragment='{"q": "ü"}'),
        ModelResponded(finish_reason="STOP"),
    ]


def test_usage_counts_cached_content_keeps_thoughts_as_extras_and_the_last_one_wins() -> None:
    final = {**USAGE, "thoughtsTokenCount": 7, "cachedContentTokenCount": 3}
    body = stream(
        chunk({"text": "a"}, usageMetadata=USAGE),
        chunk({"text": "b"}, finish="MAX_TOKENS", usageMetadata=final),
        {"usageMetadata": {"trafficType": "ON_DEMAND"}},  # no counts: not a usage report
    )
    assert decode(body)[-1] == ModelResponded(
        finish_reason="MAX_TOKENS",
        usage=Usage(
            input_tokens=10, output_tokens=4, extra=(("reasoning_tokens", 7),), cache_read_tokens=3
        ),
    )


def test_unknown_fields_and_parts_are_ignored() -> None:
    body = stream(
        chunk(
            {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
            {"text": "ok", "newField": 1},
            finish="STOP",
            modelVersion="x",
            surprise={"a": [1, 2]},
        )
    )
    assert decode(body) == [TextDelta(text="ok"), ModelResponded(finish_reason="STOP")]


def test_only_candidate_zero_is_read() -> None:
    other = {"content": {"parts": [{"text": "second"}]}, "index": 1}
    body = stream({"candidates": [other]}, chunk({"text": "first"}, finish="STOP"))
    assert decode(body) == [TextDelta(text="first"), ModelResponded(finish_reason="STOP")]


def test_a_json_array_with_braces_and_escapes_inside_strings() -> None:
    tricky = 'a "quoted" {brace} [bracket] \\ back\\slash ,\n]'
    body = stream(chunk({"text": tricky}, finish="STOP"), sse=False)
    assert decode(body, pieces=1) == [TextDelta(text=tricky), ModelResponded(finish_reason="STOP")]


def test_a_whole_generate_content_body() -> None:
    body = json.dumps(chunk({"text": "hi"}, finish="STOP", usageMetadata=USAGE)).encode()
    assert CODEC.decode_body(body) == [
        TextDelta(text="hi"),
        ModelResponded(finish_reason="STOP", usage=Usage(input_tokens=10, output_tokens=4)),
    ]


def test_a_finish_reason_other_than_stop_is_passed_through() -> None:
    body = stream(chunk(finish="SAFETY"))
    assert decode(body) == [ModelResponded(finish_reason="SAFETY")]


def _partial(*pieces: dict[str, Any], more: bool = True) -> dict[str, Any]:
    """A Vertex `functionCall` chunk carrying streamed argument pieces."""
    return chunk({"functionCall": {"partialArgs": list(pieces), "willContinue": more}})


def test_vertex_streamed_arguments_build_nested_objects_and_lists() -> None:
    body = stream(
        chunk({"functionCall": {"name": "cook", "willContinue": True}, "thoughtSignature": "S"}),
        _partial({"jsonPath": "$.recipe.name", "stringValue": "Lasa", "willContinue": True}),
        _partial({"jsonPath": "$.recipe.name", "stringValue": "gna"}),
        chunk({"functionCall": {"willContinue": True}}),  # keep-alive between items
        _partial({"jsonPath": "$.recipe.steps[1]", "stringValue": "Bake."}),
        _partial({"jsonPath": "$.recipe.steps[0]", "stringValue": "Mix."}),
        _partial(
            {"jsonPath": "$.servings", "numberValue": 4},
            {"jsonPath": "$.vegan", "boolValue": False},
            {"jsonPath": "$['note']", "nullValue": "NULL_VALUE"},
        ),
        chunk({"functionCall": {}}, finish="STOP"),
    )
    events = decode(body)
    assert events[0] == ToolCallStarted(index=0, call_id="", name="cook", signature="S")
    assert isinstance(events[1], ToolCallArgumentsDelta)
    assert json.loads(events[1].fragment) == {
        "recipe": {"name": "Lasagna", "steps": ["Mix.", "Bake."]},
        "servings": 4,
        "vegan": False,
        "note": None,
    }
    assert events[2:] == [ModelResponded(finish_reason="STOP")]


def test_a_streamed_call_without_its_terminator_is_closed_by_the_next_call_or_the_end() -> None:
    body = stream(
        chunk({"functionCall": {"name": "a", "willContinue": True}}),
        _partial({"jsonPath": "$.x", "stringValue": "1"}),
        chunk({"functionCall": {"name": "b", "willContinue": True}}),
        _partial({"jsonPath": "$.y", "numberValue": 2}),
        chunk(finish="STOP"),
    )
    assert decode(body) == [
        ToolCallStarted(index=0, call_id="", name="a"),
        ToolCallArgumentsDelta(index=0, fragment='{"x": "1"}'),
        ToolCallStarted(index=1, call_id="", name="b"),
        ToolCallArgumentsDelta(index=1, fragment='{"y": 2}'),
        ModelResponded(finish_reason="STOP"),
    ]


# --- Failures inside a body -------------------------------------------------------------------


@pytest.mark.parametrize("sse", [True, False], ids=["sse", "json-array"])
def test_an_error_chunk_in_a_200_stream_fails_as_its_code_says(sse: bool) -> None:
    error = {
        "error": {
            "code": 503,
            "message": "The model is overloaded.",
            "status": "UNAVAILABLE",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}],
        }
    }
    events = decode(stream(chunk({"text": "par"}), error, sse=sse))
    assert events == [
        TextDelta(text="par"),
        ModelCallFailed(
            retryable=True,
            message="HTTP 503: UNAVAILABLE: The model is overloaded.",
            status=503,
            retry_after=2.0,
        ),
    ]


def test_an_error_chunk_without_a_code_is_classified_by_its_status_name() -> None:
    events = decode(stream({"error": {"message": "boom", "status": "INTERNAL"}}))
    assert events == [
        ModelCallFailed(retryable=True, message="HTTP 500: INTERNAL: boom", status=500)
    ]


def test_a_stream_cut_before_the_finish_reason_is_a_retryable_truncation() -> None:
    events = decode(stream(chunk({"text": "Hel"})) + b'data: {"cand')
    assert events[0] == TextDelta(text="Hel")
    assert isinstance(events[-1], ModelCallFailed)
    assert events[-1].retryable
    assert "stream ended" in events[-1].message


def test_an_unfinished_json_array_is_a_retryable_truncation() -> None:
    events = decode(stream(chunk({"text": "a"}), chunk({"text": "b"}), sse=False)[:-40])
    assert events[0] == TextDelta(text="a")
    assert isinstance(events[-1], ModelCallFailed)
    assert events[-1].retryable


@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b"\x00\xff garbage", b"[1, 2]"])
def test_garbage_is_a_fatal_failure(body: bytes) -> None:
    (failure,) = decode(body)
    assert isinstance(failure, ModelCallFailed)
    assert not failure.retryable
    assert failure.message.startswith("malformed response")


def test_sse_data_that_is_not_json_is_fatal() -> None:
    (failure,) = decode(b"data: [DONE]\r\n\r\n")
    assert isinstance(failure, ModelCallFailed)
    assert not failure.retryable


def test_a_blocked_prompt_is_a_fatal_failure() -> None:
    blocked = {
        "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
        "usageMetadata": USAGE,
    }
    assert decode(stream(blocked)) == [
        ModelCallFailed(retryable=False, message="prompt blocked: SAFETY")
    ]
    assert CODEC.decode_body(json.dumps(blocked).encode())[-1] == ModelCallFailed(
        retryable=False, message="prompt blocked: SAFETY"
    )


# --- HTTP errors ------------------------------------------------------------------------------


def rpc(code: int, status: str, message: str, **extra: Any) -> bytes:
    """A google.rpc error body."""
    return json.dumps(
        {"error": {"code": code, "message": message, "status": status, **extra}}
    ).encode()


@pytest.mark.parametrize(
    ("status", "name", "retryable"),
    [
        (500, "INTERNAL", True),
        (503, "UNAVAILABLE", True),
        (400, "INVALID_ARGUMENT", False),
        (403, "PERMISSION_DENIED", False),
    ],
)
def test_http_errors_are_retryable_only_for_5xx(status: int, name: str, retryable: bool) -> None:
    failure = CODEC.decode_error(status, {}, rpc(status, name, "went wrong"))
    assert failure == ModelCallFailed(
        retryable=retryable, message=f"HTTP {status}: {name}: went wrong", status=status
    )


def test_a_retry_after_header_counts_when_the_body_has_no_retry_info() -> None:
    failure = CODEC.decode_error(429, {"Retry-After": "7"}, rpc(429, "RESOURCE_EXHAUSTED", "slow"))
    assert failure.retryable
    assert failure.retry_after == 7.0


def test_a_streamed_error_comes_as_a_one_element_array() -> None:
    body = b"[" + rpc(400, "INVALID_ARGUMENT", "bad schema") + b"]"
    assert CODEC.decode_error(400, {}, body).message == "HTTP 400: INVALID_ARGUMENT: bad schema"


def test_a_body_that_is_not_json_is_reported_as_text() -> None:
    failure = CODEC.decode_error(502, {}, b"<html>Bad Gateway</html>")
    assert failure == ModelCallFailed(
        retryable=True, message="HTTP 502: <html>Bad Gateway</html>", status=502
    )
    assert CODEC.decode_error(503, {}, b"").message == "HTTP 503: no response body"


# --- Property: any bytes ----------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.sampled_from([b"", b"data: ", b"[", b"{", b"[{", b"data: {"]),
    body=st.binary(max_size=300),
    cuts=st.lists(st.integers(0, 400), max_size=8),
)
def test_random_bytes_never_raise_and_end_with_one_terminal_event(
    prefix: bytes, body: bytes, cuts: list[int]
) -> None:
    data = prefix + body
    points = sorted({min(cut, len(data)) for cut in cuts})
    edges = [0, *points, len(data)]
    decoder = CODEC.stream_decoder()
    events: list[ModelEvent] = []
    for start, end in itertools.pairwise(edges):
        events += decoder.feed(data[start:end])
    events += decoder.close()
    ends = [e for e in events if isinstance(e, ModelResponded | ModelCallFailed)]
    assert len(ends) == 1
    assert events[-1] is ends[0]
    assert decoder.feed(b"more") == []
    assert decoder.close() == []

"""A response whose structure is not its format's is the provider's fault: a retryable
failure ("malformed response: ..."), as one without a usable choice is, never a turn
ended as an empty answer with its calls dropped unseen (issue 20, small one).

For each codec the field that carries the answer is given the wrong JSON type,
in a whole body and in a stream; what stays lenient is pinned too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolreel.adapters import PROVIDERS
from toolreel.core import ModelCallFailed, ModelEvent, ModelResponded

CALL = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}


def openai_body(message: Any) -> dict[str, Any]:
    """A chat.completion whose choice holds `message`, finishing with tool calls."""
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


def ollama_body(message: Any) -> dict[str, Any]:
    """A whole /api/chat response holding `message`."""
    return {"model": "m", "message": message, "done": True, "done_reason": "stop"}


def gemini_body(parts: list[Any]) -> dict[str, Any]:
    """A generateContent response whose candidate holds `parts`."""
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}


def responses_body(output: list[Any]) -> dict[str, Any]:
    """A completed Responses body holding `output`."""
    return {"status": "completed", "output": output}


MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("openai", openai_body({"content": None, "tool_calls": CALL}), "`tool_calls` is an object"),
    ("openai", openai_body({"tool_calls": "add"}), "`tool_calls` is a string"),
    ("openai", openai_body({"tool_calls": [CALL, 1]}), "`tool_calls` holds a number"),
    ("openai", openai_body("add"), "`message` is a string"),
    ("ollama", ollama_body({"content": "", "tool_calls": {"function": {}}}), "`tool_calls` is"),
    ("ollama", ollama_body({"content": "", "tool_calls": ["add"]}), "`tool_calls` holds"),
    ("ollama", ollama_body(["hi"]), "`message` is an array"),
    ("gemini", gemini_body([{"functionCall": "add"}]), "`functionCall` is a string"),
    ("openai-responses", responses_body([1]), "`item` is a number"),
    (
        "openai-responses",
        responses_body([{"type": "message", "content": "hi"}]),
        "`content` is a string",
    ),
    (
        "openai-responses",
        responses_body([{"type": "message", "content": [{"type": "output_text"}, None]}]),
        "`content` holds null",
    ),
]


def only_a_retryable_failure(events: list[ModelEvent], says: str) -> None:
    """The events are one retryable failure saying `says`, and nothing else."""
    assert len(events) == 1, events
    (failure,) = events
    assert isinstance(failure, ModelCallFailed) and failure.retryable
    assert failure.message.startswith("malformed response: ")
    assert says in failure.message


@pytest.mark.parametrize(("provider", "body", "says"), MALFORMED)
def test_a_malformed_body_is_a_retryable_failure(
    provider: str, body: dict[str, Any], says: str
) -> None:
    only_a_retryable_failure(PROVIDERS[provider]().decode_body(json.dumps(body).encode()), says)


def stream_of(provider: str, body: dict[str, Any]) -> bytes:
    """`body` as the stream that would carry it (one chunk or line, or the item events)."""
    if provider == "openai":
        (choice,) = body["choices"]
        chunk = {"choices": [{"index": 0, "delta": choice["message"], "finish_reason": None}]}
        return f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
    if provider == "ollama":
        return (json.dumps(body) + "\n").encode()
    if provider == "gemini":
        return f"data: {json.dumps(body)}\n\n".encode()
    (item,) = body["output"]
    added = {"type": "response.output_item.added", "output_index": 0, "item": item}
    done = {"type": "response.output_item.done", "output_index": 0, "item": item}
    completed = {"type": "response.completed", "response": body}
    return "".join(f"data: {json.dumps(e)}\n\n" for e in (added, done, completed)).encode()


@pytest.mark.parametrize(("provider", "body", "says"), MALFORMED)
def test_a_malformed_stream_is_a_retryable_failure(
    provider: str, body: dict[str, Any], says: str
) -> None:
    decoder = PROVIDERS[provider]().stream_decoder()
    events = decoder.feed(stream_of(provider, body)) + decoder.close()
    if provider == "openai":  # a chunk's delta stands for the message
        says = says.replace("`message`", "`delta`")
    only_a_retryable_failure(events, says)


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        ("openai", openai_body({"content": "hi", "tool_calls": None})),
        ("openai", openai_body({"content": "hi", "tool_calls": []})),
        ("ollama", ollama_body({"content": "hi"})),
        ("gemini", gemini_body([{"text": "hi"}, {"unknownPart": {}}])),
        ("openai-responses", responses_body([{"type": "web_search_call"}])),
    ],
)
def test_absent_fields_and_unknown_kinds_stay_lenient(provider: str, body: dict[str, Any]) -> None:
    events = PROVIDERS[provider]().decode_body(json.dumps(body).encode())
    assert isinstance(events[-1], ModelResponded), events


def test_a_responses_call_whose_arguments_are_an_object_keeps_them_as_json() -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "add", "arguments": {"a": 1}}
    events = PROVIDERS["openai-responses"]().decode_body(
        json.dumps(responses_body([call])).encode()
    )
    fragments = "".join(getattr(e, "fragment", "") for e in events)
    assert json.loads(fragments) == {"a": 1}

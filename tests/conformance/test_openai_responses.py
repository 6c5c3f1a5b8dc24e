"""OpenAI Responses API codec against recorded traffic (api.openai.com, simonw/llm and vercel/ai).

1. Every captured response decodes to the same events in every chunking, snapshotted.
2. Every captured request is rebuilt by the real core (`step`) from the captured
   conversation (the follow-up from the decoded first response) and encoded; the
   body equals what the real client sent, up to the differences `normalise()` takes out.
3. An error inside a 200 stream is a failure whose retryability its code decides.
4. Hypothesis: truncations and re-chunkings of the captures keep the decoder contract.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from traffic import (
    TRAFFIC,
    chunkings,
    decode_stream,
    jsonable,
    load,
    response_bytes,
    sse_from_chunks_jsonl,
)

from toolreel.adapters import ResponsesCodec
from toolreel.core import (
    CallModel,
    LoopConfig,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    PromptSubmitted,
    RunTool,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolSpec,
    Usage,
    initial_state,
    step,
)

#: The captured client asked for low reasoning effort.
CODEC = ResponsesCodec(reasoning_effort="low")

#: Streamed responses (a `.chunks.jsonl` fixture is re-framed as named SSE).
STREAMS = [
    "openai_responses_stream_function_call",
    "openai_responses_stream_function_call_output_followup",
    "openai_responses_stream_error_insufficient_quota.chunks.jsonl",
]
#: Non-streamed responses.
BODIES = ["openai_responses_nonstream_function_call"]


def stream_body(name: str) -> bytes:
    """A streamed body as the server sent it (a `.chunks.jsonl` fixture re-framed as SSE)."""
    if name.endswith(".chunks.jsonl"):
        return sse_from_chunks_jsonl(name, named=True)
    return response_bytes(load(name))


def terminal_last(events: list[Any]) -> bool:
    """Exactly one terminal event, and it is the last."""
    terminals = [e for e in events if isinstance(e, ModelResponded | ModelCallFailed)]
    return len(terminals) == 1 and events[-1] is terminals[0]


def test_every_responses_capture_is_covered() -> None:
    covered = {*STREAMS, *BODIES}
    files = sorted(p.name for p in TRAFFIC.iterdir() if p.name.startswith("openai_responses_"))
    assert len(files) == 6
    for name in files:
        stem = name.removesuffix(".json").removesuffix(".sse.txt")
        assert name in covered or stem in covered, f"capture not covered: {name}"


# 1. Decoding ---------------------------------------------------------------------


@pytest.mark.parametrize("case", STREAMS)
def test_stream_decodes_alike_in_every_chunking(case: str, snapshot: Any) -> None:
    decoded = {
        how: decode_stream(CODEC, chunks) for how, chunks in chunkings(stream_body(case)).items()
    }
    assert decoded["lines"] == decoded["whole"]
    assert decoded["bytes"] == decoded["whole"]
    assert decoded["random"] == decoded["whole"]
    assert terminal_last(decoded["whole"])
    assert jsonable(decoded["whole"]) == snapshot


@pytest.mark.parametrize("case", BODIES)
def test_body_decodes(case: str, snapshot: Any) -> None:
    events = CODEC.decode_body(response_bytes(load(case)))
    assert terminal_last(events)
    assert jsonable(events) == snapshot


def calls_of(events: list[ModelEvent]) -> list[tuple[str, str, Any]]:
    """(id, name, parsed arguments) per call index, as the core would assemble them."""
    names: dict[int, tuple[str, str]] = {}
    arguments: dict[int, str] = {}
    for event in events:
        if isinstance(event, ToolCallStarted):
            names[event.index] = (event.call_id, event.name)
        elif isinstance(event, ToolCallArgumentsDelta):
            arguments[event.index] = arguments.get(event.index, "") + event.fragment
    return [(*names[i], json.loads(arguments.get(i) or "{}")) for i in sorted(names)]


def test_streamed_call_uses_call_id_not_the_item_id() -> None:
    events = decode_stream(CODEC, [stream_body("openai_responses_stream_function_call")])
    assert calls_of(events) == [
        ("call_sVidsfFJ6zlzRpelrPkTPlpd", "multiply", {"a": 1231, "b": 2331})
    ]
    # 11 argument deltas, then `.done` and `output_item.done` repeat the whole: sent once.
    assert len([e for e in events if isinstance(e, ToolCallArgumentsDelta)]) == 11
    assert events[-1] == ModelResponded(
        finish_reason="tool_calls", usage=Usage(input_tokens=58, output_tokens=23)
    )


def test_whole_body_call_arrives_in_one_fragment() -> None:
    events = CODEC.decode_body(response_bytes(load("openai_responses_nonstream_function_call")))
    assert events == [
        ToolCallStarted(index=0, call_id="call_nJmCK7SJe3ajdYYplIbH0KgL", name="multiply"),
        ToolCallArgumentsDelta(index=0, fragment='{"a":1231,"b":2331}'),
        ModelResponded(finish_reason="tool_calls", usage=Usage(input_tokens=58, output_tokens=23)),
    ]


def test_streamed_text_is_said_once() -> None:
    events = decode_stream(
        CODEC, [stream_body("openai_responses_stream_function_call_output_followup")]
    )
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "1231 \u00d7 2331 = **2,869,461**"  # `.done` events repeat it: sent once
    assert events[-1] == ModelResponded(
        finish_reason="stop", usage=Usage(input_tokens=94, output_tokens=18)
    )


# 2. Encoding: the core rebuilds each captured request -------------------------------


def config_of(body: dict[str, Any]) -> LoopConfig:
    """The loop configuration the captured client ran with (model, instructions, tools)."""
    tools = tuple(
        ToolSpec(
            name=tool["name"],
            description=tool.get("description", ""),
            parameters=tool["parameters"],
        )
        for tool in body.get("tools", [])
    )
    return LoopConfig(
        model=body["model"],
        system_prompt=body.get("instructions"),
        tools=tools,
        tool_choice=body.get("tool_choice", "auto"),
    )


Leg = tuple[list[ModelEvent], dict[str, str]]


def core_request(config: LoopConfig, prompt: str, legs: list[Leg]) -> ModelRequest:
    """The request of the core's next `CallModel` after the prompt and the legs."""
    state, effects = step(initial_state(config), PromptSubmitted(text=prompt))
    for events, outputs in legs:
        for event in events:
            state, effects = step(state, event)
        for run in [e for e in effects if isinstance(e, RunTool)]:
            state, effects = step(
                state, ToolFinished(call_id=run.call.id, output=outputs[run.call.name])
            )
    [call] = [e for e in effects if isinstance(e, CallModel)]
    return call.request


#: Accepted differences between what the captured client sent and what we send.
ACCEPTED_DIFFERENCES = """
- no `tool_choice` (client) vs "auto" (us): "auto" is the default when tools are sent.
- `function_call` arguments compared as parsed JSON: simonw/llm re-serialises them
  (`{"a": 1231, ...}`); we send back the model's own text (`{"a":1231,...}`).
"""


def normalise(body: dict[str, Any]) -> dict[str, Any]:
    """A request body with the accepted differences (ACCEPTED_DIFFERENCES) taken out."""
    body = copy.deepcopy(body)
    if body.get("tools"):
        body.setdefault("tool_choice", "auto")
    for item in body["input"]:
        if item.get("type") == "function_call":
            item["arguments"] = json.loads(item["arguments"])
    return body


PROMPT = "What is 1231 * 2331? Use the multiply tool."

#: Captured request -> the conversation before it: (prompt, [(response case, outputs)]).
CONVERSATIONS: dict[str, tuple[str, list[tuple[str, dict[str, str]]]]] = {
    "openai_responses_nonstream_function_call": (PROMPT, []),
    "openai_responses_stream_function_call": (PROMPT, []),
    "openai_responses_stream_function_call_output_followup": (
        PROMPT,
        [("openai_responses_stream_function_call", {"multiply": "2869461"})],
    ),
}


def decoded(case: str) -> list[ModelEvent]:
    """A captured response's events, streamed or whole."""
    if "body_file" in load(case)["response"]:
        return decode_stream(CODEC, [stream_body(case)])
    return CODEC.decode_body(response_bytes(load(case)))


@pytest.mark.parametrize("case", sorted(CONVERSATIONS))
def test_core_rebuilds_the_captured_request(case: str) -> None:
    captured = load(case)["request"]["body"]
    prompt, legs = CONVERSATIONS[case]
    request = core_request(config_of(captured), prompt, [(decoded(c), out) for c, out in legs])
    ours = CODEC.encode(request, stream=captured["stream"])
    assert normalise(ours) == normalise(captured)


def test_follow_up_sends_the_call_as_the_model_wrote_it() -> None:
    prompt, legs = CONVERSATIONS["openai_responses_stream_function_call_output_followup"]
    captured = load("openai_responses_stream_function_call_output_followup")["request"]["body"]
    request = core_request(config_of(captured), prompt, [(decoded(c), o) for c, o in legs])
    [_, call, output] = CODEC.encode(request, stream=True)["input"]
    assert call == {
        "type": "function_call",
        "call_id": "call_sVidsfFJ6zlzRpelrPkTPlpd",
        "name": "multiply",
        "arguments": '{"a":1231,"b":2331}',
    }
    assert output == {
        "type": "function_call_output",
        "call_id": "call_sVidsfFJ6zlzRpelrPkTPlpd",
        "output": "2869461",
    }


# 3. Errors inside a 200 stream -------------------------------------------------------


def test_quota_error_in_a_200_stream_is_fatal_with_the_message() -> None:
    body = stream_body("openai_responses_stream_error_insufficient_quota.chunks.jsonl")
    [failure] = decode_stream(CODEC, [body])
    assert isinstance(failure, ModelCallFailed)
    assert not failure.retryable  # out of credit: asking again will not help
    assert failure.message.startswith("You exceeded your current quota")
    assert "code=insufficient_quota" in failure.message


def test_quota_error_unframed_by_name_still_fails() -> None:
    """Without `event:` lines the payload's own `type` names the event."""
    body = sse_from_chunks_jsonl("openai_responses_stream_error_insufficient_quota.chunks.jsonl")
    [failure] = decode_stream(CODEC, [body])
    assert isinstance(failure, ModelCallFailed) and not failure.retryable


# 4. Properties over the captures ---------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(case=st.sampled_from(STREAMS), cut=st.floats(0, 1), data=st.data())
def test_truncated_and_rechunked_captures_keep_the_contract(
    case: str, cut: float, data: Any
) -> None:
    body = stream_body(case)
    whole = decode_stream(CODEC, [body])
    points = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=30)))
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    assert decode_stream(CODEC, pieces) == whole
    events = decode_stream(CODEC, [body[: int(len(body) * cut)]])
    assert terminal_last(events)
    if not isinstance(events[-1], ModelResponded) and "quota" not in case:
        assert events[-1].retryable  # a cut stream is worth asking again


@settings(max_examples=100, deadline=None)
@given(case=st.sampled_from(BODIES), cut=st.integers(0, 10_000))
def test_truncated_bodies_fail_without_raising(case: str, cut: int) -> None:
    body = response_bytes(load(case)).rstrip()
    events = CODEC.decode_body(body[: min(cut, len(body) - 1)])
    assert terminal_last(events) and isinstance(events[-1], ModelCallFailed)

"""The Anthropic codec against recorded Messages API traffic (tests/conformance/traffic/).

Responses: every captured stream and body decodes the same whatever the chunking,
and its events are snapshotted. Requests: the neutral request the core builds
(by driving `step` with the decoded first leg) encodes to the body the real client
sent, up to the differences `accepted` lists, each of which the API accepts.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import itertools
import json
import random
from collections.abc import Sequence
from typing import Any

import httpx2
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
from toolreel.core.outcomes import FinishReason

CODEC = AnthropicCodec()

SSE_CASES = [
    "anthropic_stream_tool_use_no_args",
    "anthropic_stream_parallel_tool_use",
    "anthropic_stream_tool_result_followup",
    "anthropic_stream_thinking_then_tool_use",
    "anthropic_stream_thinking_tool_result_followup",
]
CHUNKS_FIXTURES = [
    "anthropic_stream_text_then_tool_use_empty_input",
    "anthropic_stream_input_json_delta_split",
]
BODY_CASES = [
    "anthropic_nonstream_parallel_tool_use",
    "anthropic_nonstream_tool_result_is_error",
    "anthropic_nonstream_thinking_and_tool_use",
]


@functools.cache
def stream_bytes(name: str) -> bytes:
    """A captured stream as sent (`.chunks.jsonl` fixtures re-framed as named SSE)."""
    if name in CHUNKS_FIXTURES:
        return sse_from_chunks_jsonl(f"{name}.chunks.jsonl", named=True)
    return response_bytes(load(name))


@functools.cache
def full_events(name: str) -> tuple[Any, ...]:
    """The events of a whole captured stream, decoded once."""
    return tuple(decode_stream(CODEC, [stream_bytes(name)]))


def decoded(name: str) -> list[Any]:
    """The events of a captured response, streamed or whole."""
    if name in BODY_CASES:
        return CODEC.decode_body(response_bytes(load(name)))
    return decode_stream(CODEC, [stream_bytes(name)])


def summary(events: Sequence[Any]) -> dict[str, Any]:
    """What a response said: text, reasoning blocks, calls by index, finish reason, usage."""
    text, reasoning, calls = "", [], {}
    for event in events:
        match event:
            case TextDelta():
                text += event.text
            case ReasoningDelta(redacted=str()):
                reasoning.append({"redacted": event.redacted})
            case ReasoningDelta():
                if not reasoning or "signature" in reasoning[-1]:
                    reasoning.append({"text": ""})
                reasoning[-1]["text"] += event.text
                if event.signature is not None:
                    reasoning[-1]["signature"] = event.signature
            case ToolCallStarted():
                calls[event.index] = {"id": event.call_id, "name": event.name, "arguments": ""}
            case ToolCallArgumentsDelta():
                calls[event.index]["arguments"] += event.fragment
    last = events[-1]
    assert isinstance(last, ModelResponded)
    return {
        "text": text,
        "reasoning": reasoning,
        "calls": calls,
        "finish": last.finish_reason,
        "usage": last.usage,
    }


# 1. Responses ----------------------------------------------------------------


@pytest.mark.parametrize("name", SSE_CASES + CHUNKS_FIXTURES)
def test_every_chunking_of_a_captured_stream_decodes_the_same(name: str, snapshot) -> None:
    ways = chunkings(stream_bytes(name))
    results = {way: decode_stream(CODEC, chunks) for way, chunks in ways.items()}
    assert results["lines"] == results["whole"]
    assert results["bytes"] == results["whole"]
    assert results["random"] == results["whole"]
    assert isinstance(results["whole"][-1], ModelResponded)
    assert jsonable(results["whole"]) == snapshot


@pytest.mark.parametrize("name", BODY_CASES)
def test_a_captured_whole_response_decodes_to_events(name: str, snapshot) -> None:
    events = decoded(name)
    assert isinstance(events[-1], ModelResponded)
    assert jsonable(events) == snapshot


def test_thinking_then_tool_use_stream_gives_signed_reasoning_and_an_argless_call() -> None:
    said = summary(decoded("anthropic_stream_thinking_then_tool_use"))
    [block] = said["reasoning"]
    assert block["text"] == (
        "The user wants me to:\n1. Use the fixed_version tool\n2. Tell them the version\n"
        "3. Make a short joke about it\n\nLet me first call the fixed_version tool to see "
        "what version it returns."
    )
    # The signature the client replayed on the follow-up is the one the stream carried.
    followup = load("anthropic_stream_thinking_tool_result_followup")["request"]["body"]
    assert block["signature"] == followup["messages"][1]["content"][0]["signature"]
    assert block["signature"].startswith("EoQDCm0IDhgCKkCDzGs2kL2Pgn")
    assert said["calls"] == {
        1: {"id": "toolu_01825dXWLSoJwCst1qTsiWdb", "name": "fixed_version", "arguments": ""}
    }
    assert said["text"] == ""
    assert said["finish"] == "tool_use"
    assert said["usage"] == Usage(input_tokens=598, output_tokens=92)


def test_parallel_tool_use_stream_gives_two_calls_by_block_index() -> None:
    said = summary(decoded("anthropic_stream_parallel_tool_use"))
    assert said["calls"] == {
        0: {
            "id": "toolu_01LtHJmixrs9NcWQkK8hu8hj",
            "name": "pelican_name_generator",
            "arguments": "",
        },
        1: {
            "id": "toolu_01N8a4jWyf116qKTMqKKmjyt",
            "name": "pelican_name_generator",
            "arguments": "",
        },
    }
    assert (said["finish"], said["usage"]) == (
        "tool_use",
        Usage(input_tokens=542, output_tokens=62),
    )


def test_split_input_json_reassembles_to_the_arguments_object() -> None:
    said = summary(decoded("anthropic_stream_input_json_delta_split"))
    assert said["calls"][0]["id"] == "toolu_01KFbKqPYSuAKujiL6mTfzYA"
    assert json.loads(said["calls"][0]["arguments"]) == {
        "elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]
    }
    assert said["usage"] == Usage(input_tokens=849, output_tokens=47)


def test_text_then_tool_stream_keeps_text_and_indexes_the_call_after_it() -> None:
    said = summary(decoded("anthropic_stream_text_then_tool_use_empty_input"))
    assert said["text"] == "I'll update the issue list for you."
    assert said["calls"] == {
        1: {"id": "toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "name": "updateIssueList", "arguments": ""}
    }


def test_followup_stream_answers_in_text_ending_the_turn() -> None:
    said = summary(decoded("anthropic_stream_tool_result_followup"))
    assert said["text"].startswith(
        "Here are two great names for your pet pelican:\n\n1. **Charles**"
    )
    assert said["text"].endswith("feathered friend! 🦅")
    assert said["calls"] == {}
    assert (said["finish"], said["usage"]) == (
        "end_turn",
        Usage(input_tokens=678, output_tokens=82),
    )


def test_parallel_tool_use_body_gives_text_then_four_calls() -> None:
    said = summary(decoded("anthropic_nonstream_parallel_tool_use"))
    assert said["text"].startswith("I'll help you find out who is the youngest")
    calls = [(c["id"], c["name"], json.loads(c["arguments"])) for c in said["calls"].values()]
    assert calls == [
        ("toolu_0167cfEnoQaPviGdVXA95zcu", "retrieve_entity_info", {"name": "Alice"}),
        ("toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "retrieve_entity_info", {"name": "Bob"}),
        ("toolu_01XFyAjstT3966qvRynZyVPo", "retrieve_entity_info", {"name": "Charlie"}),
        ("toolu_013mnQZbgtK2oe3Mo3XKJsx3", "retrieve_entity_info", {"name": "Daisy"}),
    ]
    assert list(said["calls"]) == [1, 2, 3, 4]
    assert (said["finish"], said["usage"]) == (
        "tool_use",
        Usage(input_tokens=423, output_tokens=202),
    )


def test_thinking_body_gives_reasoning_text_and_an_empty_object_call() -> None:
    said = summary(decoded("anthropic_nonstream_thinking_and_tool_use"))
    [block] = said["reasoning"]
    assert block["text"].startswith(
        'The user is asking about the largest city in "the user country".'
    )
    assert block["signature"].startswith("EqEECkYICxgCKkAo3UA4")
    assert said["text"].startswith("I'll help you find the largest city in your country.")
    assert said["calls"] == {
        2: {"id": "toolu_01YGzqpRE16Vricda3Aqcejo", "name": "get_user_country", "arguments": "{}"}
    }


def test_body_with_a_caller_field_gives_the_corrected_call() -> None:
    said = summary(decoded("anthropic_nonstream_tool_result_is_error"))
    assert said["calls"] == {
        1: {
            "id": "toolu_01GgM32pcJgjKXqUgpjs9XFT",
            "name": "stock_lookup",
            "arguments": '{"symbol": "AAPL"}',
        }
    }
    assert said["usage"] == Usage(input_tokens=1122, output_tokens=74)


# 3. Captured errors ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "anthropic_error_400_invalid_request",
            "HTTP 400: invalid_request_error: This model does not support effort level 'xhigh'."
            " Supported levels: high, low, max, medium. (request_id req_011Ca7jT9AHpgXgdv8igm4z9)",
        ),
        (
            "anthropic_error_404_not_found",
            "HTTP 404: not_found_error: model: claude-sonet-4-5"
            " (request_id req_011CdufXo8Y2LVfY2veyuQWG)",
        ),
    ],
)
def test_captured_error_bodies_are_fatal_with_the_provider_message(name: str, message: str) -> None:
    case = load(name)
    status = case["response"]["status"]
    failure = CODEC.decode_error(status, case["response"]["headers"], response_bytes(case))
    assert failure == ModelCallFailed(retryable=False, message=message, status=status)


# 2. Requests -------------------------------------------------------------------


def accepted(body: dict[str, Any]) -> dict[str, Any]:
    """A captured request body with the differences the API accepts made as toolreel sends them.

    - `"stream": false` (pydantic-ai) is left out: false is the default.
    - A missing `tool_choice` (llm-anthropic) becomes `{"type": "auto"}`: the API's
      default whenever tools are given.
    - `defer_loading` on a tool (pydantic-ai's tool-search beta) is dropped: toolreel
      has no deferred tools; without it the tool is simply loaded up front.
    - An assistant text block of only whitespace (llm-anthropic pads a turn that had no
      text with " ") is dropped: the model said nothing; the same client's later capture
      (thinking follow-up) sends tool-only assistant content and got a 200.
    - A tool_result `content` that is a list of one text block (pydantic-ai) becomes
      that text: the API documents a string as equivalent to one text block.
    - `"is_error": false` (pydantic-ai) is left out: false is the default.
    """
    body = copy.deepcopy(body)
    if body.get("stream") is False:
        del body["stream"]
    if "tools" in body:
        body.setdefault("tool_choice", {"type": "auto"})
        for tool in body["tools"]:
            tool.pop("defer_loading", None)
    for message in body["messages"]:
        message["content"] = [
            _accepted_block(block)
            for block in message["content"]
            if not (
                block["type"] == "text"
                and message["role"] == "assistant"
                and not block["text"].strip()
            )
        ]
    return body


def _accepted_block(block: dict[str, Any]) -> dict[str, Any]:
    """One content block, as `accepted` describes."""
    if block["type"] != "tool_result":
        return block
    if block.get("is_error") is False:
        del block["is_error"]
    match block["content"]:
        case [{"type": "text", "text": text}]:
            block["content"] = text
    return block


def captured_tools(name: str) -> tuple[ToolSpec, ...]:
    """The tools the captured client offered, as toolreel specs (configuration, not history)."""
    tools = load(name)["request"]["body"].get("tools", [])
    return tuple(
        ToolSpec(name=t["name"], description=t["description"], parameters=t["input_schema"])
        for t in tools
    )


def assert_encodes_as_captured(
    name: str, request: ModelRequest, codec: AnthropicCodec = CODEC
) -> None:
    """`request` encodes to the captured body (up to `accepted`), at the captured URL."""
    captured = load(name)["request"]
    stream = bool(captured["body"].get("stream"))
    assert codec.encode(request, stream=stream) == accepted(captured["body"])
    # pydantic-ai posts to the SDK's beta namespace (`?beta=true`); same endpoint otherwise.
    url = captured["url"].removesuffix("?beta=true")
    assert codec.endpoint("https://api.anthropic.com", request, stream=stream) == url
    version = captured["headers"].get("anthropic-version")
    if version is not None:
        assert codec.headers(None)["anthropic-version"] == version


def requests_of_a_turn(
    cfg: LoopConfig, prompt: str, legs: list[list[Event]], outputs: dict[str, str]
) -> list[ModelRequest]:
    """Drive `step` through a turn: model legs as given, tools answering with `outputs`.

    Returns the request of every model call, up to the first leg not given.
    """
    state, effects = step(initial_state(cfg), PromptSubmitted(text=prompt))
    queue, requests, responses = list(effects), [], iter(legs)
    while queue:
        effect = queue.pop(0)
        match effect:
            case CallModel(request=request):
                requests.append(request)
                response = next(responses, None)
                if response is None:
                    break
                for event in response:
                    state, more = step(state, event)
                    queue += more
            case RunTool(call=call):
                state, more = step(state, ToolFinished(call_id=call.id, output=outputs[call.id]))
                queue += more
    return requests


#: What llm-anthropic's tool answered to each call of anthropic_stream_parallel_tool_use.
PELICAN_NAMES = {
    "toolu_01LtHJmixrs9NcWQkK8hu8hj": "Charles",
    "toolu_01N8a4jWyf116qKTMqKKmjyt": "Sammy",
}


def test_a_first_request_encodes_as_llm_anthropic_sent_it() -> None:
    name = "anthropic_stream_tool_use_no_args"
    cfg = LoopConfig(
        model="claude-haiku-4-5-20251001",
        tools=captured_tools(name),
        max_tokens=8192,
        temperature=1.0,
    )
    [first] = requests_of_a_turn(cfg, "Generate one name for a pet pelican", [], {})
    assert_encodes_as_captured(name, first)


def test_parallel_calls_and_their_results_encode_as_llm_anthropic_sent_them() -> None:
    cfg = LoopConfig(
        model="claude-haiku-4-5-20251001",
        tools=captured_tools("anthropic_stream_parallel_tool_use"),
        max_tokens=8192,
        temperature=1.0,
    )
    first, followup = requests_of_a_turn(
        cfg,
        "Two names for a pet pelican",
        [decoded("anthropic_stream_parallel_tool_use")],
        PELICAN_NAMES,
    )
    assert_encodes_as_captured("anthropic_stream_parallel_tool_use", first)
    [round_] = followup.messages[-1].tool_rounds
    assert round_.assistant_text == ""
    assert [c.arguments for c in round_.tool_calls] == ["{}", "{}"]
    assert_encodes_as_captured("anthropic_stream_tool_result_followup", followup)


def test_a_thinking_block_goes_back_unchanged_with_its_call_and_result() -> None:
    codec = AnthropicCodec(thinking_budget=1024, thinking_display="summarized")
    cfg = LoopConfig(
        model="claude-haiku-4-5-20251001",
        tools=captured_tools("anthropic_stream_thinking_then_tool_use"),
        max_tokens=64000,
        temperature=1.0,
    )
    first, followup = requests_of_a_turn(
        cfg,
        "Use the fixed_version tool. Then tell me the version and make one short joke about it."
        " Think about it first.",
        [decoded("anthropic_stream_thinking_then_tool_use")],
        {"toolu_01825dXWLSoJwCst1qTsiWdb": "0.32a0"},
    )
    assert_encodes_as_captured("anthropic_stream_thinking_then_tool_use", first, codec)
    [round_] = followup.messages[-1].tool_rounds
    [thinking] = round_.reasoning
    assert thinking.text.startswith("The user wants me to:\n1. Use the fixed_version tool")
    assert thinking.signature is not None
    assert thinking.signature.startswith("EoQDCm0IDhgCKkCDzGs2kL2Pgn")
    assert_encodes_as_captured("anthropic_stream_thinking_tool_result_followup", followup, codec)


def test_the_http_driver_replays_a_captured_two_leg_conversation() -> None:
    """HttpModel + codec + step offline: what is posted, and what the turn ends with."""
    legs = ["anthropic_stream_parallel_tool_use", "anthropic_stream_tool_result_followup"]
    posted: list[dict[str, Any]] = []

    def serve(request: httpx2.Request) -> httpx2.Response:
        assert request.headers["x-api-key"] == "sk-test"
        posted.append(json.loads(request.content))
        body = response_bytes(load(legs[len(posted) - 1]))
        return httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})

    cfg = LoopConfig(
        model="claude-haiku-4-5-20251001",
        tools=captured_tools(legs[0]),
        max_tokens=8192,
        temperature=1.0,
    )

    async def turn() -> Finish:
        model = HttpModel(CODEC, api_key=Secret("sk-test"), transport=httpx2.MockTransport(serve))
        state, effects = step(
            initial_state(cfg), PromptSubmitted(text="Two names for a pet pelican")
        )
        queue = list(effects)
        try:
            while queue:
                effect = queue.pop(0)
                match effect:
                    case Finish():
                        return effect
                    case CallModel(request=request):
                        events = [event async for event in model.stream(request)]
                    case RunTool(call=call):
                        events = [ToolFinished(call_id=call.id, output=PELICAN_NAMES[call.id])]
                    case _:
                        events = []
                for event in events:
                    state, more = step(state, event)
                    queue += more
        finally:
            await model.aclose()
        raise AssertionError("the turn never finished")

    finish = asyncio.run(turn())
    assert posted == [accepted(load(leg)["request"]["body"]) for leg in legs]
    assert finish.reason is FinishReason.COMPLETED
    assert finish.text == summary(decoded(legs[1]))["text"]
    assert finish.usage == Usage(input_tokens=542 + 678, output_tokens=62 + 82)


VALIDATION_ERRORS = [
    {
        "type": "missing",
        "loc": ["symbol"],
        "msg": "Field required",
        "input": {"ticker": "AAPL"},
    },
    {
        "type": "extra_forbidden",
        "loc": ["ticker"],
        "msg": "Extra inputs are not permitted",
        "input": "AAPL",
    },
]


def test_a_failed_result_is_sent_with_is_error_after_two_rounds() -> None:
    search = ToolCall(
        id="toolu_01STyXG2KReZkuFAiSBAFWLd",
        name="search_tools",
        arguments=json.dumps(
            {"queries": ["stock price", "AAPL", "ticker symbol", "market data", "financial data"]}
        ),
    )
    lookup = ToolCall(
        id="toolu_014b9i18P8JdeixyRCGWwgBa", name="stock_lookup", arguments='{"ticker": "AAPL"}'
    )
    found = {"name": "stock_lookup", "description": "Look up stock price by ticker symbol."}
    rejected = (
        f"2 validation errors:\n```json\n{json.dumps(VALIDATION_ERRORS, indent=2)}\n```\n\n"
        "Fix the errors and try again."
    )
    rounds = (
        ToolRound(
            assistant_text="I'll search for a tool that can help me get stock price information.",
            tool_calls=(search,),
            results=(
                ToolResult(
                    call_id=search.id,
                    name=search.name,
                    content=json.dumps({"discovered_tools": [found]}, separators=(",", ":")),
                ),
            ),
        ),
        ToolRound(
            assistant_text="Great! I found a tool to look up stock prices. "
            "Let me get the current stock price for AAPL.",
            tool_calls=(lookup,),
            results=(
                ToolResult(call_id=lookup.id, name=lookup.name, content=rejected, is_error=True),
            ),
        ),
    )
    request = ModelRequest(
        model="claude-sonnet-4-5",
        system=None,
        messages=(
            ChatMessage(role="user", content="What is the current stock price for AAPL?"),
            ChatMessage(role="assistant", content="", tool_rounds=rounds),
        ),
        tools=captured_tools("anthropic_nonstream_tool_result_is_error"),
    )
    assert_encodes_as_captured("anthropic_nonstream_tool_result_is_error", request)


def test_system_prompt_and_schema_encode_as_pydantic_ai_sent_them() -> None:
    name = "anthropic_nonstream_parallel_tool_use"
    request = ModelRequest(
        model="claude-haiku-4-5",
        system=load(name)["request"]["body"]["system"],
        messages=(
            ChatMessage(
                role="user",
                content="Alice, Bob, Charlie and Daisy are a family. Who is the youngest?",
            ),
        ),
        tools=captured_tools(name),
    )
    assert_encodes_as_captured(name, request)


def test_thinking_request_encodes_as_pydantic_ai_sent_it() -> None:
    request = ModelRequest(
        model="claude-sonnet-4-0",
        system=None,
        messages=(
            ChatMessage(role="user", content="What is the largest city in the user country?"),
        ),
        tools=(
            ToolSpec(
                name="get_user_country",
                parameters={"additionalProperties": False, "properties": {}, "type": "object"},
            ),
        ),
    )
    codec = AnthropicCodec(thinking_budget=3000)
    assert_encodes_as_captured("anthropic_nonstream_thinking_and_tool_use", request, codec)


def test_a_request_without_tools_encodes_as_captured() -> None:
    # anthropic_error_400_invalid_request is left out: it sets `output_config.effort`,
    # which toolreel does not offer.
    request = ModelRequest(
        model="claude-sonet-4-5",
        system=None,
        messages=(ChatMessage(role="user", content="hello"),),
        tools=(),
    )
    assert_encodes_as_captured("anthropic_error_404_not_found", request)


def test_a_round_stored_by_hand_encodes_like_the_one_step_stored() -> None:
    """The compact history the core keeps, written out, for the thinking follow-up."""
    captured = load("anthropic_stream_thinking_tool_result_followup")["request"]["body"]
    thinking = captured["messages"][1]["content"][0]
    call = ToolCall(id="toolu_01825dXWLSoJwCst1qTsiWdb", name="fixed_version", arguments="{}")
    round_ = ToolRound(
        assistant_text="",
        tool_calls=(call,),
        results=(ToolResult(call_id=call.id, name=call.name, content="0.32a0"),),
        reasoning=(Reasoning(text=thinking["thinking"], signature=thinking["signature"]),),
    )
    request = ModelRequest(
        model="claude-haiku-4-5-20251001",
        system=None,
        messages=(
            ChatMessage(role="user", content=captured["messages"][0]["content"][0]["text"]),
            ChatMessage(role="assistant", content="", tool_rounds=(round_,)),
        ),
        tools=captured_tools("anthropic_stream_thinking_tool_result_followup"),
        max_tokens=64000,
        temperature=1.0,
    )
    codec = AnthropicCodec(thinking_budget=1024, thinking_display="summarized")
    assert_encodes_as_captured("anthropic_stream_thinking_tool_result_followup", request, codec)


# 4. Properties ------------------------------------------------------------------

STREAMS = st.sampled_from(SSE_CASES + CHUNKS_FIXTURES)
PROPERTIES = settings(max_examples=150, deadline=None)


def assert_one_terminal_last(events: list[Any]) -> None:
    """The decoder contract: exactly one terminal event, and it comes last."""
    terminals = [e for e in events if isinstance(e, ModelResponded | ModelCallFailed)]
    assert len(terminals) == 1
    assert events[-1] is terminals[0]


def cut(body: bytes, points: list[int]) -> list[bytes]:
    """`body` cut at the given offsets."""
    edges = [0, *sorted({p % (len(body) + 1) for p in points}), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges)]


@PROPERTIES
@given(st.lists(st.binary(max_size=64), max_size=12))
def test_random_bytes_never_raise_and_end_with_one_terminal_event(chunks: list[bytes]) -> None:
    assert_one_terminal_last(decode_stream(CODEC, chunks))


@PROPERTIES
@given(st.binary(max_size=512))
def test_random_bodies_never_raise_and_give_one_terminal_event(body: bytes) -> None:
    assert_one_terminal_last(CODEC.decode_body(body))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
MESSAGE_KEYS = st.sampled_from(["type", "content", "stop_reason", "usage", "text", "input", "id"])


@PROPERTIES
@given(st.dictionaries(MESSAGE_KEYS, JSON_VALUES, max_size=5))
def test_message_shaped_json_of_any_shape_never_raises(message: dict[str, Any]) -> None:
    assert_one_terminal_last(CODEC.decode_body(json.dumps(message).encode()))


@PROPERTIES
@given(STREAMS, st.integers(min_value=0), st.lists(st.integers(0), max_size=8))
def test_a_truncated_capture_gives_a_prefix_of_its_events_then_one_terminal(
    name: str, length: int, points: list[int]
) -> None:
    body = stream_bytes(name)
    truncated = body[: length % (len(body) + 1)]
    events = decode_stream(CODEC, cut(truncated, points))
    assert_one_terminal_last(events)
    assert tuple(events[:-1]) == full_events(name)[: len(events) - 1]
    if truncated != body:
        assert isinstance(events[-1], ModelCallFailed)
        assert events[-1].retryable


@PROPERTIES
@given(STREAMS, st.lists(st.integers(0), max_size=40))
def test_rechunking_a_capture_never_changes_its_events(name: str, points: list[int]) -> None:
    assert tuple(decode_stream(CODEC, cut(stream_bytes(name), points))) == full_events(name)


@PROPERTIES
@given(STREAMS, st.randoms(use_true_random=False))
def test_a_corrupted_capture_never_raises(name: str, rng: random.Random) -> None:
    body = bytearray(stream_bytes(name))
    for _ in range(rng.randint(1, 8)):
        body[rng.randrange(len(body))] = rng.randrange(256)
    assert_one_terminal_last(decode_stream(CODEC, cut(bytes(body), [rng.randrange(len(body))])))


ERROR_CASES = ["anthropic_error_400_invalid_request", "anthropic_error_404_not_found"]


def test_every_anthropic_capture_in_the_corpus_is_exercised() -> None:
    covered = {
        *(f"{name}.json" for name in SSE_CASES + BODY_CASES + ERROR_CASES),
        *(f"{name}.sse.txt" for name in SSE_CASES),
        *(f"{name}.chunks.jsonl" for name in CHUNKS_FIXTURES),
    }
    assert {path.name for path in TRAFFIC.glob("anthropic_*")} == covered

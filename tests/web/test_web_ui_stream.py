"""The AI SDK UI message stream encoder: every notice kind, checked against the ai schema."""

from __future__ import annotations

import json

import pytest
from web_support import (
    ADD,
    ADDED,
    BLOCKED,
    BROKEN,
    CANCELLED,
    CAPPED,
    COMPLETED,
    DIVIDE,
    EVERY_NOTICE,
    FAILED,
    FAILED_DIVIDE,
    ROUND,
    check_ui,
    finish,
    fold_plain,
    fold_ui,
    schema_errors,
)

from toolreel.core import ChatMessage, ToolCall
from toolreel.core.notices import (
    AttemptStarted,
    MessageRecorded,
    ModelChanged,
    ReasoningStreamed,
    ResultsRequested,
    RetryScheduled,
    RoundFinished,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallAnnounced,
    ToolCallStreaming,
    ToolResultReady,
    ValidationFailed,
)
from toolreel.core.outcomes import Completed
from toolreel.web.streams import DONE, sse, ui_error, ui_parts, ui_start

USAGE_PART = {"type": "data-usage", "data": {"input_tokens": 30, "output_tokens": 12}}


def test_a_tool_round_then_an_answer_is_one_message_of_two_steps() -> None:
    parts = fold_ui(
        [
            TextStreamed(text="Let me see. "),
            ToolCallAnnounced(call=ADD, iteration=1),
            ToolCallAnnounced(call=DIVIDE, iteration=1),
            ToolResultReady(result=ADDED),
            ToolResultReady(result=FAILED_DIVIDE),
            RoundFinished(round=ROUND, iteration=1),
            TextStreamed(text="It is "),
            TextStreamed(text="5."),
            COMPLETED,
        ]
    )
    assert parts == [
        {"type": "start", "messageId": "msg_1"},
        {"type": "start-step"},
        {"type": "text-start", "id": "text-1"},
        {"type": "text-delta", "id": "text-1", "delta": "Let me see. "},
        {"type": "text-end", "id": "text-1"},
        {"type": "tool-input-start", "toolCallId": "call_1", "toolName": "add"},
        {"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": '{"a": 2, "b": 3}'},
        {
            "type": "tool-input-available",
            "toolCallId": "call_1",
            "toolName": "add",
            "input": {"a": 2, "b": 3},
        },
        {"type": "tool-input-start", "toolCallId": "call_2", "toolName": "divide"},
        {"type": "tool-input-delta", "toolCallId": "call_2", "inputTextDelta": '{"a": 1, "b": 0}'},
        {
            "type": "tool-input-available",
            "toolCallId": "call_2",
            "toolName": "divide",
            "input": {"a": 1, "b": 0},
        },
        {
            "type": "tool-output-available",
            "toolCallId": "call_1",
            "output": '{"result": 5}',
            "providerMetadata": {"toolreel": {"duration_ms": 1000}},
        },
        {
            "type": "tool-output-error",
            "toolCallId": "call_2",
            "errorText": "ValueError: Cannot divide by zero",
            "providerMetadata": {"toolreel": {"duration_ms": 2000}},
        },
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "text-2"},
        {"type": "text-delta", "id": "text-2", "delta": "It is "},
        {"type": "text-delta", "id": "text-2", "delta": "5."},
        {"type": "text-end", "id": "text-2"},
        {"type": "finish-step"},
        USAGE_PART,
        {
            "type": "finish",
            "finishReason": "stop",
            "messageMetadata": {"reason": "completed", "max_iterations_reached": False},
        },
    ]
    check_ui(parts)


def started(call_id: str, index: int = 0) -> ToolCallStreaming:
    """The model began writing a call of `add` at `index`."""
    return ToolCallStreaming(index=index, call_id=call_id, name="add")


def fragment(text: str, index: int = 0) -> ToolArgumentsStreamed:
    """A fragment of the arguments of the call at `index`."""
    return ToolArgumentsStreamed(index=index, fragment=text)


def of_calls(parts: list[dict]) -> list[tuple[str, str, str]]:
    """(type, toolCallId, what it carries) of each tool input part."""
    return [
        (p["type"], p["toolCallId"], p.get("inputTextDelta") or p.get("toolName", ""))
        for p in parts
        if p["type"].startswith("tool-input")
    ]


def test_a_call_is_started_and_its_fragments_sent_as_they_arrive_then_its_input() -> None:
    parts = fold_ui(
        [
            TextStreamed(text="Let me see. "),
            started("call_1"),
            fragment('{"a": 2, '),
            fragment('"b": 3}'),
            ToolCallAnnounced(call=ADD, iteration=1),
        ]
    )
    kinds = [p["type"] for p in parts]
    assert kinds.index("text-end") < kinds.index("tool-input-start")  # rule 3
    assert of_calls(parts) == [
        ("tool-input-start", "call_1", "add"),
        ("tool-input-delta", "call_1", '{"a": 2, '),
        ("tool-input-delta", "call_1", '"b": 3}'),
        ("tool-input-available", "call_1", "add"),
    ]


def test_a_call_without_an_id_or_with_one_already_used_is_sent_whole_when_announced() -> None:
    unnamed = ToolCall(id="call_1_1_0", name="add", arguments="{}")
    twice = ToolCall(id="call_1_2", name="add", arguments="{}")
    parts = fold_ui(
        [
            started("", 0),
            fragment("{}", 0),
            started("call_1", 1),
            started("call_1", 2),
            fragment("{}", 2),
            ToolCallAnnounced(call=unnamed, iteration=1),
            ToolCallAnnounced(call=ADD, iteration=1),
            ToolCallAnnounced(call=twice, iteration=1),
        ]
    )
    assert of_calls(parts) == [
        ("tool-input-start", "call_1", "add"),
        ("tool-input-start", "call_1_1_0", "add"),
        ("tool-input-delta", "call_1_1_0", "{}"),
        ("tool-input-available", "call_1_1_0", "add"),
        ("tool-input-available", "call_1", "add"),
        ("tool-input-start", "call_1_2", "add"),
        ("tool-input-delta", "call_1_2", "{}"),
        ("tool-input-available", "call_1_2", "add"),
    ]


def test_a_retry_voids_a_call_being_written_and_it_starts_again() -> None:
    retry = RetryScheduled(retry=1, seconds=0.5, message="overloaded", status=529)
    announced = ToolCallAnnounced(call=ADD, iteration=1)
    again = [started("call_1"), fragment('{"a": 2, "b": 3}'), announced]
    parts = fold_ui([started("call_1"), fragment('{"a"'), retry, *again])
    kinds = [p["type"] for p in parts]
    assert kinds.index("reset-step") < len(kinds) - 4
    assert of_calls(parts)[2:] == [
        ("tool-input-start", "call_1", "add"),
        ("tool-input-delta", "call_1", '{"a": 2, "b": 3}'),
        ("tool-input-available", "call_1", "add"),
    ]


def test_every_notice_kind_encodes_to_parts_of_the_ai_packages_schema() -> None:
    parts = fold_ui(EVERY_NOTICE)
    kinds = {part["type"] for part in parts}
    assert kinds >= {
        "start",
        "start-step",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-input-error",
        "tool-output-available",
        "tool-output-error",
        "finish-step",
        "reset-step",
        "data-retry",
        "data-attempt",
        "data-validation",
        "data-usage",
        "finish",
    }
    check_ui(parts)


@pytest.mark.parametrize(
    "part",
    [
        {"type": "text-delta", "id": "text-1"},
        {"type": "tool-output-error", "toolCallId": "c"},
        {"type": "finish", "finishReason": "completed"},
        {"type": "tool-input-available", "toolCallId": "c", "toolName": "add"},
        {"type": "usage", "data": {}},
    ],
)
def test_the_copied_schema_refuses_parts_the_ai_package_refuses(part: dict[str, object]) -> None:
    assert schema_errors(part) != []


def test_reasoning_then_text_are_two_parts_each_ended_before_the_next() -> None:
    parts = fold_ui([ReasoningStreamed(text="hm"), TextStreamed(text="5"), COMPLETED])
    assert [p["type"] for p in parts[:8]] == [
        "start",
        "start-step",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-end",
    ]
    assert parts[2]["id"] == "reasoning-1" and parts[5]["id"] == "text-2"
    check_ui(parts)


def test_arguments_that_are_no_json_object_are_a_tool_input_error() -> None:
    parts = fold_ui([ToolCallAnnounced(call=BROKEN, iteration=1)])
    assert parts[-1] == {
        "type": "tool-input-error",
        "toolCallId": "call_3",
        "toolName": "add",
        "input": '{"a": 2,',
        "errorText": "the arguments are not a JSON object",
    }
    assert schema_errors(parts[-1]) == []


def test_a_retry_inside_a_step_resets_it_and_says_when_it_starts() -> None:
    retry = RetryScheduled(retry=1, seconds=0.5, message="overloaded", status=529)
    parts = fold_ui([TextStreamed(text="It is"), retry, TextStreamed(text="5"), COMPLETED])
    assert parts[4:9] == [
        {"type": "text-end", "id": "text-1"},
        {"type": "reset-step"},
        {
            "type": "data-retry",
            "data": {"retry": 1, "seconds": 0.5, "message": "overloaded", "status": 529},
            "transient": True,
        },
        {"type": "text-start", "id": "text-2"},
        {"type": "text-delta", "id": "text-2", "delta": "5"},
    ]
    check_ui(parts)


def test_a_retry_between_steps_resets_nothing_the_last_step_showed() -> None:
    retry = RetryScheduled(retry=1, seconds=1.0, message="slow down", status=429)
    parts = fold_ui(
        [
            ToolCallAnnounced(call=ADD, iteration=1),
            ToolResultReady(result=ADDED),
            RoundFinished(round=ROUND, iteration=1),
            retry,
        ]
    )
    assert "reset-step" not in [p["type"] for p in parts]
    assert parts[-1]["type"] == "data-retry"


@pytest.mark.parametrize(
    ("end", "reason", "metadata"),
    [
        (COMPLETED, "stop", {"reason": "completed", "max_iterations_reached": False}),
        (CAPPED, "tool-calls", {"reason": "max_iterations", "max_iterations_reached": True}),
        (FAILED, "error", {"reason": "failed", "max_iterations_reached": False}),
        (CANCELLED, "interrupted", {"reason": "cancelled", "max_iterations_reached": False}),
        (
            BLOCKED,
            "other",
            {"reason": "blocked", "max_iterations_reached": False, "block_reason": "not today"},
        ),
    ],
)
def test_the_finish_part_carries_the_finish_reason(end, reason, metadata) -> None:
    parts = fold_ui([TextStreamed(text="hi"), end])
    assert parts[-1] == {"type": "finish", "finishReason": reason, "messageMetadata": metadata}
    assert parts[-2] == USAGE_PART
    check_ui(parts)


@pytest.mark.parametrize(
    ("model_reason", "reason"),
    [
        ("length", "length"),  # OpenAI
        ("max_tokens", "length"),  # Anthropic
        ("MAX_TOKENS", "length"),  # Gemini
        ("content_filter", "content-filter"),  # OpenAI
        ("SAFETY", "content-filter"),  # Gemini
        ("stop", "stop"),
        ("end_turn", "stop"),  # any other reason a provider gives: a plain stop
    ],
)
def test_a_completed_turn_says_why_the_provider_stopped(model_reason, reason) -> None:
    end = finish(Completed(text="hi", model_finish_reason=model_reason))
    parts = fold_ui([TextStreamed(text="hi"), end])
    assert parts[-1]["finishReason"] == reason
    check_ui(parts)


def test_a_failed_turn_sends_the_providers_message_as_an_error_part() -> None:
    parts = fold_ui([TextStreamed(text="hi"), FAILED])
    assert parts[-5:-2] == [
        {"type": "text-end", "id": "text-1"},
        {"type": "finish-step"},
        {"type": "error", "errorText": "bad request"},
    ]


def test_manual_mode_ends_the_message_awaiting_tool_results() -> None:
    parts = fold_ui([ToolCallAnnounced(call=ADD, iteration=1), ResultsRequested(calls=(ADD,))])
    assert parts[-2:] == [{"type": "finish-step"}, {"type": "finish", "finishReason": "tool-calls"}]
    check_ui(parts)


def test_recorded_messages_send_nothing_and_agent_notices_are_transient_data() -> None:
    stream, _ = ui_start("m")
    recorded = MessageRecorded(message=ChatMessage(role="assistant", content="5"))
    assert ui_parts(stream, recorded, 0.0) == (stream, [])
    _, attempt = ui_parts(stream, AttemptStarted(attempt=2), 0.0)
    _, failed = ui_parts(stream, ValidationFailed(attempt=2, problems=("no",)), 0.0)
    assert attempt == [{"type": "data-attempt", "data": {"attempt": 2}, "transient": True}]
    assert failed == [
        {"type": "data-validation", "data": {"attempt": 2, "problems": ["no"]}, "transient": True}
    ]


def test_a_turn_stopped_by_an_error_ends_with_error_and_finish() -> None:
    stream, _ = ui_start("m")
    stream, _ = ui_parts(stream, TextStreamed(text="hi"), 0.0)
    stream, parts = ui_error(stream, "the journal gave up")
    assert parts == [
        {"type": "text-end", "id": "text-1"},
        {"type": "finish-step"},
        {"type": "error", "errorText": "the journal gave up"},
        {"type": "finish", "finishReason": "error", "messageMetadata": {"reason": "failed"}},
    ]
    assert stream.finished


def test_parts_are_sse_data_lines_and_done_closes_the_stream() -> None:
    line = sse({"type": "text-delta", "id": "text-1", "delta": "héllo"})
    assert line == 'data: {"type":"text-delta","id":"text-1","delta":"héllo"}\n\n'
    assert json.loads(line.removeprefix("data: "))["delta"] == "héllo"
    assert DONE == "data: [DONE]\n\n"


CHANGED = ModelChanged(
    model="backup", index=1, previous="main", message="HTTP 503: busy", status=503
)


def test_a_fallback_voids_the_step_and_says_which_model_answers_now() -> None:
    parts = fold_ui([TextStreamed(text="It is"), CHANGED, TextStreamed(text="5"), COMPLETED])
    assert parts[4:7] == [
        {"type": "text-end", "id": "text-1"},
        {"type": "reset-step"},
        {
            "type": "data-model-changed",
            "data": {
                "model": "backup",
                "index": 1,
                "previous": "main",
                "message": "HTTP 503: busy",
                "status": 503,
            },
        },
    ]
    check_ui(parts)


def test_the_plain_stream_says_the_model_changed() -> None:
    events = fold_plain([CHANGED])
    assert (
        "model_changed",
        {
            "model": "backup",
            "index": 1,
            "previous": "main",
            "message": "HTTP 503: busy",
            "status": 503,
        },
    ) in events

"""The plain JSON event stream: one `event:`/`data:` pair per notice, `done` last."""

from __future__ import annotations

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
    fold_plain,
)

from toolreel.core import ChatMessage
from toolreel.core.notices import (
    MessageRecorded,
    ResultsRequested,
    RoundFinished,
    TextStreamed,
    ToolCallAnnounced,
    ToolResultReady,
)
from toolreel.web.streams import plain_error, plain_events, plain_start, sse_event

USAGE = ("usage", {"input_tokens": 30, "output_tokens": 12})


def test_a_tool_round_then_an_answer() -> None:
    events = fold_plain(
        [
            TextStreamed(text="Let me see. "),
            ToolCallAnnounced(call=ADD, iteration=1),
            ToolCallAnnounced(call=DIVIDE, iteration=1),
            ToolResultReady(result=ADDED),
            ToolResultReady(result=FAILED_DIVIDE),
            RoundFinished(round=ROUND, iteration=1),
            TextStreamed(text="5"),
            COMPLETED,
        ]
    )
    assert events == [
        ("session", {"id": "s1"}),
        ("text", {"text": "Let me see. "}),
        ("tool_call", {"id": "call_1", "name": "add", "arguments": {"a": 2, "b": 3}}),
        ("tool_call", {"id": "call_2", "name": "divide", "arguments": {"a": 1, "b": 0}}),
        (
            "tool_result",
            {
                "id": "call_1",
                "name": "add",
                "content": '{"result": 5}',
                "is_error": False,
                "duration_ms": 1000,
            },
        ),
        (
            "tool_result",
            {
                "id": "call_2",
                "name": "divide",
                "content": "ValueError: Cannot divide by zero",
                "is_error": True,
                "duration_ms": 2000,
            },
        ),
        ("round", {"number": 1}),
        ("text", {"text": "5"}),
        USAGE,
        ("done", {"reason": "completed", "max_turns_reached": False, "text": "5"}),
    ]


def test_every_notice_kind_has_its_event_types() -> None:
    kinds = [kind for kind, _ in fold_plain(EVERY_NOTICE)]
    assert set(kinds) == {
        "session",
        "reasoning",
        "text",
        "tool_call_start",
        "tool_call_delta",
        "tool_call",
        "tool_result",
        "round",
        "retry",
        "attempt",
        "validation_failed",
        "usage",
        "done",
    }
    assert kinds[0] == "session" and kinds[-1] == "done"


def test_a_call_streamed_in_fragments_is_told_as_it_is_written() -> None:
    events = fold_plain(EVERY_NOTICE)
    streamed = [e for e in events if e[0].startswith("tool_call")][:4]
    assert streamed == [
        ("tool_call_start", {"index": 0, "id": "call_1", "name": "add"}),
        ("tool_call_delta", {"index": 0, "fragment": '{"a": 2, '}),
        ("tool_call_delta", {"index": 0, "fragment": '"b": 3}'}),
        ("tool_call", {"id": "call_1", "name": "add", "arguments": {"a": 2, "b": 3}}),
    ]


def test_arguments_that_are_no_json_object_are_sent_as_their_text() -> None:
    events = fold_plain([ToolCallAnnounced(call=BROKEN, iteration=1)])
    assert events[-1] == ("tool_call", {"id": "call_3", "name": "add", "arguments": '{"a": 2,'})


@pytest.mark.parametrize(
    ("end", "done"),
    [
        (CAPPED, {"reason": "max_iterations", "max_turns_reached": True, "text": ""}),
        (CANCELLED, {"reason": "cancelled", "max_turns_reached": False, "text": ""}),
        (BLOCKED, {"reason": "blocked", "max_turns_reached": False, "text": ""}),
    ],
)
def test_done_says_how_the_turn_ended(end, done) -> None:
    assert fold_plain([end])[-2:] == [USAGE, ("done", done)]


def test_a_failed_turn_sends_its_error_with_the_failure_code() -> None:
    assert fold_plain([FAILED])[-2:] == [
        ("error", {"message": "bad request", "code": "model_error"}),
        ("done", {"reason": "failed", "max_turns_reached": False, "text": ""}),
    ]


def test_manual_mode_names_the_calls_awaiting_results_and_records_send_nothing() -> None:
    stream, _ = plain_start("s")
    _, events = plain_events(stream, ResultsRequested(calls=(ADD,)), 0.0)
    call = {"id": "call_1", "name": "add", "arguments": {"a": 2, "b": 3}}
    assert events == [("results_requested", {"calls": [call]})]
    recorded = MessageRecorded(message=ChatMessage(role="assistant", content="5"))
    assert plain_events(stream, recorded, 0.0) == (stream, [])


def test_a_turn_stopped_by_an_error_still_ends_with_done() -> None:
    assert plain_error("the journal gave up", "journal_unavailable") == [
        ("error", {"message": "the journal gave up", "code": "journal_unavailable"}),
        ("done", {"reason": "failed", "max_turns_reached": False, "text": ""}),
    ]


def test_each_event_is_an_sse_event_and_data_pair() -> None:
    assert sse_event("text", {"text": "é"}) == 'event: text\ndata: {"text":"é"}\n\n'

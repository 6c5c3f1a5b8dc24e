"""How a caller reads a session workflow's stream (shell/temporal/_told.py): live text at once,
the workflow's folded effects told once, a lost worker's text voided.

Pure: a list of stream items in, what the caller is told out (no server).
"""

from __future__ import annotations

from typing import Any

from toolreel.adapters import converter
from toolreel.core import (
    AwaitApproval,
    ChatMessage,
    Effect,
    Emit,
    Event,
    Finish,
    Persist,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    Usage,
)
from toolreel.core.notices import (
    MessageRecorded,
    ReasoningStreamed,
    RetryScheduled,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallStreaming,
)
from toolreel.core.outcomes import Completed
from toolreel.temporal._told import Reading, Said, calling_item, live_item, read, told_item

CALL = "3.0-abc"
FINISH = Finish(outcome=Completed(text="Hello, world."), rounds=(), iterations=1, usage=Usage())


def told(effect: Effect, call: str | None = CALL, turn: int = 1) -> dict[str, Any]:
    return told_item(turn, converter.unstructure(effect, Effect), call)


def text(piece: str, call: str | None = CALL) -> dict[str, Any]:
    return told(Emit(notice=TextStreamed(text=piece)), call)


def live(event: Event, attempt: int = 1, call: str = CALL) -> dict[str, Any]:
    return live_item(call, attempt, converter.unstructure(event, Event))


def reading_of(items: list[Any], turn: int = 1) -> tuple[list[Said], Reading]:
    """Everything the caller is told of `items`, and where its reading ends."""
    reading, said = Reading(turn=turn), []
    for item in items:
        reading, more = read(reading, item)
        said += more
    return said, reading


def test_live_text_is_told_at_once_and_not_again_when_folded() -> None:
    said, reading = reading_of(
        [
            calling_item(1, CALL),
            live(TextDelta(text="Hello")),
            live(TextDelta(text=", world.")),
            text("Hello"),
            text(", world."),
            told(FINISH, call=None),
        ]
    )
    assert said == [TextStreamed(text="Hello"), TextStreamed(text=", world."), FINISH]
    assert reading.over


def test_folded_text_the_preview_had_not_reached_is_told_in_full() -> None:
    said, _ = reading_of(
        [
            calling_item(1, CALL),
            live(TextDelta(text="Hel")),
            text("Hello"),  # the preview was behind: only "lo" is new
            text(", world."),
            told(FINISH),
        ]
    )
    assert said == [
        TextStreamed(text="Hel"),
        TextStreamed(text="lo"),
        TextStreamed(text=", world."),
        FINISH,
    ]


def test_without_live_items_the_folded_notices_are_told_as_they_are() -> None:
    said, _ = reading_of(
        [
            calling_item(1, CALL),
            told(Emit(notice=ReasoningStreamed(text="Why"))),
            text("Hello"),
            told(Persist(message=ChatMessage(role="assistant", content="Hello"))),
            told(AwaitApproval(requests=()), call=None),
            text("never read: the turn paused"),
        ]
    )
    assert said == [
        ReasoningStreamed(text="Why"),
        TextStreamed(text="Hello"),
        MessageRecorded(message=ChatMessage(role="assistant", content="Hello")),
        AwaitApproval(requests=()),
    ]


def test_a_later_attempt_voids_what_the_lost_worker_showed() -> None:
    said, _ = reading_of(
        [
            calling_item(1, CALL),
            live(TextDelta(text="Hello")),
            live(TextDelta(text="Bonjour"), attempt=2),
            live(TextDelta(text=" from the lost worker")),  # still running: dropped
            text("Bonjour"),
            told(FINISH),
        ]
    )
    assert said[0] == TextStreamed(text="Hello")
    assert isinstance(said[1], RetryScheduled) and said[1].seconds == 0.0
    assert said[2:] == [TextStreamed(text="Bonjour"), FINISH]


def test_folded_text_that_disagrees_with_the_preview_voids_it_and_is_told_whole() -> None:
    said, _ = reading_of(
        [
            calling_item(1, CALL),
            live(ReasoningDelta(text="Hmm")),
            live(TextDelta(text="Hello")),
            told(Emit(notice=ReasoningStreamed(text="Hmm"))),
            text("Howdy"),
            told(FINISH),
        ]
    )
    assert said[:2] == [ReasoningStreamed(text="Hmm"), TextStreamed(text="Hello")]
    assert isinstance(said[2], RetryScheduled)
    assert said[3:] == [ReasoningStreamed(text="Hmm"), TextStreamed(text="Howdy"), FINISH]


def test_other_turns_and_calls_not_announced_are_passed_over() -> None:
    said, reading = reading_of(
        [
            told(FINISH, call=None, turn=1),  # the turn before ends
            live(TextDelta(text="late, from turn 1's call")),
            calling_item(2, "9.0-def"),
            live(TextDelta(text="late again")),  # not the call turn 2 runs
            live(TextDelta(text="Hi"), call="9.0-def"),
            told_item(
                2, converter.unstructure(Emit(notice=TextStreamed(text="Hi")), Effect), "9.0-def"
            ),
            told_item(2, converter.unstructure(FINISH, Effect), None),
        ],
        turn=2,
    )
    assert said == [TextStreamed(text="Hi"), FINISH] and reading.over


def test_live_items_after_the_call_was_folded_are_dropped() -> None:
    said, _ = reading_of(
        [
            calling_item(1, CALL),
            text("Hello"),
            live(TextDelta(text="Hello")),  # a batch that came late
            told(FINISH),
        ]
    )
    assert said == [TextStreamed(text="Hello"), FINISH]


def test_items_that_are_no_items_are_passed_over() -> None:
    said, reading = reading_of(
        [
            "not a dict",
            {"turn": 1, "told": {"type": "NoSuchEffect"}, "call": None},
            {"call": CALL, "attempt": "one", "live": {}},
            calling_item(1, CALL),
            {"call": CALL, "attempt": 1, "live": {"type": "NoSuchEvent"}},
            told(FINISH),
        ]
    )
    assert said == [FINISH] and reading.over


def call_told(notice: ToolCallStreaming | ToolArgumentsStreamed) -> dict[str, Any]:
    return told(Emit(notice=notice))


STARTED = ToolCallStreaming(index=0, call_id="c1", name="add")
FIRST = ToolArgumentsStreamed(index=0, fragment='{"a": 2, ')
REST = ToolArgumentsStreamed(index=0, fragment='"b": 3}')


def test_a_call_and_its_fragments_are_told_as_written_and_not_again_when_folded() -> None:
    said, reading = reading_of(
        [
            calling_item(1, CALL),
            live(ToolCallStarted(index=0, call_id="c1", name="add")),
            live(ToolCallArgumentsDelta(index=0, fragment='{"a": 2, ')),
            live(ToolCallArgumentsDelta(index=0, fragment='"b": 3}')),
            call_told(STARTED),
            call_told(FIRST),
            call_told(REST),
            told(FINISH, call=None),
        ]
    )
    assert said == [STARTED, FIRST, REST, FINISH]
    assert reading.calls == ()


def test_a_repeated_start_tells_the_id_and_name_the_first_gave_as_the_core_does() -> None:
    said, _ = reading_of(
        [
            calling_item(1, CALL),
            live(ToolCallStarted(index=0, call_id="c1", name="add")),
            live(ToolCallStarted(index=0, call_id="", name="")),
            live(ToolCallStarted(index=1, call_id="", name="mul")),
            live(ToolCallStarted(index=1, call_id="c2", name="")),
        ]
    )
    assert said == [
        STARTED,
        STARTED,
        ToolCallStreaming(index=1, call_id="", name="mul"),
        ToolCallStreaming(index=1, call_id="c2", name="mul"),
    ]


def test_folded_fragments_a_lost_batch_never_showed_are_told_in_order() -> None:
    said, _ = reading_of(
        [
            calling_item(1, CALL),
            live(ToolCallStarted(index=0, call_id="c1", name="add")),
            live(ToolCallArgumentsDelta(index=0, fragment='"b": 3}')),  # the first was lost
            call_told(STARTED),
            call_told(FIRST),
            call_told(REST),
            told(FINISH, call=None),
        ]
    )
    assert said == [STARTED, REST, FIRST, FINISH]  # each told once; the call's input says all


def test_a_later_attempt_voids_the_calls_the_lost_worker_showed() -> None:
    said, reading = reading_of(
        [
            calling_item(1, CALL),
            live(ToolCallStarted(index=0, call_id="c1", name="add")),
            live(ToolCallStarted(index=0, call_id="c9", name="add"), attempt=2),
        ]
    )
    assert said[0] == STARTED
    assert isinstance(said[1], RetryScheduled)
    assert said[2:] == [ToolCallStreaming(index=0, call_id="c9", name="add")]
    assert reading.starts == ((0, "c9", "add"),)

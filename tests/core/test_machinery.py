"""The reducer's machinery: its table, model settings and requests, retry timers,
rounds in flight, and the slot-filled records of the per-delta hot path."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from loop import ADD, WEATHER, call, done, fold, run, text

from toolreel.core import (
    CallModel,
    Cancelled,
    ChatMessage,
    LoopConfig,
    ModelCallFailed,
    Phase,
    PlainOutput,
    PromptSubmitted,
    ReflectiveOutput,
    ResultReason,
    StartTimer,
    State,
    StepError,
    TextDelta,
    TimerFired,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    initial_state,
    step,
)
from toolreel.core._history import build_request
from toolreel.core._model import ModelSettings, request
from toolreel.core._response import (
    PIECE,
    PartialCall,
    Stream,
    add_fragment,
    add_text,
    start_call,
)
from toolreel.core._retry import RetryTimer
from toolreel.core._round import CANCELLED_RESULT, cancel, not_awaited, open_round, place
from toolreel.core._state import Aside, Turn, with_stream
from toolreel.core._step import RULES
from toolreel.core.budget import Spending
from toolreel.core.hooks import HookPoint

OUT = ToolSpec(name="record")
A = ToolCall(id="a", name="add")
B = ToolCall(id="b", name="add")


# Transition tables -------------------------------------------------------------


def test_the_transition_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        RULES[(Phase.IDLE, TextDelta)] = lambda state, event: (state, ())  # type: ignore[index]


def test_an_event_outside_the_table_still_names_phase_and_event() -> None:
    with pytest.raises(StepError, match=r"can't handle event TimerFired.* when phase=IDLE"):
        step(initial_state(LoopConfig()), TimerFired(token="t"))
    structured = initial_state(LoopConfig(output=PlainOutput(tool=OUT)))
    with pytest.raises(StepError, match=r"TimerFired.* when phase=IDLE"):
        step(structured, TimerFired(token="t"))


def test_every_phase_answers_a_cancel() -> None:
    assert {phase for phase, kind in RULES if kind is Cancelled} == set(Phase)


# Model settings and the one request builder --------------------------------------


def test_a_config_holds_its_model_fields_as_model_settings_the_output_tool_offered_last() -> None:
    fields: dict[str, Any] = {
        "model": "m",
        "system_prompt": "Be brief.",
        "tool_choice": "required",
        "max_tokens": 100,
        "temperature": 0.5,
    }
    loop = LoopConfig(tools=(ADD, OUT), **fields)
    structured = LoopConfig(output=PlainOutput(tool=OUT), tools=(ADD,), **fields)
    assert loop.settings == ModelSettings(tools=(ADD, OUT), **fields)
    assert structured.settings == loop.settings


def test_a_reflective_output_offers_submit_in_its_settings() -> None:
    structured = LoopConfig(output=ReflectiveOutput(tool=OUT))
    assert [spec.name for spec in structured.settings.tools] == ["record", "submit"]


def test_a_tool_choice_without_tools_is_auto_but_a_final_answer_still_forbids_tools() -> None:
    settings = ModelSettings(tool_choice="required")
    messages = (ChatMessage(role="user", content="hi"),)
    assert request(settings, messages).tool_choice == "auto"
    assert request(settings, messages, tool_choice="none").tool_choice == "none"


def test_text_and_structured_turns_build_the_same_request_from_the_same_settings() -> None:
    loop = LoopConfig(model="m", tools=(ADD, OUT), system_prompt="s")
    structured = LoopConfig(
        model="m", output=PlainOutput(tool=OUT), tools=(ADD,), system_prompt="s"
    )
    effect = run(loop, [PromptSubmitted(text="hi")])[1][-1]
    _, effects = step(initial_state(structured), PromptSubmitted(text="hi"))
    assert isinstance(effect, CallModel) and isinstance(effects[-1], CallModel)
    assert effect.request == effects[-1].request
    turn = Turn(number=1, prompt="hi")
    assert build_request(loop, effect.request.messages, turn) == effect.request


# Retry timers ----------------------------------------------------------------------


def test_a_retry_timer_token_names_scope_iteration_and_retry() -> None:
    timer = RetryTimer(scope=2, iteration=3, retry=1)
    assert timer.token == "retry:2:3:1"
    assert timer.awaited() == "awaiting timer 'retry:2:3:1'"


def test_text_and_structured_turns_start_the_same_timer_for_the_same_failure() -> None:
    failure = ModelCallFailed(retryable=True, message="busy", status=529)
    loop = LoopConfig(model="m", tools=(OUT,))
    _, effects = fold(initial_state(loop), [PromptSubmitted(text="hi"), failure])
    structured = LoopConfig(model="m", output=PlainOutput(tool=OUT))
    _, more = fold(initial_state(structured), [PromptSubmitted(text="hi"), failure])
    timer = StartTimer(token="retry:1:1:1", seconds=1.0)
    assert effects[-1][-1] == more[-1][-1] == timer


# Rounds in flight -----------------------------------------------------------------


def test_results_are_placed_at_their_calls_position_whatever_order_they_come() -> None:
    pending = open_round("", (), (A, B), (None, None))
    pending, result = place(pending, 1, "2", False)
    assert result == ToolResult(call_id="b", name="add", content="2")
    assert pending.results == (None, result)
    assert not_awaited(pending, "b") == "no call 'b' awaits a result; awaiting ['a']"


def test_a_cancel_answers_every_call_without_a_result_in_call_order() -> None:
    answered = ToolResult(call_id="a", name="add", content="1")
    closed, made = cancel(open_round("", (), (A, B), (answered, None)))
    cancelled = ToolResult(
        call_id="b",
        name="add",
        content=CANCELLED_RESULT,
        is_error=True,
        reason=ResultReason.CANCELLED,
    )
    assert made == (cancelled,)
    assert closed.results == (answered, cancelled)


# Slot-filled records (core/_slots.py) ----------------------------------------------


def test_fragments_build_the_same_partial_call_as_its_constructor() -> None:
    stream = start_call(Stream(), 0, "c1", "add", "sig")
    stream = add_fragment(add_fragment(stream, 0, '{"a"'), 0, ": 1}")
    assert stream == Stream(
        calls=(
            PartialCall(index=0, call_id="c1", name="add", arguments='{"a": 1}', signature="sig"),
        )
    )


def test_a_new_partial_response_keeps_every_other_field_of_the_loop_state() -> None:
    config = LoopConfig(tools=(ADD, WEATHER), hooks={HookPoint.POST_TOOL_USE})
    state, _ = fold(initial_state(config), [PromptSubmitted(text="hi"), *text("a", "b")])
    spent = Spending(usage=Usage(input_tokens=1), model_calls=1)
    aside = Aside(ignored_calls=frozenset({"x"}), after_cancel=True)
    state = attrs.evolve(state, spent=spent, aside=aside)
    stream = add_text(Stream(), "new")
    assert with_stream(state, stream) == attrs.evolve(state, stream=stream)
    assert with_stream(state, stream).usage == Usage(input_tokens=1)  # the spending's tokens


def test_a_whole_turn_folds_to_states_equal_to_ones_built_by_attrs() -> None:
    config = LoopConfig(tools=(ADD,))
    events = [PromptSubmitted(text="hi"), *call(0, "c", "add", '{"a": 1}'), done("tool_calls")]
    state, _ = fold(initial_state(config), events)
    rebuilt = State(**{field.name: getattr(state, field.name) for field in attrs.fields(State)})
    assert rebuilt == state and hash(rebuilt) == hash(state)


def test_a_streamed_answer_is_its_pieces_joined_once_whatever_the_cut() -> None:
    pieces = add_text(add_text(add_text(Stream(), "The "), "answer"), " is 42.")
    whole = add_text(Stream(), "The answer is 42.")
    assert pieces.text == whole.text == "The answer is 42."
    assert pieces == whole and hash(pieces) == hash(whole)  # equal by what they hold
    assert add_text(pieces, "!") != whole and Stream().text == ""


def test_a_long_answer_keeps_every_delta_in_order_across_its_pieces() -> None:
    deltas = [f"{i:05d}," for i in range(3 * PIECE // 6 + 7)]  # past three pieces
    stream = Stream()
    for delta in deltas:
        stream = add_text(stream, delta)
    assert stream.text == "".join(deltas)
    assert stream == add_text(Stream(), "".join(deltas))
    assert len(stream.tail) <= PIECE + 6  # a delta copies only the short tail

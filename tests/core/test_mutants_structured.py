"""Rule 17 of core/_step.py (a structured output): points mutation testing (`make mutate`)
found unpinned in the agent reducer this rule replaced, pinned on `step`.

Each test states one rule; together they kill the mutants named in its docstring.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolreel.core import (
    ChatMessage,
    Finish,
    LoopConfig,
    ModelCallFailed,
    ModelResponded,
    PlainOutput,
    PromptSubmitted,
    Reasoning,
    ReasoningDelta,
    RunTool,
    State,
    StepError,
    TextDelta,
    TimerFired,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolSpec,
    Usage,
    ValidationFinished,
    initial_state,
    step,
)
from toolreel.core.policies import RetryPolicy

RECORD = ToolSpec(name="record_invoice", description="Record the invoice")
RATE = ToolSpec(name="currency_rate", description="Euros per unit of a currency")
INVOICE = '{"number": "INV-1", "total": 100}'
USD = '{"currency": "USD"}'


def agent(**overrides: Any) -> LoopConfig:
    """A structured turn with the currency tool and a plain output tool."""
    return LoopConfig(
        model="test-model", tools=(RATE,), output=PlainOutput(tool=RECORD), **overrides
    )


def called(index: int, call_id: str, name: str, arguments: str, **start: Any) -> list[Any]:
    """One streamed call: its start, then its arguments in one fragment."""
    return [
        ToolCallStarted(index=index, call_id=call_id, name=name, **start),
        ToolCallArgumentsDelta(index=index, fragment=arguments),
    ]


def responded() -> ModelResponded:
    """The end of a response."""
    return ModelResponded(finish_reason="tool_calls", usage=Usage(input_tokens=3, output_tokens=2))


def fold(config: LoopConfig, *events: Any) -> tuple[State, tuple[Any, ...]]:
    """Start with a prompt and feed `events`; the final state and the last step's effects."""
    state, effects = step(initial_state(config), PromptSubmitted(text="INV-1"))
    for event in events:
        state, effects = step(state, event)
    return state, effects


def rounds(state: State) -> Any:
    """The running attempt's rounds."""
    assert state.turn is not None
    return state.turn.rounds


def misuse(state: State, event: Any) -> str:
    """The message of the StepError `event` raises in `state`."""
    with pytest.raises(StepError) as caught:
        step(state, event)
    assert caught.value.event == event
    return str(caught.value)


# Rule 2: the response is kept as streamed ------------------------------------------------


def test_a_redacted_reasoning_block_is_kept_with_its_round() -> None:
    """Kills _on_reasoning mutant 5 (the redacted data dropped)."""
    state, _ = fold(
        agent(),
        ReasoningDelta(text="", redacted="opaque"),
        *called(0, "o1", "record_invoice", INVOICE),
        responded(),
    )
    assert rounds(state)[0].reasoning == (Reasoning(redacted="opaque"),)


def test_a_calls_signature_is_kept_on_the_call() -> None:
    """Kills _on_call_started mutant 6 (the call's thought signature dropped)."""
    state, _ = fold(
        agent(), *called(0, "o1", "record_invoice", INVOICE, signature="sig"), responded()
    )
    assert rounds(state)[0].tool_calls == (
        ToolCall(id="o1", name="record_invoice", arguments=INVOICE, signature="sig"),
    )


def test_a_call_without_id_is_named_after_its_attempt_iteration_and_index() -> None:
    """Kills _on_responded mutants 15 and 16 (attempt or iteration left out of the id)."""
    _, effects = fold(
        agent(),
        *called(0, "r1", "currency_rate", USD),
        responded(),
        ToolFinished(call_id="r1", output="0.9"),
        *called(0, "", "currency_rate", USD),
        responded(),
    )
    assert effects[-1] == RunTool(
        call=ToolCall(id="call_1_2_0", name="currency_rate", arguments=USD)
    )


# Rule 3: a response without calls --------------------------------------------------------


def test_a_response_without_calls_keeps_its_reasoning_in_the_conversation() -> None:
    """Kills _on_responded mutant 30 (the reasoning of the tool-less answer dropped)."""
    state, effects = fold(
        agent(),
        ReasoningDelta(text="no tool fits", signature="sig"),
        TextDelta(text="INV-1 totals 100"),
        ModelResponded(finish_reason="stop", usage=Usage()),
    )
    assert isinstance(effects[-1], Finish)
    assert state.history[-1] == ChatMessage(
        role="assistant",
        content="INV-1 totals 100",
        reasoning=(Reasoning(text="no tool fits", signature="sig"),),
    )


# Misuse names the phase, the event and what was awaited ----------------------------------


def test_a_result_for_no_awaited_call_names_only_the_calls_still_running() -> None:
    """Kills _on_tool_finished mutants 20 and 25 (finished calls listed; event dropped)."""
    state, _ = fold(
        agent(),
        *called(0, "r1", "currency_rate", USD),
        *called(1, "r2", "currency_rate", USD),
        responded(),
        ToolFinished(call_id="r1", output="0.9"),
    )
    stray = ToolFinished(call_id="r9", output="1")
    assert misuse(state, stray) == (
        f"can't handle event {stray!r} when phase=RUNNING_TOOLS: "
        "no call 'r9' awaits a result; awaiting ['r2']"
    )


def test_a_validation_of_another_attempt_is_misuse_naming_the_awaited_attempt() -> None:
    """Kills _on_validated mutant 3 (the event dropped from the error)."""
    state, _ = fold(agent(), *called(0, "o1", "record_invoice", INVOICE), responded())
    stray = ValidationFinished(attempt=2, problems=())
    assert misuse(state, stray) == (
        f"can't handle event {stray!r} when phase=VALIDATING: awaiting attempt 1"
    )


def test_a_timer_other_than_the_awaited_retry_is_misuse_naming_the_awaited_token() -> None:
    """Kills _on_timer mutant 4 (the event dropped from the error)."""
    state, _ = fold(
        agent(retry=RetryPolicy(max_retries=2)), ModelCallFailed(message="busy", retryable=True)
    )
    stray = TimerFired(token="retry:1:1:2")
    assert misuse(state, stray) == (
        f"can't handle event {stray!r} when phase=BACKING_OFF: awaiting timer 'retry:1:1:1'"
    )


def test_an_event_after_a_finished_run_is_misuse_naming_it_and_the_idle_phase() -> None:
    """Kills _late mutants 5 and 10 (event or reason dropped from the error)."""
    state, _ = fold(
        agent(),
        *called(0, "o1", "record_invoice", INVOICE),
        responded(),
        ValidationFinished(attempt=1, problems=()),
    )
    stray = TextDelta(text="late")
    assert misuse(state, stray) == (f"can't handle event {stray!r} when phase=IDLE")

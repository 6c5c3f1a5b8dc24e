"""Rules of core/_step.py that mutation testing (`make mutate`) found unpinned.

Each test states one rule; together they kill the mutants named in its docstring.
"""

from __future__ import annotations

import pytest
from loop import call as tool_call
from loop import config, done, fold, notices, run

from toolreel.core import (
    Allowed,
    Emit,
    HookDecided,
    HookPoint,
    ModelCallFailed,
    Phase,
    PromptSubmitted,
    Reasoning,
    ReasoningDelta,
    ReasoningStreamed,
    RetryPolicy,
    RoundFinished,
    StepError,
    TimerFired,
    ToolCall,
    ToolResult,
    ToolResultAdded,
    ToolRound,
    initial_state,
    step,
)

ADD_ARGS = '{"a": 1, "b": 2}'


def misuse(state, event) -> StepError:
    """The StepError `event` raises in `state`."""
    with pytest.raises(StepError) as caught:
        step(state, event)
    return caught.value


def test_a_decision_for_another_prompt_hook_is_misuse_naming_the_awaited_hook() -> None:
    """Kills _on_prompt_hook mutants 4-9 (phase, event or detail dropped from the error)."""
    cfg = config(hooks={HookPoint.USER_PROMPT_SUBMIT})
    state, _ = step(initial_state(cfg), PromptSubmitted(text="hi"))
    stray = HookDecided(hook_id="prompt:2", decision=Allowed())
    error = misuse(state, stray)
    assert str(error) == (
        f"can't handle event {stray!r} when phase=PROMPT_HOOK: awaiting hook 'prompt:1'"
    )
    assert (error.phase, error.event) == (Phase.PROMPT_HOOK, stray)


def test_a_timer_other_than_the_awaited_retry_is_misuse_naming_the_awaited_token() -> None:
    """Kills _on_timer mutants 8 and 11 (event dropped from the error)."""
    cfg = config(retry=RetryPolicy(max_retries=2))
    state, _ = fold(
        initial_state(cfg),
        [PromptSubmitted(text="hi"), ModelCallFailed(message="busy", retryable=True)],
    )
    stray = TimerFired(token="retry:1:1:2")
    error = misuse(state, stray)
    assert str(error) == (
        f"can't handle event {stray!r} when phase=BACKING_OFF: awaiting timer 'retry:1:1:1'"
    )
    assert error.event == stray


def test_manual_results_enter_the_round_with_their_content_and_error_flag() -> None:
    """Kills _on_result_added mutants 4 and 5 (content or is_error of the caller's result lost)."""
    _, effects = run(
        config(auto_execute=False),
        [
            PromptSubmitted(text="add"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            done("tool_calls"),
            ToolResultAdded(call_id="c1", content="adder is down", is_error=True),
        ],
    )
    [finished] = notices(effects, RoundFinished)
    assert finished.round == ToolRound(
        assistant_text="",
        tool_calls=(ToolCall(id="c1", name="add", arguments=ADD_ARGS),),
        results=(ToolResult(call_id="c1", name="add", content="adder is down", is_error=True),),
    )


def test_a_manual_result_for_no_awaited_call_is_misuse_naming_the_event() -> None:
    """Kills _on_result_added mutant 2 (the event dropped from the error)."""
    state, _ = fold(
        initial_state(config(auto_execute=False)),
        [PromptSubmitted(text="add"), *tool_call(0, "c1", "add", ADD_ARGS), done("tool_calls")],
    )
    stray = ToolResultAdded(call_id="c9", content="3")
    error = misuse(state, stray)
    assert str(error) == (
        f"can't handle event {stray!r} when phase=AWAITING_RESULTS: "
        "no call 'c9' awaits a result; awaiting ['c1']"
    )


def reasoned(*deltas: ReasoningDelta) -> tuple[Reasoning, ...]:
    """The reasoning blocks an answer streamed as `deltas` keeps in the history."""
    state, _ = run(config(), [PromptSubmitted(text="why"), *deltas, done()])
    return state.history[-1].reasoning


def test_a_redacted_block_closes_the_open_reasoning_block() -> None:
    """Kills _stream.add_reasoning mutants 8 and 10 (a redacted block left the last one open)."""
    assert reasoned(
        ReasoningDelta(text="a"), ReasoningDelta(text="", redacted="R"), ReasoningDelta(text="b")
    ) == (Reasoning(text="a"), Reasoning(redacted="R"), Reasoning(text="b"))


def test_reasoning_text_extends_only_the_open_block() -> None:
    """Kills _stream.add_reasoning mutant 22 (extending a block dropped the one before it)."""
    assert reasoned(
        ReasoningDelta(text="a", signature="s1"), ReasoningDelta(text="b"), ReasoningDelta(text="c")
    ) == (Reasoning(text="a", signature="s1"), Reasoning(text="bc"))


def test_reasoning_text_is_streamed_to_the_caller_and_a_bare_signature_is_not() -> None:
    """Kills _on_reasoning mutants 11-14 (reasoning never, always, or emptily streamed)."""
    state, _ = step(initial_state(config()), PromptSubmitted(text="why"))
    state, thought = step(state, ReasoningDelta(text="a"))
    _, signed = step(state, ReasoningDelta(text="", signature="s1"))
    assert thought == (Emit(notice=ReasoningStreamed(text="a")),)
    assert signed == ()

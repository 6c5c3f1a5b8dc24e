"""Rules of core/_step.py that mutation testing (`make mutate`) found unpinned.

Each test states one rule; together they kill the mutants named in its docstring.
"""

from __future__ import annotations

import pytest
from loop import call as tool_call
from loop import config, done, fold, notices, of_type, run, text

from toolreel.core import (
    CallModel,
    Cancelled,
    Emit,
    Finish,
    HookDecided,
    ModelCallFailed,
    Phase,
    PromptSubmitted,
    Reasoning,
    ReasoningDelta,
    RunTool,
    StepError,
    TextDelta,
    TimerFired,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolResult,
    ToolRound,
    initial_state,
    step,
)
from toolreel.core.hooks import Allowed, HookPoint
from toolreel.core.notices import ReasoningStreamed, RoundFinished
from toolreel.core.policies import RetryPolicy

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
    """Kills _on_tool_finished mutants 4 and 5 (content or is_error of the caller's result lost)."""
    _, effects = run(
        config(auto_execute=False),
        [
            PromptSubmitted(text="add"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="adder is down", is_error=True),
        ],
    )
    [finished] = notices(effects, RoundFinished)
    assert finished.round == ToolRound(
        assistant_text="",
        tool_calls=(ToolCall(id="c1", name="add", arguments=ADD_ARGS),),
        results=(ToolResult(call_id="c1", name="add", content="adder is down", is_error=True),),
    )


def test_a_manual_result_for_no_awaited_call_is_misuse_naming_the_event() -> None:
    """Kills _on_tool_finished mutant 2 (the event dropped from the error)."""
    state, _ = fold(
        initial_state(config(auto_execute=False)),
        [PromptSubmitted(text="add"), *tool_call(0, "c1", "add", ADD_ARGS), done("tool_calls")],
    )
    stray = ToolFinished(call_id="c9", output="3")
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


def test_answer_text_between_reasoning_deltas_does_not_split_the_block() -> None:
    """Kills _stream.add_text mutants 3 and 7 (text closed the open reasoning block)."""
    state, _ = run(
        config(),
        [
            PromptSubmitted(text="why"),
            ReasoningDelta(text="a"),
            TextDelta(text="x"),
            ReasoningDelta(text="b"),
            done(),
        ],
    )
    assert state.history[-1].reasoning == (Reasoning(text="ab"),)


def test_answer_text_after_a_call_started_keeps_the_call() -> None:
    """Kills _stream.add_text mutant 8 (text dropped the calls streamed so far)."""
    _, effects = run(
        config(),
        [
            PromptSubmitted(text="add"),
            ToolCallStarted(index=0, call_id="c1", name="add"),
            TextDelta(text="Adding."),
            ToolCallArgumentsDelta(index=0, fragment=ADD_ARGS),
            done("tool_calls"),
        ],
    )
    assert of_type(effects, RunTool) == [
        RunTool(call=ToolCall(id="c1", name="add", arguments=ADD_ARGS))
    ]


def test_cancel_after_a_completed_round_keeps_that_round_once() -> None:
    """Kills _rounds.close_round mutant 8 (the closed round stayed pending)."""
    _, effects = run(
        config(),
        [
            PromptSubmitted(text="add"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="3"),
            Cancelled(),
        ],
    )
    [finished] = of_type(effects, Finish)
    assert finished.rounds == (
        ToolRound(
            assistant_text="",
            tool_calls=(ToolCall(id="c1", name="add", arguments=ADD_ARGS),),
            results=(ToolResult(call_id="c1", name="add", content="3"),),
        ),
    )


def test_a_call_id_abandoned_by_a_cancelled_turn_is_answered_when_reused() -> None:
    """Kills _take_result mutants 10 and 11 (a reused id at position 0 taken for a straggler)."""
    _, effects = run(
        config(),
        [
            PromptSubmitted(text="add"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            done("tool_calls"),
            Cancelled(),
            PromptSubmitted(text="add again"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="3"),
        ],
    )
    assert [n.round.results for n in notices(effects, RoundFinished)][-1] == (
        ToolResult(call_id="c1", name="add", content="3"),
    )


def test_a_decision_for_no_awaited_tool_hook_is_misuse_naming_the_awaited_hooks() -> None:
    """Kills _on_tool_hook mutants 16-23 (phase, event or awaited hooks dropped from the error)."""
    state, _ = fold(
        initial_state(config(hooks={HookPoint.PRE_TOOL_USE})),
        [
            PromptSubmitted(text="add"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            *tool_call(1, "c2", "add", ADD_ARGS),
            done("tool_calls"),
        ],
    )
    stray = HookDecided(hook_id="pre:c9", decision=Allowed())
    error = misuse(state, stray)
    assert str(error) == (
        f"can't handle event {stray!r} when phase=TOOL_HOOKS: awaiting hooks ['pre:c1', 'pre:c2']"
    )
    assert (error.phase, error.event) == (Phase.TOOL_HOOKS, stray)


def test_a_tool_result_for_no_awaited_call_names_only_the_calls_still_running() -> None:
    """Kills _on_tool_finished mutant 2, _take_result 25, 29, 32 (event dropped; finished
    calls listed)."""
    state, _ = fold(
        initial_state(config()),
        [
            PromptSubmitted(text="add"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            *tool_call(1, "c2", "add", ADD_ARGS),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="3"),
        ],
    )
    stray = ToolFinished(call_id="c9", output="1")
    error = misuse(state, stray)
    assert str(error) == (
        f"can't handle event {stray!r} when phase=RUNNING_TOOLS: "
        "no call 'c9' awaits a result; awaiting ['c2']"
    )
    assert error.event == stray


def test_an_event_no_rule_takes_is_misuse_naming_the_phase_and_the_event() -> None:
    """Kills step mutant 6 (the event dropped from the error)."""
    state, _ = step(initial_state(config()), PromptSubmitted(text="hi"))
    stray = PromptSubmitted(text="again")
    assert str(misuse(state, stray)) == f"can't handle event {stray!r} when phase=STREAMING"


def test_a_second_turn_names_its_id_less_calls_after_turn_two() -> None:
    """Kills _on_prompt mutant 14 and _with_stream 16 (the turn count lost or reset)."""
    _, effects = run(
        config(),
        [
            PromptSubmitted(text="hi"),
            *text("Hello."),
            done(),
            PromptSubmitted(text="add"),
            *tool_call(0, "", "add", ADD_ARGS),
            done("tool_calls"),
        ],
    )
    assert of_type(effects, RunTool) == [
        RunTool(call=ToolCall(id="call_2_1_0", name="add", arguments=ADD_ARGS))
    ]


def test_a_stray_result_in_the_turn_after_a_cancel_is_still_misuse() -> None:
    """Kills _on_prompt mutant 16 (a new turn kept dropping events as if just cancelled)."""
    state, _ = fold(
        initial_state(config()),
        [PromptSubmitted(text="hi"), Cancelled(), PromptSubmitted(text="again")],
    )
    stray = ToolFinished(call_id="c9", output="1")
    assert str(misuse(state, stray)) == f"can't handle event {stray!r} when phase=STREAMING"


def test_a_straggler_of_a_cancelled_turn_is_dropped_while_the_next_turn_streams() -> None:
    """Kills _with_stream mutant 17 (streaming forgot the abandoned call ids)."""
    state, _ = fold(
        initial_state(config()),
        [
            PromptSubmitted(text="add"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            done("tool_calls"),
            Cancelled(),
            PromptSubmitted(text="hi"),
            *text("Hel"),
        ],
    )
    assert step(state, ToolFinished(call_id="c1", output="3")) == (state, ())


def test_a_calls_signature_travels_with_it_whatever_the_start_repeats() -> None:
    """Kills _on_call_started 6, start_call 12/16/22/26/29, add_fragment 19/24 and
    finished_calls 21/25 (a thought signature dropped on the way to RunTool)."""
    _, effects = run(
        config(),
        [
            PromptSubmitted(text="add"),
            ToolCallStarted(index=0, call_id="c1", name="add", signature="s0"),
            ToolCallArgumentsDelta(index=0, fragment=ADD_ARGS),
            ToolCallStarted(index=1, call_id="c2", name="add"),
            ToolCallStarted(index=1, call_id="c2", name="add", signature="s1"),
            ToolCallArgumentsDelta(index=1, fragment=ADD_ARGS),
            done("tool_calls"),
        ],
    )
    assert of_type(effects, RunTool) == [
        RunTool(call=ToolCall(id="c1", name="add", arguments=ADD_ARGS, signature="s0")),
        RunTool(call=ToolCall(id="c2", name="add", arguments=ADD_ARGS, signature="s1")),
    ]


def test_a_call_between_reasoning_deltas_does_not_split_the_block() -> None:
    """Kills _stream._put mutants 11 and 15 (a call closed the open reasoning block)."""
    state, _ = run(
        config(),
        [
            PromptSubmitted(text="add"),
            ReasoningDelta(text="a"),
            ToolCallStarted(index=0, call_id="c1", name="add"),
            ReasoningDelta(text="b"),
            ToolCallArgumentsDelta(index=0, fragment=ADD_ARGS),
            done("tool_calls"),
        ],
    )
    assert state.turn.pending.reasoning == (Reasoning(text="ab"),)


def test_cancel_mid_stream_leaves_an_idle_state_without_turn_or_partial_stream() -> None:
    """Kills finish mutants 45, 50 and 51 (the turn or the partial response left behind)."""
    idle = initial_state(config())
    state, _ = fold(idle, [PromptSubmitted(text="hi"), *text("Hel"), Cancelled()])
    assert (state.phase, state.turn, state.stream) == (Phase.IDLE, None, idle.stream)


def test_without_tools_the_request_says_auto_whatever_the_configured_choice() -> None:
    """Kills build_request mutants 5-8 (the tools-less choice, or the configured one, lost)."""
    _, bare = step(
        initial_state(config(tools=(), tool_choice="required")), PromptSubmitted(text="hi")
    )
    _, tooled = step(initial_state(config(tool_choice="required")), PromptSubmitted(text="hi"))
    assert [e.request.tool_choice for e in (*bare, *tooled) if isinstance(e, CallModel)] == [
        "auto",
        "required",
    ]

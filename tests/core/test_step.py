"""The reducer's rules (core/_step.py), one group per numbered rule."""

from __future__ import annotations

import pytest
from loop import ADD, config, done, fold, notices, of_type, run, text
from loop import call as tool_call

from toolreel.core import (
    AskHook,
    CallModel,
    Cancelled,
    ChatMessage,
    Emit,
    Finish,
    HookDecided,
    LoopConfig,
    ModelCallFailed,
    ModelRequest,
    ModelResponded,
    Persist,
    Phase,
    PromptSubmitted,
    Reasoning,
    ReasoningDelta,
    ResultReason,
    RunTool,
    StartTimer,
    StepError,
    TellHook,
    TextDelta,
    TimerFired,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolInterrupted,
    ToolResult,
    ToolRound,
    ToolSpec,
    ToolTimedOut,
    Usage,
    initial_state,
    step,
)
from toolreel.core._config import DEFAULT_FINAL_ANSWER_PROMPT
from toolreel.core.hooks import Allowed, Blocked, HookPoint, Replaced
from toolreel.core.notices import (
    ResultsRequested,
    RetryScheduled,
    RoundFinished,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallAnnounced,
    ToolCallStreaming,
    ToolResultReady,
)
from toolreel.core.outcomes import Completed, Failed, FailureCode, FinishReason
from toolreel.core.policies import ErrorFormat, MaxIterationsPolicy, RetryPolicy

USER = ChatMessage(role="user", content="What is 25 plus 17?")
ADD_CALL = ToolCall(id="c1", name="add", arguments='{"a": 25, "b": 17}')


def request(cfg: LoopConfig, *messages: ChatMessage, tool_choice: str = "auto") -> ModelRequest:
    """The request the loop should send for `messages`."""
    return ModelRequest(
        model=cfg.model,
        system=cfg.system_prompt,
        messages=messages,
        tools=cfg.tools,
        tool_choice=tool_choice,
    )


def started(cfg: LoopConfig, prompt: str = USER.content) -> list:
    """Effects of submitting a prompt with no hooks."""
    user = ChatMessage(role="user", content=prompt)
    return [
        Persist(message=user),
        CallModel(request=request(cfg, user), iteration=1),
    ]


# Rule 1: a prompt starts a turn --------------------------------------------------------


def test_prompt_persists_the_user_message_and_calls_the_model_once() -> None:
    cfg = config(system_prompt="Be brief.")
    state, effects = step(initial_state(cfg), PromptSubmitted(text=USER.content))
    assert effects == tuple(started(cfg))
    assert effects[1].request.system == "Be brief."
    assert state.phase is Phase.STREAMING


def test_user_prompt_submit_hook_is_asked_once_before_the_model() -> None:
    cfg = config(hooks={HookPoint.USER_PROMPT_SUBMIT})
    state, effects = step(initial_state(cfg), PromptSubmitted(text="hi"))
    assert effects == (
        AskHook(hook_id="prompt:1", point=HookPoint.USER_PROMPT_SUBMIT, prompt="hi"),
    )
    state, effects = step(state, HookDecided(hook_id="prompt:1", decision=Allowed()))
    assert effects == tuple(started(cfg, "hi"))


def test_prompt_hook_may_replace_the_prompt() -> None:
    cfg = config(hooks={HookPoint.USER_PROMPT_SUBMIT})
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="hi"),
            HookDecided(hook_id="prompt:1", decision=Replaced(value="hello there")),
        ],
    )
    assert effects[1:] == started(cfg, "hello there")


def test_prompt_hook_may_block_the_turn_and_nothing_enters_the_history() -> None:
    cfg = config(hooks={HookPoint.USER_PROMPT_SUBMIT})
    state, effects = run(
        cfg,
        [
            PromptSubmitted(text="rm -rf /"),
            HookDecided(hook_id="prompt:1", decision=Blocked(reason="not allowed")),
        ],
    )
    assert effects[1:] == [
        Finish(outcome=Blocked(reason="not allowed"), rounds=(), iterations=0, usage=Usage())
    ]
    assert state.history == ()
    assert state.phase is Phase.IDLE


def test_user_prompt_submit_is_not_asked_again_on_continuation() -> None:
    cfg = config(hooks={HookPoint.USER_PROMPT_SUBMIT})
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="add"),
            HookDecided(hook_id="prompt:1", decision=Allowed()),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="3"),
            *text("3"),
            done(),
        ],
    )
    asks = of_type(effects, AskHook)
    assert [ask.point for ask in asks] == [HookPoint.USER_PROMPT_SUBMIT]
    assert len(of_type(effects, CallModel)) == 2


# Rule 2: streaming input ---------------------------------------------------------------


def test_text_deltas_stream_to_the_caller_and_form_the_answer() -> None:
    cfg = config()
    state, per_step = fold(
        initial_state(cfg), [PromptSubmitted(text="hi"), *text("Hel", "lo"), done()]
    )
    assert per_step[1] == (Emit(notice=TextStreamed(text="Hel")),)
    assert per_step[2] == (Emit(notice=TextStreamed(text="lo")),)
    assert state.history[-1] == ChatMessage(role="assistant", content="Hello")


def test_arguments_split_inside_a_number_are_reassembled_by_index() -> None:
    cfg = config()
    events = [
        PromptSubmitted(text="add"),
        ToolCallStarted(index=0, call_id="c1", name="add"),
        ToolCallStarted(index=1, call_id="c2", name="add"),
        ToolCallArgumentsDelta(index=1, fragment='{"a": 1'),
        ToolCallArgumentsDelta(index=0, fragment='{"a": 2'),
        ToolCallArgumentsDelta(index=0, fragment='5, "b": 1'),
        ToolCallArgumentsDelta(index=1, fragment='0, "b": 2}'),
        ToolCallArgumentsDelta(index=0, fragment="7}"),
        done("tool_calls"),
    ]
    _, effects = run(cfg, events)
    assert of_type(effects, RunTool) == [
        RunTool(call=ToolCall(id="c1", name="add", arguments='{"a": 25, "b": 17}')),
        RunTool(call=ToolCall(id="c2", name="add", arguments='{"a": 10, "b": 2}')),
    ]


def test_a_call_and_its_arguments_are_told_as_they_stream_before_it_is_announced() -> None:
    events = [
        PromptSubmitted(text="add"),
        ToolCallStarted(index=0, call_id="c1", name="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a": 2'),
        ToolCallStarted(index=1, call_id="c2", name="add"),
        ToolCallArgumentsDelta(index=1, fragment='{"a": 1}'),
        ToolCallArgumentsDelta(index=0, fragment="5}"),
        done("tool_calls"),
    ]
    _, per_step = fold(initial_state(config()), events)
    assert per_step[1:6] == [
        (Emit(notice=ToolCallStreaming(index=0, call_id="c1", name="add")),),
        (Emit(notice=ToolArgumentsStreamed(index=0, fragment='{"a": 2')),),
        (Emit(notice=ToolCallStreaming(index=1, call_id="c2", name="add")),),
        (Emit(notice=ToolArgumentsStreamed(index=1, fragment='{"a": 1}')),),
        (Emit(notice=ToolArgumentsStreamed(index=0, fragment="5}")),),
    ]
    announced = notices(per_step[6], ToolCallAnnounced)
    assert [n.call.arguments for n in announced] == ['{"a": 25}', '{"a": 1}']


def test_an_empty_fragment_is_not_told_and_a_repeated_start_tells_the_call_as_it_stands() -> None:
    events = [
        PromptSubmitted(text="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a"'),
        ToolCallStarted(index=0, call_id="c1", name="add"),
        ToolCallArgumentsDelta(index=0, fragment=""),
        ToolCallStarted(index=0, call_id="c9", name=""),
    ]
    _, per_step = fold(initial_state(config()), events)
    assert per_step[1:] == [
        (Emit(notice=ToolArgumentsStreamed(index=0, fragment='{"a"')),),
        (Emit(notice=ToolCallStreaming(index=0, call_id="c1", name="add")),),
        (),
        (Emit(notice=ToolCallStreaming(index=0, call_id="c1", name="add")),),
    ]


def test_empty_or_absent_arguments_mean_an_empty_object() -> None:
    cfg = config()
    events = [
        PromptSubmitted(text="weather"),
        ToolCallStarted(index=0, call_id="c1", name="weather_lookup"),
        ToolCallStarted(index=1, call_id="c2", name="weather_lookup"),
        ToolCallArgumentsDelta(index=1, fragment=""),
        done("tool_calls"),
    ]
    _, effects = run(cfg, events)
    assert [e.call.arguments for e in of_type(effects, RunTool)] == ["{}", "{}"]


def test_missing_and_repeated_call_ids_are_made_unique() -> None:
    cfg = config()
    events = [
        PromptSubmitted(text="weather"),
        ToolCallStarted(index=0, call_id="", name="weather_lookup"),
        ToolCallStarted(index=1, call_id="x", name="weather_lookup"),
        ToolCallStarted(index=2, call_id="x", name="weather_lookup"),
        done("tool_calls"),
    ]
    _, effects = run(cfg, events)
    assert [e.call.id for e in of_type(effects, RunTool)] == ["call_1_1_0", "x", "x_2"]


def test_reasoning_blocks_are_sent_back_on_the_next_call() -> None:
    cfg = config()
    events = [
        PromptSubmitted(text="add"),
        ReasoningDelta(text="I should "),
        ReasoningDelta(text="add."),
        ReasoningDelta(signature="sig-1"),
        ReasoningDelta(redacted="opaque"),
        *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
        done("tool_use"),
        ToolFinished(call_id="c1", output="3"),
    ]
    _, effects = run(cfg, events)
    second = of_type(effects, CallModel)[1].request
    assert second.messages[-1].tool_rounds[0].reasoning == (
        Reasoning(text="I should add.", signature="sig-1"),
        Reasoning(redacted="opaque"),
    )


def test_a_repeated_call_start_keeps_the_arguments_so_far() -> None:
    cfg = config()
    events = [
        PromptSubmitted(text="add"),
        ToolCallStarted(index=0, call_id="c1", name="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a": 1,'),
        ToolCallStarted(index=0, call_id="c1", name=""),
        ToolCallArgumentsDelta(index=0, fragment=' "b": 2}'),
        done("tool_calls"),
    ]
    _, effects = run(cfg, events)
    assert of_type(effects, RunTool) == [
        RunTool(call=ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}'))
    ]


# Rule 3: arguments that are not a JSON object ------------------------------------------


@pytest.mark.parametrize("arguments", ['{"a": 1', "[1, 2]", "42", "not json"])
def test_invalid_arguments_get_an_error_result_and_the_tool_never_runs(arguments: str) -> None:
    cfg = config()
    state, effects = run(
        cfg, [PromptSubmitted(text="add"), *tool_call(0, "c1", "add", arguments), done()]
    )
    assert of_type(effects, RunTool) == []
    [ready] = notices(effects, ToolResultReady)
    assert ready.result.is_error
    assert ready.result.content.startswith("arguments are not valid JSON: ")
    assert state.phase is Phase.STREAMING  # the loop went on to the next model call
    assert of_type(effects, CallModel)[-1].iteration == 2


# Rule 4: a response without tool calls ends the turn -----------------------------------


def test_answer_without_tools_records_the_message_and_finishes_completed() -> None:
    cfg = config()
    state, per_step = fold(
        initial_state(cfg),
        [PromptSubmitted(text="hi"), *text("Hello!"), done(input_tokens=7, output_tokens=2)],
    )
    answer = ChatMessage(role="assistant", content="Hello!")
    assert per_step[-1] == (
        Persist(message=answer),
        Finish(
            outcome=Completed(text="Hello!", model_finish_reason="stop"),
            rounds=(),
            iterations=1,
            usage=Usage(input_tokens=7, output_tokens=2),
        ),
    )
    assert state.history == (ChatMessage(role="user", content="hi"), answer)


def test_tool_rounds_are_stored_compactly_on_the_final_message() -> None:
    cfg = config()
    state, effects = run(
        cfg,
        [
            PromptSubmitted(text=USER.content),
            *text("Let me add."),
            *tool_call(0, "c1", "add", '{"a": 25, "b": 17}'),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="42"),
            *text("It is 42."),
            done(),
        ],
    )
    round_1 = ToolRound(
        assistant_text="Let me add.",
        tool_calls=(ADD_CALL,),
        results=(ToolResult(call_id="c1", name="add", content="42"),),
    )
    final = ChatMessage(role="assistant", content="It is 42.", tool_rounds=(round_1,))
    assert state.history == (USER, final)
    assert of_type(effects, Persist)[-1] == Persist(message=final)
    assert of_type(effects, Finish)[0].rounds == (round_1,)


# Rule 5: calls announced, checked, hooked, run in parallel, ordered ------------------


def test_calls_are_announced_then_all_issued_at_once() -> None:
    cfg = config()
    state, per_step = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text="two sums"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
            *tool_call(1, "c2", "add", '{"a": 3, "b": 4}'),
            done("tool_calls"),
        ],
    )
    first = ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')
    second = ToolCall(id="c2", name="add", arguments='{"a": 3, "b": 4}')
    assert per_step[-1] == (
        Emit(notice=ToolCallAnnounced(call=first, iteration=1)),
        Emit(notice=ToolCallAnnounced(call=second, iteration=1)),
        RunTool(call=first),
        RunTool(call=second),
    )
    assert state.phase is Phase.RUNNING_TOOLS


def test_results_enter_the_conversation_in_call_order_whatever_order_they_finish() -> None:
    cfg = config()
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="two sums"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
            *tool_call(1, "c2", "add", '{"a": 3, "b": 4}'),
            done("tool_calls"),
            ToolFinished(call_id="c2", output="7"),
            ToolFinished(call_id="c1", output="3"),
        ],
    )
    [tool_round] = of_type(effects, CallModel)[1].request.messages[-1].tool_rounds
    assert [r.call_id for r in tool_round.results] == ["c1", "c2"]
    assert [n.result.call_id for n in notices(effects, ToolResultReady)] == ["c2", "c1"]


def test_unknown_tool_gets_an_error_result_and_is_never_run() -> None:
    cfg = config()
    _, effects = run(
        cfg,
        [PromptSubmitted(text="x"), *tool_call(0, "c1", "rm_rf", "{}"), done("tool_calls")],
    )
    assert of_type(effects, RunTool) == []
    assert notices(effects, ToolResultReady) == [
        ToolResultReady(
            result=ToolResult(
                call_id="c1",
                name="rm_rf",
                content="Unknown tool: rm_rf",
                is_error=True,
                reason=ResultReason.UNKNOWN_TOOL,
            )
        )
    ]
    assert of_type(effects, CallModel)[-1].iteration == 2


def test_pre_tool_use_hook_is_asked_for_each_call_before_any_runs() -> None:
    cfg = config(hooks={HookPoint.PRE_TOOL_USE})
    state, per_step = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text="x"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
            *tool_call(1, "c2", "add", '{"a": 3, "b": 4}'),
            done("tool_calls"),
            HookDecided(hook_id="pre:c2", decision=Allowed()),
        ],
    )
    asks = [e for e in per_step[-2] if isinstance(e, AskHook)]
    assert [ask.hook_id for ask in asks] == ["pre:c1", "pre:c2"]
    assert per_step[-1] == ()  # still waiting for c1's decision
    state, effects = step(state, HookDecided(hook_id="pre:c1", decision=Allowed()))
    assert [e.call.id for e in effects if isinstance(e, RunTool)] == ["c1", "c2"]


def test_blocked_call_is_answered_with_the_hook_reason_and_stays_in_history() -> None:
    cfg = config(hooks={HookPoint.PRE_TOOL_USE})
    state, effects = run(
        cfg,
        [
            PromptSubmitted(text="x"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
            done("tool_calls"),
            HookDecided(hook_id="pre:c1", decision=Blocked(reason="adding is forbidden")),
        ],
    )
    assert of_type(effects, RunTool) == []
    [tool_round] = of_type(effects, CallModel)[-1].request.messages[-1].tool_rounds
    assert tool_round.results == (
        ToolResult(
            call_id="c1",
            name="add",
            content="Tool call blocked: adding is forbidden",
            reason=ResultReason.BLOCKED,
            is_error=True,
        ),
    )


def test_hook_may_replace_the_arguments_the_tool_runs_with() -> None:
    cfg = config(hooks={HookPoint.PRE_TOOL_USE})
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="x"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
            done("tool_calls"),
            HookDecided(hook_id="pre:c1", decision=Replaced(value='{"a": 1, "b": 3}')),
        ],
    )
    assert of_type(effects, RunTool) == [
        RunTool(call=ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 3}'))
    ]


def test_hook_replacing_arguments_with_bad_json_gets_an_error_result() -> None:
    cfg = config(hooks={HookPoint.PRE_TOOL_USE})
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="x"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
            done("tool_calls"),
            HookDecided(hook_id="pre:c1", decision=Replaced(value="[")),
        ],
    )
    [ready] = notices(effects, ToolResultReady)
    assert ready.result.is_error
    assert ready.result.content.startswith("hook replaced the arguments are not valid JSON")


def test_post_tool_use_is_told_each_result_without_waiting() -> None:
    cfg = config(hooks={HookPoint.POST_TOOL_USE})
    state, per_step = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text="x"),
            *tool_call(0, "c1", "add", '{"a": 25, "b": 17}'),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="42"),
        ],
    )
    result = ToolResult(call_id="c1", name="add", content="42")
    assert per_step[-1][:3] == (
        Emit(notice=ToolResultReady(result=result)),
        TellHook(call=ADD_CALL, result=result),
        Emit(notice=RoundFinished(round=state.turn.rounds[0], iteration=1)),
    )
    assert isinstance(per_step[-1][3], CallModel)


# Rule 6: a failed tool is an error result ----------------------------------------------


def test_failed_tool_is_an_error_result_the_model_sees() -> None:
    cfg = config()
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="x"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 0}'),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="ZeroDivisionError: division by zero", is_error=True),
        ],
    )
    [tool_round] = of_type(effects, CallModel)[-1].request.messages[-1].tool_rounds
    assert tool_round.results[0].is_error
    assert tool_round.results[0].content == "ZeroDivisionError: division by zero"


def _answered(cfg: LoopConfig, answer: object) -> ToolResult:
    """The result the one call `add` of a round gets from `answer`."""
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="x"),
            *tool_call(0, "c1", "add", '{"a": 1}'),
            done("tool_calls"),
            answer,
        ],
    )
    [ready] = notices(effects, ToolResultReady)
    return ready.result


def test_a_timeout_is_answered_in_the_cores_words_with_its_reason() -> None:
    result = _answered(config(), ToolTimedOut(call_id="c1", seconds=2.5))
    assert result == ToolResult(
        call_id="c1",
        name="add",
        content="Tool add timed out after 2.5 s",
        is_error=True,
        reason=ResultReason.TIMED_OUT,
    )


def test_a_lost_outcome_is_answered_interrupted_with_its_reason() -> None:
    result = _answered(config(), ToolInterrupted(call_id="c1"))
    assert (result.content, result.is_error, result.reason) == (
        "interrupted; outcome unknown",
        True,
        ResultReason.INTERRUPTED,
    )


def test_the_cores_words_for_a_timeout_follow_the_error_format() -> None:
    result = _answered(config(error_format=ErrorFormat.JSON), ToolTimedOut(call_id="c1", seconds=3))
    assert result.content == '{"error": "Tool add timed out after 3 s", "tool": "add"}'


def test_a_tools_own_output_has_no_reason_even_a_failure() -> None:
    result = _answered(config(), ToolFinished(call_id="c1", output="boom", is_error=True))
    assert result.reason is None


def test_a_late_timeout_of_a_cancelled_call_is_dropped() -> None:
    cfg = config()
    events = [PromptSubmitted(text="x"), *tool_call(0, "c1", "add", "{}"), done("tool_calls")]
    state, _ = fold(initial_state(cfg), [*events, Cancelled()])
    assert step(state, ToolTimedOut(call_id="c1", seconds=1)) == (state, ())
    assert step(state, ToolInterrupted(call_id="c1")) == (state, ())


@pytest.mark.parametrize(
    ("arguments", "name", "reason"),
    [
        ("{", "add", ResultReason.INVALID_ARGUMENTS),
        ("{}", "nope", ResultReason.UNKNOWN_TOOL),
    ],
)
def test_a_call_the_core_refuses_says_why_beside_its_text(arguments, name, reason) -> None:
    _, effects = run(
        config(),
        [PromptSubmitted(text="x"), *tool_call(0, "c1", name, arguments), done("tool_calls")],
    )
    [ready] = notices(effects, ToolResultReady)
    assert ready.result.reason is reason and ready.result.is_error


# Rule 7: max iterations ----------------------------------------------------------------


def looping(iterations: int) -> list:
    """A model that calls `add` in every one of `iterations` responses."""
    events: list = [PromptSubmitted(text="loop")]
    for i in range(1, iterations + 1):
        events += [*tool_call(0, f"c{i}", "add", '{"a": 1, "b": 1}'), done("tool_calls")]
        events.append(ToolFinished(call_id=f"c{i}", output="2"))
    return events


def test_stop_policy_finishes_at_the_cap_with_every_call_answered() -> None:
    cfg = config(max_iterations=3)
    state, effects = run(cfg, looping(3))
    [finish] = of_type(effects, Finish)
    assert finish.reason is FinishReason.MAX_ITERATIONS
    assert finish.max_iterations_reached
    assert finish.iterations == 3
    assert len(of_type(effects, CallModel)) == 3
    assert len(finish.rounds) == 3
    assert state.history[-1] == ChatMessage(role="assistant", content="", tool_rounds=finish.rounds)


def test_raise_policy_finishes_as_a_max_iterations_failure() -> None:
    cfg = config(max_iterations=3, on_max_iterations=MaxIterationsPolicy.RAISE)
    state, effects = run(cfg, looping(3))
    [finish] = of_type(effects, Finish)
    assert finish.reason is FinishReason.FAILED
    assert finish.error == Failed(
        code=FailureCode.MAX_ITERATIONS,
        message="reached max_iterations=3 with the model still calling tools",
    )
    assert len(state.history[-1].tool_rounds) == 3


def test_final_answer_policy_makes_one_last_call_without_tools() -> None:
    cfg = config(max_iterations=3, on_max_iterations=MaxIterationsPolicy.FINAL_ANSWER)
    state, effects = run(cfg, looping(3))
    last = of_type(effects, CallModel)[-1]
    assert last.iteration == 4
    assert last.request.tool_choice == "none"
    assert last.request.messages[-1] == ChatMessage(
        role="user", content=DEFAULT_FINAL_ANSWER_PROMPT
    )
    # Calls the model makes anyway are dropped, never run and never stored.
    state, effects = fold(state, [*text("It is 2."), *tool_call(0, "c9", "add", "{}"), done()])
    flat = [e for step_effects in effects for e in step_effects]
    [finish] = of_type(flat, Finish)
    assert (finish.reason, finish.text, finish.max_iterations_reached) == (
        FinishReason.COMPLETED,
        "It is 2.",
        True,
    )
    assert of_type(flat, RunTool) == []
    assert DEFAULT_FINAL_ANSWER_PROMPT not in [m.content for m in state.history]


def test_an_answer_within_the_cap_is_not_capped() -> None:
    cfg = config(max_iterations=1)
    _, effects = run(cfg, [PromptSubmitted(text="hi"), *text("hello"), done()])
    assert of_type(effects, Finish)[0].max_iterations_reached is False


# Rule 8: model call failures -----------------------------------------------------------


def test_retryable_failure_backs_off_exponentially_then_retries_the_same_request() -> None:
    cfg = config(retry=RetryPolicy(max_retries=3, base_delay=1.0, max_delay=3.0))
    state, per_step = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text="hi"),
            *text("partial"),
            ModelCallFailed(retryable=True, message="overloaded", status=529),
            TimerFired(token="retry:1:1:1"),
            ModelCallFailed(retryable=True, message="overloaded", status=529),
            TimerFired(token="retry:1:1:2"),
            ModelCallFailed(retryable=True, message="overloaded", status=529),
        ],
    )
    first_call = per_step[0][-1]
    assert per_step[2] == (
        Emit(notice=RetryScheduled(retry=1, seconds=1.0, message="overloaded", status=529)),
        StartTimer(token="retry:1:1:1", seconds=1.0),
    )
    assert per_step[3] == (CallModel(request=first_call.request, iteration=1, retry=1),)
    assert per_step[4][-1] == StartTimer(token="retry:1:1:2", seconds=2.0)
    assert per_step[6][-1] == StartTimer(token="retry:1:1:3", seconds=3.0)  # capped
    assert state.stream.text == ""  # the partial text of the failed call is gone


def test_retry_after_from_the_provider_is_honoured() -> None:
    cfg = config()
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="hi"),
            ModelCallFailed(retryable=True, message="slow down", status=429, retry_after=7.5),
        ],
    )
    assert of_type(effects, StartTimer) == [StartTimer(token="retry:1:1:1", seconds=7.5)]


def test_out_of_retries_finishes_failed_with_the_provider_message() -> None:
    cfg = config(retry=RetryPolicy(max_retries=1))
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="hi"),
            ModelCallFailed(retryable=True, message="busy", status=503),
            TimerFired(token="retry:1:1:1"),
            ModelCallFailed(retryable=True, message="still busy", status=503),
        ],
    )
    [finish] = of_type(effects, Finish)
    assert finish.reason is FinishReason.FAILED
    assert finish.error == Failed(
        code=FailureCode.RETRIES_EXHAUSTED, message="still busy", status=503
    )


def test_fatal_failure_finishes_at_once_keeping_completed_rounds() -> None:
    cfg = config()
    state, effects = run(
        cfg,
        [
            PromptSubmitted(text=USER.content),
            *tool_call(0, "c1", "add", '{"a": 25, "b": 17}'),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="42"),
            *text("half an ans"),
            *tool_call(0, "c2", "add", '{"a":'),
            ModelCallFailed(retryable=False, message="invalid api key", status=401),
        ],
    )
    assert of_type(effects, StartTimer) == []
    [finish] = of_type(effects, Finish)
    assert finish.error == Failed(
        code=FailureCode.MODEL_ERROR, message="invalid api key", status=401
    )
    [tool_round] = state.history[-1].tool_rounds
    assert tool_round.tool_calls == (ADD_CALL,)
    assert state.history[-1].content == ""


def test_retry_counter_restarts_for_each_model_call() -> None:
    cfg = config(retry=RetryPolicy(max_retries=1))
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="x"),
            ModelCallFailed(retryable=True, message="busy"),
            TimerFired(token="retry:1:1:1"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 1}'),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="2"),
            ModelCallFailed(retryable=True, message="busy"),
        ],
    )
    assert of_type(effects, StartTimer)[-1] == StartTimer(token="retry:1:2:1", seconds=1.0)


# Rule 9: cancel ------------------------------------------------------------------------


def test_cancel_mid_tool_closes_the_round_and_ignores_late_results() -> None:
    cfg = config()
    state, effects = run(
        cfg,
        [
            PromptSubmitted(text="x"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
            *tool_call(1, "c2", "add", '{"a": 3, "b": 4}'),
            done("tool_calls"),
            ToolFinished(call_id="c1", output="3"),
            Cancelled(),
        ],
    )
    [finish] = of_type(effects, Finish)
    assert finish.reason is FinishReason.CANCELLED
    [tool_round] = state.history[-1].tool_rounds
    assert tool_round.results == (
        ToolResult(call_id="c1", name="add", content="3"),
        ToolResult(
            call_id="c2",
            name="add",
            content="Cancelled before the tool finished.",
            is_error=True,
            reason=ResultReason.CANCELLED,
        ),
    )
    state, late = step(state, ToolFinished(call_id="c2", output="7"))
    assert late == ()
    state, late = step(state, PromptSubmitted(text="again"))
    _, late = step(state, ToolFinished(call_id="c2", output="7"))
    assert late == ()


@pytest.mark.parametrize(
    "events",
    [
        [PromptSubmitted(text="x")],
        [PromptSubmitted(text="x"), *text("partial")],
        [PromptSubmitted(text="x"), ModelCallFailed(retryable=True, message="busy")],
    ],
    ids=["before-any-delta", "mid-stream", "backing-off"],
)
def test_cancel_while_the_model_works_finishes_with_a_clean_history(events: list) -> None:
    cfg = config()
    state, effects = run(cfg, [*events, Cancelled()])
    assert of_type(effects, Finish)[0].reason is FinishReason.CANCELLED
    assert state.history == (ChatMessage(role="user", content="x"),)
    # Stragglers of the cancelled call are ignored.
    for late in [*text("late"), TimerFired(token="retry:1:1:1"), done()]:
        state, effects_after = step(state, late)
        assert effects_after == ()


def test_cancel_while_idle_does_nothing() -> None:
    state = initial_state(config())
    assert step(state, Cancelled()) == (state, ())


def test_cancel_while_waiting_for_hooks_closes_the_round() -> None:
    cfg = config(hooks={HookPoint.PRE_TOOL_USE})
    state, effects = run(
        cfg,
        [
            PromptSubmitted(text="x"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
            done("tool_calls"),
            Cancelled(),
        ],
    )
    assert state.history[-1].tool_rounds[0].results[0].is_error
    assert step(state, HookDecided(hook_id="pre:c1", decision=Allowed()))[1] == ()


# Rule 10: manual mode ------------------------------------------------------------------


def test_manual_mode_requests_results_then_continues_without_a_new_user_message() -> None:
    cfg = config(auto_execute=False, hooks={HookPoint.USER_PROMPT_SUBMIT})
    state, effects = run(
        cfg,
        [
            PromptSubmitted(text=USER.content),
            HookDecided(hook_id="prompt:1", decision=Allowed()),
            *tool_call(0, "c1", "add", '{"a": 25, "b": 17}'),
            done("tool_calls"),
        ],
    )
    assert of_type(effects, RunTool) == []
    assert notices(effects, ResultsRequested) == [ResultsRequested(calls=(ADD_CALL,))]
    assert state.phase is Phase.AWAITING_RESULTS
    state, effects2 = step(state, ToolFinished(call_id="c1", output="42"))
    [next_call] = [e for e in effects2 if isinstance(e, CallModel)]
    assert [m.role for m in next_call.request.messages] == ["user", "assistant"]
    assert of_type(list(effects) + list(effects2), AskHook)[1:] == []


def test_manual_result_for_an_unknown_call_id_names_it_and_the_pending_ones() -> None:
    cfg = config(auto_execute=False)
    state, _ = run(
        cfg,
        [PromptSubmitted(text="x"), *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'), done()],
    )
    with pytest.raises(StepError, match=r"'nope'.*\['c1'\]"):
        step(state, ToolFinished(call_id="nope", output="1"))


def test_auto_mode_tool_result_for_an_unknown_call_id_raises() -> None:
    cfg = config()
    state, _ = run(
        cfg,
        [PromptSubmitted(text="x"), *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'), done()],
    )
    with pytest.raises(StepError, match="phase=RUNNING_TOOLS"):
        step(state, ToolFinished(call_id="c9", output="1"))
    state, _ = step(state, ToolFinished(call_id="c1", output="3"))
    with pytest.raises(StepError):  # a second result for the same call is misuse too
        step(state, ToolFinished(call_id="c1", output="3"))


# Rule 11: usage ------------------------------------------------------------------------


def test_usage_is_summed_over_the_turn_and_the_session() -> None:
    cfg = config()
    state, effects = run(
        cfg,
        [
            PromptSubmitted(text="x"),
            *tool_call(0, "c1", "add", '{"a": 1, "b": 2}'),
            ModelResponded(
                usage=Usage(input_tokens=10, output_tokens=3, extra=(("cached_tokens", 4),))
            ),
            ToolFinished(call_id="c1", output="3"),
            *text("3"),
            ModelResponded(usage=Usage(input_tokens=20, output_tokens=1)),
            PromptSubmitted(text="y"),
            *text("ok"),
            ModelResponded(usage=Usage(input_tokens=30, output_tokens=2)),
        ],
    )
    first, second = of_type(effects, Finish)
    assert first.usage == Usage(input_tokens=30, output_tokens=4, extra=(("cached_tokens", 4),))
    assert second.usage == Usage(input_tokens=30, output_tokens=2)
    assert state.usage == Usage(input_tokens=60, output_tokens=6, extra=(("cached_tokens", 4),))


# Rule 12: tool names -------------------------------------------------------------------


def test_duplicate_tool_names_are_rejected_when_the_config_is_built() -> None:
    with pytest.raises(ValueError, match="Duplicate tool name: add"):
        LoopConfig(tools=(ADD, ToolSpec(name="add")))


# Rule 13: multi-turn -------------------------------------------------------------------


def test_a_new_prompt_after_finish_continues_the_same_history() -> None:
    cfg = config()
    state, effects = run(
        cfg,
        [
            PromptSubmitted(text="hi"),
            *text("hello"),
            done(),
            PromptSubmitted(text="again"),
        ],
    )
    last = of_type(effects, CallModel)[-1]
    assert [(m.role, m.content) for m in last.request.messages] == [
        ("user", "hi"),
        ("assistant", "hello"),
        ("user", "again"),
    ]


# Misuse --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event",
    [
        TextDelta(text="x"),
        ToolFinished(call_id="c1", output="x"),
        HookDecided(hook_id="x", decision=Allowed()),
    ],
)
def test_an_event_impossible_in_the_phase_names_the_phase_and_the_event(event) -> None:
    with pytest.raises(StepError, match=rf"{type(event).__name__}.*phase=IDLE"):
        step(initial_state(config()), event)


def test_a_prompt_while_a_turn_runs_is_misuse() -> None:
    state, _ = run(config(), [PromptSubmitted(text="x")])
    with pytest.raises(StepError, match="phase=STREAMING"):
        step(state, PromptSubmitted(text="y"))


def test_a_timer_with_a_wrong_token_is_misuse() -> None:
    state, _ = run(
        config(), [PromptSubmitted(text="x"), ModelCallFailed(retryable=True, message="busy")]
    )
    with pytest.raises(StepError, match="retry:1:1:1"):
        step(state, TimerFired(token="other"))

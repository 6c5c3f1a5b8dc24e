"""The loop's optional policies (LoopConfig; core/_loop_round.py, core/_finish.py).

Each policy has a default that is toolreel's own behaviour (covered by
test_step.py) and a value that is open_agent's; these tests feed events and
check the effects of the latter, and that the default is as it was.
"""

from __future__ import annotations

import json

import pytest
from loop import call as tool_call
from loop import config, done, fold, notices, of_type, run, text

from toolreel.core import (
    AskHook,
    CallModel,
    ChatMessage,
    Finish,
    HistoryReplaced,
    HookDecided,
    Persist,
    PromptSubmitted,
    RunTool,
    State,
    StepError,
    ToolCall,
    ToolFinished,
    initial_state,
    step,
)
from toolreel.core.hooks import Blocked, HookPoint, Replaced
from toolreel.core.notices import ResultsRequested, ToolCallAnnounced, ToolResultReady
from toolreel.core.outcomes import Capped, Completed, FinishReason
from toolreel.core.policies import (
    AnnouncePolicy,
    BlockedCallPolicy,
    EmptyPromptPolicy,
    ErrorFormat,
    MaxIterationsPolicy,
)

ADD_ARGS = '{"a": 1, "b": 2}'
PRE = frozenset({HookPoint.PRE_TOOL_USE})


def two_calls() -> list:
    """A response calling `add` twice (c1, c2)."""
    return [*tool_call(0, "c1", "add", ADD_ARGS), *tool_call(1, "c2", "add", ADD_ARGS), done()]


# on_tool_blocked ---------------------------------------------------------------


def test_end_turn_finishes_blocked_once_the_round_is_complete() -> None:
    cfg = config(hooks=PRE, on_tool_blocked=BlockedCallPolicy.END_TURN)
    events = [
        PromptSubmitted(text="Go"),
        *two_calls(),
        HookDecided(hook_id="pre:c1", decision=Blocked(reason="policy")),
        HookDecided(hook_id="pre:c2", decision=Blocked(reason="second")),
    ]
    state, effects = run(cfg, events)
    [finish] = of_type(effects, Finish)
    assert finish.outcome == Blocked(reason="policy")  # the first reason
    assert finish.reason is FinishReason.BLOCKED
    assert len(of_type(effects, CallModel)) == 1  # no further model call
    assert [r.content for r in finish.rounds[0].results] == [
        "Tool call blocked: policy",
        "Tool call blocked: second",
    ]
    assert state.history[-1].tool_rounds == finish.rounds  # the round is kept


def test_end_turn_runs_the_calls_that_were_not_blocked_first() -> None:
    cfg = config(hooks=PRE, on_tool_blocked=BlockedCallPolicy.END_TURN)
    state, per_step = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text="Go"),
            *two_calls(),
            HookDecided(hook_id="pre:c1", decision=Blocked(reason="policy")),
            HookDecided(hook_id="pre:c2", decision=Replaced(value=ADD_ARGS)),
        ],
    )
    assert RunTool(call=ToolCall(id="c2", name="add", arguments=ADD_ARGS)) in per_step[-1]
    assert not of_type(per_step[-1], Finish)
    _, effects = fold(state, [ToolFinished(call_id="c2", output="3")])
    [finish] = of_type(effects[0], Finish)
    assert finish.outcome == Blocked(reason="policy")
    assert [r.content for r in finish.rounds[0].results] == ["Tool call blocked: policy", "3"]


def test_answer_is_the_default_and_goes_on_after_a_block() -> None:
    cfg = config(hooks=PRE)
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="Go"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            done(),
            HookDecided(hook_id="pre:c1", decision=Blocked(reason="policy")),
        ],
    )
    assert len(of_type(effects, CallModel)) == 2
    assert not of_type(effects, Finish)


# on_max_iterations=ONE_MORE_CALL -------------------------------------------------


def looping(calls: int) -> list:
    """A prompt, then `calls` responses each calling `add` once, each answered."""
    events: list = [PromptSubmitted(text="Loop")]
    for n in range(calls):
        events += [*tool_call(0, f"c{n}", "add", ADD_ARGS), done()]
        events.append(ToolFinished(call_id=f"c{n}", output="3"))
    return events


def test_one_more_call_shows_the_calls_past_the_cap_and_answers_them_not_run() -> None:
    cfg = config(max_iterations=2, on_max_iterations=MaxIterationsPolicy.ONE_MORE_CALL)
    events = [*looping(2), *tool_call(0, "c2", "add", ADD_ARGS), done()]
    state, effects = run(cfg, events)
    calls = of_type(effects, CallModel)
    assert len(calls) == 3  # one more model call than the cap
    assert calls[-1].request.tool_choice == "auto"  # tools offered as usual, no extra prompt
    assert calls[-1].request.messages[-1].content == ""  # no final-answer prompt: the rounds
    assert [c.call.id for c in of_type(effects, RunTool)] == ["c0", "c1"]  # c2 never runs
    assert [n.call.id for n in notices(effects, ToolCallAnnounced)] == ["c0", "c1", "c2"]
    [finish] = of_type(effects, Finish)
    assert finish.outcome == Capped(text="", policy=MaxIterationsPolicy.ONE_MORE_CALL)
    assert (finish.reason, finish.max_iterations_reached) == (FinishReason.MAX_ITERATIONS, True)
    last = finish.rounds[-1].results[0]
    assert (last.content, last.is_error) == ("not run: max_tool_iterations (2) reached", True)
    assert state.history[-1].tool_rounds == finish.rounds


def test_one_more_call_that_answers_completes_the_turn() -> None:
    cfg = config(max_iterations=2, on_max_iterations=MaxIterationsPolicy.ONE_MORE_CALL)
    _, effects = run(cfg, [*looping(2), *text("Done"), done()])
    [finish] = of_type(effects, Finish)
    assert finish.outcome == Completed(text="Done")
    assert finish.iterations == 3


def test_one_more_call_asks_no_hook_about_calls_it_will_not_run() -> None:
    cfg = config(max_iterations=1, on_max_iterations=MaxIterationsPolicy.ONE_MORE_CALL, hooks=PRE)
    events = [
        PromptSubmitted(text="Go"),
        *tool_call(0, "c0", "add", ADD_ARGS),
        done(),
        HookDecided(hook_id="pre:c0", decision=Replaced(value=ADD_ARGS)),
        ToolFinished(call_id="c0", output="3"),
        *tool_call(0, "c1", "add", ADD_ARGS),
        done(),
    ]
    _, effects = run(cfg, events)
    assert [a.hook_id for a in of_type(effects, AskHook)] == ["pre:c0"]
    assert of_type(effects, Finish)[0].reason is FinishReason.MAX_ITERATIONS


# announce=AFTER_HOOKS -------------------------------------------------------------


def test_after_hooks_announces_each_call_as_it_runs_once_the_hooks_decided() -> None:
    cfg = config(hooks=PRE, announce=AnnouncePolicy.AFTER_HOOKS)
    state, per_step = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text="Go"),
            *two_calls(),
            HookDecided(hook_id="pre:c2", decision=Replaced(value='{"a": 100, "b": 200}')),
        ],
    )
    assert not notices(per_step[-1], ToolCallAnnounced)  # c1 still awaits its decision
    assert not any(notices(effects, ToolCallAnnounced) for effects in per_step)
    _, (effects,) = fold(state, [HookDecided(hook_id="pre:c1", decision=Blocked(reason="no"))])
    replaced = ToolCall(id="c2", name="add", arguments='{"a": 100, "b": 200}')
    assert [n.call for n in notices(effects, ToolCallAnnounced)] == [replaced]  # c1 left out
    kinds = [type(getattr(e, "notice", e)).__name__ for e in effects]
    assert kinds == ["ToolResultReady", "ToolCallAnnounced", "RunTool"]


def test_after_hooks_records_the_calls_as_they_ran() -> None:
    cfg = config(hooks=PRE, announce=AnnouncePolicy.AFTER_HOOKS)
    replaced = '{"a": 100, "b": 200}'
    state, _ = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text="Go"),
            *two_calls(),
            HookDecided(hook_id="pre:c1", decision=Replaced(value=replaced)),
            HookDecided(hook_id="pre:c2", decision=Blocked(reason="no")),
            ToolFinished(call_id="c1", output="300"),
        ],
    )
    recorded = state.turn.rounds[0].tool_calls
    assert [c.arguments for c in recorded] == [replaced, ADD_ARGS]  # the blocked one as sent


def test_on_response_records_the_calls_as_the_model_made_them() -> None:
    state, _ = fold(
        initial_state(config(hooks=PRE)),
        [
            PromptSubmitted(text="Go"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            done(),
            HookDecided(hook_id="pre:c1", decision=Replaced(value='{"a": 5, "b": 5}')),
            ToolFinished(call_id="c1", output="10"),
        ],
    )
    assert state.turn.rounds[0].tool_calls[0].arguments == ADD_ARGS


def test_after_hooks_without_a_hook_to_ask_announces_on_the_response() -> None:
    cfg = config(announce=AnnouncePolicy.AFTER_HOOKS)
    _, per_step = fold(initial_state(cfg), [PromptSubmitted(text="Go"), *two_calls()])
    assert [n.call.id for n in notices(per_step[-1], ToolCallAnnounced)] == ["c1", "c2"]


def test_after_hooks_in_manual_mode_announces_before_requesting_results() -> None:
    cfg = config(hooks=PRE, announce=AnnouncePolicy.AFTER_HOOKS, auto_execute=False)
    _, per_step = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text="Go"),
            *tool_call(0, "c1", "add", ADD_ARGS),
            done(),
            HookDecided(hook_id="pre:c1", decision=Replaced(value='{"a": 5, "b": 5}')),
        ],
    )
    told = notices(per_step[-1])
    assert [type(n) for n in told] == [ToolCallAnnounced, ResultsRequested]
    assert told[0].call.arguments == told[1].calls[0].arguments == '{"a": 5, "b": 5}'


def test_on_response_is_the_default_and_announces_before_the_hooks() -> None:
    _, per_step = fold(initial_state(config(hooks=PRE)), [PromptSubmitted(text="Go"), *two_calls()])
    assert [n.call.id for n in notices(per_step[-1], ToolCallAnnounced)] == ["c1", "c2"]


# error_format=JSON -----------------------------------------------------------------


def test_json_errors_name_the_tool() -> None:
    cfg = config(hooks=PRE, error_format=ErrorFormat.JSON)
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="Go"),
            *tool_call(0, "c1", "nope", "{}"),
            *tool_call(1, "c2", "add", ADD_ARGS),
            done(),
            HookDecided(hook_id="pre:c2", decision=Blocked(reason="policy")),
        ],
    )
    results = [json.loads(n.result.content) for n in notices(effects, ToolResultReady)]
    assert results == [
        {"error": "Unknown tool: nope", "tool": "nope"},
        {"error": "Tool call blocked: policy", "tool": "add"},
    ]


def test_text_is_the_default_error_format() -> None:
    _, effects = run(
        config(), [PromptSubmitted(text="Go"), *tool_call(0, "c1", "nope", "{}"), done()]
    )
    assert notices(effects, ToolResultReady)[0].result.content == "Unknown tool: nope"


# empty_prompt=CONTINUE --------------------------------------------------------------


def manual_round(cfg_overrides: dict, *, asked: bool = False) -> State:
    """A manual-mode turn of one call, answered, stopped at the cap of one iteration."""
    cfg = config(auto_execute=False, max_iterations=1, **cfg_overrides)
    allow = [HookDecided(hook_id="prompt:1", decision=Replaced(value="Go"))] if asked else []
    state, _ = fold(
        initial_state(cfg),
        [
            PromptSubmitted(text="Go"),
            *allow,
            *tool_call(0, "c1", "add", ADD_ARGS),
            done(),
            ToolFinished(call_id="c1", output="3"),
        ],
    )
    return state


def test_continue_takes_the_rounds_up_again_without_a_user_message() -> None:
    state = manual_round({"empty_prompt": EmptyPromptPolicy.CONTINUE})
    assert [m.role for m in state.history] == ["user", "assistant"]
    state, per_step = fold(state, [PromptSubmitted(text=""), *text("3"), done()])
    [call_model] = per_step[0]  # no hook, no Persist of a user message
    assert isinstance(call_model, CallModel)
    assert [m.role for m in call_model.request.messages] == ["user", "assistant"]
    assert call_model.request.messages[-1].tool_rounds[0].results[0].content == "3"
    [answer] = [m for m in state.history if m.role == "assistant"]
    assert (answer.content, len(answer.tool_rounds)) == ("3", 1)  # one message, completed


def test_continue_asks_no_user_prompt_hook() -> None:
    state = manual_round(
        {"empty_prompt": EmptyPromptPolicy.CONTINUE, "hooks": {HookPoint.USER_PROMPT_SUBMIT}},
        asked=True,
    )
    # The manual round itself was asked once, at "Go"; the continuation is not.
    assert not of_type(step(state, PromptSubmitted(text=""))[1], AskHook)


def test_an_empty_prompt_is_a_user_message_by_default() -> None:
    state = manual_round({})
    _, (effects,) = fold(state, [PromptSubmitted(text="")])
    assert effects[0] == Persist(message=ChatMessage(role="user", content=""))


def test_continue_after_an_answer_is_an_ordinary_prompt() -> None:
    cfg = config(empty_prompt=EmptyPromptPolicy.CONTINUE)
    state, _ = fold(initial_state(cfg), [PromptSubmitted(text="Hi"), *text("Hello"), done()])
    _, (effects,) = fold(state, [PromptSubmitted(text="")])
    assert effects[0] == Persist(message=ChatMessage(role="user", content=""))


# HistoryReplaced (rule 14) ---------------------------------------------------------


def test_history_replaced_between_turns_is_what_the_next_call_sends() -> None:
    cfg = config()
    state, _ = fold(initial_state(cfg), [PromptSubmitted(text="one"), *text("A"), done()])
    kept = (ChatMessage(role="user", content="two"), ChatMessage(role="assistant", content="B"))
    state, per_step = fold(state, [HistoryReplaced(history=kept), PromptSubmitted(text="three")])
    assert per_step[0] == ()
    [call_model] = of_type(per_step[1], CallModel)
    assert [m.content for m in call_model.request.messages] == ["two", "B", "three"]


def test_history_replaced_during_a_turn_is_misuse() -> None:
    state, _ = fold(initial_state(config()), [PromptSubmitted(text="one")])
    with pytest.raises(StepError, match=r"HistoryReplaced.*phase=STREAMING"):
        step(state, HistoryReplaced(history=()))

"""Human approval (rule 15 of core/_step.py): held calls, the pause, and the decisions.

A call whose tool is in `approval_required`, or that a PreToolUse hook answered
`Ask` about, is held; the round's other calls run; once only held calls are left
the turn pauses with `AwaitApproval`; `Approved` / `Denied` decide one call each,
and once the last is decided the approved calls run and the denied ones are
answered with the human's reason.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loop import call as tool_call
from loop import config, done, fold, notices, of_type, run, text

from toolreel.core import (
    Approved,
    AwaitApproval,
    CallModel,
    Cancelled,
    ConfigError,
    Denied,
    Finish,
    HookDecided,
    Phase,
    PromptSubmitted,
    ResultReason,
    RunTool,
    StepError,
    ToolCall,
    ToolFinished,
    ToolResult,
    awaiting_approval,
    initial_state,
    step,
)
from toolreel.core.budget import Budget, OverBudget
from toolreel.core.hooks import Ask, HookPoint
from toolreel.core.notices import (
    ApprovalRequested,
    ResultsRequested,
    ToolCallAnnounced,
    ToolResultReady,
)
from toolreel.core.policies import AnnouncePolicy, ErrorFormat

ARGS = '{"a": 1, "b": 2}'
CITY = '{"city": "Paris"}'
GATED = config(approval_required={"add"})


def add(call_id: str) -> ToolCall:
    """The `add` call the model makes as `call_id`."""
    return ToolCall(id=call_id, name="add", arguments=ARGS)


def weather(call_id: str) -> ToolCall:
    """The `weather_lookup` call the model makes as `call_id`."""
    return ToolCall(id=call_id, name="weather_lookup", arguments=CITY)


def asks_for(*calls: ToolCall) -> list:
    """The model's response calling `calls`, in order."""
    events: list = [PromptSubmitted(text="Go")]
    for index, item in enumerate(calls):
        events += tool_call(index, item.id, item.name, item.arguments)
    return [*events, done()]


def paused(cfg, *calls: ToolCall, then=()):
    """The state after the response asking for `calls` (and `then`), from a new session."""
    state, _ = fold(initial_state(cfg), [*asks_for(*calls), *then])
    return state


# Holding and pausing ---------------------------------------------------------------


def test_a_call_whose_tool_requires_approval_pauses_the_turn_with_nothing_to_run() -> None:
    state, effects = run(GATED, asks_for(add("c1")))
    assert state.phase is Phase.AWAITING_APPROVAL
    assert notices(effects, ApprovalRequested) == [ApprovalRequested(call=add("c1"))]
    assert effects[-1] == AwaitApproval(requests=(ApprovalRequested(call=add("c1")),))
    assert of_type(effects, RunTool) == [] and of_type(effects, Finish) == []
    assert awaiting_approval(state) == (ApprovalRequested(call=add("c1")),)


def test_the_other_calls_run_first_and_the_turn_pauses_once_they_are_answered() -> None:
    state, per_step = fold(initial_state(GATED), asks_for(add("c1"), weather("c2")))
    assert of_type(per_step[-1], RunTool) == [RunTool(call=weather("c2"))]
    assert state.phase is Phase.RUNNING_TOOLS
    assert awaiting_approval(state) == (ApprovalRequested(call=add("c1")),)
    state, effects = step(state, ToolFinished(call_id="c2", output="sunny"))
    assert state.phase is Phase.AWAITING_APPROVAL
    assert effects[-1] == AwaitApproval(requests=(ApprovalRequested(call=add("c1")),))


def test_the_request_comes_after_the_announcements_in_call_order() -> None:
    _, effects = run(GATED, asks_for(weather("c1"), add("c2"), add("c3")))
    told = [type(n).__name__ for n in notices(effects)]
    assert told[-4:] == [
        "ToolCallAnnounced",
        "ToolCallAnnounced",
        "ApprovalRequested",
        "ApprovalRequested",
    ]
    assert [n.call.id for n in notices(effects, ApprovalRequested)] == ["c2", "c3"]


def test_a_hook_answering_ask_holds_the_call_with_its_reason() -> None:
    cfg = config(hooks={HookPoint.PRE_TOOL_USE})
    events = [
        *asks_for(weather("c1")),
        HookDecided(hook_id="pre:c1", decision=Ask(reason="it costs money")),
    ]
    state, effects = run(cfg, events)
    assert effects[-1] == AwaitApproval(
        requests=(ApprovalRequested(call=weather("c1"), reason="it costs money"),)
    )
    assert state.phase is Phase.AWAITING_APPROVAL


def test_a_hook_may_ask_with_new_arguments_which_an_approved_call_runs_with() -> None:
    cfg = config(hooks={HookPoint.PRE_TOOL_USE})
    changed = '{"city": "Lyon"}'
    state = paused(
        cfg,
        weather("c1"),
        then=[HookDecided(hook_id="pre:c1", decision=Ask(reason="check", value=changed))],
    )
    _, effects = step(state, Approved(call_id="c1"))
    assert effects == (RunTool(call=ToolCall(id="c1", name="weather_lookup", arguments=changed)),)


def test_an_ask_with_arguments_that_are_not_an_object_answers_the_call_at_once() -> None:
    cfg = config(hooks={HookPoint.PRE_TOOL_USE})
    events = [*asks_for(weather("c1")), HookDecided(hook_id="pre:c1", decision=Ask(value="[1]"))]
    state, effects = run(cfg, events)
    assert notices(effects, ApprovalRequested) == []
    assert state.phase is Phase.STREAMING  # answered with an error, the model is called again


def test_a_call_refused_before_approval_is_not_held() -> None:
    state, effects = run(GATED, asks_for(ToolCall(id="c1", name="add", arguments="{oops")))
    assert notices(effects, ApprovalRequested) == []
    assert state.phase is Phase.STREAMING


def test_after_hooks_announces_the_held_call_with_the_arguments_it_would_run_with() -> None:
    cfg = config(hooks={HookPoint.PRE_TOOL_USE}, announce=AnnouncePolicy.AFTER_HOOKS)
    changed = '{"city": "Lyon"}'
    events = [
        *asks_for(weather("c1")),
        HookDecided(hook_id="pre:c1", decision=Ask(value=changed)),
    ]
    _, effects = run(cfg, events)
    [announced] = notices(effects, ToolCallAnnounced)
    assert announced.call.arguments == changed


# Deciding ----------------------------------------------------------------------------


def test_approving_the_only_held_call_runs_it_and_the_turn_goes_on() -> None:
    state = paused(GATED, add("c1"))
    state, effects = step(state, Approved(call_id="c1"))
    assert effects == (RunTool(call=add("c1")),)
    assert state.phase is Phase.RUNNING_TOOLS
    state, effects = step(state, ToolFinished(call_id="c1", output="3"))
    [model_call] = of_type(effects, CallModel)
    last = model_call.request.messages[-1]
    assert last.tool_rounds[-1].results == (ToolResult(call_id="c1", name="add", content="3"),)


def test_denying_answers_the_call_with_the_reason_the_model_then_reads() -> None:
    state = paused(GATED, add("c1"))
    state, effects = step(state, Denied(call_id="c1", reason="not today"))
    denied = ToolResult(
        call_id="c1", name="add", content="not today", is_error=True, reason=ResultReason.DENIED
    )
    assert notices(effects, ToolResultReady) == [ToolResultReady(result=denied)]
    [model_call] = of_type(effects, CallModel)
    assert model_call.request.messages[-1].tool_rounds[-1].results == (denied,)
    assert state.phase is Phase.STREAMING


@pytest.mark.parametrize("reason", ["", "   "])
def test_a_denial_without_a_reason_tells_the_model_the_user_denied_it(reason) -> None:
    state = paused(GATED, add("c1"))
    _, effects = step(state, Denied(call_id="c1", reason=reason))
    [ready] = notices(effects, ToolResultReady)
    assert ready.result.content == "The user denied this tool call."


def test_a_denial_is_worded_as_json_under_the_json_error_format() -> None:
    cfg = config(approval_required={"add"}, error_format=ErrorFormat.JSON)
    _, effects = step(paused(cfg, add("c1")), Denied(call_id="c1", reason="no"))
    [ready] = notices(effects, ToolResultReady)
    assert json.loads(ready.result.content) == {"error": "no", "tool": "add"}


def test_held_calls_are_decided_one_by_one_and_run_once_the_last_is_decided() -> None:
    state = paused(GATED, add("c1"), add("c2"), add("c3"))
    state, effects = step(state, Approved(call_id="c2"))
    assert effects == (
        AwaitApproval(
            requests=(ApprovalRequested(call=add("c1")), ApprovalRequested(call=add("c3")))
        ),
    )
    assert state.phase is Phase.AWAITING_APPROVAL
    state, effects = step(state, Denied(call_id="c1", reason="no"))
    assert of_type(effects, AwaitApproval) == [
        AwaitApproval(requests=(ApprovalRequested(call=add("c3")),))
    ]
    state, effects = step(state, Approved(call_id="c3"))
    assert effects == (RunTool(call=add("c2")), RunTool(call=add("c3")))
    assert state.phase is Phase.RUNNING_TOOLS


def test_a_decision_while_the_other_calls_still_run_waits_for_them_without_pausing() -> None:
    state = paused(GATED, add("c1"), weather("c2"))
    state, effects = step(state, Approved(call_id="c1"))
    assert effects == (RunTool(call=add("c1")),)  # the last held call: it runs now
    state, effects = step(state, ToolFinished(call_id="c2", output="sunny"))
    assert of_type(effects, AwaitApproval) == [] and state.phase is Phase.RUNNING_TOOLS
    state, effects = step(state, ToolFinished(call_id="c1", output="3"))
    assert len(of_type(effects, CallModel)) == 1


def test_a_denial_while_another_call_runs_leaves_the_round_open_until_it_ends() -> None:
    state = paused(GATED, add("c1"), weather("c2"))
    state, effects = step(state, Denied(call_id="c1", reason="no"))
    assert of_type(effects, CallModel) == [] and of_type(effects, RunTool) == []
    state, effects = step(state, ToolFinished(call_id="c2", output="sunny"))
    assert len(of_type(effects, CallModel)) == 1


def test_manual_mode_requests_the_approved_calls_from_the_caller() -> None:
    cfg = config(approval_required={"add"}, auto_execute=False)
    state, effects = step(paused(cfg, add("c1")), Approved(call_id="c1"))
    assert len(effects) == 1 and notices(effects) == [ResultsRequested(calls=(add("c1"),))]
    assert state.phase is Phase.AWAITING_RESULTS


def test_cancel_while_paused_answers_the_held_calls_and_finishes() -> None:
    state = paused(GATED, add("c1"))
    state, effects = step(state, Cancelled())
    [finish] = of_type(effects, Finish)
    assert finish.rounds[0].results[0].is_error
    assert state.phase is Phase.IDLE


def test_the_turn_ends_as_usual_after_the_approved_round() -> None:
    state = paused(GATED, add("c1"), then=[Approved(call_id="c1")])
    state, _ = fold(state, [ToolFinished(call_id="c1", output="3"), *text("Three."), done()])
    assert state.phase is Phase.IDLE
    assert state.history[-1].content == "Three."


# Misuse --------------------------------------------------------------------------------


def test_approval_of_an_unknown_call_names_the_phase_event_and_awaited_calls() -> None:
    with pytest.raises(StepError) as caught:
        step(paused(GATED, add("c1")), Approved(call_id="nope"))
    message = str(caught.value)
    assert "AWAITING_APPROVAL" in message and "Approved(call_id='nope')" in message
    assert "['c1']" in message


def test_a_call_already_decided_cannot_be_decided_again() -> None:
    state = paused(GATED, add("c1"), add("c2"), then=[Approved(call_id="c1")])
    with pytest.raises(StepError, match="already decided"):
        step(state, Denied(call_id="c1", reason="changed my mind"))


@pytest.mark.parametrize("decision", [Approved(call_id="c1"), Denied(call_id="c1")])
def test_a_decision_when_nothing_awaits_approval_is_misuse(decision) -> None:
    with pytest.raises(StepError, match="no call awaits approval"):
        step(initial_state(GATED), decision)
    state = paused(config(), add("c1"))  # add runs: no approval required
    with pytest.raises(StepError, match="no call awaits approval"):
        step(state, decision)


def test_a_prompt_while_paused_is_misuse() -> None:
    with pytest.raises(StepError, match="AWAITING_APPROVAL"):
        step(paused(GATED, add("c1")), PromptSubmitted(text="again"))


def test_approval_required_must_name_configured_tools() -> None:
    with pytest.raises(ConfigError, match="approval_required"):
        config(approval_required={"rm"})


# Every call is answered exactly once, whatever order the decisions come in -------------


@settings(max_examples=150, deadline=None)
@given(
    gated=st.lists(st.booleans(), min_size=1, max_size=5),
    data=st.data(),
)
def test_every_call_is_answered_exactly_once_whatever_order_decisions_come_in(gated, data) -> None:
    calls = [add(f"c{i}") if held else weather(f"c{i}") for i, held in enumerate(gated)]
    state = paused(GATED, *calls)
    held = [c.id for c, g in zip(calls, gated, strict=True) if g]
    free = [c.id for c, g in zip(calls, gated, strict=True) if not g]
    decisions = [
        Approved(call_id=i) if data.draw(st.booleans()) else Denied(call_id=i, reason="no")
        for i in held
    ]
    # decisions and the free calls' results interleave in any order
    pending = [*decisions, *(ToolFinished(call_id=i, output="ok") for i in free)]
    order = data.draw(st.permutations(pending))
    runs: list[str] = []
    for position, event in enumerate(order):
        state, effects = step(state, event)
        started = [e.call.id for e in of_type(effects, RunTool)]
        assert not started or position == max(order.index(d) for d in decisions)
        runs += started
    approved = [d.call_id for d in decisions if isinstance(d, Approved)]
    assert sorted(runs) == sorted(approved)  # each approved call runs once, once all are decided
    for call_id in approved:
        state, effects = step(state, ToolFinished(call_id=call_id, output="ok"))
    [model_call] = [e for e in effects if isinstance(e, CallModel)] or [None]
    assert model_call is not None and state.phase is Phase.STREAMING
    results = model_call.request.messages[-1].tool_rounds[-1].results
    assert [r.call_id for r in results] == [c.id for c in calls]  # one each, in call order
    denied = {d.call_id for d in decisions if isinstance(d, Denied)}
    assert {r.call_id for r in results if r.is_error} == denied


# With a budget (rule 16) -----------------------------------------------------------


def test_an_approved_call_past_the_tool_call_budget_is_refused_and_the_turn_ends_over_budget():
    cfg = config(approval_required={"add"}, budget=Budget(max_tool_calls=1))
    state, per_step = fold(initial_state(cfg), asks_for(add("c1"), weather("c2")))
    assert of_type(per_step[-1], RunTool) == [RunTool(call=weather("c2"))]  # admitted: 1 of 1
    state, effects = step(state, Approved(call_id="c1"))  # decided while c2 still runs
    [refused] = [n.result for n in notices(effects, ToolResultReady)]
    assert (refused.call_id, refused.is_error) == ("c1", True)
    assert "over budget: tool_calls limit 1" in refused.content
    assert of_type(effects, RunTool) == [] and state.phase is Phase.RUNNING_TOOLS
    state, effects = step(state, ToolFinished(call_id="c2", output="sunny"))
    [finish] = of_type(effects, Finish)
    assert isinstance(finish.outcome, OverBudget) and finish.outcome.limit_name == "tool_calls"
    assert state.phase is Phase.IDLE


def test_held_calls_are_counted_when_they_run_not_when_they_are_held() -> None:
    cfg = config(approval_required={"add"}, budget=Budget(max_tool_calls=1))
    state = paused(cfg, add("c1"))
    _, effects = step(state, Approved(call_id="c1"))
    assert effects == (RunTool(call=add("c1")),)

"""Rule 15 of the agent reducer (core/_agent.py): helper calls held for a human's approval."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_agent import INVOICE, RATE, RATE_CALL, RECORD_CALL, fold, plain, response, run

from toolreel.core import (
    AgentPhase,
    AgentStepError,
    Allowed,
    ApprovalRequested,
    Approved,
    Ask,
    AwaitApproval,
    CallModel,
    Cancelled,
    ConfigError,
    Denied,
    FinishAgent,
    HookDecided,
    RunTool,
    ToolCall,
    ToolFinished,
    ToolSpec,
    Validate,
    agent_awaiting_approval,
)
from toolreel.core._round import CANCELLED_RESULT

DELETE = ToolSpec(name="delete_row", description="Delete a row")
DELETE_CALL = ToolCall(id="d1", name="delete_row", arguments='{"row": 3}')
ROUND = response(
    ("r1", "currency_rate", RATE_CALL.arguments), ("d1", "delete_row", DELETE_CALL.arguments)
)


def guarded(**overrides: Any) -> Any:
    """The invoice agent with a helper that requires approval."""
    return plain(helpers=(RATE, DELETE), approval_required={"delete_row"}, **overrides)


def test_a_call_whose_tool_requires_approval_is_held_while_the_others_run() -> None:
    state, effects = run(guarded(), ROUND)
    assert effects == (RunTool(call=RATE_CALL),)
    assert agent_awaiting_approval(state) == (ApprovalRequested(call=DELETE_CALL),)


def test_the_run_pauses_once_only_held_calls_are_left() -> None:
    state, effects = run(guarded(), [*ROUND, ToolFinished(call_id="r1", output="0.92")])
    assert effects == (AwaitApproval(requests=(ApprovalRequested(call=DELETE_CALL),)),)
    assert state.phase is AgentPhase.AWAITING_APPROVAL


def test_an_approved_call_runs_and_the_round_goes_on() -> None:
    events = [*ROUND, ToolFinished(call_id="r1", output="0.92"), Approved(call_id="d1")]
    state, effects = run(guarded(), events)
    assert effects == (RunTool(call=DELETE_CALL),)
    state, per_step = fold(state, [ToolFinished(call_id="d1", output="deleted")])
    assert [type(effect) for effect in per_step[-1]] == [CallModel]
    assert [r.content for r in state.rounds[-1].results] == ["0.92", "deleted"]


def test_a_denied_calls_result_is_the_reason_the_model_reads() -> None:
    events = [*ROUND, ToolFinished(call_id="r1", output="0.92"), Denied(call_id="d1", reason="no")]
    state, effects = run(guarded(), events)
    assert [type(effect) for effect in effects] == [CallModel]
    denied = state.rounds[-1].results[1]
    assert (denied.content, denied.is_error) == ("no", True)


def test_a_denial_without_a_reason_says_the_user_denied_it() -> None:
    events = [*ROUND, Denied(call_id="d1"), ToolFinished(call_id="r1", output="0.92")]
    state, _ = run(guarded(), events)
    assert state.rounds[-1].results[1].content == "The user denied this tool call."


def test_a_pause_with_calls_still_held_says_so_again_after_each_decision() -> None:
    both = response(("d1", "delete_row", '{"row": 3}'), ("d2", "delete_row", '{"row": 4}'))
    state, effects = run(guarded(), both)
    assert [type(effect) for effect in effects] == [AwaitApproval]
    state, per_step = fold(state, [Approved(call_id="d2")])
    (again,) = per_step[-1]
    assert [request.call.id for request in again.requests] == ["d1"]
    state, per_step = fold(state, [Denied(call_id="d1", reason="keep it")])
    assert [effect.call.id for effect in per_step[-1]] == ["d2"]


def test_a_decision_for_an_unknown_call_is_misuse_naming_what_waits() -> None:
    state, _ = run(guarded(), [*ROUND, ToolFinished(call_id="r1", output="0.92")])
    with pytest.raises(AgentStepError, match=r"'nope' awaits no approval.*\['d1'\]"):
        fold(state, [Approved(call_id="nope")])


def test_a_decision_for_a_call_already_decided_or_when_none_waits_is_misuse() -> None:
    state, _ = run(guarded(), [*ROUND, Approved(call_id="d1")])
    with pytest.raises(AgentStepError, match="no call awaits approval"):
        fold(state, [Denied(call_id="d1")])
    state, _ = run(plain(), response(("r1", "currency_rate", RATE_CALL.arguments)))
    with pytest.raises(AgentStepError, match="no call awaits approval"):
        fold(state, [Approved(call_id="r1")])


def test_a_hooks_ask_holds_a_running_helper_call_with_the_arguments_it_gave() -> None:
    asked = HookDecided(
        hook_id="pre:r1", decision=Ask(reason="costly", value='{"currency": "EUR"}')
    )
    state, effects = run(plain(), [*response(("r1", "currency_rate", "{}")), asked])
    held = ToolCall(id="r1", name="currency_rate", arguments='{"currency": "EUR"}')
    assert effects == (AwaitApproval(requests=(ApprovalRequested(call=held, reason="costly"),)),)
    state, per_step = fold(state, [Approved(call_id="r1")])
    assert per_step[-1] == (RunTool(call=held),)


def test_the_agent_takes_only_a_pre_tool_use_ask_about_a_running_helper() -> None:
    state, _ = run(plain(), response(("r1", "currency_rate", "{}")))
    with pytest.raises(AgentStepError, match="only ask"):
        fold(state, [HookDecided(hook_id="pre:r1", decision=Allowed())])
    with pytest.raises(AgentStepError, match="awaits a result"):
        fold(state, [HookDecided(hook_id="pre:zz", decision=Ask())])


def test_a_cancel_answers_held_calls_cancelled() -> None:
    events = [*ROUND, ToolFinished(call_id="r1", output="0.92"), Cancelled()]
    state, effects = run(guarded(), events)
    (finish,) = effects
    assert isinstance(finish, FinishAgent)
    (tool_round,) = finish.history[-1].tool_rounds
    assert [result.content for result in tool_round.results] == ["0.92", CANCELLED_RESULT]


def test_approval_is_for_helper_tools_only() -> None:
    with pytest.raises(ConfigError, match="approval_required"):
        plain(approval_required={"record_invoice"})


def test_the_output_tool_in_the_same_round_validates_after_the_held_call_is_decided() -> None:
    events = response(("d1", "delete_row", '{"row": 3}'), ("o1", "record_invoice", INVOICE))
    state, effects = run(guarded(), events)
    assert [type(effect) for effect in effects] == [AwaitApproval]
    state, per_step = fold(state, [Denied(call_id="d1")])
    assert per_step[-1] == (Validate(output=RECORD_CALL.arguments, attempt=1),)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=5), st.randoms(use_true_random=False))
def test_each_held_call_is_answered_exactly_once(verdicts: list[bool], rng: Any) -> None:
    calls = [(f"d{i}", "delete_row", f'{{"row": {i}}}') for i in range(len(verdicts))]
    state, _ = run(guarded(), response(*calls))
    order = list(range(len(verdicts)))
    rng.shuffle(order)
    ran: list[str] = []
    for i in order:
        decision = Approved(call_id=f"d{i}") if verdicts[i] else Denied(call_id=f"d{i}")
        state, effects = fold(state, [decision])
        ran += [effect.call.id for effect in effects[-1] if isinstance(effect, RunTool)]
        with pytest.raises(AgentStepError):
            fold(state, [decision])
    assert sorted(ran) == sorted(f"d{i}" for i, yes in enumerate(verdicts) if yes)
    state, _ = fold(state, [ToolFinished(call_id=call_id, output="ok") for call_id in ran])
    (tool_round,) = state.rounds
    assert [result.call_id for result in tool_round.results] == [call[0] for call in calls]

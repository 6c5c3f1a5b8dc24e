"""Rules 5 and 15 for a structured output (rule 17 of core/_step.py): its tools' calls are put
to PreToolUse and may be held for a human's approval; the output tool's and `submit` never."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_structured import (
    INVOICE,
    RATE,
    RATE_CALL,
    RECORD_CALL,
    fold,
    plain,
    reflective,
    response,
    run,
    turn_of,
)

from toolreel.core import (
    Approved,
    AskHook,
    AwaitApproval,
    CallModel,
    Cancelled,
    ConfigError,
    Denied,
    Finish,
    HookDecided,
    Phase,
    PromptSubmitted,
    Reflect,
    RunTool,
    StepError,
    TellHook,
    ToolCall,
    ToolFinished,
    ToolSpec,
    Validate,
    awaiting_approval,
    initial_state,
    step,
)
from toolreel.core._round import CANCELLED_RESULT
from toolreel.core.hooks import Allowed, Ask, Blocked, HookPoint
from toolreel.core.notices import ApprovalRequested

DELETE = ToolSpec(name="delete_row", description="Delete a row")
DELETE_CALL = ToolCall(id="d1", name="delete_row", arguments='{"row": 3}')
ROUND = response(
    ("r1", "currency_rate", RATE_CALL.arguments), ("d1", "delete_row", DELETE_CALL.arguments)
)


def guarded(**overrides: Any) -> Any:
    """The invoice turn with a tool that requires approval."""
    return plain(tools=(RATE, DELETE), approval_required={"delete_row"}, **overrides)


def test_a_call_whose_tool_requires_approval_is_held_while_the_others_run() -> None:
    state, effects = run(guarded(), ROUND)
    assert effects == (RunTool(call=RATE_CALL),)
    assert awaiting_approval(state) == (ApprovalRequested(call=DELETE_CALL),)


def test_the_run_pauses_once_only_held_calls_are_left() -> None:
    state, effects = run(guarded(), [*ROUND, ToolFinished(call_id="r1", output="0.92")])
    assert effects == (AwaitApproval(requests=(ApprovalRequested(call=DELETE_CALL),)),)
    assert state.phase is Phase.AWAITING_APPROVAL


def test_an_approved_call_runs_and_the_round_goes_on() -> None:
    events = [*ROUND, ToolFinished(call_id="r1", output="0.92"), Approved(call_id="d1")]
    state, effects = run(guarded(), events)
    assert effects == (RunTool(call=DELETE_CALL),)
    state, per_step = fold(state, [ToolFinished(call_id="d1", output="deleted")])
    assert [type(effect) for effect in per_step[-1]] == [CallModel]
    assert [r.content for r in turn_of(state).rounds[-1].results] == ["0.92", "deleted"]


def test_a_denied_calls_result_is_the_reason_the_model_reads() -> None:
    events = [*ROUND, ToolFinished(call_id="r1", output="0.92"), Denied(call_id="d1", reason="no")]
    state, effects = run(guarded(), events)
    assert [type(effect) for effect in effects] == [CallModel]
    denied = turn_of(state).rounds[-1].results[1]
    assert (denied.content, denied.is_error) == ("no", True)


def test_a_denial_without_a_reason_says_the_user_denied_it() -> None:
    events = [*ROUND, Denied(call_id="d1"), ToolFinished(call_id="r1", output="0.92")]
    state, _ = run(guarded(), events)
    assert turn_of(state).rounds[-1].results[1].content == "The user denied this tool call."


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
    with pytest.raises(StepError, match=r"'nope' awaits no approval.*\['d1'\]"):
        fold(state, [Approved(call_id="nope")])


def test_a_decision_for_a_call_already_decided_or_when_none_waits_is_misuse() -> None:
    state, _ = run(guarded(), [*ROUND, Approved(call_id="d1")])
    with pytest.raises(StepError, match="no call awaits approval"):
        fold(state, [Denied(call_id="d1")])
    state, _ = run(plain(), response(("r1", "currency_rate", RATE_CALL.arguments)))
    with pytest.raises(StepError, match="no call awaits approval"):
        fold(state, [Approved(call_id="r1")])


def hooked(**overrides: Any) -> Any:
    """The invoice turn with PreToolUse and PostToolUse asked."""
    hooks = {HookPoint.PRE_TOOL_USE, HookPoint.POST_TOOL_USE}
    return reflective(hooks=hooks, **overrides)


def _asked(config: Any) -> tuple[Any, list[Any]]:
    """A round of a tool call, an output call and submit, from the prompt: state, effects."""
    state = initial_state(config)
    effects: list[Any] = []
    for event in [
        PromptSubmitted(text="x"),
        *response(
            ("r1", "currency_rate", RATE_CALL.arguments),
            ("o1", "record_invoice", INVOICE),
            ("s1", "submit", "{}"),
        ),
    ]:
        state, made = step(state, event)
        effects += made
    return state, effects


def test_pre_tool_use_is_asked_about_tool_calls_only_never_the_output_tool_or_submit() -> None:
    state, effects = _asked(hooked())
    asks = [e for e in effects if isinstance(e, AskHook)]
    assert [ask.call.id for ask in asks] == ["r1"]
    assert not [e for e in effects if isinstance(e, RunTool | Reflect)]  # the hook decides first
    assert state.phase is Phase.TOOL_HOOKS
    state, per_step = fold(state, [HookDecided(hook_id="pre:r1", decision=Allowed())])
    assert per_step[-1] == (RunTool(call=RATE_CALL), Reflect(call=RECORD_CALL))


def test_a_blocked_tool_call_is_answered_with_the_reason_and_the_output_still_counts() -> None:
    state, _ = _asked(hooked())
    blocked = HookDecided(hook_id="pre:r1", decision=Blocked(reason="no rates today"))
    state, per_step = fold(state, [blocked, ToolFinished(call_id="o1", output="shown")])
    assert per_step[-1] == (Validate(output=INVOICE, attempt=1),)
    [result, *_] = turn_of(state).rounds[-1].results
    assert (result.content, result.is_error) == ("Tool call blocked: no rates today", True)


def test_post_tool_use_is_told_tool_results_only() -> None:
    state, _ = _asked(hooked())
    state, _ = fold(state, [HookDecided(hook_id="pre:r1", decision=Allowed())])
    told: list[Any] = []
    for result in (
        ToolFinished(call_id="o1", output="shown"),
        ToolFinished(call_id="r1", output="1"),
    ):
        state, effects = step(state, result)
        told += [effect.call.id for effect in effects if isinstance(effect, TellHook)]
    assert told == ["r1"]


def test_a_hooks_ask_holds_the_tool_call_with_the_arguments_it_gave() -> None:
    config = plain(hooks={HookPoint.PRE_TOOL_USE})
    asked = HookDecided(
        hook_id="pre:r1", decision=Ask(reason="costly", value='{"currency": "EUR"}')
    )
    state, effects = run(config, [*response(("r1", "currency_rate", "{}")), asked])
    held = ToolCall(id="r1", name="currency_rate", arguments='{"currency": "EUR"}')
    assert effects == (AwaitApproval(requests=(ApprovalRequested(call=held, reason="costly"),)),)
    state, per_step = fold(state, [Approved(call_id="r1")])
    assert per_step[-1] == (RunTool(call=held),)


def test_a_journal_of_bfd8293_holds_a_running_tool_call_a_hook_asked_about() -> None:
    # bfd8293's agent asked PreToolUse in the shell as a call ran, and fed the Ask
    asked = HookDecided(
        hook_id="pre:r1", decision=Ask(reason="costly", value='{"currency": "EUR"}')
    )
    state, effects = run(plain(), [*response(("r1", "currency_rate", "{}")), asked])
    held = ToolCall(id="r1", name="currency_rate", arguments='{"currency": "EUR"}')
    assert effects == (AwaitApproval(requests=(ApprovalRequested(call=held, reason="costly"),)),)
    state, per_step = fold(state, [Approved(call_id="r1")])
    assert per_step[-1] == (RunTool(call=held),)


def test_a_running_call_takes_only_a_pre_tool_use_ask_about_it() -> None:
    state, _ = run(plain(), response(("r1", "currency_rate", "{}")))
    with pytest.raises(StepError, match="no hook is awaited"):
        fold(state, [HookDecided(hook_id="pre:r1", decision=Allowed())])
    with pytest.raises(StepError, match="awaits a result"):
        fold(state, [HookDecided(hook_id="pre:zz", decision=Ask())])


def test_a_cancel_answers_held_calls_cancelled() -> None:
    events = [*ROUND, ToolFinished(call_id="r1", output="0.92"), Cancelled()]
    state, effects = run(guarded(), events)
    (finish,) = effects
    assert isinstance(finish, Finish)
    (tool_round,) = state.history[-1].tool_rounds
    assert [result.content for result in tool_round.results] == ["0.92", CANCELLED_RESULT]


def test_approval_is_for_the_tools_only() -> None:
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
        with pytest.raises(StepError):
            fold(state, [decision])
    assert sorted(ran) == sorted(f"d{i}" for i, yes in enumerate(verdicts) if yes)
    state, _ = fold(state, [ToolFinished(call_id=call_id, output="ok") for call_id in ran])
    (tool_round,) = turn_of(state).rounds
    assert [result.call_id for result in tool_round.results] == [call[0] for call in calls]


def test_a_held_call_past_a_tool_call_limit_waits_for_the_human_then_is_refused() -> None:
    # the order a chat turn always had: a held call is admitted when it is approved
    from toolreel.core.budget import Budget  # noqa: PLC0415 - this test's alone

    config = plain(tools=(RATE, DELETE), approval_required={"delete_row"})
    config = attrs.evolve(config, budget=Budget(max_tool_calls=1))
    state, effects = run(config, ROUND)
    assert effects == (RunTool(call=RATE_CALL),)
    state, _ = fold(state, [ToolFinished(call_id="r1", output="0.92")])
    state, per_step = fold(state, [Approved(call_id="d1")])
    assert [type(effect) for effect in per_step[-1]] == [CallModel]
    refused = turn_of(state).rounds[-1].results[1]
    assert refused.content == "not run: over budget: tool_calls limit 1 per turn, used 2"

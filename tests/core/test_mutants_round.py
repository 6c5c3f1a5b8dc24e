"""Rules of the one reducer's rounds, approvals, budgets and attempts (core/_loop_round.py,
core/_approval.py, core/_round.py, core/_finish.py, core/_next.py, core/_output.py) that
mutation testing (`make mutate`) found unpinned once a structured output became a turn of
`step`.

Each test states one rule; together they kill the mutants named in its docstring.
"""

from __future__ import annotations

from typing import Any

import pytest
from loop import ADD, WEATHER, config, done, fold, notices, of_type, run, text
from loop import call as tool_call

from toolreel.core import (
    Approved,
    AwaitApproval,
    CallModel,
    Cancelled,
    ChatMessage,
    Finish,
    HookDecided,
    ModelCallFailed,
    Phase,
    PlainOutput,
    PromptSubmitted,
    Reflect,
    ReflectiveOutput,
    ResultReason,
    RunTool,
    StepError,
    TextOutput,
    TimerFired,
    ToolCall,
    ToolFinished,
    ToolResult,
    ToolRound,
    ToolSpec,
    ValidationFinished,
    awaiting_approval,
    awaiting_results,
    initial_state,
    step,
)
from toolreel.core._output import feedback, tool_name
from toolreel.core.budget import Budget, BudgetPolicy, BudgetScope, OverBudget, Price
from toolreel.core.hooks import Allowed, Ask, HookPoint, Replaced
from toolreel.core.notices import (
    ApprovalRequested,
    ResultsRequested,
    RetryScheduled,
    ToolResultReady,
)
from toolreel.core.outcomes import Capped, Completed
from toolreel.core.policies import (
    AnnouncePolicy,
    EmptyPromptPolicy,
    MaxIterationsPolicy,
    RetryPolicy,
)

ADD_ARGS = '{"a": 1, "b": 2}'
CITY = '{"city": "Oslo"}'
RECORD = ToolSpec(name="record_invoice", description="Record the invoice")
INVOICE = '{"number": "INV-1", "total": 100}'


def asked(*events: Any, **overrides: Any) -> tuple[Any, list[Any]]:
    """Prompt "go" then `events` under `config(**overrides)`; the state and every effect."""
    return run(config(**overrides), [PromptSubmitted(text="go"), *events])


def reasons(effects: list[Any]) -> list[tuple[str, ResultReason | None]]:
    """Each result the run made ready: (call id, reason)."""
    return [(n.result.call_id, n.result.reason) for n in notices(effects, ToolResultReady)]


def misuse(state: Any, event: Any) -> str:
    """The message of the StepError `event` raises in `state` (which names the event)."""
    with pytest.raises(StepError) as caught:
        step(state, event)
    assert caught.value.event == event
    return str(caught.value)


def pre(call_id: str, decision: Any) -> HookDecided:
    """A PreToolUse decision about `call_id`."""
    return HookDecided(hook_id=f"pre:{call_id}", decision=decision)


def structured(output: Any, **overrides: Any) -> Any:
    """A structured turn with the `add` tool."""
    overrides.setdefault("tools", (ADD,))
    return config(output=output, **overrides)


# Every result the core makes says why (ToolResult.reason) ------------------------------


def test_a_call_past_the_cap_is_refused_not_run() -> None:
    """Kills _refusal mutant 26 (the reason of a call past max_iterations dropped)."""
    _, effects = asked(
        *tool_call(0, "c1", "add", ADD_ARGS),
        done("tool_calls"),
        ToolFinished(call_id="c1", output="3"),
        *tool_call(0, "c2", "add", ADD_ARGS),
        done("tool_calls"),
        max_iterations=1,
        on_max_iterations=MaxIterationsPolicy.ONE_MORE_CALL,
    )
    assert reasons(effects) == [("c1", None), ("c2", ResultReason.NOT_RUN)]


def test_calls_of_a_response_past_a_token_limit_are_refused_over_budget() -> None:
    """Kills _refusal mutant 35 (the reason of a call made over the budget dropped)."""
    _, effects = asked(
        *tool_call(0, "c1", "add", ADD_ARGS),
        done("tool_calls", input_tokens=10, output_tokens=5),
        budget=Budget(max_total_tokens=12),
    )
    assert reasons(effects) == [("c1", ResultReason.OVER_BUDGET)]


def test_a_call_past_the_tool_call_limit_is_refused_over_budget() -> None:
    """Kills _admitted mutant 48 (the reason of a call the budget refused at dispatch dropped)."""
    _, effects = asked(
        *tool_call(0, "c1", "add", ADD_ARGS),
        *tool_call(1, "c2", "add", ADD_ARGS),
        done("tool_calls"),
        budget=Budget(max_tool_calls=1),
    )
    assert reasons(effects) == [("c2", ResultReason.OVER_BUDGET)]


def test_a_hook_replacing_arguments_with_no_object_answers_invalid_arguments() -> None:
    """Kills decide_call mutant 43 (the reason of a rewritten call with bad arguments dropped)."""
    _, effects = asked(
        *tool_call(0, "c1", "add", ADD_ARGS),
        done("tool_calls"),
        pre("c1", Replaced(value="[")),
        hooks={HookPoint.PRE_TOOL_USE},
    )
    assert reasons(effects) == [("c1", ResultReason.INVALID_ARGUMENTS)]


# Dispatch of a structured output's calls (rule 17) -------------------------------------


def test_manual_mode_reflects_the_output_call_and_requests_only_the_tools() -> None:
    """Kills _run_or_request mutants 42, 43, 48-50 (reflected calls requested, or not
    reflected, in manual mode)."""
    state, effects = asked(
        *tool_call(0, "o1", "record_invoice", INVOICE),
        *tool_call(1, "c1", "add", ADD_ARGS),
        done("tool_calls"),
        tools=(ADD,),
        output=ReflectiveOutput(tool=RECORD),
        auto_execute=False,
    )
    output = ToolCall(id="o1", name="record_invoice", arguments=INVOICE)
    added = ToolCall(id="c1", name="add", arguments=ADD_ARGS)
    assert [e for e in effects if isinstance(e, Reflect)] == [Reflect(call=output)]
    assert notices(effects, ResultsRequested) == [ResultsRequested(calls=(added,))]
    assert (state.phase, awaiting_results(state)) == (Phase.AWAITING_RESULTS, (added,))


def test_manual_mode_with_only_the_output_call_runs_its_reflection() -> None:
    """Kills _run_or_request mutant 53 (the phase of a round with only reflected calls)."""
    state, effects = asked(
        *tool_call(0, "o1", "record_invoice", INVOICE),
        done("tool_calls"),
        tools=(ADD,),
        output=ReflectiveOutput(tool=RECORD),
        auto_execute=False,
    )
    assert of_type(effects, Reflect) == [
        Reflect(call=ToolCall(id="o1", name="record_invoice", arguments=INVOICE))
    ]
    assert not notices(effects, ResultsRequested)
    assert (state.phase, awaiting_results(state)) == (Phase.RUNNING_TOOLS, ())


def test_the_budget_counts_no_reflected_call_and_a_refusal_does_not_end_the_attempt() -> None:
    """Kills _admitted mutants 5, 9, 10 (a reflective output's call counted as a tool call)."""
    state, effects = asked(
        *tool_call(0, "o1", "record_invoice", INVOICE),
        *tool_call(1, "c1", "add", ADD_ARGS),
        *tool_call(2, "c2", "add", ADD_ARGS),
        done("tool_calls"),
        tools=(ADD,),
        output=ReflectiveOutput(tool=RECORD),
        budget=Budget(max_tool_calls=1),
    )
    assert [type(e).__name__ for e in effects if isinstance(e, Reflect | RunTool)] == [
        "Reflect",
        "RunTool",
    ]
    assert reasons(effects) == [("c2", ResultReason.OVER_BUDGET)]
    assert state.turn is not None
    assert state.turn.over_budget is None
    assert state.spent.tool_calls == (("add", 1),)


def test_a_call_the_budget_refused_is_recorded_as_the_model_made_it() -> None:
    """Kills _admitted mutant 71 (a refused call kept the arguments a hook gave it to run)."""
    _, effects = asked(
        *tool_call(0, "c1", "add", ADD_ARGS),
        done("tool_calls"),
        pre("c1", Replaced(value='{"a": 5, "b": 5}')),
        hooks={HookPoint.PRE_TOOL_USE},
        announce=AnnouncePolicy.AFTER_HOOKS,
        budget=Budget(max_tool_calls=0),
    )
    (finish,) = of_type(effects, Finish)
    assert finish.rounds[0].tool_calls == (ToolCall(id="c1", name="add", arguments=ADD_ARGS),)


# Approval (rule 15) --------------------------------------------------------------------


def test_held_calls_come_out_in_call_order_whatever_order_the_hooks_answered() -> None:
    """Kills hold mutant 3 (calls a hook asked about held in the order the hooks answered)."""
    state, effects = asked(
        *tool_call(0, "c1", "add", ADD_ARGS),
        *tool_call(1, "c2", "weather_lookup", CITY),
        done("tool_calls"),
        pre("c2", Ask(reason="second")),
        pre("c1", Ask(reason="first")),
        hooks={HookPoint.PRE_TOOL_USE},
    )
    assert [request.call.id for request in awaiting_approval(state)] == ["c1", "c2"]
    assert of_type(effects, AwaitApproval)[0].requests == awaiting_approval(state)


def test_a_call_a_hook_asked_about_is_held_with_one_whose_tool_requires_approval() -> None:
    """Kills hold mutants 14 and 15 (the call a hook asked about not held)."""
    state, _ = asked(
        *tool_call(0, "c1", "weather_lookup", CITY),
        *tool_call(1, "c2", "add", ADD_ARGS),
        done("tool_calls"),
        pre("c1", Ask(reason="asked")),
        pre("c2", Allowed()),
        hooks={HookPoint.PRE_TOOL_USE},
        approval_required={"add"},
    )
    assert awaiting_approval(state) == (
        ApprovalRequested(
            call=ToolCall(id="c1", name="weather_lookup", arguments=CITY), reason="asked"
        ),
        ApprovalRequested(call=ToolCall(id="c2", name="add", arguments=ADD_ARGS)),
    )


def test_no_call_awaits_approval_while_other_hooks_are_still_to_answer() -> None:
    """Kills awaiting_approval mutants (phase or pending unchecked), _on_decision mutant 5 and
    decision_refused mutant 2 (a decision taken before the round is dispatched)."""
    state, _ = asked(
        *tool_call(0, "c1", "add", ADD_ARGS),
        *tool_call(1, "c2", "weather_lookup", CITY),
        done("tool_calls"),
        pre("c1", Ask(reason="asked")),
        hooks={HookPoint.PRE_TOOL_USE},
    )
    assert state.phase is Phase.TOOL_HOOKS
    assert awaiting_approval(state) == ()
    assert misuse(state, Approved(call_id="c1")).endswith(": no call awaits approval")
    assert awaiting_approval(initial_state(config())) == ()


def test_a_release_leaves_nothing_approved_behind() -> None:
    """Kills _release mutants 23 and 26 (the approved calls kept once they were released)."""
    state, _ = asked(
        *tool_call(0, "c1", "add", ADD_ARGS),
        *tool_call(1, "c2", "weather_lookup", CITY),
        done("tool_calls"),
        Approved(call_id="c1"),
        approval_required={"add"},
        auto_execute=False,
    )
    assert state.turn is not None and state.turn.pending is not None
    assert state.turn.pending.approved == ()
    assert [call.id for call in awaiting_results(state)] == ["c1", "c2"]


# Manual mode: what the caller owes -----------------------------------------------------


def test_results_are_owed_only_in_manual_mode_while_the_round_awaits_them() -> None:
    """Kills awaiting_results mutants 1-7 (phase, turn or round unchecked; nothing owed)."""
    calls = [*tool_call(0, "c1", "add", ADD_ARGS), done("tool_calls")]
    manual, _ = asked(*calls, auto_execute=False)
    auto, _ = asked(*calls)
    assert awaiting_results(manual) == (ToolCall(id="c1", name="add", arguments=ADD_ARGS),)
    assert auto.phase is Phase.RUNNING_TOOLS
    assert awaiting_results(auto) == ()
    assert awaiting_results(initial_state(config())) == ()


# A call already issued that a bfd8293 agent journal holds (hold_running) ---------------


def running(*calls: tuple[str, str, str]) -> Any:
    """A plain-output turn whose response's calls are all running."""
    cfg = structured(PlainOutput(tool=RECORD), tools=(ADD, WEATHER))
    events: list[Any] = []
    for index, (call_id, name, arguments) in enumerate(calls):
        events += tool_call(index, call_id, name, arguments)
    state, _ = run(cfg, [PromptSubmitted(text="go"), *events, done("tool_calls")])
    assert state.phase is Phase.RUNNING_TOOLS
    return state


def test_a_running_call_takes_no_other_hook_decision() -> None:
    """Kills hold_running mutants 12, 15, 17 (the misuse message or its event)."""
    state = running(("c1", "add", ADD_ARGS))
    for stray in (pre("c1", Allowed()), HookDecided(hook_id="prompt:1", decision=Ask())):
        assert misuse(state, stray) == (
            f"can't handle event {stray!r} when phase=RUNNING_TOOLS: no hook is awaited"
        )


def test_an_ask_about_a_call_not_running_names_the_calls_that_run() -> None:
    """Kills hold_running mutants 27, 30, 33 (the misuse message or its event)."""
    state = running(("c1", "add", ADD_ARGS))
    stray = pre("c9", Ask())
    assert misuse(state, stray) == (
        f"can't handle event {stray!r} when phase=RUNNING_TOOLS: "
        "no call 'c9' awaits a result; awaiting ['c1']"
    )


def test_an_ask_holds_the_running_call_with_the_arguments_it_gave_if_they_are_an_object() -> None:
    """Kills hold_running mutant 38 (arguments taken from an Ask without valid ones)."""
    made = ToolCall(id="c1", name="add", arguments=ADD_ARGS)
    for value, held in (
        (None, made),
        ("[1]", made),
        ('{"a": 2, "b": 2}', ToolCall(id="c1", name="add", arguments='{"a": 2, "b": 2}')),
    ):
        state, effects = step(running(("c1", "add", ADD_ARGS)), pre("c1", Ask(value=value)))
        assert effects == (AwaitApproval(requests=(ApprovalRequested(call=held),)),)


def test_running_calls_asked_about_are_held_in_call_order_once_none_runs() -> None:
    """Kills hold_running mutants 56, 58, 59 (order) and 79-82 (the state while one runs)."""
    state = running(("c1", "add", ADD_ARGS), ("c2", "weather_lookup", CITY))
    state, effects = step(state, pre("c2", Ask(reason="second")))
    assert effects == ()
    assert state.phase is Phase.RUNNING_TOOLS
    assert [request.call.id for request in awaiting_approval(state)] == ["c2"]
    assert awaiting_results(state) == ()
    state, effects = step(state, pre("c1", Ask(reason="first")))
    (paused,) = effects
    assert isinstance(paused, AwaitApproval)
    assert [request.reason for request in paused.requests] == ["first", "second"]


# Retries: each model call's count starts afresh (rule 8) -------------------------------


def test_a_failure_after_a_retried_call_that_answered_is_retry_one_again() -> None:
    """Kills _on_responded mutants 13, 16, 18 (the retry count kept past a response)."""
    _, effects = asked(
        ModelCallFailed(message="busy", retryable=True),
        TimerFired(token="retry:1:1:1"),
        *tool_call(0, "c1", "add", ADD_ARGS),
        done("tool_calls"),
        ToolFinished(call_id="c1", output="3"),
        ModelCallFailed(message="busy", retryable=True),
        retry=RetryPolicy(max_retries=3),
    )
    assert [n.retry for n in notices(effects, RetryScheduled)] == [1, 1]


def test_a_retried_call_streams_afresh() -> None:
    """Kills _on_failed mutant 7 (the failed call's partial answer kept into the retry)."""
    state, _ = asked(
        *text("par"),
        ModelCallFailed(message="busy", retryable=True),
        TimerFired(token="retry:1:1:1"),
        *text("whole"),
        done(),
        retry=RetryPolicy(max_retries=3),
    )
    assert state.history[-1] == ChatMessage(role="assistant", content="whole")


# Budgets (rule 16) ---------------------------------------------------------------------


def test_a_token_limit_reached_exactly_allows_the_final_answer_and_ends_over_budget() -> None:
    """Kills call_model mutant 11, go_on mutants 21 and 24, budget_next mutants 14 and 16
    (the final-answer call not made, or its turn ending Capped), charge mutant 12 (the limit
    met first replaced by the one the final answer passed)."""
    _, effects = asked(
        *tool_call(0, "c1", "add", ADD_ARGS),
        done("tool_calls", input_tokens=10, output_tokens=5),
        ToolFinished(call_id="c1", output="3"),
        *text("It is 3."),
        done(input_tokens=20, output_tokens=5),
        budget=Budget(max_total_tokens=15, on_exceeded=BudgetPolicy.FINAL_ANSWER),
    )
    calls = of_type(effects, CallModel)
    assert len(calls) == 2
    assert calls[1].request.tool_choice == "none"
    (finish,) = of_type(effects, Finish)
    assert finish.outcome == OverBudget(
        limit_name="total_tokens",
        limit=15,
        used=15,
        scope=BudgetScope.TURN,
        text="It is 3.",
        model_finish_reason="stop",
    )


def test_the_session_is_charged_the_price_of_each_response() -> None:
    """Kills spent_on mutant 15 (the session's spending counted without the price)."""
    price = Price(input_per_million=1_000_000, output_per_million=2_000_000)
    state, _ = asked(
        *text("hi"),
        done(input_tokens=10, output_tokens=5),
        model="m",
        budget=Budget(max_cost=1000, prices={"m": price}),
    )
    assert state.spent.cost == pytest.approx(20.0)


def test_a_new_attempt_the_budget_forbids_ends_without_validating() -> None:
    """Kills new_attempt mutant 17 (the turn still validating when the budget ends it)."""
    cfg = structured(PlainOutput(tool=RECORD), budget=Budget(max_model_calls=1))
    state, _ = run(
        cfg,
        [
            PromptSubmitted(text="go"),
            *tool_call(0, "o1", "record_invoice", INVOICE),
            done("tool_calls"),
        ],
    )
    _, effects = step(state, ValidationFinished(attempt=1, problems=("total is wrong",)))
    (finish,) = of_type(list(effects), Finish)
    assert finish.attempts is not None
    assert (finish.attempts.number, finish.attempts.validating) == (2, False)
    assert isinstance(finish.outcome, OverBudget)


# What a turn ends with -----------------------------------------------------------------


def test_an_answer_keeps_the_models_finish_reason() -> None:
    """Kills _answered mutant 37 and _on_responded mutant 50 (the finish reason lost)."""
    _, effects = asked(*text("cut"), done("length"))
    (finish,) = of_type(effects, Finish)
    assert finish.outcome == Completed(text="cut", model_finish_reason="length")


def test_stop_at_the_cap_ends_capped_with_no_text() -> None:
    """Kills _capped mutant 27 (the outcome's text None)."""
    _, effects = asked(
        *tool_call(0, "c1", "add", ADD_ARGS),
        done("tool_calls"),
        ToolFinished(call_id="c1", output="3"),
        max_iterations=1,
        on_max_iterations=MaxIterationsPolicy.STOP,
    )
    (finish,) = of_type(effects, Finish)
    assert finish.outcome == Capped(text="", policy=MaxIterationsPolicy.STOP)


def test_a_cancelled_turn_is_forgotten_by_the_next_prompt() -> None:
    """Kills _on_prompt mutant 14 (after_cancel left None, not False)."""
    state, _ = asked(Cancelled(), PromptSubmitted(text="again"))
    assert state.after_cancel is False


# empty_prompt=CONTINUE -----------------------------------------------------------------


def continued(history: tuple[ChatMessage, ...], prompt: str) -> tuple[Any, list[Any]]:
    """A prompt under CONTINUE after `history`; the state and every effect."""
    cfg = config(empty_prompt=EmptyPromptPolicy.CONTINUE)
    state = initial_state(cfg, history=history)
    state, per_step = fold(state, [PromptSubmitted(text=prompt)])
    return state, [effect for effects in per_step for effect in effects]


#: An assistant message of rounds with no answer (a turn stopped at the cap).
STOPPED = ChatMessage(
    role="assistant",
    content="",
    tool_rounds=(
        ToolRound(
            assistant_text="",
            tool_calls=(ToolCall(id="c1", name="add", arguments=ADD_ARGS),),
            results=(ToolResult(call_id="c1", name="add", content="3"),),
        ),
    ),
)


EARLIER = (
    ChatMessage(role="user", content="one"),
    ChatMessage(role="assistant", content="1"),
    ChatMessage(role="user", content="two"),
)


def test_an_empty_prompt_continues_the_last_message_of_a_long_history() -> None:
    """Kills _continued mutant 6 and _on_prompt mutant 40 (the wrong message continued, or
    the history before it cut)."""
    state, effects = continued((*EARLIER, STOPPED), "")
    (call,) = of_type(effects, CallModel)
    assert call.request.messages[:3] == EARLIER
    assert state.history == EARLIER
    assert state.turn is not None and state.turn.rounds == STOPPED.tool_rounds


def test_a_prompt_with_text_never_continues() -> None:
    """Kills _on_prompt mutant 24 (a prompt continued whatever its text)."""
    state, _ = continued((*EARLIER, STOPPED), "three")
    assert state.history[-1] == ChatMessage(role="user", content="three")


def test_an_empty_prompt_after_an_answer_with_rounds_is_a_user_message() -> None:
    """Kills _continued mutant 10 (an answered message continued)."""
    answered = ChatMessage(role="assistant", content="3", tool_rounds=STOPPED.tool_rounds)
    state, _ = continued((*EARLIER, answered), "")
    assert state.history[-1] == ChatMessage(role="user", content="")


# Wording (core/_output.py) -------------------------------------------------------------


def test_a_text_answer_has_no_output_tool() -> None:
    """Kills tool_name mutants 2 and 3."""
    assert tool_name(TextOutput()) == ""
    assert tool_name(PlainOutput(tool=RECORD)) == "record_invoice"


def test_the_feedback_lists_one_problem_a_line() -> None:
    """Kills feedback mutant 3 (the problems joined otherwise)."""
    told = feedback(PlainOutput(tool=RECORD, max_attempts=2), 1, ("total is wrong", "no date"))
    assert told == ChatMessage(
        role="user",
        content=(
            "Your output failed validation (attempt 1 of 2):\n"
            "- total is wrong\n- no date\n"
            "Call record_invoice again with a corrected output."
        ),
    )

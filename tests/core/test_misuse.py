"""`misuse(phase, event, waiting)`: the caller's misuse of a waiting turn, in `step`'s words.

A shell refuses a result or a decision for a call that awaits none before it
feeds the event; its error must read as `step`'s own `StepError` for that event.
"""

from __future__ import annotations

import pytest
from loop import call, config, done, fold

from toolreel.core import (
    Approved,
    Denied,
    Phase,
    PromptSubmitted,
    StepError,
    ToolFinished,
    awaiting_approval,
    awaiting_results,
    initial_state,
    misuse,
    step,
)

ARGS = '{"a": 1, "b": 2}'


def asked(cfg, *ids: str):
    """The state once the model has called `add` as each of `ids`."""
    events: list = [PromptSubmitted(text="Go")]
    for index, call_id in enumerate(ids):
        events += call(index, call_id, "add", ARGS)
    state, _ = fold(initial_state(cfg), [*events, done("tool_calls")])
    return state


def refused_by_step(state, event) -> str:
    """What `step` raises for `event`."""
    with pytest.raises(StepError) as caught:
        step(state, event)
    return str(caught.value)


@pytest.mark.parametrize("call_id", ["c9", "c1"])
def test_a_result_no_call_awaits_reads_as_steps_own_refusal(call_id: str) -> None:
    state = asked(config(auto_execute=False), "c1", "c2")
    state, _ = step(state, ToolFinished(call_id="c1", output="3"))  # c1 answered: c2 awaits
    stray = ToolFinished(call_id=call_id, output="3")
    awaited = [found.id for found in awaiting_results(state)]
    error = misuse(state.phase, stray, awaited)
    assert isinstance(error, StepError)
    assert (
        str(error)
        == refused_by_step(state, stray)
        == (
            f"can't handle event {stray!r} when phase=AWAITING_RESULTS: "
            f"no call {call_id!r} awaits a result; awaiting ['c2']"
        )
    )
    assert (error.phase, error.event) == (Phase.AWAITING_RESULTS, stray)


@pytest.mark.parametrize(
    "decision", [Approved(call_id="c9"), Denied(call_id="c9", reason="no"), Approved(call_id="c1")]
)
def test_a_decision_for_a_call_not_held_reads_as_steps_own_refusal(decision) -> None:
    state = asked(config(approval_required={"add"}), "c1", "c2")
    state, _ = step(state, Approved(call_id="c1"))  # c1 decided: c2 is held
    held = [request.call.id for request in awaiting_approval(state)]
    error = misuse(state.phase, decision, held)
    assert str(error) == refused_by_step(state, decision)
    assert str(error).endswith(
        f"call {decision.call_id!r} awaits no approval (unknown, or already decided); "
        "awaiting approval: ['c2']"
    )


def test_a_decision_while_nothing_is_held_says_so() -> None:
    state = initial_state(config())
    decision = Denied(call_id="c1")
    error = misuse(state.phase, decision, [])
    assert str(error) == refused_by_step(state, decision)
    assert str(error).endswith(": no call awaits approval")


def test_a_result_or_decision_for_a_waiting_call_is_no_misuse() -> None:
    assert misuse(Phase.AWAITING_RESULTS, ToolFinished(call_id="c1", output=""), ["c1"]) is None
    assert misuse(Phase.AWAITING_APPROVAL, Approved(call_id="c2"), ("c1", "c2")) is None

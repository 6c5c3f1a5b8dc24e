"""Rule 15 of core/_step.py: calls held for a human's approval, decided one by one.

Which calls are held is decided when a round is dispatched (`hold`, core/_round.py,
from core/_loop_round.py); here: a decision on one held call, the release of the
approved ones once the last is decided, what awaits a decision now, and the hold
that only journals of bfd8293's agent runs make (`hold_running`).
"""

from __future__ import annotations

import attrs

from ._arguments import arguments_error
from ._effects import Effect, Emit
from ._events import Approved, Ask, Denied, HookDecided
from ._finish import Step, go_on
from ._loop_round import PRE_HOOK, close_round, error, run_or_request, settle
from ._next import Pause
from ._notices import ApprovalRequested, ToolResultReady
from ._records import ResultReason
from ._round import (
    DENIED,
    awaited_position,
    awaiting,
    is_complete,
    not_awaited,
    position_of,
    replace,
)
from ._state import Phase, State, StepError, Turn

#: The phases in which a held call may be decided: its round runs, or is paused (rule 15).
DECIDING = frozenset({Phase.RUNNING_TOOLS, Phase.AWAITING_RESULTS, Phase.AWAITING_APPROVAL})


def decide_approval(state: State, turn: Turn, event: Approved | Denied) -> Step:
    """Rule 15: a human's decision on one held call; once all are in, the approved ones run.

    A denied call's result is the reason (what the model reads). Decided while
    paused with calls still held, the turn stays paused and says so again.
    """
    pending = turn.pending
    assert pending is not None
    request = next(r for r in pending.approvals if r.call.id == event.call_id)
    rest = tuple(r for r in pending.approvals if r is not request)
    approved, results = pending.approved, pending.results
    effects: tuple[Effect, ...] = ()
    if isinstance(event, Approved):
        approved = (*approved, request.call)
    else:
        denial = event.reason.strip() or DENIED
        result = error(state, request.call, denial, ResultReason.DENIED)
        results = replace(results, position_of(pending, request.call.id), result)
        effects = (Emit(notice=ToolResultReady(result=result)),)
    pending = attrs.evolve(pending, approvals=rest, approved=approved, results=results)
    turn = attrs.evolve(turn, pending=pending)
    if not rest:
        state, more = _release(state, turn)
    elif state.phase is Phase.AWAITING_APPROVAL:
        state, more = go_on(state, turn, Pause())  # still paused: say so again
    else:  # other calls of the round still run
        return attrs.evolve(state, turn=turn), effects
    return state, (*effects, *more)


def _release(state: State, turn: Turn) -> Step:
    """Every held call is decided: the approved ones run; a round with every result closes."""
    pending = turn.pending
    assert pending is not None
    runs = pending.runs
    for call in pending.approved:
        runs = replace(runs, position_of(pending, call.id), call)
    approved = pending.approved
    turn = attrs.evolve(turn, pending=attrs.evolve(pending, runs=runs, approved=()))
    assert turn.pending is not None
    if is_complete(turn.pending):
        return close_round(state, turn)
    if not approved:  # other calls still run (a paused round has none): they go on as ever
        return attrs.evolve(state, turn=turn), ()
    return run_or_request(state, turn, approved)


def awaiting_approval(state: State) -> tuple[ApprovalRequested, ...]:
    """The calls held for a human's `Approved` or `Denied` now, in call order (rule 15)."""
    pending = None if state.turn is None else state.turn.pending
    if pending is None or state.phase not in DECIDING:
        return ()
    return pending.approvals


def hold_running(state: State, turn: Turn, event: HookDecided) -> Step:
    """A PreToolUse `Ask` about a call already issued to run: hold it (rule 15).

    Only journals of bfd8293's agent runs hold this: their shell asked the hooks
    when it ran a helper call, and fed the `Ask` instead of the call's result.
    """
    pending = turn.pending
    assert pending is not None
    call_id = event.hook_id.removeprefix(PRE_HOOK)
    decision = event.decision
    if not isinstance(decision, Ask) or not event.hook_id.startswith(PRE_HOOK):
        raise StepError(state.phase, event, "no hook is awaited")
    position = awaited_position(pending, call_id)
    if position is None:
        raise StepError(state.phase, event, not_awaited(pending, call_id))
    run = pending.runs[position]
    assert run is not None
    if decision.value is not None and arguments_error(decision.value) is None:
        run = attrs.evolve(run, arguments=decision.value)
    order = {call.id: i for i, call in enumerate(pending.calls)}
    request = ApprovalRequested(call=run, reason=decision.reason)
    approvals = sorted((*pending.approvals, request), key=lambda held: order[held.call.id])
    pending = attrs.evolve(
        pending, runs=replace(pending.runs, position, None), approvals=tuple(approvals)
    )
    turn = attrs.evolve(turn, pending=pending)
    if awaiting(pending):
        return attrs.evolve(state, turn=turn), ()
    return settle(state, turn)

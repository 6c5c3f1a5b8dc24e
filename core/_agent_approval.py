"""Human approval in an agent run (rule 15 of core/_agent.py): hold, pause, decide, release.

Mirrors the loop's rule 15 (core/_loop_round.py) on the agent's round: a helper
call is held when its tool is in `AgentConfig.approval_required`, or when the
shell's PreToolUse hook answered `Ask` about it (`HookDecided`, fed instead of
its `ToolFinished`). Held calls wait in `PendingRound.approvals`; once nothing
else runs the run pauses (`AwaitApproval`); `Approved` / `Denied` decide them.
"""

from __future__ import annotations

import attrs

from ._agent_state import AgentPhase, AgentState, AgentStepError
from ._arguments import arguments_error
from ._budget import spent_tools
from ._effects import AgentEffect, AwaitApproval, RunTool
from ._events import Approved, Ask, Denied, HookDecided
from ._notices import ApprovalRequested
from ._records import ToolCall
from ._round import (
    DENIED,
    PendingRound,
    awaited_position,
    awaiting,
    decision_refused,
    error_result,
    not_awaited,
    position_of,
    replace,
)
from ._round import hold as round_hold

#: The phases in which a held call may be decided: its round runs, or is paused.
DECIDING = frozenset({AgentPhase.RUNNING_TOOLS, AgentPhase.AWAITING_APPROVAL})

#: The prefix of the `hook_id` the shell gives a PreToolUse `Ask` about a helper call.
PRE_HOOK = "pre:"

AgentStep = tuple[AgentState, tuple[AgentEffect, ...]]


def hold(state: AgentState, pending: PendingRound) -> PendingRound:
    """Hold back each helper call whose tool requires approval (its run becomes None)."""
    config = state.config
    return round_hold(config.approval_required & config.helper_names, pending)


def pause(state: AgentState) -> AgentStep:
    """Nothing runs but held calls wait: pause the run until a human decides."""
    pending = state.pending
    assert pending is not None
    state = attrs.evolve(state, phase=AgentPhase.AWAITING_APPROVAL)
    return state, (AwaitApproval(requests=pending.approvals),)


def awaiting_approval(state: AgentState) -> tuple[ApprovalRequested, ...]:
    """The calls held for a human's `Approved` or `Denied` now, in call order."""
    if state.phase not in DECIDING or state.pending is None:
        return ()
    return state.pending.approvals


def on_hook_ask(state: AgentState, event: HookDecided) -> AgentStep:
    """The shell's PreToolUse hook asked a human about a running helper call: hold it."""
    pending = state.pending
    assert pending is not None
    decision = event.decision
    call_id = event.hook_id.removeprefix(PRE_HOOK)
    if not isinstance(decision, Ask) or not event.hook_id.startswith(PRE_HOOK):
        raise AgentStepError(state.phase, event, "an agent run's hooks only ask (pre:<call id>)")
    position = awaited_position(pending, call_id)
    run = pending.runs[position] if position >= 0 else None
    if run is None or run.name not in state.config.helper_names:
        raise AgentStepError(state.phase, event, not_awaited(pending, call_id))
    if decision.value is not None and arguments_error(decision.value) is None:
        run = attrs.evolve(run, arguments=decision.value)
    request = ApprovalRequested(call=run, reason=decision.reason)
    order = {call.id: i for i, call in enumerate(pending.calls)}
    approvals = sorted((*pending.approvals, request), key=lambda r: order[r.call.id])
    pending = attrs.evolve(
        pending, runs=replace(pending.runs, position, None), approvals=tuple(approvals)
    )
    state = attrs.evolve(state, pending=pending)
    if awaiting(pending):
        return state, ()
    return pause(state)


def check_decision(state: AgentState, event: Approved | Denied) -> None:
    """Refuse a decision for a call that is not held (unknown, already decided) or when none is."""
    if (refused := decision_refused(awaiting_approval(state), event.call_id)) is not None:
        raise AgentStepError(state.phase, event, refused)


def decide(state: AgentState, event: Approved | Denied) -> tuple[AgentState, bool]:
    """Apply one decision; the new state and whether the last held call was decided."""
    pending = state.pending
    assert pending is not None
    request = next(r for r in pending.approvals if r.call.id == event.call_id)
    rest = tuple(r for r in pending.approvals if r is not request)
    approved, results = pending.approved, pending.results
    if isinstance(event, Approved):
        approved = (*approved, request.call)
    else:
        result = error_result(request.call, event.reason.strip() or DENIED)
        results = replace(results, position_of(pending, request.call.id), result)
    pending = attrs.evolve(pending, approvals=rest, approved=approved, results=results)
    return attrs.evolve(state, pending=pending), not rest


def release(state: AgentState) -> tuple[AgentState, tuple[ToolCall, ...]]:
    """Every held call is decided: the approved ones not yet run are put to run.

    `approved` keeps every call approved in the round, so the shell knows not
    to ask the PreToolUse hooks about it again (`was_approved`).
    """
    pending = state.pending
    assert pending is not None
    now = tuple(
        call
        for call in pending.approved
        if pending.runs[(at := position_of(pending, call.id))] is None
        and pending.results[at] is None
    )
    runs = pending.runs
    for call in now:
        runs = replace(runs, position_of(pending, call.id), call)
    state = attrs.evolve(
        state,
        pending=attrs.evolve(pending, runs=runs),
        spent=spent_tools(state.spent, now),
        phase=AgentPhase.RUNNING_TOOLS if now else state.phase,
    )
    return state, now


def was_approved(state: AgentState, call: ToolCall) -> bool:
    """Whether a human approved `call` (the shell runs it without asking PreToolUse again)."""
    pending = state.pending
    return pending is not None and any(done.id == call.id for done in pending.approved)


def released(now: tuple[ToolCall, ...]) -> tuple[AgentEffect, ...]:
    """The executions of the approved calls."""
    return tuple(RunTool(call=call) for call in now)

"""A tool round: announce the calls, check them, ask hooks, run them, gather results.

Every call gets exactly one result, placed at the call's position whatever
order results arrive in, so the round enters the history in issue order.
"""

from __future__ import annotations

from typing import TypeVar

import attrs

from ._config import HookPoint
from ._effects import AskHook, Effect, Emit, RunTool
from ._events import Allowed, Blocked, Decision, Replaced
from ._finish import Step, advance
from ._notices import ResultsRequested, RoundFinished, ToolCallAnnounced, ToolResultReady
from ._records import Reasoning, ToolCall, ToolResult, ToolRound
from ._state import PendingRound, Phase, State, Turn
from ._stream import arguments_error

CANCELLED_RESULT = "Cancelled before the tool finished."


def _refusal(state: State, call: ToolCall) -> str | None:
    """Why `call` cannot run at all (invalid arguments, unknown tool), or None."""
    problem = arguments_error(call.arguments)
    if problem is not None:
        return problem
    if call.name not in state.config.tool_names:
        return f"Unknown tool: {call.name}"
    return None


def _error(call: ToolCall, content: str) -> ToolResult:
    """An error result for `call` that the model will read."""
    return ToolResult(call_id=call.id, name=call.name, content=content, is_error=True)


def open_round(
    state: State,
    turn: Turn,
    text: str,
    reasoning: tuple[Reasoning, ...],
    calls: tuple[ToolCall, ...],
) -> Step:
    """Announce every call, answer those that cannot run, then ask hooks or dispatch."""
    effects: list[Effect] = [
        Emit(notice=ToolCallAnnounced(call=call, iteration=turn.iteration)) for call in calls
    ]
    runs: list[ToolCall | None] = []
    results: list[ToolResult | None] = []
    for call in calls:
        refusal = _refusal(state, call)
        result = None if refusal is None else _error(call, refusal)
        runs.append(call if result is None else None)
        results.append(result)
        if result is not None:
            effects.append(Emit(notice=ToolResultReady(result=result)))
    pending = PendingRound(
        text=text, reasoning=reasoning, calls=calls, runs=tuple(runs), results=tuple(results)
    )
    if HookPoint.PRE_TOOL_USE in state.config.hooks:
        asks = [_pre_hook(call) for call in pending.runs if call is not None]
        if asks:
            waiting = frozenset(ask.hook_id for ask in asks)
            pending = attrs.evolve(pending, awaiting_hooks=waiting)
            turn = attrs.evolve(turn, pending=pending)
            return attrs.evolve(state, phase=Phase.TOOL_HOOKS, turn=turn), (*effects, *asks)
    state, more = _dispatch(state, attrs.evolve(turn, pending=pending))
    return state, (*effects, *more)


def _pre_hook(call: ToolCall) -> AskHook:
    """Ask PreToolUse about one call."""
    return AskHook(hook_id=f"pre:{call.id}", point=HookPoint.PRE_TOOL_USE, call=call)


def decide_call(state: State, turn: Turn, position: int, decision: Decision) -> Step:
    """Apply a PreToolUse decision to the call at `position`; dispatch once all are in."""
    pending = turn.pending
    assert pending is not None
    call = pending.calls[position]
    effects: tuple[Effect, ...] = ()
    run: ToolCall | None = pending.runs[position]
    result: ToolResult | None = None
    match decision:
        case Allowed():
            pass
        case Blocked(reason=reason):
            result = _error(call, f"Tool call blocked: {reason}")
        case Replaced(value=arguments):
            problem = arguments_error(arguments)
            if problem is None:
                run = attrs.evolve(call, arguments=arguments)
            else:
                result = _error(call, f"hook replaced the {problem}")
    if result is not None:
        run = None
        effects = (Emit(notice=ToolResultReady(result=result)),)
    pending = attrs.evolve(
        pending,
        runs=_set(pending.runs, position, run),
        results=_set(pending.results, position, result),
        awaiting_hooks=pending.awaiting_hooks - {f"pre:{call.id}"},
    )
    turn = attrs.evolve(turn, pending=pending)
    if pending.awaiting_hooks:
        return attrs.evolve(state, turn=turn), effects
    state, more = _dispatch(state, turn)
    return state, (*effects, *more)


def _dispatch(state: State, turn: Turn) -> Step:
    """Issue every runnable call at once (auto), or ask the caller for them (manual)."""
    pending = turn.pending
    assert pending is not None
    calls = tuple(run for run in pending.runs if run is not None)
    if not calls:
        return close_round(state, turn)
    if state.config.auto_execute:
        effects: tuple[Effect, ...] = tuple(RunTool(call=call) for call in calls)
        phase = Phase.RUNNING_TOOLS
    else:
        effects = (Emit(notice=ResultsRequested(calls=calls)),)
        phase = Phase.AWAITING_RESULTS
    return attrs.evolve(state, phase=phase, turn=turn), effects


def awaited_position(pending: PendingRound, call_id: str) -> int:
    """Position of the call still awaiting its result as `call_id`, or -1."""
    for position, call in enumerate(pending.calls):
        if call.id == call_id and pending.runs[position] and pending.results[position] is None:
            return position
    return -1


def add_result(state: State, turn: Turn, position: int, output: str, is_error: bool) -> Step:
    """Record the result of the call at `position`; close the round once all are in."""
    pending = turn.pending
    assert pending is not None
    call = pending.calls[position]
    result = ToolResult(call_id=call.id, name=call.name, content=output, is_error=is_error)
    effects: list[Effect] = [Emit(notice=ToolResultReady(result=result))]
    if HookPoint.POST_TOOL_USE in state.config.hooks:
        run = pending.runs[position]
        effects.append(
            AskHook(
                hook_id=f"post:{call.id}", point=HookPoint.POST_TOOL_USE, call=run, result=result
            )
        )
    pending = attrs.evolve(pending, results=_set(pending.results, position, result))
    turn = attrs.evolve(turn, pending=pending)
    if any(slot is None for slot in pending.results):
        return attrs.evolve(state, turn=turn), tuple(effects)
    state, more = close_round(state, turn)
    return state, (*effects, *more)


def close_round(state: State, turn: Turn) -> Step:
    """Store the completed round on the turn, tell the caller, and go on."""
    tool_round = completed_round(turn)
    turn = attrs.evolve(turn, rounds=(*turn.rounds, tool_round), pending=None)
    notice = Emit(notice=RoundFinished(round=tool_round, iteration=turn.iteration))
    state, effects = advance(state, turn)
    return state, (notice, *effects)


def completed_round(turn: Turn) -> ToolRound:
    """The pending round as a record (every result present)."""
    pending = turn.pending
    assert pending is not None
    results = tuple(result for result in pending.results if result is not None)
    return ToolRound(
        assistant_text=pending.text,
        tool_calls=pending.calls,
        results=results,
        reasoning=pending.reasoning,
    )


def cancel_round(turn: Turn) -> tuple[Turn, frozenset[str], tuple[Effect, ...]]:
    """Close the pending round on cancel: unanswered calls get a "cancelled" error result.

    Returns the turn with the round stored, the abandoned call ids (their late
    results are dropped) and the notices for the synthetic results.
    """
    pending = turn.pending
    assert pending is not None
    abandoned = frozenset(
        call.id
        for call, result in zip(pending.calls, pending.results, strict=True)
        if result is None
    )
    results = tuple(
        result or _error(call, CANCELLED_RESULT)
        for call, result in zip(pending.calls, pending.results, strict=True)
    )
    notices = tuple(
        Emit(notice=ToolResultReady(result=result))
        for result, old in zip(results, pending.results, strict=True)
        if old is None
    )
    turn = attrs.evolve(turn, pending=attrs.evolve(pending, results=results))
    turn = attrs.evolve(turn, rounds=(*turn.rounds, completed_round(turn)), pending=None)
    return turn, abandoned, notices


T = TypeVar("T")


def _set(slots: tuple[T, ...], position: int, value: T) -> tuple[T, ...]:
    """`slots` with one slot replaced."""
    return (*slots[:position], value, *slots[position + 1 :])

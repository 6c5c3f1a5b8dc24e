"""A round in flight: place results, see who awaits, complete, cancel.

Every call of a round gets exactly one result, placed at the call's position
whatever order results arrive in, so the round enters the history in issue
order. A call that will not run (refused, answered at once, blocked) has its
result from the start and no run; a call that runs awaits its result. What
decides those answers, and what happens once the round is complete, is the
round policy's (core/_loop_round.py) and core/_next.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import attrs

from ._content import ImagePart
from ._notices import ApprovalRequested
from ._record import Value
from ._records import Reasoning, ResultReason, ToolCall, ToolResult, ToolRound

#: The result a call gets when a cancel closes its round before it finished.
CANCELLED_RESULT = "Cancelled before the tool finished."
#: The result of a call that started before a crash and whose outcome was lost.
INTERRUPTED = "interrupted; outcome unknown"

T = TypeVar("T")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PendingRound(Value):
    """A round whose calls are being checked, run, or answered.

    `runs[i]` is the call to run for `calls[i]` (arguments as hooks left them),
    or None when it will not run; `results[i]` is its result once known.
    `awaiting_hooks` and `blocked` are the loop's: the PreToolUse decisions still
    to come, and the ids of the calls a hook blocked. So are `approvals`, the calls
    held for a human's decision (in call order; their `runs` are None until they are
    all decided), and `approved`, the ones approved so far.
    """

    text: str
    reasoning: tuple[Reasoning, ...]
    calls: tuple[ToolCall, ...]
    runs: tuple[ToolCall | None, ...]
    results: tuple[ToolResult | None, ...]
    awaiting_hooks: frozenset[str] = frozenset()
    blocked: frozenset[str] = frozenset()
    approvals: tuple[ApprovalRequested, ...] = ()
    approved: tuple[ToolCall, ...] = ()


def error_result(call: ToolCall, content: str, reason: ResultReason) -> ToolResult:
    """An error result the core made for `call`, saying why; the model reads `content`."""
    return ToolResult(
        call_id=call.id, name=call.name, content=content, is_error=True, reason=reason
    )


def open_round(
    text: str,
    reasoning: tuple[Reasoning, ...],
    calls: tuple[ToolCall, ...],
    answers: tuple[ToolResult | None, ...],
) -> PendingRound:
    """A round whose calls with an answer already have their result; the others will run."""
    runs = tuple(
        call if answer is None else None for call, answer in zip(calls, answers, strict=True)
    )
    return PendingRound(text=text, reasoning=reasoning, calls=calls, runs=runs, results=answers)


def replace(slots: tuple[T, ...], position: int, value: T) -> tuple[T, ...]:
    """`slots` with one slot replaced."""
    return (*slots[:position], value, *slots[position + 1 :])


def runnable(pending: PendingRound) -> tuple[ToolCall, ...]:
    """The calls that will run, as they will run (in call order)."""
    return tuple(run for run in pending.runs if run is not None)


def awaiting(pending: PendingRound) -> tuple[ToolCall, ...]:
    """The calls that run and still await their result, in call order."""
    return tuple(
        call
        for call, run, result in zip(pending.calls, pending.runs, pending.results, strict=True)
        if run is not None and result is None
    )


def awaited_position(pending: PendingRound, call_id: str) -> int | None:
    """Position of the call still awaiting its result as `call_id`, or None."""
    for position, call in enumerate(pending.calls):
        if call.id == call_id and pending.runs[position] and pending.results[position] is None:
            return position
    return None


def not_awaited(pending: PendingRound, call_id: str) -> str:
    """Why a result for `call_id` cannot be placed: the misuse message's detail."""
    return no_result_awaited(call_id, [call.id for call in awaiting(pending)])


def no_result_awaited(call_id: str, awaited: Sequence[str]) -> str:
    """The misuse detail of a result for `call_id` while the calls `awaited` await one."""
    return f"no call {call_id!r} awaits a result; awaiting {list(awaited)}"


def place(
    pending: PendingRound,
    position: int,
    output: str,
    is_error: bool,
    *,
    images: tuple[ImagePart, ...] = (),
    reason: ResultReason | None = None,
) -> tuple[PendingRound, ToolResult]:
    """Give the call at `position` its result; the round and the result placed."""
    call = pending.calls[position]
    result = ToolResult(
        call_id=call.id,
        name=call.name,
        content=output,
        is_error=is_error,
        images=images,
        reason=reason,
    )
    return attrs.evolve(pending, results=replace(pending.results, position, result)), result


def is_complete(pending: PendingRound) -> bool:
    """Whether every call has its result."""
    return None not in pending.results


def complete(pending: PendingRound) -> ToolRound:
    """The round as a record (every result present)."""
    return ToolRound(
        assistant_text=pending.text,
        tool_calls=pending.calls,
        results=tuple(result for result in pending.results if result is not None),
        reasoning=pending.reasoning,
    )


def cancel(pending: PendingRound) -> tuple[ToolRound, tuple[ToolResult, ...]]:
    """Close the round on cancel: each call without a result gets a "cancelled" error result.

    Returns the completed round and the results the cancel made, in call order.
    """
    made = tuple(
        error_result(call, CANCELLED_RESULT, ResultReason.CANCELLED)
        for call, result in zip(pending.calls, pending.results, strict=True)
        if result is None
    )
    supply = iter(made)
    results = tuple(result or next(supply) for result in pending.results)
    return complete(attrs.evolve(pending, results=results)), made


#: What the model reads for a call a human denied without giving a reason (rule 15).
DENIED = "The user denied this tool call."


def position_of(pending: PendingRound, call_id: str) -> int:
    """The position of the round's call `call_id` (one the round has)."""
    return next(i for i, call in enumerate(pending.calls) if call.id == call_id)


def hold(required: frozenset[str], pending: PendingRound) -> PendingRound:
    """Rule 15: hold back each call a hook asked about, or whose tool is in `required`."""
    if not required and not pending.approvals:
        return pending
    asked = {request.call.id: request for request in pending.approvals}
    runs: list[ToolCall | None] = []
    held: list[ApprovalRequested] = []
    for call, run in zip(pending.calls, pending.runs, strict=True):
        request = asked.get(call.id)
        if request is None and run is not None and run.name in required:
            request = ApprovalRequested(call=run)
        if request is not None:
            held.append(request)
        runs.append(None if request is not None else run)
    if not held:
        return pending
    return attrs.evolve(pending, runs=tuple(runs), approvals=tuple(held))


def decision_refused(held: tuple[ApprovalRequested, ...], call_id: str) -> str | None:
    """Why deciding `call_id` is misuse while `held` wait (none, or not it); None if it is not."""
    return no_decision_awaited(call_id, [request.call.id for request in held])


def no_decision_awaited(call_id: str, held: Sequence[str]) -> str | None:
    """Why deciding `call_id` is misuse while the calls `held` await a decision; None if not."""
    if not held:
        return "no call awaits approval"
    if call_id not in held:
        detail = f"call {call_id!r} awaits no approval (unknown, or already decided)"
        return f"{detail}; awaiting approval: {list(held)}"
    return None

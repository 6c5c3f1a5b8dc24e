"""Rebuilding a session from its journal: the state it reached and the effects still owed.

Every effect that expects an answering event (a model call, a tool run or
reflection, a PreToolUse or UserPromptSubmit hook, a validation, a timer) is
owed until the journal holds its answer. A turn paused for approval
(`AwaitApproval`) owes nothing: it waits for a human's `Approved` / `Denied`,
and resuming it runs nothing (nor a call an old journal held after it was
issued). The journal is never written in the middle of a model stream, so an
interrupted call left no partial response and is simply made again. A tool
call that started without an outcome runs again only if its tool is
idempotent; otherwise it is answered `ToolInterrupted` (`lost_outcome`), which
the core words. A chat session and an agent run are rebuilt by the one fold
(`fold_journal`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never

import attrs

from toolreel.adapters import Journal
from toolreel.adapters.replay import fold_journal
from toolreel.core import (
    Approved,
    AskHook,
    AwaitApproval,
    CallModel,
    Cancelled,
    Denied,
    Effect,
    Emit,
    Event,
    Finish,
    HistoryReplaced,
    HookDecided,
    ModelCallFailed,
    ModelResponded,
    Persist,
    PromptSubmitted,
    ReasoningDelta,
    Reflect,
    RunTool,
    StartTimer,
    State,
    TellHook,
    TextDelta,
    TimerFired,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolInterrupted,
    ToolTimedOut,
    Validate,
    ValidationFinished,
)
from toolreel.core.record import Value

from ._tools import Tool


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Restored(Value):
    """Where a journaled session stopped."""

    #: The state after its last step (under the config it was recorded with).
    state: State
    #: The last step's number, or None when the journal holds no step.
    seq: int | None
    #: The effects still owed an answer, in the order they were issued.
    owed: tuple[Effect, ...]


def rebuild(journal: Journal, session_id: str) -> Restored:
    """Fold a session's steps again (`fold_journal`), noting what was never answered."""
    fold = fold_journal(journal, session_id)
    owed: dict[str, Effect] = {}
    for entry, effects in fold:
        if (answered := _answers(entry.event)) is not None:
            owed.pop(answered, None)
        for effect in effects:
            if (key := _expects(effect)) is not None:
                owed[key] = effect
    running = _running(fold.state)
    still = tuple(  # a call held for approval after it was issued is owed no run yet
        effect
        for effect in owed.values()
        if not isinstance(effect, RunTool | Reflect) or effect.call.id in running
    )
    return Restored(state=fold.state, seq=fold.seq, owed=still)


def _running(state: State) -> frozenset[str]:
    """The ids of the round's calls that run and await their result."""
    turn = state.turn
    pending = turn.pending if turn is not None else None
    if pending is None:
        return frozenset()
    return frozenset(
        run.id
        for run, result in zip(pending.runs, pending.results, strict=True)
        if run is not None and result is None
    )


def _expects(effect: Effect) -> str | None:
    """The key of an effect that expects an answering event (None: nothing answers it)."""
    match effect:
        case CallModel():
            return "model"
        case RunTool(call=call) | Reflect(call=call):
            return f"tool:{call.id}"
        case AskHook(hook_id=hook_id):
            return f"hook:{hook_id}"
        case Validate(attempt=attempt):
            return f"validate:{attempt}"
        case StartTimer(token=token):
            return f"timer:{token}"
        case TellHook() | Persist() | Emit() | Finish() | AwaitApproval():
            return None  # nothing answers them (a pause waits for a human, owes nothing)
        case _:
            assert_never(effect)


def _answers(event: Event) -> str | None:
    """The key of the owed effect `event` answers (None: it answers nothing)."""
    match event:
        case ModelResponded() | ModelCallFailed():
            return "model"
        case ToolFinished(call_id=call_id) | ToolTimedOut(call_id=call_id):
            return f"tool:{call_id}"
        case ToolInterrupted(call_id=call_id):
            return f"tool:{call_id}"
        case HookDecided(hook_id=hook_id):
            return f"hook:{hook_id}"
        case ValidationFinished(attempt=attempt):
            return f"validate:{attempt}"
        case TimerFired(token=token):
            return f"timer:{token}"
        case (
            PromptSubmitted()
            | TextDelta()
            | ReasoningDelta()
            | ToolCallStarted()
            | ToolCallArgumentsDelta()
            | Cancelled()
            | HistoryReplaced()
            | Approved()
            | Denied()
        ):
            return None
        case _:
            assert_never(event)


def lost_outcome(call: ToolCall, tools: Mapping[str, Tool]) -> ToolInterrupted | None:
    """What an owed tool run that started before a crash becomes on resume.

    None (run it again) if its tool is idempotent; otherwise its outcome is
    unknown, and the model is told so (`ToolInterrupted`: the core words it).
    """
    tool = tools.get(call.name)
    if tool is not None and tool.idempotent:
        return None
    return ToolInterrupted(call_id=call.id)

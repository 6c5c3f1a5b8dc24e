"""Rebuilding a session from its journal: the state it reached and the effects still owed.

Every effect that expects an answering event (a model call, a tool run, a
PreToolUse or UserPromptSubmit hook, a timer) is owed until the journal holds
its answer. The journal is never written in the middle of a model stream, so
an interrupted call left no partial response and is simply made again. A tool
call that started without an outcome runs again only if its tool is
idempotent (`lost_outcome`); both runners resume by this rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never, cast

import attrs

from toolreel.adapters import Journal
from toolreel.adapters._fold import fold_loop
from toolreel.core import (
    AskHook,
    CallModel,
    Cancelled,
    Effect,
    Emit,
    Event,
    Finish,
    HookDecided,
    HookPoint,
    ModelCallFailed,
    ModelResponded,
    Persist,
    PromptSubmitted,
    ReasoningDelta,
    RunTool,
    StartTimer,
    State,
    TextDelta,
    TimerFired,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
)

from ._tools import Tool

#: The result of a started tool call whose outcome a crash lost (see `lost_outcome`).
INTERRUPTED = "interrupted; outcome unknown"


@attrs.frozen(kw_only=True)
class Restored:
    """Where a journaled session stopped."""

    #: The state after its last step (under the config it was recorded with).
    state: State
    #: The last step's number, or None when the journal holds no step.
    seq: int | None
    #: The effects still owed an answer, in the order they were issued.
    owed: tuple[Effect, ...]


def rebuild(journal: Journal, session_id: str) -> Restored:
    """Fold the session's steps again (`fold_journal`), noting what was never answered."""
    owed: dict[str, Effect] = {}
    fold = fold_loop(journal, session_id)
    for entry, effects in fold:
        _settle(owed, cast(Event, entry.event))
        for effect in effects:
            _owe(owed, effect)
    return Restored(state=fold.state, seq=fold.seq, owed=tuple(owed.values()))


def _owe(owed: dict[str, Effect], effect: Effect) -> None:
    """Note an effect that expects an answering event."""
    match effect:
        case CallModel():
            owed["model"] = effect
        case RunTool(call=call):
            owed[f"tool:{call.id}"] = effect
        case AskHook(point=point, hook_id=hook_id):
            if point is not HookPoint.POST_TOOL_USE:  # told, never answered
                owed[f"hook:{hook_id}"] = effect
        case StartTimer(token=token):
            owed[f"timer:{token}"] = effect
        case Persist() | Emit() | Finish():
            pass  # nothing answers them
        case _:
            assert_never(effect)


def _settle(owed: dict[str, Effect], event: Event) -> None:
    """Strike what `event` answers."""
    match event:
        case ModelResponded() | ModelCallFailed():
            owed.pop("model", None)
        case ToolFinished(call_id=call_id):
            owed.pop(f"tool:{call_id}", None)
        case HookDecided(hook_id=hook_id):
            owed.pop(f"hook:{hook_id}", None)
        case TimerFired(token=token):
            owed.pop(f"timer:{token}", None)
        case (
            PromptSubmitted()
            | TextDelta()
            | ReasoningDelta()
            | ToolCallStarted()
            | ToolCallArgumentsDelta()
            | Cancelled()
        ):
            pass  # answers nothing owed
        case _:
            assert_never(event)


def lost_outcome(call: ToolCall, tools: Mapping[str, Tool]) -> ToolFinished | None:
    """What an owed tool run that started before a crash becomes on resume.

    None (run it again) if its tool is idempotent; otherwise its outcome is
    unknown, and the model is told so with an error result.
    """
    tool = tools.get(call.name)
    if tool is not None and tool.idempotent:
        return None
    return ToolFinished(call_id=call.id, output=INTERRUPTED, is_error=True)

"""Rebuilding a session from its journal: the state it reached and the effects still owed.

Every effect that expects an answering event (a model call, a tool run, a
PreToolUse or UserPromptSubmit hook, a timer) is owed until the journal holds
its answer. A turn paused for approval (`AwaitApproval`) owes nothing: it waits
for a human's `Approved` / `Denied`, and resuming it runs nothing. The journal
is never written in the middle of a model stream, so an interrupted call left
no partial response and is simply made again. A tool
call that started without an outcome runs again only if its tool is
idempotent (`lost_outcome`); both runners resume by this rule. Both kinds of
session are rebuilt by the one fold (`fold_journal`): `rebuild` a tool loop's,
`unfinished_run` an agent run's (a validation is owed until `ValidationFinished`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, assert_never

import attrs

from toolreel.adapters import Journal
from toolreel.adapters._fold import AgentFold, JournalFold, fold_loop
from toolreel.adapters._journal import StepEvent
from toolreel.core import (
    AgentConfig,
    AgentEffect,
    AgentPhase,
    AgentState,
    Approved,
    AskHook,
    AwaitApproval,
    CallModel,
    Cancelled,
    Denied,
    Effect,
    Emit,
    Finish,
    FinishAgent,
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
    Validate,
    ValidationFinished,
)
from toolreel.core._round import awaited_position

from ._tools import Tool

F = TypeVar("F", Effect, AgentEffect)

#: The result of a started tool call whose outcome a crash lost (see `lost_outcome`).
INTERRUPTED = "interrupted; outcome unknown"


@attrs.frozen(kw_only=True)
class Restored:
    """Where a journaled tool-loop session stopped."""

    #: The state after its last step (under the config it was recorded with).
    state: State
    #: The last step's number, or None when the journal holds no step.
    seq: int | None
    #: The effects still owed an answer, in the order they were issued.
    owed: tuple[Effect, ...]


@attrs.frozen(kw_only=True)
class Unfinished:
    """Where a journaled agent run stopped: its state, last step and the effects still owed."""

    state: AgentState
    seq: int
    owed: tuple[AgentEffect, ...]


def rebuild(journal: Journal, session_id: str) -> Restored:
    """Fold a tool loop's steps again (`fold_journal`), noting what was never answered."""
    fold = fold_loop(journal, session_id)
    owed = _owed(fold)
    return Restored(state=fold.state, seq=fold.seq, owed=tuple(owed.values()))


def unfinished_run(journal: Journal, session_id: str, config: AgentConfig) -> Unfinished | None:
    """Fold an agent run's steps again; None if the run finished (nothing to resume)."""
    fold = AgentFold(journal, session_id, [(0, config)])
    owed = _owed(fold)
    state = fold.state
    if state.phase is AgentPhase.FINISHED:
        return None
    pending = state.pending
    still = tuple(  # a helper call held for approval is owed no run until it is approved
        effect
        for effect in owed.values()
        if not isinstance(effect, RunTool)
        or (pending is not None and awaited_position(pending, effect.call.id) >= 0)
    )
    return Unfinished(state=state, seq=fold.seq or 0, owed=still)


def _owed(fold: JournalFold[Any, Any, F]) -> dict[str, F]:
    """Fold every step, keeping each effect that expects an answer until one comes."""
    owed: dict[str, F] = {}
    for entry, effects in fold:
        if (answered := _answers(entry.event)) is not None:
            owed.pop(answered, None)
        for effect in effects:
            if (key := _expects(effect)) is not None:
                owed[key] = effect
    return owed


def _expects(effect: Effect | AgentEffect) -> str | None:
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
        case TellHook() | Persist() | Emit() | Finish() | FinishAgent() | AwaitApproval():
            return None  # nothing answers them (a pause waits for a human, owes nothing)
        case _:
            assert_never(effect)


def _answers(event: StepEvent) -> str | None:
    """The key of the owed effect `event` answers (None: it answers nothing)."""
    match event:
        case ModelResponded() | ModelCallFailed():
            return "model"
        case ToolFinished(call_id=call_id):
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


def lost_outcome(call: ToolCall, tools: Mapping[str, Tool]) -> ToolFinished | None:
    """What an owed tool run that started before a crash becomes on resume.

    None (run it again) if its tool is idempotent; otherwise its outcome is
    unknown, and the model is told so with an error result.
    """
    tool = tools.get(call.name)
    if tool is not None and tool.idempotent:
        return None
    return ToolFinished(call_id=call.id, output=INTERRUPTED, is_error=True)

"""Replay: fold a journaled session through its reducer again and compare every effect.

Identical effects give back the rebuilt `Session` (a tool loop's, folded through
`step`) or `AgentSession` (an agent run's, folded through `agent_step`); the
first difference is a `Divergence` naming the sequence number, the event that led to it, and both
sides as a readable diff — what a user sees after changing their prompt,
their tools or their toolreel version. Pass `config=` to replay the recorded
events under a changed configuration.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import attrs

from toolreel.adapters import (
    Journal,
    JournalEntry,
    SessionError,
    SessionNotFound,
    unstructure,
)
from toolreel.adapters._fold import AgentFold, differs, fold_journal
from toolreel.adapters._journal import SessionConfig, StepEvent
from toolreel.adapters._session import AgentSession, AgentSessionBuilder, Session, SessionBuilder
from toolreel.core import StepError

from ._errors import ReplayError
from ._journal_files import journal_name


@attrs.frozen(kw_only=True)
class Divergence:
    """Where a replay first produced different effects from the recorded ones."""

    session_id: str
    seq: int
    event: StepEvent
    recorded: tuple[dict[str, Any], ...]
    replayed: tuple[dict[str, Any], ...]
    error: str | None = None

    @property
    def diff(self) -> str:
        """The two sides as a unified diff of pretty JSON."""
        old = _pretty(self.recorded).splitlines()
        new = [self.error] if self.error else _pretty(self.replayed).splitlines()
        lines = difflib.unified_diff(old, new, "recorded", "replayed", lineterm="", n=3)
        return "\n".join(lines)

    def __str__(self) -> str:
        """Sequence number, event and diff, for a person."""
        event = json.dumps({"type": type(self.event).__name__, **unstructure(self.event)})
        return (
            f"session {self.session_id!r} diverges at step {self.seq}\nevent: {event}\n{self.diff}"
        )


class ReplayDiverged(ReplayError):
    """Raised by `replay(..., strict=True)` on a divergence."""

    def __init__(self, divergence: Divergence) -> None:
        """Carry the divergence; its text is the message."""
        super().__init__(str(divergence))
        self.divergence = divergence


def _pretty(effects: tuple[dict[str, Any], ...]) -> str:
    """Effects as sorted, indented JSON."""
    return json.dumps(list(effects), indent=2, sort_keys=True, ensure_ascii=False)


def replay(
    journal: Journal, session_id: str, *, config: SessionConfig | None = None
) -> Session | AgentSession | Divergence:
    """The rebuilt session if every effect matches the journal, else the first divergence.

    A tool loop's session gives a `Session`, an agent run's an `AgentSession`.
    Each step replays under the config the session recorded for it (a continued
    session may have changed it), or all under `config` when one is given (of
    the session's kind, else `SessionError`). An unknown `session_id` is
    `SessionNotFound`.
    """
    if session_id not in journal.sessions():
        raise SessionNotFound(session_id, journal_name(journal))
    fold = fold_journal(journal, session_id, config=config, runs=True)
    if isinstance(fold, AgentFold):
        return _agent_run(fold)
    builder = SessionBuilder(session_id)
    try:
        for entry, effects in fold:
            if (replayed := differs(entry, effects)) is not None:
                return _diverged(session_id, entry, replayed)
            builder.see(entry.event, effects)
    except StepError as exc:
        return _refused(session_id, fold.entry, exc)
    return builder.session(fold.state)


def load_agent_session(journal: Journal, session_id: str) -> AgentSession:
    """An agent run rebuilt from its journal without comparing effects (for showing it).

    A recorded event the reducer refuses raises `ReplayDiverged`; a tool
    loop's session is a `SessionError`.
    """
    if session_id not in journal.sessions():
        raise SessionNotFound(session_id, journal_name(journal))
    fold = fold_journal(journal, session_id)
    if not isinstance(fold, AgentFold):
        raise SessionError(f"session {session_id!r} is a tool loop's, not an agent run")
    result = _agent_run(fold, compare=False)
    if isinstance(result, Divergence):
        raise ReplayDiverged(result)
    return result


def _agent_run(fold: AgentFold, *, compare: bool = True) -> AgentSession | Divergence:
    """Fold an agent run to its end, comparing every step's effects (unless told not to)."""
    builder = AgentSessionBuilder(fold.session_id)
    try:
        for entry, effects in fold:
            if compare and (replayed := differs(entry, effects)) is not None:
                return _diverged(fold.session_id, entry, replayed)
            builder.see(effects)
    except StepError as exc:
        return _refused(fold.session_id, fold.entry, exc)
    return builder.session(fold.state)


def _refused(session_id: str, entry: JournalEntry | None, exc: StepError) -> Divergence:
    """The divergence of a recorded event the reducer refuses now."""
    assert entry is not None  # only folding a step raises a StepError
    return Divergence(
        session_id=session_id,
        seq=entry.seq,
        event=entry.event,
        recorded=entry.effects,
        replayed=(),
        error=f"the event cannot happen here: {exc}",
    )


def _diverged(
    session_id: str, entry: JournalEntry, replayed: tuple[dict[str, Any], ...]
) -> Divergence:
    """The divergence of a step whose replayed effects (as records) differ from the recorded."""
    return Divergence(
        session_id=session_id,
        seq=entry.seq,
        event=entry.event,
        recorded=entry.effects,
        replayed=replayed,
    )


def verify(
    journal: Journal, session_id: str, *, config: SessionConfig | None = None
) -> Session | AgentSession:
    """Like `replay`, but a divergence raises `ReplayDiverged`."""
    result = replay(journal, session_id, config=config)
    if isinstance(result, Divergence):
        raise ReplayDiverged(result)
    return result


__all__ = [
    "AgentSession",
    "Divergence",
    "ReplayDiverged",
    "load_agent_session",
    "replay",
    "verify",
]

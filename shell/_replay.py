"""Replay: fold a journaled session through its reducer again and compare every effect.

Identical effects give back the rebuilt `Session` (a chat session's) or
`AgentSession` (an agent run's: a structured output), both folded through `step`; the
first difference is a `Divergence` naming the sequence number, the event that led to it, and both
sides as a readable diff — what a user sees after changing their prompt,
their tools or their toolreel version. Pass `config=` to replay the recorded
events under a changed configuration.

Where a model request differs, the diff is the request's (`RequestDiff`:
which message, tool or setting changed): the journal keeps a request's
messages only as a digest, so the recorded request is rebuilt by folding the
journal again under the configs it recorded, and used only if its digest
matches the recorded one.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Generator
from typing import Any

import attrs

from toolreel.adapters import (
    AgentSession,
    Journal,
    JournalEntry,
    RequestDiff,
    Session,
    SessionBuilder,
    SessionConfig,
    SessionError,
    SessionNotFound,
    diff_requests,
    unstructure,
)
from toolreel.adapters.replay import AgentSessionBuilder, JournalFold, fold_journal, request_form
from toolreel.core import CallModel, Effect, Event, ModelRequest, State, StepError
from toolreel.core.record import Value

from ._errors import ReplayError
from ._journal_files import journal_name


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Divergence(Value):
    """Where a replay first produced different effects from the recorded ones.

    `request_diff` is the structured difference of the first model request
    that differs (a `RequestDiff`), or None when no request does.
    """

    session_id: str
    seq: int
    event: Event
    recorded: tuple[dict[str, Any], ...]
    replayed: tuple[dict[str, Any], ...]
    error: str | None = None
    request_diff: RequestDiff | None = None

    @property
    def diff(self) -> str:
        """The request's difference (if one differs), then the other effects' as pretty JSON."""
        if self.error:
            return _unified(_pretty(self.recorded).splitlines(), [self.error])
        if self.request_diff is None:
            old, new = _pretty(self.recorded).splitlines(), _pretty(self.replayed).splitlines()
            kinds = f"effects: {_kinds(self.recorded)}\n      → {_kinds(self.replayed)}\n"
            return kinds + _unified(old, new)
        old = _pretty(_unasked(self.recorded)).splitlines()
        new = _pretty(_unasked(self.replayed)).splitlines()
        rest = "\neffects:\n" + _unified(old, new) if old != new else ""
        return f"model request:\n{self.request_diff}{rest}"

    def __str__(self) -> str:
        """Sequence number, event and diff, for a person."""
        fields = unstructure(self.event)
        if images := getattr(self.event, "images", ()):  # placeholders, never the bytes
            fields["images"] = [image.label() for image in images]
        event = json.dumps({"type": type(self.event).__name__, **fields})
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


def _unified(old: list[str], new: list[str]) -> str:
    """A unified diff of two texts' lines."""
    return "\n".join(difflib.unified_diff(old, new, "recorded", "replayed", lineterm="", n=3))


def _kinds(effects: tuple[dict[str, Any], ...]) -> str:
    """The effects' types in order (an `Emit` with its notice's): what each side did."""
    names = [
        f"Emit({data['notice'].get('type')})"
        if data.get("type") == "Emit"
        else str(data.get("type"))
        for data in effects
    ]
    return ", ".join(names) or "nothing"


def _unasked(effects: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    """Effects with each model request left out (the request diff shows them)."""
    return tuple(
        {**data, "request": "(above)"} if data.get("type") == "CallModel" else data
        for data in effects
    )


def replay(
    journal: Journal, session_id: str, *, config: SessionConfig | None = None
) -> Session | AgentSession | Divergence:
    """The rebuilt session if every effect matches the journal, else the first divergence.

    A tool loop's session gives a `Session`, an agent run's an `AgentSession`.
    Each step replays under the config the session recorded for it (a continued
    session may have changed it), or all under `config` when one is given (of
    the session's kind, else `SessionError`). An unknown `session_id` is
    `SessionNotFound`.

    Args:
        journal: The journal holding the session.
        session_id: The session to replay (a chat session or an agent run).
        config: Replay every step under this config instead of the recorded one, to see
            what a change would change.

    Returns:
        The rebuilt `Session` (or `AgentSession`), or the first `Divergence`: the step,
        the event, and both sides' effects.
    """
    if session_id not in journal.sessions():
        raise SessionNotFound(session_id, journal_name(journal))
    fold = fold_journal(journal, session_id, config=config, runs=True)
    if fold.config.structured:
        return _agent_run(fold)
    builder = SessionBuilder(session_id)
    try:
        for entry, effects in fold:
            if (replayed := fold.differs(entry, effects)) is not None:
                return _diverged(fold, entry, replayed, effects)
            builder.see(entry.event, effects)
    except StepError as exc:
        return _refused(session_id, fold.entry, exc)
    return attrs.evolve(builder.session(fold.state), origin=journal.origin(session_id))


def replay_until(journal: Journal, session_id: str, last: int) -> tuple[State, list[JournalEntry]]:
    """Steps 1..`last` folded under their recorded configs and compared as `replay` compares
    them: the state after step `last`, and those steps as the journal holds them.

    What a fork shares with its original (shell/_fork.py): a step whose effects
    differ, or that the reducer refuses, raises `ReplayDiverged` with the
    `Divergence` `replay` would report. `last` 0 is the state before the first step.
    """
    fold = fold_journal(journal, session_id)
    kept: list[JournalEntry] = []
    if last <= 0:
        return fold.state, kept
    steps = iter(fold)
    try:
        for entry, effects in steps:
            if (replayed := fold.differs(entry, effects)) is not None:
                raise ReplayDiverged(_diverged(fold, entry, replayed, effects))
            kept.append(entry)
            if entry.seq >= last:
                break
    except StepError as exc:
        raise ReplayDiverged(_refused(session_id, fold.entry, exc)) from exc
    finally:
        if isinstance(steps, Generator):
            steps.close()  # stopped at `last`: closing it sets the fold's state
    return fold.state, kept


def load_agent_session(journal: Journal, session_id: str) -> AgentSession:
    """An agent run rebuilt from its journal without comparing effects (for showing it).

    A recorded event the reducer refuses raises `ReplayDiverged`; a tool
    loop's session is a `SessionError`.
    """
    if session_id not in journal.sessions():
        raise SessionNotFound(session_id, journal_name(journal))
    fold = fold_journal(journal, session_id)
    if not fold.config.structured:
        raise SessionError(f"session {session_id!r} is a tool loop's, not an agent run")
    result = _agent_run(fold, compare=False)
    if isinstance(result, Divergence):
        raise ReplayDiverged(result)
    return result


def _agent_run(fold: JournalFold, *, compare: bool = True) -> AgentSession | Divergence:
    """Fold an agent run to its end, comparing every step's effects (unless told not to)."""
    builder = AgentSessionBuilder(fold.session_id)
    try:
        for entry, effects in fold:
            if compare and (replayed := fold.differs(entry, effects)) is not None:
                return _diverged(fold, entry, replayed, effects)
            builder.see(effects, entry.event)
    except StepError as exc:
        return _refused(fold.session_id, fold.entry, exc)
    origin = fold.journal.origin(fold.session_id)
    return attrs.evolve(builder.session(fold.state), origin=origin)


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
    fold: JournalFold,
    entry: JournalEntry,
    replayed: tuple[dict[str, Any], ...],
    effects: tuple[Effect, ...],
) -> Divergence:
    """The divergence of a step whose replayed effects (as records) differ from the recorded."""
    return Divergence(
        session_id=fold.session_id,
        seq=entry.seq,
        event=entry.event,
        recorded=entry.effects,
        replayed=replayed,
        request_diff=_request_diff(fold, entry, effects),
    )


def _request_diff(
    fold: JournalFold, entry: JournalEntry, effects: tuple[Effect, ...]
) -> RequestDiff | None:
    """The difference of the step's first model request that differs from the recorded one."""
    forms = [data["request"] for data in entry.effects if data.get("type") == "CallModel"]
    asked = [effect.request for effect in effects if isinstance(effect, CallModel)]
    for index, (form, request) in enumerate(zip(forms, asked, strict=False)):
        if form != request_form(request):
            rebuilt = _recorded_requests(fold, entry.seq)
            whole = rebuilt[index] if index < len(rebuilt) else None
            if whole is None or request_form(whole) != form:  # the digest check
                return diff_requests(form, request)
            return diff_requests(whole, request)
    return None


def _recorded_requests(fold: JournalFold, seq: int) -> list[ModelRequest]:
    """Step `seq`'s model requests as the session's recorded configs make them (the fold again)."""
    again = fold_journal(fold.journal, fold.session_id)
    try:
        for entry, effects in again:
            if entry.seq == seq:
                return [effect.request for effect in effects if isinstance(effect, CallModel)]
    except StepError:
        pass  # the recorded events no longer fold: the digest is all there is
    return []


def verify(
    journal: Journal, session_id: str, *, config: SessionConfig | None = None
) -> Session | AgentSession:
    """Like `replay`, but a divergence raises `ReplayDiverged`.

    Args:
        journal: The journal holding the session.
        session_id: The session to replay.
        config: Replay every step under this config instead of the recorded one.

    Returns:
        The rebuilt `Session` (or `AgentSession`).

    Raises:
        ReplayDiverged: A step's effects differ from the recorded ones.
    """
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

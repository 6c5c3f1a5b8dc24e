"""A stored session, rebuilt: a chat session's config, history and one summary per turn
(`Session`), or an agent run's state and outcome (`AgentSession`).

`load_session` folds the journaled events through `step` again (`fold_journal`)
— the journal holds facts, the session is what they mean. Damage that still
reads (a batch failing its checksum, missing steps) becomes `Session.warnings`;
data that does not decode, or events that cannot follow each other, raise
`JournalCorrupt`. The builders watch a fold's steps: `replay` (shell/_replay.py)
uses them too, comparing each step's effects as they go. An agent run is a
session whose config's `output` is structured: one turn, whose `Finish` the
agent API reads (adapters/_agent_outcome.py).
"""

from __future__ import annotations

import attrs

from toolreel.core import (
    ChatMessage,
    Effect,
    Emit,
    Finish,
    ImagePart,
    LoopConfig,
    ModelCallFailed,
    Persist,
    Phase,
    PromptSubmitted,
    State,
    StepError,
    Usage,
    awaiting_approval,
)
from toolreel.core.notices import ApprovalRequested, ContextCompacted
from toolreel.core.outcomes import AttemptErrors, Failed, FinishReason
from toolreel.core.record import Value

from ._agent_outcome import AgentOutcome, agent_outcome
from ._errors import JournalCorrupt, SessionError
from ._fold import fold_journal, journal_name
from ._journal import Damage, Journal, StepEvent
from ._origin import SessionOrigin
from ._retries import Retry, retries_of
from ._rows import Run


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TurnSummary(Value):
    """One user prompt and how its turn ended (`reason` None: it never finished)."""

    prompt: str
    reason: FinishReason | None = None
    text: str = ""
    iterations: int = 0
    usage: Usage = attrs.Factory(Usage)
    max_iterations_reached: bool = False
    error: Failed | None = None
    block_reason: str | None = None
    answer: ChatMessage | None = None
    retries: tuple[Retry, ...] = ()
    #: The images sent with the prompt (transcripts show a placeholder for each).
    images: tuple[ImagePart, ...] = ()
    #: Where the turn's requests were compacted (rule 18 of core/_step.py), in order.
    compactions: tuple[ContextCompacted, ...] = ()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Session(Value):
    """A session as its events made it.

    `approvals` are the calls its last turn holds for a human's decision: the
    turn is paused (`phase` AWAITING_APPROVAL), not unfinished. `origin` says
    where a fork or a rerun came from (None: the session began with a prompt).
    """

    session_id: str
    config: LoopConfig
    history: tuple[ChatMessage, ...]
    turns: tuple[TurnSummary, ...]
    events: int
    phase: Phase
    warnings: tuple[str, ...] = ()
    approvals: tuple[ApprovalRequested, ...] = ()
    origin: SessionOrigin | None = None

    @property
    def usage(self) -> Usage:
        """Tokens over every turn."""
        total = Usage()
        for turn in self.turns:
            total = total + turn.usage
        return total


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AgentSession(Value):
    """An agent run rebuilt from its journal.

    `state` is the reducer's final `State`; `finish` the run's `Finish` (its
    `outcome` a `Produced` output or why there is none; `outcome` here, the
    agent API's `AgentOutput` or `AgentError`), or None when the run never
    ended (a crash, a pause); `events` how many steps were folded; `warnings`
    and `origin` as a `Session`'s.
    """

    session_id: str
    config: LoopConfig
    state: State
    finish: Finish | None
    events: int
    warnings: tuple[str, ...] = ()
    retries: tuple[Retry, ...] = ()
    origin: SessionOrigin | None = None

    @property
    def history(self) -> tuple[ChatMessage, ...]:
        """The conversation: every attempt's, once the run ended; before, up to the running
        attempt's user message (the prompt, or the last validation feedback)."""
        return self.state.history

    @property
    def usage(self) -> Usage:
        """Tokens over every model call of the run."""
        return self.state.usage

    @property
    def approvals(self) -> tuple[ApprovalRequested, ...]:
        """The helper calls the run holds for a human's decision (paused: `state.phase`)."""
        return awaiting_approval(self.state)

    @property
    def outcome(self) -> AgentOutcome | None:
        """The output, or the error with its code and context (None: the run never ended)."""
        return None if self.finish is None else agent_outcome(self.finish, self.config)

    @property
    def attempts(self) -> int:
        """How many attempts the run began."""
        if self.finish is not None and self.finish.attempts is not None:
            return self.finish.attempts.number
        return self.state.turn.attempt if self.state.turn is not None else 0

    @property
    def iterations(self) -> int:
        """Model calls over every attempt (retries aside)."""
        if self.finish is not None:
            return self.finish.iterations
        return self.state.turn.iterations if self.state.turn is not None else 0

    @property
    def validation_errors(self) -> tuple[AttemptErrors, ...]:
        """Every failed attempt's validation problems."""
        if self.finish is not None and self.finish.attempts is not None:
            return self.finish.attempts.failed
        return self.state.turn.failed if self.state.turn is not None else ()


def summarize(finish: Finish, prompt: str, answer: ChatMessage | None = None) -> TurnSummary:
    """A turn's summary from its `Finish` (and the assistant message it recorded)."""
    return TurnSummary(
        answer=answer,
        prompt=prompt,
        reason=finish.reason,
        text=finish.text,
        iterations=finish.iterations,
        usage=finish.usage,
        max_iterations_reached=finish.max_iterations_reached,
        error=finish.error,
        block_reason=finish.block_reason,
    )


class SessionBuilder:
    """Watches a tool loop's steps fold, keeping what a summary needs (nothing per event)."""

    def __init__(self, session_id: str) -> None:
        """No step seen yet."""
        self.session_id = session_id
        self.turns: list[TurnSummary] = []
        self.events = 0
        self._prompt: str | None = None
        self._images: tuple[ImagePart, ...] = ()
        self._retries: list[Retry] = []
        self._compactions: list[ContextCompacted] = []

    def see(self, event: StepEvent | Run, effects: tuple[Effect, ...]) -> None:
        """Note a step (a run as its steps): a prompt opens a turn, a retry joins, a Finish ends."""
        if event.__class__ is Run:  # a replay's `FoldedRun`: deltas, no prompt, retry or Finish
            self.events += len(event.values)
            return
        self.events += 1
        if isinstance(event, PromptSubmitted):
            self._prompt, self._images = event.text, event.images
        elif type(event) is ModelCallFailed:
            self._retries += retries_of(event, effects)
        for effect in effects:
            if isinstance(effect, Emit) and isinstance(effect.notice, ContextCompacted):
                self._compactions.append(effect.notice)
        if effects and isinstance(effects[-1], Finish):  # a Finish is always a step's last effect
            answers = [
                e.message
                for e in effects
                if isinstance(e, Persist) and e.message.role == "assistant"
            ]
            summary = summarize(effects[-1], self._prompt or "", answers[-1] if answers else None)
            self.turns.append(
                attrs.evolve(
                    summary,
                    retries=tuple(self._retries),
                    images=self._images,
                    compactions=tuple(self._compactions),
                )
            )
            self._prompt, self._retries, self._compactions = None, [], []

    def session(self, state: State, warnings: tuple[str, ...] = ()) -> Session:
        """The session at `state` (an unfinished turn shows with reason None)."""
        turns = list(self.turns)
        if self._prompt is not None:
            turns.append(
                TurnSummary(
                    prompt=self._prompt,
                    retries=tuple(self._retries),
                    images=self._images,
                    compactions=tuple(self._compactions),
                )
            )
        return Session(
            session_id=self.session_id,
            config=state.config,
            history=state.history,
            turns=tuple(turns),
            events=self.events,
            phase=state.phase,
            warnings=warnings,
            approvals=awaiting_approval(state),
        )


class AgentSessionBuilder:
    """Watches an agent run's steps fold, keeping its count and its `Finish`."""

    def __init__(self, session_id: str) -> None:
        """No step seen yet."""
        self.session_id = session_id
        self.events = 0
        self.finish: Finish | None = None
        self.retries: list[Retry] = []

    def see(self, effects: tuple[Effect, ...], event: StepEvent | Run | None = None) -> None:
        """Note one folded step (a run as its steps; a failed model call's: any retry it
        scheduled)."""
        if event.__class__ is Run:  # a replay's `FoldedRun`: deltas, no retry or Finish
            assert isinstance(event, Run)
            self.events += len(event.values)
            return
        self.events += 1
        if type(event) is ModelCallFailed:
            self.retries += retries_of(event, effects)
        if effects and isinstance(effects[-1], Finish):
            self.finish = effects[-1]

    def session(self, state: State, warnings: tuple[str, ...] = ()) -> AgentSession:
        """The run at `state`."""
        return AgentSession(
            session_id=self.session_id,
            config=state.config,
            state=state,
            finish=self.finish,
            events=self.events,
            warnings=warnings,
            retries=tuple(self.retries),
        )


def load_session(journal: Journal, session_id: str) -> Session:
    """Rebuild a journaled tool-loop session (`SessionNotFound` if the journal has no such session).

    A checksum mismatch or missing steps is a warning in `Session.warnings`
    (the data still decodes and folds: show it, and say it may be wrong);
    undecodable data or an impossible event raises `JournalCorrupt`. An agent
    run is a `SessionError`: `toolreel.shell.load_agent_session` rebuilds one.
    """
    damage = Damage()
    fold = fold_journal(journal, session_id, damage=damage)
    if fold.config.structured:
        raise SessionError(
            f"session {session_id!r} is an agent run, not a tool-loop session "
            "(toolreel.shell.load_agent_session rebuilds one)"
        )
    builder = SessionBuilder(session_id)
    try:
        for entry, effects in fold:
            builder.see(entry.event, effects)
    except StepError as exc:
        detail = "; ".join([f"the event cannot happen here ({exc})", *damage.warnings])
        raise JournalCorrupt(
            journal_name(journal), detail, session_id=session_id, seq=fold.seq
        ) from exc
    session = builder.session(fold.state, tuple(damage.warnings))
    return attrs.evolve(session, origin=journal.origin(session_id))

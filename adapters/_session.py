"""A stored session, rebuilt: its config, history and one summary per turn.

`load_session` folds the journaled events through `step` again — the journal
holds facts, the session is what they mean. Damage that still reads (a batch
failing its checksum, missing steps) becomes `Session.warnings`; data that does
not decode, or events that cannot follow each other, raise `JournalCorrupt`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import attrs

from toolreel.core import (
    ChatMessage,
    Effect,
    Event,
    Failed,
    Finish,
    FinishReason,
    LoopConfig,
    Persist,
    Phase,
    PromptSubmitted,
    State,
    StepError,
    Usage,
    initial_state,
    step,
)

from ._errors import JournalCorrupt
from ._journal import Damage, Journal, JournalEntry, loop_configs, loop_event


@attrs.frozen(kw_only=True)
class TurnSummary:
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


@attrs.frozen(kw_only=True)
class Session:
    """A session as its events made it."""

    session_id: str
    config: LoopConfig
    history: tuple[ChatMessage, ...]
    turns: tuple[TurnSummary, ...]
    events: int
    phase: Phase
    warnings: tuple[str, ...] = ()

    @property
    def usage(self) -> Usage:
        """Tokens over every turn."""
        total = Usage()
        for turn in self.turns:
            total = total + turn.usage
        return total


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
    """Folds a session's events, keeping what a summary needs (and nothing per event)."""

    def __init__(self, session_id: str, config: LoopConfig) -> None:
        """Start from the first state of `config`."""
        self.session_id = session_id
        self.state: State = initial_state(config)
        self.turns: list[TurnSummary] = []
        self.events = 0
        self._prompt: str | None = None

    def reconfigure(self, config: LoopConfig) -> None:
        """Apply the config a continued session recorded from here on."""
        self.state = attrs.evolve(self.state, config=config)

    def add(self, event: Event) -> tuple[Effect, ...]:
        """Fold one event; its effects."""
        self.state, effects = step(self.state, event)
        self.events += 1
        if isinstance(event, PromptSubmitted):
            self._prompt = event.text
        if effects and isinstance(effects[-1], Finish):  # a Finish is always a step's last effect
            answers = [
                e.message
                for e in effects
                if isinstance(e, Persist) and e.message.role == "assistant"
            ]
            summary = summarize(effects[-1], self._prompt or "", answers[-1] if answers else None)
            self.turns.append(summary)
            self._prompt = None
        return effects

    def session(self, warnings: tuple[str, ...] = ()) -> Session:
        """The session so far (an unfinished turn shows with reason None)."""
        turns = list(self.turns)
        if self._prompt is not None:
            turns.append(TurnSummary(prompt=self._prompt))
        return Session(
            session_id=self.session_id,
            config=self.state.config,
            history=self.state.history,
            turns=tuple(turns),
            events=self.events,
            phase=self.state.phase,
            warnings=warnings,
        )


def with_configs(
    entries: Iterable[JournalEntry], configs: Sequence[tuple[int, LoopConfig]]
) -> Iterator[tuple[JournalEntry, LoopConfig | None]]:
    """Each entry with the config that takes effect just before it, if one does."""
    pending = list(configs[1:])
    for entry in entries:
        change = None
        while pending and entry.seq > pending[0][0]:
            change = pending.pop(0)[1]
        yield entry, change


def contiguous(
    entries: Iterable[JournalEntry], path: str, session_id: str, damage: Damage
) -> Iterator[JournalEntry]:
    """The entries, telling `damage` where sequence numbers skip (steps lost)."""
    expected = 1
    for entry in entries:
        if entry.seq > expected:
            damage.missing(path, session_id, expected, entry.seq - 1)
        elif entry.seq < expected:
            raise JournalCorrupt(
                path, "a step is stored twice or out of order", session_id=session_id, seq=entry.seq
            )
        expected = entry.seq + 1
        yield entry


def journal_name(journal: Journal) -> str:
    """The journal's file, or how it names itself."""
    return str(getattr(journal, "path", None) or repr(journal))


def load_session(journal: Journal, session_id: str) -> Session:
    """Rebuild a journaled session (`SessionNotFound` if the journal has no such session).

    A checksum mismatch or missing steps is a warning in `Session.warnings`
    (the data still decodes and folds: show it, and say it may be wrong);
    undecodable data or an impossible event raises `JournalCorrupt`.
    """
    path = journal_name(journal)
    damage = Damage()
    configs = loop_configs(journal, session_id)
    builder = SessionBuilder(session_id, configs[0][1])
    entries = contiguous(journal.entries(session_id, damage=damage), path, session_id, damage)
    for entry, change in with_configs(entries, configs):
        if change is not None:
            builder.reconfigure(change)
        try:
            builder.add(loop_event(entry.event, session_id))
        except StepError as exc:
            detail = "; ".join([f"the event cannot happen here ({exc})", *damage.warnings])
            raise JournalCorrupt(path, detail, session_id=session_id, seq=entry.seq) from exc
    return builder.session(tuple(damage.warnings))

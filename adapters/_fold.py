"""The one fold of a journaled session: its steps, in order, through its reducer again.

Resuming after a crash, `load_session` and `replay` all read a session this way
and differ only in what they do with each step. `fold_journal` opens the fold of
the session's kind, told by its config: a tool loop's folds through `step`
(each step under the config the session recorded for it, or all under one
given), an agent run's through `agent_step`. Iterating gives each entry with the
effects folding it produced now; once it ends, `state` and `entry` say where
it stopped (a caller that catches a `StepError` knows which step the reducer
refused).
Events arrive decoded by the journal; `differs` compares a step's effects
with the recorded ones (records of an older shape brought up to date by
`current_records` only when the plain comparison fails, so replay pays nothing
for them per step).

Given a `Damage`, the fold also tells it where sequence numbers skip (steps
lost) and raises `JournalCorrupt` on a step stored twice or out of order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar, cast, get_args

import attrs

from toolreel.core import (
    AgentConfig,
    AgentEffect,
    AgentEvent,
    AgentState,
    AgentStepError,
    Effect,
    Emit,
    LoopConfig,
    State,
    TextStreamed,
    ValidationFinished,
    agent_step,
    initial_agent_state,
    initial_state,
    step,
)

from ._errors import JournalCorrupt, SessionError
from ._journal import (
    Damage,
    Journal,
    JournalEntry,
    SessionConfig,
    StepEffect,
    StepEvent,
    current_records,
    effect_record,
)

C = TypeVar("C", LoopConfig, AgentConfig)
S = TypeVar("S", State, AgentState)
F = TypeVar("F", Effect, AgentEffect)

_AGENT_EVENTS = get_args(AgentEvent)


class JournalFold(Generic[C, S, F]):
    """A session's steps folded one by one: iterate for `(entry, effects)` pairs."""

    def __init__(
        self,
        journal: Journal,
        session_id: str,
        configs: Sequence[tuple[int, C]],
        *,
        damage: Damage | None = None,
    ) -> None:
        """Before the first step, in the first of `configs` (each applies after its seq)."""
        self.journal = journal
        self.session_id = session_id
        self.configs: Sequence[tuple[int, C]] = configs
        self.damage = damage
        self.state: S = self._initial(configs[0][1])
        #: The last step folded, or the one whose fold raised; None before the first.
        self.entry: JournalEntry | None = None

    @property
    def config(self) -> C:
        """The config the session began with (or the one given for every step)."""
        return self.configs[0][1]

    @property
    def seq(self) -> int | None:
        """The last step's number (None before the first)."""
        return self.entry.seq if self.entry is not None else None

    def _initial(self, config: C) -> S:
        """The reducer's first state for `config`."""
        raise NotImplementedError

    def _reduce(self, state: S, event: StepEvent) -> tuple[S, tuple[F, ...]]:
        """One step of the session's reducer (refusing an event of the other kind)."""
        raise NotImplementedError

    def _reconfigured(self, state: S, config: C) -> S:
        """`state` under the config a continued session recorded from here on."""
        raise NotImplementedError

    def __iter__(self) -> Iterator[tuple[JournalEntry, tuple[F, ...]]]:
        """Each entry with the effects folding it produced.

        `state` and `entry` are set as the iteration ends (the hot loop keeps
        them local): after the last step, or at the step whose fold raised.
        """
        entries: Iterable[JournalEntry] = self.journal.entries(self.session_id, damage=self.damage)
        if self.damage is not None:
            entries = _contiguous(entries, self.journal, self.session_id, self.damage)
        pending = list(self.configs[1:])
        reduce, state, entry = self._reduce, self.state, self.entry
        try:
            for entry in entries:
                while pending and entry.seq > pending[0][0]:
                    state = self._reconfigured(state, pending.pop(0)[1])
                state, effects = reduce(state, entry.event)
                yield entry, effects
        finally:
            self.state, self.entry = state, entry


class LoopFold(JournalFold[LoopConfig, State, Effect]):
    """A tool loop's session folded through `step`."""

    def _initial(self, config: LoopConfig) -> State:
        """The loop's first state."""
        return initial_state(config)

    def _reduce(self, state: State, event: StepEvent) -> tuple[State, tuple[Effect, ...]]:
        """`step`, refusing an agent run's event (the journal mixes kinds: `SessionError`)."""
        if isinstance(event, ValidationFinished):
            raise SessionError(
                f"session {self.session_id!r} is an agent run, not a tool-loop session"
            )
        return step(state, event)

    def _reconfigured(self, state: State, config: LoopConfig) -> State:
        """`state` under the config a continued session recorded from here on."""
        return attrs.evolve(state, config=config)


class AgentFold(JournalFold[AgentConfig, AgentState, AgentEffect]):
    """An agent run folded through `agent_step`."""

    def _initial(self, config: AgentConfig) -> AgentState:
        """The agent's first state."""
        return initial_agent_state(config)

    def _reduce(
        self, state: AgentState, event: StepEvent
    ) -> tuple[AgentState, tuple[AgentEffect, ...]]:
        """`agent_step`, refusing a tool loop's event as a step error."""
        if not isinstance(event, _AGENT_EVENTS):
            raise AgentStepError(state.phase, event, "not an agent run's event")
        return agent_step(state, cast(AgentEvent, event))

    def _reconfigured(self, state: AgentState, config: AgentConfig) -> AgentState:
        """`state` under another config (an agent run records one; kept for symmetry)."""
        return attrs.evolve(state, config=config)


def fold_journal(
    journal: Journal,
    session_id: str,
    *,
    config: SessionConfig | None = None,
    damage: Damage | None = None,
) -> LoopFold | AgentFold:
    """The fold of the session's kind (`SessionNotFound` if the journal has no such session).

    With `config`, every step folds under it (it must be of the session's kind,
    else `SessionError`); without, under the configs the session recorded.
    """
    recorded = journal.configs(session_id)
    if isinstance(recorded[-1][1], AgentConfig):
        if config is not None and not isinstance(config, AgentConfig):
            raise SessionError(
                f"session {session_id!r} is an agent run: replay it with an AgentConfig"
            )
        agent = config or recorded[-1][1]
        return AgentFold(journal, session_id, [(0, agent)], damage=damage)
    if config is not None and not isinstance(config, LoopConfig):
        raise SessionError(f"session {session_id!r} is a tool loop's: replay it with a LoopConfig")
    loops = [(seq, c) for seq, c in recorded if isinstance(c, LoopConfig)]
    if len(loops) != len(recorded):
        raise SessionError(f"session {session_id!r} is an agent run, not a tool-loop session")
    return LoopFold(journal, session_id, [(0, config)] if config else loops, damage=damage)


def fold_loop(journal: Journal, session_id: str, *, damage: Damage | None = None) -> LoopFold:
    """The fold of a tool loop's session (an agent run's is a `SessionError`)."""
    fold = fold_journal(journal, session_id, damage=damage)
    if isinstance(fold, AgentFold):
        raise SessionError(f"session {session_id!r} is an agent run, not a tool-loop session")
    return fold


def differs(
    entry: JournalEntry, effects: Sequence[StepEffect]
) -> tuple[dict[str, Any], ...] | None:
    """The effects' records when they differ from what `entry` recorded, else None."""
    recorded = entry.effects
    if not effects and not recorded:
        return None  # the hot path of argument fragments: nothing to compare
    if len(effects) == 1 == len(recorded) and _same_text(effects[0], recorded[0]):
        return None  # the hot path of text deltas, without building a record
    replayed = tuple(effect_record(effect) for effect in effects)
    if replayed == recorded or replayed == current_records(recorded):
        return None  # (older journals recorded some effects in an earlier shape)
    return replayed


def _same_text(effect: StepEffect, record: dict[str, Any]) -> bool:
    """Whether `effect` streams text and `record` is exactly its record."""
    if effect.__class__ is not Emit:
        return False
    notice = effect.notice
    return (
        notice.__class__ is TextStreamed
        and record.get("type") == "Emit"
        and record.get("notice") == {"text": notice.text, "type": "TextStreamed"}
        and len(record) == 2
    )


def journal_name(journal: Journal) -> str:
    """The journal's file, or how it names itself."""
    return str(getattr(journal, "path", None) or repr(journal))


def _contiguous(
    entries: Iterable[JournalEntry], journal: Journal, session_id: str, damage: Damage
) -> Iterator[JournalEntry]:
    """The entries, telling `damage` where sequence numbers skip (steps lost)."""
    expected = 1
    for entry in entries:
        if entry.seq > expected:
            damage.missing(journal_name(journal), session_id, expected, entry.seq - 1)
        elif entry.seq < expected:
            raise JournalCorrupt(
                journal_name(journal),
                "a step is stored twice or out of order",
                session_id=session_id,
                seq=entry.seq,
            )
        expected = entry.seq + 1
        yield entry

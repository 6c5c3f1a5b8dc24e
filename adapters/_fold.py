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

A replay's fold (`runs=True`) reads a SQLite journal's runs of deltas whole
(adapters/_rows.py): a run the reducer accepts as it stands (`text_run`,
`fragment_run` in core/_step.py: exactly what `step` makes of each delta, and
each delta's effects exactly the ones the run records) is folded at once and
yielded as one `FoldedRun`; any other run, and any run under a config change
or of an agent run, is folded step by step, so a refused step or a divergence
names its own seq as ever. Every other reader gets one entry per step.

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
from toolreel.core._step import fragment_run, text_run

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
from ._rows import TEXT, Item, Run

C = TypeVar("C", LoopConfig, AgentConfig)
S = TypeVar("S", State, AgentState)
F = TypeVar("F", Effect, AgentEffect)

_AGENT_EVENTS = get_args(AgentEvent)


@attrs.frozen(kw_only=True)
class FoldedRun(JournalEntry):
    """A run of deltas folded at once (a replay's fold only): `seq` is its first step.

    Its `event` is the `Run` itself (so `SessionBuilder.see(entry.event, ...)`
    counts its steps), its effects are none to compare: the reducer's are the
    run's own records by construction (see `text_run`).
    """

    @classmethod
    def of(cls, run: Run) -> FoldedRun:
        """The entry standing for `run`."""
        return cls(seq=run.seq, event=cast(StepEvent, run), effects=())


class JournalFold(Generic[C, S, F]):
    """A session's steps folded one by one: iterate for `(entry, effects)` pairs."""

    def __init__(
        self,
        journal: Journal,
        session_id: str,
        configs: Sequence[tuple[int, C]],
        *,
        damage: Damage | None = None,
        runs: bool = False,
    ) -> None:
        """Before the first step, in the first of `configs` (each applies after its seq).

        `runs`: fold a journal's stored runs of deltas at once where it can (a
        replay; see the module docstring), yielding a `FoldedRun` for each.
        """
        self.journal = journal
        self.runs = runs
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

    def _run(self, state: S, run: Run) -> S | None:
        """The state after folding the whole run, or None: fold it step by step."""
        return None

    def __iter__(self) -> Iterator[tuple[JournalEntry, tuple[F, ...]]]:
        """Each entry with the effects folding it produced (a `FoldedRun` with none).

        `state` and `entry` are set as the iteration ends (the hot loop keeps
        them local): after the last step, or at the step whose fold raised.
        """
        items = getattr(self.journal, "stored_items", None)
        if not self.runs or self.damage is not None or items is None:
            return self._steps()
        return self._items(items(self.session_id))

    def _steps(self) -> Iterator[tuple[JournalEntry, tuple[F, ...]]]:
        """The fold of the journal's entries, one step each (`_items` with no `Run` among them)."""
        entries: Iterable[JournalEntry] = self.journal.entries(self.session_id, damage=self.damage)
        if self.damage is not None:
            entries = _contiguous(entries, self.journal, self.session_id, self.damage)
        return self._items(entries)

    def _items(self, items: Iterable[Item]) -> Iterator[tuple[JournalEntry, tuple[F, ...]]]:
        """The fold of the journal's items: a run at once where `_run` can, else step by step."""
        pending = list(self.configs[1:])
        reduce, batch, state, entry = self._reduce, self._run, self.state, self.entry
        steps: Iterable[JournalEntry]
        try:
            for item in items:
                if item.__class__ is Run:
                    run = item
                    while pending and run.seq > pending[0][0]:
                        state = self._reconfigured(state, pending.pop(0)[1])
                    folded = None
                    if not pending or pending[0][0] >= run.seq + len(run.values) - 1:
                        folded = batch(state, run)
                    if folded is not None:
                        state, entry = folded, FoldedRun.of(run)
                        yield entry, ()
                        continue
                    steps = run.entries()
                else:
                    steps = (cast(JournalEntry, item),)
                for entry in steps:
                    while pending and entry.seq > pending[0][0]:
                        state = self._reconfigured(state, pending.pop(0)[1])
                    state, effects = reduce(state, entry.event)
                    yield entry, effects
        finally:
            if isinstance(entry, FoldedRun):
                entry = cast(Run, entry.event).entries()[-1]  # where it stopped: a step
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

    def _run(self, state: State, run: Run) -> State | None:
        """`text_run` or `fragment_run`: the whole run through `step` at once, if it can be."""
        if run.kind == TEXT:
            return text_run(state, run.values)
        return fragment_run(state, run.index, run.values)


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
    runs: bool = False,
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
        return AgentFold(journal, session_id, [(0, agent)], damage=damage, runs=runs)
    if config is not None and not isinstance(config, LoopConfig):
        raise SessionError(f"session {session_id!r} is a tool loop's: replay it with a LoopConfig")
    loops = [(seq, c) for seq, c in recorded if isinstance(c, LoopConfig)]
    if len(loops) != len(recorded):
        raise SessionError(f"session {session_id!r} is an agent run, not a tool-loop session")
    configs = [(0, config)] if config else loops
    return LoopFold(journal, session_id, configs, damage=damage, runs=runs)


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

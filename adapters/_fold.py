"""The one fold of a journaled session: its steps, in order, through `step` again.

Resuming after a crash, `load_session` and `replay` all read a session this way
and differ only in what they do with each step. `fold_journal` folds each step
under the config the session recorded for it, or all under one given; a chat
session and an agent run (a config whose `output` is structured) alike.
Iterating gives each entry with the effects folding it produced now; once it
ends, `state` and `entry` say where it stopped (a caller that catches a
`StepError` knows which step the reducer refused).
Events arrive decoded by the journal; `differs` compares a step's effects
with the recorded ones (records of an older shape brought up to date by
`current_records` only when the plain comparison fails, so replay pays nothing
for them per step). Steps journaled by bfd8293's agent reducer are compared
as adapters/_legacy.py says (`JournalFold.differs`).

A replay's fold (`runs=True`) reads a SQLite journal's runs of deltas whole
(adapters/_rows.py): a run the reducer accepts as it stands (`text_run`,
`fragment_run` in core/_step.py: exactly what `step` makes of each delta, and
each delta's effects exactly the ones the run records, or for a run of fragments
written before they were told, the notices `differs` counts equal to none) is folded at once and
yielded as one `FoldedRun`; any other run, and any run under a config change
or of an old agent run, is folded step by step, so a refused step or a
divergence names its own seq as ever. Every other reader gets one entry per step.

Given a `Damage`, the fold also tells it where sequence numbers skip (steps
lost) and raises `JournalCorrupt` on a step stored twice or out of order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

import attrs

from toolreel.core import Effect, Emit, LoopConfig, State, initial_state, step
from toolreel.core.bulk import fragment_run, text_run
from toolreel.core.notices import TextStreamed, ToolArgumentsStreamed, ToolCallStreaming

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
from ._legacy import LegacyAgentConfig, legacy_differs, unreasoned
from ._rows import TEXT, Item, Run


@attrs.frozen(kw_only=True, repr=False, eq=False)
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


class JournalFold:
    """A session's steps folded one by one: iterate for `(entry, effects)` pairs."""

    def __init__(
        self,
        journal: Journal,
        session_id: str,
        configs: Sequence[tuple[int, LoopConfig]],
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
        self.configs: Sequence[tuple[int, LoopConfig]] = configs
        self.damage = damage
        self.state: State = initial_state(configs[0][1])
        #: The last step folded, or the one whose fold raised; None before the first.
        self.entry: JournalEntry | None = None
        #: Some steps were journaled by bfd8293's agent reducer (adapters/_legacy.py).
        self.legacy = any(isinstance(config, LegacyAgentConfig) for _, config in configs)

    @property
    def config(self) -> LoopConfig:
        """The config the session began with (or the one given for every step)."""
        return self.configs[0][1]

    @property
    def seq(self) -> int | None:
        """The last step's number (None before the first)."""
        return self.entry.seq if self.entry is not None else None

    def __iter__(self) -> Iterator[tuple[JournalEntry, tuple[Effect, ...]]]:
        """Each entry with the effects folding it produced (a `FoldedRun` with none).

        `state` and `entry` are set as the iteration ends (the hot loop keeps
        them local): after the last step, or at the step whose fold raised;
        for an old agent run's journal, after every step (`differs` needs it).
        """
        items = getattr(self.journal, "stored_items", None)
        if self.legacy:
            return self._tracked()
        if not self.runs or self.damage is not None or items is None:
            return self._steps()
        return self._items(items(self.session_id))

    def differs(
        self, entry: JournalEntry, effects: Sequence[StepEffect]
    ) -> tuple[dict[str, Any], ...] | None:
        """The effects' records when they differ from what `entry` recorded, else None.

        A step journaled by bfd8293's agent reducer is compared as adapters/_legacy.py
        says (the fold's `state` is the one after that step).
        """
        if not self.legacy or not isinstance(self.state.config, LegacyAgentConfig):
            return differs(entry, effects)
        replayed = tuple(effect_record(effect) for effect in effects)
        config = self.state.config
        if legacy_differs(entry.effects, effects, replayed, self.state.history, config):
            return replayed
        return None

    def _entries(self) -> Iterable[JournalEntry]:
        """The journal's entries (checked for gaps when there is a `Damage`)."""
        entries: Iterable[JournalEntry] = self.journal.entries(self.session_id, damage=self.damage)
        if self.damage is not None:
            entries = _contiguous(entries, self.journal, self.session_id, self.damage)
        return entries

    def _steps(self) -> Iterator[tuple[JournalEntry, tuple[Effect, ...]]]:
        """The fold of the journal's entries, one step each (`_items` with no `Run` among them)."""
        return self._items(self._entries())

    def _tracked(self) -> Iterator[tuple[JournalEntry, tuple[Effect, ...]]]:
        """One step at a time, `state` and `entry` kept current after each."""
        pending = list(self.configs[1:])
        for entry in self._entries():
            self.entry = entry
            while pending and entry.seq > pending[0][0]:
                self.state = attrs.evolve(self.state, config=pending.pop(0)[1])
            self.state, effects = step(self.state, entry.event)
            yield entry, effects

    def _items(self, items: Iterable[Item]) -> Iterator[tuple[JournalEntry, tuple[Effect, ...]]]:
        """The fold of the journal's items: a run at once where it can, else step by step."""
        pending = list(self.configs[1:])
        state, entry = self.state, self.entry
        steps: Iterable[JournalEntry]
        try:
            for item in items:
                if item.__class__ is Run:
                    run = item
                    while pending and run.seq > pending[0][0]:
                        state = attrs.evolve(state, config=pending.pop(0)[1])
                    folded = None
                    if not pending or pending[0][0] >= run.seq + len(run.values) - 1:
                        folded = _run(state, run)
                    if folded is not None:
                        state, entry = folded, FoldedRun.of(run)
                        yield entry, ()
                        continue
                    steps = run.entries()
                else:
                    steps = (cast(JournalEntry, item),)
                for entry in steps:
                    while pending and entry.seq > pending[0][0]:
                        state = attrs.evolve(state, config=pending.pop(0)[1])
                    state, effects = step(state, entry.event)
                    yield entry, effects
        finally:
            if isinstance(entry, FoldedRun):
                entry = cast(Run, entry.event).entries()[-1]  # where it stopped: a step
            self.state, self.entry = state, entry


def _run(state: State, run: Run) -> State | None:
    """`text_run` or `fragment_run`: the whole run through `step` at once, if it can be."""
    if run.kind == TEXT:
        return text_run(state, run.values)
    return fragment_run(state, run.index, run.values)  # (told or not: see `differs`)


def fold_journal(
    journal: Journal,
    session_id: str,
    *,
    config: SessionConfig | None = None,
    damage: Damage | None = None,
    runs: bool = False,
) -> JournalFold:
    """The session's fold (`SessionNotFound` if the journal has no such session).

    With `config`, every step folds under it; without, under the configs the
    session recorded. A `config` of the other kind (a structured output for a
    chat session, or text for an agent run) is a `SessionError`.
    """
    recorded = journal.configs(session_id)
    if config is not None and config.structured != recorded[-1][1].structured:
        kind = "an agent run" if recorded[-1][1].structured else "a tool loop's"
        raise SessionError(
            f"session {session_id!r} is {kind}: replay it with a config of the same kind"
        )
    configs = [(0, config)] if config is not None else recorded
    return JournalFold(journal, session_id, configs, damage=damage, runs=runs)


#: The notices of a call's start and its argument fragments: journals written before they
#: were told recorded no effect for those steps (see `differs`).
_UNTOLD = (ToolCallStreaming, ToolArgumentsStreamed)


def differs(
    entry: JournalEntry, effects: Sequence[StepEffect]
) -> tuple[dict[str, Any], ...] | None:
    """The effects' records when they differ from what `entry` recorded, else None.

    A step recorded with no effect equals the reducer's lone `Emit` of a
    `ToolCallStreaming` or `ToolArgumentsStreamed` notice: journals written before a call's
    start and its argument fragments were told recorded none for those steps
    (`ToolCallStarted`, `ToolCallArgumentsDelta`), and still replay clean.
    """
    recorded = entry.effects
    if not recorded:
        if not effects:
            return None  # nothing to compare
        if len(effects) == 1 and _untold(effects[0]):
            return None  # (a call's start or fragment, recorded before they were told)
    elif len(effects) == 1 == len(recorded) and _same_text(effects[0], recorded[0]):
        return None  # the hot path of text deltas, without building a record
    replayed = tuple(effect_record(effect) for effect in effects)
    if replayed == recorded or replayed == current_records(recorded):
        return None  # (older journals recorded some effects in an earlier shape)
    if list(unreasoned(replayed)) == list(current_records(recorded)):
        return None  # (journals before reason codes recorded results without them)
    return replayed


def _untold(effect: StepEffect) -> bool:
    """Whether `effect` tells a call's start or an argument fragment (see `differs`)."""
    return effect.__class__ is Emit and effect.notice.__class__ in _UNTOLD


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

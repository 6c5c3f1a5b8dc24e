"""A replay's fold takes a SQLite journal's stored runs of deltas whole, and says the same.

`fold_journal(..., runs=True)` (what `replay` uses) folds a run the reducer
accepts as it stands in one call, and any other run one step at a time: the
session it rebuilds, a refused step and a divergence are the ones the fold of
every step gives, naming the exact step.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from toolreel.adapters import (
    JournalCorrupt,
    JournalEntry,
    SQLiteJournal,
    effect_record,
    load_session,
)
from toolreel.adapters._fold import FoldedRun
from toolreel.adapters.records import config_data, event_data
from toolreel.adapters.replay import fold_journal
from toolreel.core import (
    Event,
    LoopConfig,
    ModelResponded,
    PromptSubmitted,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolSpec,
    initial_state,
    step,
)
from toolreel.core._response import calls_of
from toolreel.shell import Divergence, replay

CONFIG = LoopConfig(model="m", tools=(ToolSpec(name="work"),))


def texts(*chunks: str) -> list[Event]:
    return [TextDelta(text=chunk) for chunk in chunks]


def fragments(index: int, *pieces: str) -> list[Event]:
    return [ToolCallArgumentsDelta(index=index, fragment=piece) for piece in pieces]


#: Two turns: a tool call streamed in fragments (two calls interleaved), then text.
SESSION: list[Event] = [
    PromptSubmitted(text="go"),
    *texts("Let ", "me ", "check."),
    ToolCallStarted(index=0, call_id="a", name="work"),
    *fragments(0, '{"n"', ": 1", "}"),
    ToolCallStarted(index=1, call_id="b", name="work"),
    *fragments(1, "{", "}"),
    *fragments(0, ""),
    ModelResponded(finish_reason="tool_calls"),
    ToolFinished(call_id="a", output="one"),
    ToolFinished(call_id="b", output="two"),
    *texts("Done", ": ", "one, two."),
    ModelResponded(),
]


def recorded(events: list[Event]) -> list[JournalEntry]:
    """Each event with the records of the effects `step` gives it, numbered from 1."""
    state, entries = initial_state(CONFIG), []
    for seq, event in enumerate(events, start=1):
        state, effects = step(state, event)
        records = tuple(effect_record(effect) for effect in effects)
        entries.append(JournalEntry(seq=seq, event=event, effects=records))
    return entries


def streamed(text: str) -> dict[str, Any]:
    """The record of a text delta's `Emit(TextStreamed)`."""
    return {"notice": {"text": text, "type": "TextStreamed"}, "type": "Emit"}


def journal(tmp_path, entries: list[JournalEntry]) -> SQLiteJournal:  # type: ignore[no-untyped-def]
    """A SQLite journal holding `entries` as session "s" (runs joined as the writer joins them)."""
    written = SQLiteJournal(tmp_path / "j.db")
    lease = written.begin("s", CONFIG)
    written.append_entries("s", entries)
    written.release(lease)
    return written


def test_a_replay_folds_each_stored_run_at_once_and_rebuilds_the_same_session(tmp_path) -> None:
    sqlite = journal(tmp_path, recorded(SESSION))
    folded = list(fold_journal(sqlite, "s", runs=True))
    runs = [entry for entry, _ in folded if isinstance(entry, FoldedRun)]
    assert [run.seq for run in runs] == [2, 6, 10, 12, 16]
    assert len(folded) == len(SESSION) - 12 + 5  # 12 steps in 5 runs
    session = replay(sqlite, "s")
    assert session == load_session(sqlite, "s")  # every step folded one by one
    assert session.events == len(SESSION)
    assert session.turns[0].text == "Done: one, two."


def test_a_fold_of_runs_ends_at_its_last_step(tmp_path) -> None:
    entries = recorded(SESSION[:7])  # the stream cut off inside the first call's arguments
    fold = fold_journal(journal(tmp_path, entries), "s", runs=True)
    list(fold)
    assert fold.entry == entries[-1]
    assert fold.seq == 7
    assert calls_of(fold.state.stream)[0].arguments == '{"n": 1'


def test_every_other_reader_gets_one_entry_per_step(tmp_path) -> None:
    entries = recorded(SESSION)
    sqlite = journal(tmp_path, entries)
    assert list(sqlite.entries("s")) == entries
    assert [entry for entry, _ in fold_journal(sqlite, "s")] == entries


def test_a_run_the_reducer_refuses_names_its_first_step(tmp_path) -> None:
    late = [JournalEntry(seq=seq, event=TextDelta(text=t), effects=(streamed(t),)) for seq, t in
            [(18, "after"), (19, " the end")]]  # fmt: skip
    sqlite = journal(tmp_path, [*recorded(SESSION), *late])
    result = replay(sqlite, "s")
    assert isinstance(result, Divergence)
    assert result.seq == 18
    assert result.event == TextDelta(text="after")
    assert result.error is not None and "IDLE" in result.error


def test_a_step_inside_a_run_that_replays_differently_is_named_exactly(tmp_path) -> None:
    entries = recorded(SESSION)
    entries[2] = JournalEntry(seq=3, event=TextDelta(text=""), effects=(streamed(""),))
    sqlite = journal(tmp_path, entries)
    result = replay(sqlite, "s")
    assert isinstance(result, Divergence)
    assert (result.seq, result.event) == (3, TextDelta(text=""))
    assert (result.recorded, result.replayed) == ((streamed(""),), ())


def test_a_run_spanning_a_config_change_folds_step_by_step(tmp_path) -> None:
    changed = LoopConfig(model="m2", tools=CONFIG.tools)
    sqlite = journal(tmp_path, recorded(SESSION[:3]))  # the prompt and a run of two texts
    with sqlite3.connect(sqlite.path) as db:  # (`begin` refuses a step already written after 2)
        db.execute(
            "INSERT INTO configs VALUES ('s', 2, ?)",
            (json.dumps(config_data(changed), sort_keys=True),),
        )
    fold = fold_journal(sqlite, "s", runs=True)
    assert [type(entry) for entry, _ in fold] == [JournalEntry] * 3
    assert fold.state.config == changed


def test_a_run_of_no_strings_is_corrupt_at_its_step(tmp_path) -> None:
    sqlite = journal(tmp_path, recorded(SESSION[:4]))
    body = f'[[1, {json.dumps(event_data(SESSION[0]))}, []], ["TextDelta", 2, ["a", 7, "c"]]]'
    with sqlite3.connect(sqlite.path) as db:
        db.execute("UPDATE steps SET body = ?, digest = NULL", (body,))
    with pytest.raises(JournalCorrupt) as caught:
        replay(sqlite, "s")
    assert caught.value.seq == 2

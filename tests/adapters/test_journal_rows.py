"""SQLite rows: stream deltas stored as runs, read back as the very steps that were written."""

from __future__ import annotations

import json
import sqlite3

import attrs
import orjson
import pytest

from toolreel.adapters import (
    Journal,
    JournalCorrupt,
    JournalEntry,
    MemoryJournal,
    SQLiteJournal,
    Step,
    effect_record,
    event_to_json,
    load_session,
)
from toolreel.adapters._rows import encode_row
from toolreel.adapters.records import event_data
from toolreel.adapters.replay import fold_journal
from toolreel.core import (
    LoopConfig,
    ModelResponded,
    PromptSubmitted,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolSpec,
    initial_state,
    step,
)

CONFIG = LoopConfig(model="m", tools=(ToolSpec(name="work"),))

STREAM = [
    PromptSubmitted(text="go"),
    TextDelta(text="Let me "),
    TextDelta(text="check."),
    ToolCallStarted(index=0, call_id="a", name="work"),
    ToolCallArgumentsDelta(index=0, fragment='{"n":'),
    ToolCallArgumentsDelta(index=0, fragment=" 1}"),
    ToolCallStarted(index=1, call_id="b", name="work"),
    ToolCallArgumentsDelta(index=1, fragment="{}"),
    ToolCallArgumentsDelta(index=0, fragment=""),
    ModelResponded(finish_reason="tool_calls"),
]


def steps_of(events: list[object]) -> list[Step]:
    """The steps a runner hands over for `events`, numbered from 1."""
    state, steps = initial_state(CONFIG), []
    for seq, event in enumerate(events, start=1):
        state, effects = step(state, event)  # type: ignore[arg-type]
        steps.append(Step(seq=seq, event=event, effects=effects))  # type: ignore[arg-type]
    return steps


def written(tmp_path, entries: list[JournalEntry]) -> SQLiteJournal:  # type: ignore[no-untyped-def]
    """A SQLite journal holding `entries` as session 's'."""
    journal = SQLiteJournal(tmp_path / "j.db")
    journal.begin("s", CONFIG)
    journal.append_entries("s", entries)
    return journal


def body(journal: SQLiteJournal) -> list[object]:
    """The items of the session's only row."""
    [(text,)] = sqlite3.connect(journal.path).execute("SELECT body FROM steps").fetchall()
    return orjson.loads(text)  # type: ignore[no-any-return]


def test_a_stream_reads_back_as_the_steps_that_were_written(tmp_path) -> None:
    memory = MemoryJournal()
    memory.begin("s", CONFIG)
    memory.append("s", steps_of(STREAM))
    journal = SQLiteJournal(tmp_path / "j.db")
    journal.begin("s", CONFIG)
    journal.append("s", steps_of(STREAM))
    assert list(journal.entries("s")) == list(memory.entries("s"))
    journal.close()


def test_consecutive_deltas_are_stored_as_runs_broken_where_the_call_changes() -> None:
    entries = [
        (s.seq, event_data(s.event), [effect_record(e) for e in s.effects])
        for s in steps_of(STREAM)
    ]
    items = orjson.loads(encode_row(entries))
    assert [item[:2] for item in items] == [
        [1, entries[0][1]],
        ["TextDelta", 2],
        [4, entries[3][1]],
        ["ToolArgumentsStreamed", 5],
        [7, entries[6][1]],
        ["ToolArgumentsStreamed", 8],
        ["ToolCallArgumentsDelta", 9],  # (an empty fragment: told nothing)
        [10, entries[9][1]],
    ]
    assert items[1][2] == ["Let me ", "check."]
    assert items[3][2:] == [0, ['{"n":', " 1}"]]


def test_a_delta_with_other_effects_or_a_gap_in_its_numbers_is_stored_whole(tmp_path) -> None:
    odd = {"notice": {"text": "elsewhere", "type": "TextStreamed"}, "type": "Emit"}
    entries = [
        JournalEntry(seq=1, event=TextDelta(text="a"), effects=(odd,)),
        JournalEntry(seq=2, event=TextDelta(text="b"), effects=()),
        JournalEntry(seq=3, event=ToolCallArgumentsDelta(index=0, fragment="{"), effects=(odd,)),
        JournalEntry(seq=4, event=ToolCallArgumentsDelta(index=0, fragment="x"), effects=()),
        JournalEntry(seq=6, event=ToolCallArgumentsDelta(index=0, fragment="}"), effects=()),
    ]
    journal = written(tmp_path, entries)
    assert list(journal.entries("s")) == entries
    assert [item[0] for item in body(journal)] == [
        1,
        2,
        3,
        "ToolCallArgumentsDelta",
        "ToolCallArgumentsDelta",
    ]
    journal.close()


def untold(steps: list[Step]) -> list[JournalEntry]:
    """`steps` as code before a call's start and fragments were told journaled them."""
    return [
        JournalEntry(
            seq=s.seq,
            event=s.event,
            effects=()
            if isinstance(s.event, ToolCallStarted | ToolCallArgumentsDelta)
            else tuple(effect_record(e) for e in s.effects),
        )
        for s in steps
    ]


def replayed_clean(journal: Journal, *, runs: bool) -> bool:
    """Whether folding session 's' again gives every step's recorded effects."""
    fold = fold_journal(journal, "s", runs=runs)
    return all(fold.differs(entry, effects) is None for entry, effects in fold)


def test_fragments_written_before_they_were_told_read_and_replay_clean(tmp_path) -> None:
    old = untold(steps_of(STREAM))
    journal = written(tmp_path, old)
    assert [item[0] for item in body(journal)][3:5] == ["ToolCallArgumentsDelta", 7]
    assert list(journal.entries("s")) == old
    assert replayed_clean(journal, runs=True)
    assert replayed_clean(journal, runs=False)
    memory = MemoryJournal()
    memory.begin("s", CONFIG)
    memory.append_entries("s", old)
    assert replayed_clean(memory, runs=False)
    journal.close()


def test_a_fragment_recorded_with_no_effect_may_not_hide_another_notice(tmp_path) -> None:
    old = untold(steps_of(STREAM))
    old[2] = attrs.evolve(old[2], effects=())  # a text delta recorded without its text
    journal = written(tmp_path, old)
    assert not replayed_clean(journal, runs=False)
    journal.close()


def test_a_row_written_before_runs_still_reads(tmp_path) -> None:
    steps = steps_of(STREAM)
    journal = SQLiteJournal(tmp_path / "j.db")
    journal.begin("s", CONFIG)
    journal.close()
    text = json.dumps(
        [
            [s.seq, json.loads(event_to_json(s.event)), [effect_record(e) for e in s.effects]]
            for s in steps
        ]
    )
    db = sqlite3.connect(tmp_path / "j.db")
    db.execute("INSERT INTO steps VALUES ('s', 1, ?, ?, NULL)", (len(steps), text))
    db.commit()
    db.close()
    journal = SQLiteJournal(tmp_path / "j.db")
    memory = MemoryJournal()
    memory.append("s", steps)
    assert list(journal.entries("s")) == list(memory.entries("s"))
    journal.close()


def test_a_damaged_run_is_reported_at_its_first_step(tmp_path) -> None:
    journal = SQLiteJournal(tmp_path / "j.db")
    journal.begin("s", CONFIG)
    journal.append("s", steps_of(STREAM))
    journal.close()
    db = sqlite3.connect(tmp_path / "j.db")
    db.execute("UPDATE steps SET body = replace(body, '\"check.\"]', '\"check.\"], 7')")
    db.commit()
    db.close()
    journal = SQLiteJournal(tmp_path / "j.db")
    with pytest.raises(JournalCorrupt, match="step 2 is damaged"):
        list(journal.entries("s"))
    journal.close()


def test_an_edited_text_in_a_run_is_shown_with_a_checksum_warning(tmp_path) -> None:
    journal = SQLiteJournal(tmp_path / "j.db")
    journal.begin("s", CONFIG)
    journal.append("s", steps_of(STREAM))
    journal.close()
    db = sqlite3.connect(tmp_path / "j.db")
    db.execute("UPDATE steps SET body = replace(body, 'Let me ', 'Let us ')")
    db.commit()
    db.close()
    journal = SQLiteJournal(tmp_path / "j.db")
    [warning] = load_session(journal, "s").warnings
    assert "checksum" in warning and "step(s) 1-10" in warning
    assert next(e for e in journal.entries("s") if e.seq == 2).event == TextDelta(text="Let us ")
    journal.close()

"""Every journal keeps where a forked or rerun session came from, beside its steps.

The origin is metadata: a session without one (any session begun by a prompt, and
every session of a journal written before origins existed) has None, and the
steps read back the same with or without it.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from toolreel.adapters import (
    JournalCorrupt,
    JSONLJournal,
    MemoryJournal,
    SessionOrigin,
    SQLiteJournal,
    Step,
    load_session,
)
from toolreel.adapters._transcript import render_transcript
from toolreel.core import LoopConfig, PromptSubmitted, initial_state, step
from toolreel.shell import export_session, import_session

OLD = Path(__file__).parent.parent / "shell" / "journals"
FORK = SessionOrigin(
    kind="fork", session_id="orig", seq=12, turn=1, round=2, note="result of call_1 replaced"
)
RERUN = SessionOrigin(kind="rerun", session_id="orig", note="model gpt-4o")


@pytest.fixture(params=["memory", "sqlite", "jsonl", "postgres"])
def journal(request, tmp_path):
    made = {
        "memory": MemoryJournal,
        "sqlite": lambda: SQLiteJournal(tmp_path / "j.db"),
        "jsonl": lambda: JSONLJournal(tmp_path / "j.jsonl"),
        "postgres": lambda: request.getfixturevalue("postgres_journal"),
    }[request.param]()
    yield made
    made.close()


def _session(journal, session_id: str) -> None:
    """A session of one prompt step."""
    config = LoopConfig(model="m")
    lease = journal.begin(session_id, config)
    event = PromptSubmitted(text="hi")
    _, effects = step(initial_state(config), event)
    journal.append(session_id, [Step(seq=1, event=event, effects=effects)])
    journal.release(lease)


def test_a_journal_keeps_each_sessions_origin_and_none_for_the_others(journal) -> None:
    for sid in ("orig", "forked", "rerun"):
        _session(journal, sid)
    journal.set_origin("forked", FORK)
    journal.set_origin("rerun", RERUN)
    assert journal.origin("forked") == FORK
    assert journal.origin("rerun") == RERUN
    assert journal.origin("orig") is None
    assert journal.origin("unknown") is None
    assert journal.sessions() == ["orig", "forked", "rerun"]
    assert [e.seq for e in journal.entries("forked")] == [1]


def test_a_loaded_session_carries_its_origin_and_its_transcript_says_it(journal) -> None:
    _session(journal, "orig")
    _session(journal, "forked")
    journal.set_origin("forked", FORK)
    forked, original = load_session(journal, "forked"), load_session(journal, "orig")
    assert forked.origin == FORK
    assert original.origin is None
    text = render_transcript(forked)
    assert "from: fork of orig at step 12 (turn 1, round 2): result of call_1 replaced" in text
    assert "from:" not in render_transcript(original)


@pytest.mark.parametrize("name", ["bfd8293.db", "bfd8293.jsonl"])
def test_a_journal_older_than_origins_reads_as_sessions_without_one_and_takes_one(
    name: str, tmp_path: Path
) -> None:
    path = tmp_path / name
    shutil.copy(OLD / name, path)
    journal = SQLiteJournal(path) if path.suffix == ".db" else JSONLJournal(path)
    try:
        assert all(journal.origin(sid) is None for sid in journal.sessions())
        journal.set_origin("budget", RERUN)
        assert journal.origin("budget") == RERUN
        assert load_session(journal, "budget").origin == RERUN
    finally:
        journal.close()


def test_an_sqlite_file_older_than_origins_is_read_without_making_their_table(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    shutil.copy(OLD / "bfd8293.db", path)
    journal = SQLiteJournal(path)
    try:
        assert [journal.origin(sid) for sid in journal.sessions()] == [None] * 4
        assert load_session(journal, "budget").origin is None
    finally:
        journal.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert "origins" not in tables  # opened and read: not written to


def test_a_postgres_database_older_than_origins_opens_without_making_their_table(
    postgres_dsn: str,
) -> None:
    from toolreel.adapters import PostgresJournal  # noqa: PLC0415 - psycopg, once it is known

    journal = PostgresJournal(postgres_dsn)
    try:
        _session(journal, "orig")
        assert journal.origin("orig") is None
        assert _table(postgres_dsn) == (None,)  # a role that may not create one opens it
        journal.set_origin("orig", FORK)
        assert journal.origin("orig") == FORK
    finally:
        journal.close()


def _table(dsn: str) -> tuple[object, ...] | None:
    """Whether the origins' table exists in the DSN's schema, asked on a connection of our own."""
    import psycopg  # noqa: PLC0415 - with the postgres extra only

    with psycopg.connect(dsn) as db:
        return db.execute("SELECT to_regclass('toolreel_origins')").fetchone()


def test_an_exported_session_takes_its_origin_along(tmp_path: Path) -> None:
    source = SQLiteJournal(tmp_path / "a.db")
    _session(source, "forked")
    source.set_origin("forked", FORK)
    export_session(source, "forked", tmp_path / "out.jsonl")
    source.close()
    target = SQLiteJournal(tmp_path / "b.db")
    try:
        import_session(tmp_path / "out.jsonl", target)
        assert target.origin("forked") == FORK
    finally:
        target.close()


def test_an_origin_that_does_not_decode_is_a_corrupt_journal_naming_the_session(
    tmp_path: Path,
) -> None:
    journal = SQLiteJournal(tmp_path / "j.db")
    _session(journal, "forked")
    journal.set_origin("forked", FORK)
    journal.close()
    with sqlite3.connect(tmp_path / "j.db") as db:
        db.execute('UPDATE origins SET origin = \'{"kind": "spoon"}\'')
    journal = SQLiteJournal(tmp_path / "j.db")
    try:
        with pytest.raises(JournalCorrupt, match="forked"):
            journal.origin("forked")
    finally:
        journal.close()


def test_an_origin_describes_itself_in_one_line() -> None:
    assert RERUN.describe() == "rerun of orig: model gpt-4o"
    assert SessionOrigin(kind="fork", session_id="a", seq=3, turn=2).describe() == (
        "fork of a at step 3 (turn 2)"
    )

"""SQLiteJournal: sessions in one SQLite file (WAL mode), the default on-disk journal.

Rows hold JSON text (orjson: a replay decodes every row, and it is ~4x faster
than the standard library at that).

Each `append` is one transaction; with WAL and `synchronous=NORMAL` a committed
step survives the process being killed at any moment (an OS crash may lose the
last commits). Calls are made from worker threads by the shell, one at a time.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from toolreel.core import Event, LoopConfig

from ._journal import (
    JournalEntry,
    Step,
    config_data,
    config_of,
    effect_record,
    event_data,
    event_of,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    started INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS configs (
    session_id TEXT NOT NULL,
    from_seq INTEGER NOT NULL,
    config TEXT NOT NULL,
    PRIMARY KEY (session_id, from_seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS steps (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    effects TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
"""


class SQLiteJournal:
    """A journal in the SQLite file at `path` (created if missing)."""

    def __init__(self, path: str | Path) -> None:
        """Open (or create) the file and its tables."""
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def __repr__(self) -> str:
        """Where the journal is."""
        return f"SQLiteJournal({str(self.path)!r})"

    def begin(self, session_id: str, config: LoopConfig, *, from_seq: int = 0) -> None:
        """Record the config in force after step `from_seq` (unless it already is)."""
        text = json.dumps(config_data(config), sort_keys=True)
        with self._lock:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT OR IGNORE INTO sessions (id, started) VALUES "
                "(?, (SELECT COUNT(*) FROM sessions))",
                (session_id,),
            )
            latest = self._db.execute(
                "SELECT config FROM configs WHERE session_id = ? ORDER BY from_seq DESC LIMIT 1",
                (session_id,),
            ).fetchone()
            if latest is None or latest[0] != text:
                self._db.execute(
                    "INSERT OR REPLACE INTO configs VALUES (?, ?, ?)", (session_id, from_seq, text)
                )
            self._db.execute("COMMIT")

    def configs(self, session_id: str) -> list[tuple[int, LoopConfig]]:
        """The session's configs with the step after which each applies."""
        with self._lock:
            rows = self._db.execute(
                "SELECT from_seq, config FROM configs WHERE session_id = ? ORDER BY from_seq",
                (session_id,),
            ).fetchall()
        if not rows:
            raise KeyError(session_id)
        return [(seq, config_of(json.loads(text))) for seq, text in rows]

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Write the steps in one transaction."""
        self._insert(
            (session_id, step.seq, step.event, [effect_record(e) for e in step.effects])
            for step in steps
        )

    def append_entries(self, session_id: str, entries: Sequence[JournalEntry]) -> None:
        """Write recorded steps in one transaction."""
        self._insert((session_id, e.seq, e.event, list(e.effects)) for e in entries)

    def _insert(self, steps: Iterable[tuple[str, int, Event, list[dict[str, Any]]]]) -> None:
        """Insert step rows in one transaction."""
        rows = [
            (
                session_id,
                seq,
                orjson.dumps(event_data(event)).decode(),
                orjson.dumps(effects).decode(),
            )
            for session_id, seq, event, effects in steps
        ]
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT INTO steps VALUES (?, ?, ?, ?)", rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def config(self, session_id: str) -> LoopConfig:
        """The session's latest config."""
        return self.configs(session_id)[-1][1]

    def entries(self, session_id: str) -> Iterator[JournalEntry]:
        """The session's steps in order, decoded as they are read."""
        last = 0
        while True:  # in pages, so memory does not grow with the session
            with self._lock:
                rows = self._db.execute(
                    "SELECT seq, event, effects FROM steps WHERE session_id = ? AND seq > ? "
                    "ORDER BY seq LIMIT 1000",
                    (session_id, last),
                ).fetchall()
            for seq, event, effects in rows:
                yield JournalEntry(
                    seq=seq,
                    event=event_of(orjson.loads(event)),
                    effects=tuple(orjson.loads(effects)),
                )
            if len(rows) < 1000:
                return
            last = rows[-1][0]

    def sessions(self) -> list[str]:
        """Session ids, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT id FROM sessions ORDER BY started").fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

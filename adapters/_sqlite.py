"""SQLiteJournal: sessions in one SQLite file (WAL mode), the default on-disk journal.

Steps are stored in batches, one row per run of up to 256 consecutive steps
written together, as JSON text `[[seq, event, effects], ...]`: a replay reads
and decodes every step, and fewer, larger rows decoded by orjson (~4x faster
than the standard library) keep that cheap.

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
)
from ._serde import event_data, event_of

BATCH = 256

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
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session_id, first_seq)
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
        """Insert the steps, in rows of up to `BATCH` steps, in one transaction."""
        items = [(sid, [seq, event_data(event), effects]) for sid, seq, event, effects in steps]
        rows = [
            (
                chunk[0][0],
                chunk[0][1][0],
                chunk[-1][1][0],
                orjson.dumps([step for _, step in chunk]).decode(),
            )
            for chunk in (items[i : i + BATCH] for i in range(0, len(items), BATCH))
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
        """The session's steps in order, decoded as they are read (a page of rows at a time)."""
        last = -1
        while True:
            with self._lock:
                rows = self._db.execute(
                    "SELECT first_seq, body FROM steps WHERE session_id = ? AND first_seq > ? "
                    "ORDER BY first_seq LIMIT 16",
                    (session_id, last),
                ).fetchall()
            for _, body in rows:
                for seq, event, effects in orjson.loads(body):
                    yield JournalEntry(seq=seq, event=event_of(event), effects=tuple(effects))
            if len(rows) < 16:
                return
            last = rows[-1][0]

    def sessions(self) -> list[str]:
        """Session ids, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT id FROM sessions ORDER BY started").fetchall()
        return [row[0] for row in rows]

    def release(self, session_id: str) -> None:
        """Give up this writer's ownership of the session."""

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

"""SQLiteJournal: sessions in one SQLite file (WAL mode), the default on-disk journal.

Each `append` is one transaction; with WAL and `synchronous=NORMAL` a committed
step survives the process being killed at any moment (an OS crash may lose the
last commits). Calls are made from worker threads by the shell, one at a time.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from toolreel.core import LoopConfig

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
    started INTEGER NOT NULL,
    config TEXT NOT NULL
);
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

    def begin(self, session_id: str, config: LoopConfig) -> None:
        """Record the session's config (replacing it on resume)."""
        text = json.dumps(config_data(config), sort_keys=True)
        with self._lock:
            self._db.execute(
                "INSERT INTO sessions (id, started, config) VALUES "
                "(?, (SELECT COUNT(*) FROM sessions), ?) "
                "ON CONFLICT(id) DO UPDATE SET config = excluded.config",
                (session_id, text),
            )

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Write the steps in one transaction."""
        rows = [
            (
                session_id,
                step.seq,
                json.dumps(event_data(step.event), separators=(",", ":")),
                json.dumps([effect_record(e) for e in step.effects], separators=(",", ":")),
            )
            for step in steps
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
        """The session's config."""
        with self._lock:
            row = self._db.execute(
                "SELECT config FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        if row is None:
            raise KeyError(session_id)
        return config_of(json.loads(row[0]))

    def entries(self, session_id: str) -> Iterator[JournalEntry]:
        """The session's steps in order, decoded as they are read."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, event, effects FROM steps WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        for seq, event, effects in rows:
            yield JournalEntry(
                seq=seq, event=event_of(json.loads(event)), effects=tuple(json.loads(effects))
            )

    def sessions(self) -> list[str]:
        """Session ids, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT id FROM sessions ORDER BY started").fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

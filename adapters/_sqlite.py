"""SQLiteJournal: sessions in one SQLite file (WAL mode), the default on-disk journal.

Steps are stored in batches, one row per run of up to 256 consecutive steps
written together, as JSON text (`_rows.py`: `[seq, event, effects]` items, text
deltas and argument fragments joined into runs) with a digest of that text
(checked on read: an edited row is reported, see `entries`): a replay reads
and decodes every step, and fewer, larger rows decoded by orjson (~4x faster
than the standard library) keep that cheap. A replay reads `stored_items`, not
`entries`: each stored run of deltas whole, for its fold to check at once.

Each `append` is one transaction; with WAL and `synchronous=NORMAL` a committed
step survives the process being killed at any moment (an OS crash may lose the
last commits). The WAL is checkpointed into the main file at the end of each
turn and on `close`, so a WAL deleted after a crash loses at most the turn in
flight. A file locked by another connection is waited for (`busy_seconds`,
with backoff); steps that still cannot be written stay in memory and are
written first by the next `append`, `flush` or `close`.

One writer per session: `begin` takes the session's lease (see `_lease.py`)
and gives its caller the `Lease` that `release` takes; every write renews it.
Calls are made from worker threads by the shell, one at a time.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from toolreel.core import Finish

from ._errors import (
    JournalCorrupt,
    JournalError,
    JournalUnavailable,
    SessionNotFound,
)
from ._journal import (
    Damage,
    JournalEntry,
    SessionConfig,
    Step,
    StepEvent,
    body_digest,
    config_data,
    config_of,
    effect_record,
)
from ._lease import LEASE_SECONDS, Heartbeat, Holds, Lease, Owner, check_current, check_free, now
from ._origin import SessionOrigin, origin_text, stored_origin
from ._rows import Item, StepData, decode_items, decode_row, encode_row
from ._serde import event_data

BATCH = 256
T = TypeVar("T")

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
    digest TEXT,
    PRIMARY KEY (session_id, first_seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL
);
"""

#: Made by the first `set_origin`, so that opening a file older than origins never writes it.
_ORIGINS = """
CREATE TABLE IF NOT EXISTS origins (
    session_id TEXT PRIMARY KEY,
    origin TEXT NOT NULL
) WITHOUT ROWID
"""

Row = tuple[str, int, int, str, str]


def _is_busy(exc: sqlite3.Error) -> bool:
    """Whether the error is another connection holding the file (worth waiting for)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SQLiteJournal:
    """A journal in the SQLite file at `path` (created if missing)."""

    def __init__(
        self,
        path: str | Path,
        *,
        lease_seconds: float = LEASE_SECONDS,
        busy_seconds: float = 30.0,
    ) -> None:
        """Open (or create) the file and its tables (adding what older files lack)."""
        self.path = Path(path)
        self.lease_seconds = lease_seconds
        self.busy_seconds = busy_seconds
        self.owner = Owner.here()
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # one flush at a time: Clients share a journal
        self._holds = Holds(self.owner)  # which of our Clients holds each session
        self._leased: dict[str, float] = {}  # session -> when our lease (the row) runs out
        self._unsettled: set[str] = set()  # given back with rows pending: ours until written
        self._pending: list[Row] = []  # rows a locked file kept us from writing
        self._heartbeat = Heartbeat(self.heartbeat, lease_seconds / 3)
        self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        """The connection, with the schema in place; a path that is no journal is refused."""
        if self.path.is_dir():
            raise JournalUnavailable(f"cannot open journal {self.path}: it is a directory")
        try:
            db = sqlite3.connect(
                self.path,
                check_same_thread=False,
                isolation_level=None,
                timeout=min(self.busy_seconds, 1.0),
            )
        except sqlite3.Error as exc:
            raise JournalUnavailable(f"cannot open journal {self.path}: {exc}") from exc
        try:
            self._retry(lambda: self._prepare(db), "open")
        except JournalError:
            db.close()
            raise
        return db

    def _prepare(self, db: sqlite3.Connection) -> None:
        """WAL mode, the tables, and the columns older files lack."""
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(steps)")}
        if "digest" not in columns:
            db.execute("ALTER TABLE steps ADD COLUMN digest TEXT")

    def __repr__(self) -> str:
        """Where the journal is."""
        return f"SQLiteJournal({str(self.path)!r})"

    # --- the database, guarded ---------------------------------------------------------

    def _retry(self, work: Callable[[], T], doing: str, *, patient: bool = True) -> T:
        """Run `work`; while the file is locked, retry with backoff up to `busy_seconds`."""
        deadline = time.monotonic() + (self.busy_seconds if patient else 0.0)
        pause = 0.01
        while True:
            try:
                return work()
            except sqlite3.Error as exc:
                if not _is_busy(exc) or time.monotonic() + pause > deadline:
                    raise self._translate(exc, doing) from exc
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def _translate(self, exc: sqlite3.Error, doing: str) -> JournalError:
        """A sqlite3 error as a journal error naming the file."""
        if _is_busy(exc):
            return JournalUnavailable(
                f"cannot {doing} journal {self.path}: the file stays locked by another "
                f"connection ({exc}) after {self.busy_seconds:g} s"
            )
        if isinstance(exc, sqlite3.OperationalError):
            return JournalUnavailable(f"cannot {doing} journal {self.path}: {exc}")
        if isinstance(exc, sqlite3.IntegrityError):
            return JournalError(f"cannot {doing} journal {self.path}: {exc}")
        return JournalCorrupt(str(self.path), f"not a readable SQLite journal ({exc})")

    def _transaction(self, work: Callable[[], T], doing: str, *, patient: bool = True) -> T:
        """Run `work` in one write transaction (rolled back if it fails), retried if locked."""

        def attempt() -> T:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                result = work()
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return result

        with self._lock:
            return self._retry(attempt, doing, patient=patient)

    def _read(self, query: str, args: tuple[Any, ...]) -> list[Any]:
        """Rows of a query (readers never wait for writers in WAL mode)."""
        with self._lock:
            return self._retry(lambda: self._db.execute(query, args).fetchall(), "read")

    # --- leases ------------------------------------------------------------------------

    def _take(self, session_id: str) -> None:
        """Take or renew the session's lease (inside a transaction); `SessionBusy` if held."""
        row = self._db.execute(
            "SELECT owner, expires FROM leases WHERE session_id = ?", (session_id,)
        ).fetchone()
        holder = Owner.of(json.loads(row[0])) if row else None
        check_free(session_id, self.owner, holder, row[1] if row else 0.0, now())
        expires = now() + self.lease_seconds
        self._db.execute(
            "INSERT OR REPLACE INTO leases VALUES (?, ?, ?)",
            (session_id, json.dumps(self.owner.data()), expires),
        )
        self._leased[session_id] = expires
        self._heartbeat.start()

    def _renew_due(self, session_id: str) -> bool:
        """Whether a write must renew (or take) the lease: past half of it, or not held."""
        expires = self._leased.get(session_id)
        return expires is None or expires - now() < self.lease_seconds / 2

    def heartbeat(self) -> None:
        """Renew every lease this journal holds (the heartbeat thread calls this)."""
        for session_id in list(self._leased):
            # one try (the lock not held for long): a busy file waits for the next beat
            self._transaction(functools.partial(self._renew, session_id), "renew", patient=False)

    def _renew(self, session_id: str) -> None:
        """Renew the lease if this journal still holds it (a release may have come between)."""
        if session_id in self._leased:
            self._take(session_id)

    def release(self, lease: Lease) -> None:
        """Give the session `lease` holds back, once its pending steps are written.

        If they cannot be written yet (`JournalUnavailable`), the session stays
        this journal's until the next `append`, `flush` or `close` writes them.
        """
        if not self._holds.give_back(lease):
            return  # not the holder: nothing of its to give back
        self._unsettled.add(lease.session_id)
        self.flush()

    def _let_go(self, session_id: str) -> None:
        """After a refused `begin`: a lease of ours on the session is dropped if nothing holds
        it (now, or by the next flush if the file is busy)."""
        if session_id in self._leased:
            self._unsettled.add(session_id)
            with self._flushing, contextlib.suppress(JournalError):
                self._settle()

    def _settle(self) -> None:
        """Drop the leases of sessions given back, now that nothing of theirs is pending."""
        for session_id in list(self._unsettled):
            if any(row[0] == session_id for row in self._pending):
                continue
            self._unsettled.discard(session_id)
            self._transaction(functools.partial(self._drop_lease, session_id), "release")

    def _drop_lease(self, session_id: str) -> None:
        """Delete the session's lease if it is still ours and none of our holders took it again."""
        if session_id in self._holds:
            return
        self._leased.pop(session_id, None)
        self._db.execute(
            "DELETE FROM leases WHERE session_id = ? AND owner = ?",
            (session_id, json.dumps(self.owner.data())),
        )

    # --- writing -----------------------------------------------------------------------

    def begin(self, session_id: str, config: SessionConfig, *, from_seq: int = 0) -> Lease:
        """Take the session's lease; record the config in force after `from_seq` (if new).

        Steps of the session still pending are written first; a session with
        steps after `from_seq` is refused (`_lease.check_current`).
        """
        text = json.dumps(config_data(config), sort_keys=True)
        lease = self._holds.take(session_id)
        try:
            if any(row[0] == session_id for row in self._pending):
                self.flush()
            self._transaction(functools.partial(self._begin, session_id, text, from_seq), "write")
        except BaseException:
            self._holds.give_back(lease)
            self._let_go(session_id)
            raise
        return lease

    def _begin(self, session_id: str, text: str, from_seq: int) -> None:
        """`begin`'s transaction: no step after `from_seq`, the lease, the config if new."""
        last = self._db.execute(
            "SELECT MAX(last_seq) FROM steps WHERE session_id = ?", (session_id,)
        ).fetchone()
        check_current(session_id, last[0] if last else None, from_seq)
        self._take(session_id)
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

    def configs(self, session_id: str) -> list[tuple[int, SessionConfig]]:
        """The session's configs with the step after which each applies."""
        rows = self._read(
            "SELECT from_seq, config FROM configs WHERE session_id = ? ORDER BY from_seq",
            (session_id,),
        )
        if not rows:
            raise SessionNotFound(session_id, str(self.path))
        try:
            return [(seq, config_of(json.loads(text))) for seq, text in rows]
        except Exception as exc:
            raise JournalCorrupt(
                str(self.path), f"undecodable config ({exc})", session_id=session_id
            ) from exc

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        """Write the steps in one transaction (after any still pending)."""
        self._insert(
            session_id,
            ((step.seq, step.event, [effect_record(e) for e in step.effects]) for step in steps),
            turn_ended=any(isinstance(e, Finish) for step in steps for e in step.effects),
        )

    def append_entries(self, session_id: str, entries: Sequence[JournalEntry]) -> None:
        """Write recorded steps in one transaction."""
        self._insert(session_id, ((e.seq, e.event, list(e.effects)) for e in entries), True)

    def _insert(
        self,
        session_id: str,
        steps: Iterable[tuple[int, StepEvent, list[dict[str, Any]]]],
        turn_ended: bool,
    ) -> None:
        """Insert the steps, in rows of up to `BATCH` steps, in one transaction."""
        items: list[StepData] = [(seq, event_data(event), effects) for seq, event, effects in steps]
        for start in range(0, len(items), BATCH):
            chunk = items[start : start + BATCH]
            body = encode_row(chunk)
            self._pending.append((session_id, chunk[0][0], chunk[-1][0], body, body_digest(body)))
        self.flush()
        if turn_ended:
            self.checkpoint("PASSIVE")

    def flush(self) -> None:
        """Write the steps a locked file kept back; `JournalUnavailable` if it still cannot."""
        with self._flushing:  # the rows taken are exactly the rows then removed
            self._flush_pending()
            self._settle()

    def _flush_pending(self) -> None:
        """`flush`, its lock held."""
        if not self._pending:
            return
        rows = list(self._pending)

        def work() -> None:
            for sid in dict.fromkeys(row[0] for row in rows):
                if self._renew_due(sid):
                    self._take(sid)
            self._db.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", rows)

        try:
            self._transaction(work, "write")
        except JournalUnavailable:
            raise  # kept: written by the next append, flush or close
        except BaseException:
            del self._pending[: len(rows)]  # refused for good (another owner, a duplicate)
            raise
        del self._pending[: len(rows)]

    def checkpoint(self, mode: str = "TRUNCATE") -> None:
        """Move the WAL's pages into the main file, so the file alone holds every step.

        At the end of a turn PASSIVE (it never waits for another process's
        readers, so it never holds a turn up); on close TRUNCATE (the WAL emptied).
        """
        with self._lock, contextlib.suppress(sqlite3.Error):  # readers in the way: next time
            self._db.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()

    # --- reading -----------------------------------------------------------------------

    def config(self, session_id: str) -> SessionConfig:
        """The session's latest config."""
        return self.configs(session_id)[-1][1]

    def entries(self, session_id: str, *, damage: Damage | None = None) -> Iterator[JournalEntry]:
        """The session's steps in order, decoded as they are read (a page of rows at a time).

        A row whose digest does not match its text is told to `damage` (it still
        decodes); a row that does not decode raises `JournalCorrupt`.
        """
        for first, body, legacy in self._bodies(session_id, damage):
            yield from decode_row(str(self.path), session_id, first, body, legacy=legacy)

    def stored_items(self, session_id: str) -> Iterator[Item]:
        """The session's steps in order as rows store them: each run of deltas whole (a
        `Run`), every other step a `JournalEntry` (for a replay's fold; see `entries`)."""
        for first, body, legacy in self._bodies(session_id, None):
            yield from decode_items(str(self.path), session_id, first, body, legacy=legacy)

    def _bodies(self, session_id: str, damage: Damage | None) -> Iterator[tuple[int, str, bool]]:
        """Each row's first seq, text and whether it is legacy, in order; edits told to `damage`."""
        last = -1
        while True:
            rows = self._read(
                "SELECT first_seq, last_seq, body, digest FROM steps "
                "WHERE session_id = ? AND first_seq > ? ORDER BY first_seq LIMIT 16",
                (session_id, last),
            )
            for first, final, body, digest in rows:
                if damage is not None and digest is not None and digest != body_digest(body):
                    damage.edited(str(self.path), session_id, first, final)
                yield first, body, digest is None
            if len(rows) < 16:
                return
            last = rows[-1][0]

    def sessions(self) -> list[str]:
        """Session ids, oldest first."""
        rows = self._read("SELECT id FROM sessions ORDER BY started", ())
        return [row[0] for row in rows]

    def set_origin(self, session_id: str, origin: SessionOrigin) -> None:
        """Record where the session came from (the first one makes the origins' table)."""
        text = origin_text(origin)

        def write() -> None:
            self._db.execute(_ORIGINS)
            self._db.execute("INSERT OR REPLACE INTO origins VALUES (?, ?)", (session_id, text))

        self._transaction(write, "write")

    def origin(self, session_id: str) -> SessionOrigin | None:
        """Where the session came from, if it was forked or rerun (none in a file without
        the origins' table)."""
        made = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'origins'"
        if not self._read(made, ()):
            return None
        rows = self._read("SELECT origin FROM origins WHERE session_id = ?", (session_id,))
        if not rows:
            return None
        return stored_origin(str(self.path), session_id, rows[0][0])

    def close(self) -> None:
        """Write what is pending, give up the leases, checkpoint the WAL, close the connection."""
        self._heartbeat.stop()
        self._holds.clear()
        self._unsettled.update(self._leased)
        try:
            self.flush()
            self.checkpoint()
        finally:
            with self._lock:
                self._db.close()

"""Opening a journal file by its path, with one error naming the path for every way it fails.

A directory, a missing folder, a file that cannot be written, a ".db" that is
not SQLite, a ".jsonl" that is not JSON lines: each is a `JournalUnavailable`
(cannot be opened) or a `JournalCorrupt` (opened, but not a journal), never a
raw `OSError`, `sqlite3` or `orjson` error.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from toolreel.adapters import (
    Journal,
    JournalCorrupt,
    JournalUnavailable,
    JSONLJournal,
    SQLiteJournal,
)
from toolreel.core import ToolreelError

SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite(path: Path) -> bool:
    """Whether the file starts as a SQLite database does (False if it cannot be read)."""
    try:
        with path.open("rb") as file:
            return file.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def open_path(path: Path, *, jsonl: bool | None = None) -> Journal:
    """The journal kept in the file at `path` (created if missing): JSON lines or SQLite.

    `jsonl` None decides by the suffix (".jsonl"); what is in the file is
    checked now, so a damaged file fails here rather than in the middle of a turn.
    """
    jsonl = path.suffix == ".jsonl" if jsonl is None else jsonl
    if path.is_dir():
        raise JournalUnavailable(f"cannot open journal {path}: it is a directory")
    if not jsonl and path.exists() and path.stat().st_size and not is_sqlite(path):
        raise JournalCorrupt(str(path), "not a SQLite database (a JSON-lines journal ends .jsonl)")
    try:
        journal: Journal = JSONLJournal(path) if jsonl else SQLiteJournal(path)
    except ToolreelError:
        raise
    except (OSError, sqlite3.OperationalError) as exc:
        raise JournalUnavailable(f"cannot open journal {path}: {_reason(exc)}") from exc
    except sqlite3.DatabaseError as exc:  # "file is not a database", a damaged page
        raise JournalCorrupt(str(path), _reason(exc)) from exc
    try:
        journal.sessions()
    except ToolreelError:
        journal.close()
        raise
    except Exception as exc:  # orjson, sqlite3, a line of the wrong shape: damaged content
        journal.close()
        raise JournalCorrupt(str(path), _reason(exc)) from exc
    return journal


def journal_name(journal: object) -> str:
    """A journal for messages: its file, or its kind ("MemoryJournal")."""
    path = getattr(journal, "path", None)
    return str(path) if path is not None else type(journal).__name__


def _reason(exc: BaseException) -> str:
    """A foreign exception in a few words (an OSError without the path it already names)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

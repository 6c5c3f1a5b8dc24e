"""Opening a journal file by its path: which class, by suffix or by the file's header.

The constructors (`SQLiteJournal`, `JSONLJournal`) are where a path that cannot
be a journal is refused: a directory, a missing folder or an unwritable file is
a `JournalUnavailable`, a ".db" that is not SQLite or a ".jsonl" that is not
JSON lines a `JournalCorrupt`, never a raw `OSError`, `sqlite3` or `orjson`
error. Here we only choose the class and read the session list at once.
"""

from __future__ import annotations

from pathlib import Path

from toolreel.adapters import Journal, JSONLJournal, SQLiteJournal

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

    `jsonl` None decides by the suffix (".jsonl"); the sessions are read now,
    so a damaged file fails here rather than in the middle of a turn.
    """
    jsonl = path.suffix == ".jsonl" if jsonl is None else jsonl
    journal: Journal = JSONLJournal(path) if jsonl else SQLiteJournal(path)
    try:
        journal.sessions()
    except BaseException:
        journal.close()
        raise
    return journal


def journal_name(journal: object) -> str:
    """A journal for messages: its file, or its kind ("MemoryJournal")."""
    path = getattr(journal, "path", None)
    return str(path) if path is not None else type(journal).__name__

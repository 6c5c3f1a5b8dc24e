"""Opening a journal by its path or URL: which class, by scheme, suffix or the file's header.

A `postgresql://` (or `postgres://`) URL opens a `PostgresJournal` (psycopg is
imported then, not before); the command line keeps such a URL as a `DatabaseUrl`,
whose text is the URL with its password masked, so messages never show it.

The constructors (`SQLiteJournal`, `JSONLJournal`) are where a path that cannot
be a journal is refused: a directory, a missing folder or an unwritable file is
a `JournalUnavailable`, a ".db" that is not SQLite or a ".jsonl" that is not
JSON lines a `JournalCorrupt`, never a raw `OSError`, `sqlite3` or `orjson`
error. Here we only choose the class and read the session list at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import attrs

from toolreel.adapters import Journal, JournalUnavailable
from toolreel.adapters.redaction import is_dsn, redacted_dsn
from toolreel.core.record import Value

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
    if jsonl:
        from toolreel.adapters import JSONLJournal  # noqa: PLC0415 - loaded when a file asks for it

        journal: Journal = JSONLJournal(path)
    else:
        from toolreel.adapters import SQLiteJournal  # noqa: PLC0415 - with sqlite3, when asked for

        journal = SQLiteJournal(path)
    try:
        journal.sessions()
    except BaseException:
        journal.close()
        raise
    return journal


def journal_name(journal: object) -> str:
    """A journal for messages: its file, its URL (password masked), or its kind."""
    path = getattr(journal, "path", None)
    if path is not None:
        return str(path)
    name = getattr(journal, "name", None)
    return name if isinstance(name, str) else type(journal).__name__


@attrs.frozen(repr=False, eq=False)
class DatabaseUrl(Value):
    """A journal's database URL as the command line took it; as text, its password masked."""

    url: str = attrs.field(repr=False)

    def __str__(self) -> str:
        """The URL with its password masked (what messages show)."""
        return redacted_dsn(self.url)


#: Where a journal is: a file, or a database URL (as text, or as the command line keeps it).
Location = str | Path | DatabaseUrl


def open_location(location: Location) -> Journal:
    """The journal at a path (see `open_path`) or a PostgreSQL URL (its sessions read now)."""
    url = location.url if isinstance(location, DatabaseUrl) else location
    if not is_dsn(url):
        return open_path(Path(url))
    assert isinstance(url, str)
    try:
        from toolreel.adapters import PostgresJournal  # noqa: PLC0415 - psycopg
    except ImportError as exc:
        raise JournalUnavailable(
            f"cannot open journal {redacted_dsn(url)}: psycopg is not installed "
            "(pip install 'toolreel[postgres]')"
        ) from None if "psycopg" in str(exc) else exc
    journal = PostgresJournal(url)
    try:
        journal.sessions()
    except BaseException:
        journal.close()
        raise
    return journal


@contextlib.contextmanager
def journal_at(where: Location | Journal) -> Iterator[Journal]:
    """The journal `where` names, to read: one at a path or URL is opened here and closed
    after; a `Journal` object is its owner's, used as it is."""
    if not isinstance(where, str | Path | DatabaseUrl):
        yield where
        return
    journal = open_location(where)
    try:
        yield journal
    finally:
        journal.close()

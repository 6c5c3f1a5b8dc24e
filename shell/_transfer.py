"""Moving one session between journals: export to a self-contained JSONL file, import back.

A session's origin (a fork's or a rerun's) goes with it.

A damaged source raises `JournalCorrupt` (naming file, session and step) and
leaves no half-written export behind; a file that cannot be opened raises
`JournalUnavailable`.
"""

from __future__ import annotations

from pathlib import Path

from toolreel.adapters import (
    Journal,
    JournalEntry,
    JournalUnavailable,
    SessionConfig,
    SessionError,
    SessionNotFound,
    SessionOrigin,
)
from toolreel.core import ConfigError

from ._journal_files import journal_name, open_path


def export_session(journal: Journal, session_id: str, path: str | Path) -> Path:
    """Write one session (config and every step) to a new JSON-lines file."""
    target = Path(path)
    if target.suffix != ".jsonl":
        raise ConfigError("path", str(target), "a new JSON-lines file: name it *.jsonl")
    if target.exists():
        raise JournalUnavailable(f"{target} exists; export writes a new file")
    if session_id not in journal.sessions():
        raise SessionNotFound(session_id, journal_name(journal))
    entries = list(journal.entries(session_id))  # read (and check) it all before writing
    configs = journal.configs(session_id)
    origin = journal.origin(session_id)
    out = open_path(target)
    try:
        _write(out, session_id, configs, entries, origin)
    except BaseException:
        out.close()
        target.unlink(missing_ok=True)
        raise
    out.close()
    return target


def _write(
    target: Journal,
    session_id: str,
    configs: list[tuple[int, SessionConfig]],
    entries: list[JournalEntry],
    origin: SessionOrigin | None,
) -> None:
    """Write a session's configs, origin and steps, in order, then give the session up."""
    for index, (from_seq, config) in enumerate(configs):
        lease = target.begin(session_id, config, from_seq=from_seq)
        if index < len(configs) - 1:
            target.release(lease)
    try:
        if origin is not None:
            target.set_origin(session_id, origin)
        target.append_entries(session_id, entries)
    finally:
        target.release(lease)


def import_session(path: str | Path, journal: Journal, session_id: str | None = None) -> str:
    """Copy the session of an exported file into `journal`; its id there."""
    if not Path(path).is_file():
        raise JournalUnavailable(f"cannot import {path}: no such file")
    source = open_path(Path(path), jsonl=True)
    try:
        sessions = source.sessions()
        if session_id is None:
            if len(sessions) != 1:
                detail = f"{path} holds {len(sessions)} sessions; name the one to import"
                raise ConfigError("session_id", None, detail)
            session_id = sessions[0]
        elif session_id not in sessions:
            raise SessionNotFound(session_id, str(path))
        if session_id in journal.sessions():
            where = journal_name(journal)
            raise SessionError(f"session {session_id!r} already exists in {where}")
        entries = list(source.entries(session_id))
        origin = source.origin(session_id)
        _write(journal, session_id, source.configs(session_id), entries, origin)
    finally:
        source.close()
    return session_id

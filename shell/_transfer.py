"""Moving one session between journals: export to a self-contained JSONL file, import back."""

from __future__ import annotations

from pathlib import Path

from toolreel.adapters import Journal, JournalUnavailable, SessionError, SessionNotFound
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
    out = open_path(target)
    try:
        _copy(journal, out, session_id)
    finally:
        out.close()
    return target


def _copy(source: Journal, target: Journal, session_id: str) -> None:
    """Copy a session's configs and steps, in order."""
    for from_seq, config in source.configs(session_id):
        target.begin(session_id, config, from_seq=from_seq)
    target.append_entries(session_id, list(source.entries(session_id)))


def import_session(path: str | Path, journal: Journal, session_id: str | None = None) -> str:
    """Copy the session of an exported file into `journal`; its id there."""
    if not Path(path).is_file():
        raise JournalUnavailable(f"no export at {path}")
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
        _copy(source, journal, session_id)
    finally:
        source.close()
    return session_id

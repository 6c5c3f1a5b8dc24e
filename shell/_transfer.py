"""Moving one session between journals: export to a self-contained JSONL file, import back."""

from __future__ import annotations

from pathlib import Path

from toolreel.adapters import Journal, JSONLJournal


def export_session(journal: Journal, session_id: str, path: str | Path) -> Path:
    """Write one session (config and every step) to a new JSON-lines file."""
    target = Path(path)
    if target.suffix != ".jsonl":
        raise ValueError(f"{target}: an export is a JSON-lines file; name it *.jsonl")
    if target.exists():
        raise FileExistsError(f"{target} exists; export writes a new file")
    out = JSONLJournal(target)
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
    source = JSONLJournal(path)
    try:
        sessions = source.sessions()
        if session_id is None:
            if len(sessions) != 1:
                raise ValueError(f"{path} holds {len(sessions)} sessions; name the one to import")
            session_id = sessions[0]
        if session_id in journal.sessions():
            raise ValueError(f"session {session_id!r} already exists in the target journal")
        _copy(source, journal, session_id)
    finally:
        source.close()
    return session_id

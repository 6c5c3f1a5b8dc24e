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
    config = journal.config(session_id)
    out = JSONLJournal(target)
    try:
        out.begin(session_id, config)
        out.append_entries(session_id, list(journal.entries(session_id)))
    finally:
        out.close()
    return target


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
        journal.begin(session_id, source.config(session_id))
        journal.append_entries(session_id, list(source.entries(session_id)))
    finally:
        source.close()
    return session_id

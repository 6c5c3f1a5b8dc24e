"""Errors the adapters raise: journals that cannot be used, sessions owned or missing.

Part of the tree drawn in `toolreel.shell.errors`, rooted at
`toolreel.core.ToolreelError`.
"""

from __future__ import annotations

from toolreel.core import ToolreelError, UsageError

__all__ = [
    "ContentRefused",
    "DecodeError",
    "JournalCorrupt",
    "JournalError",
    "JournalUnavailable",
    "SessionBusy",
    "SessionError",
    "SessionNotFound",
]


class ContentRefused(UsageError, ValueError):
    """Content the model cannot take (images for a text-only model, an image URL for Ollama).

    The message names the provider and what was refused (adapters/_providers/_images.py).
    """


class DecodeError(ToolreelError, ValueError):
    """Text that is not the JSON form of an event or record (e.g. `event_from_json`)."""


class JournalError(ToolreelError):
    """A journal could not be read or written."""


class JournalCorrupt(JournalError):
    """Stored data that cannot be decoded or fails its checksum: names file, session, seq."""

    def __init__(
        self, path: str, detail: str, *, session_id: str | None = None, seq: int | None = None
    ) -> None:
        """Say where the damage is and what it is."""
        where = path
        if session_id is not None:
            where += f", session {session_id!r}"
        if seq is not None:
            where += f", step {seq}"
        super().__init__(f"journal {where} is damaged: {detail}")
        self.path = path
        self.session_id = session_id
        self.seq = seq


class JournalUnavailable(JournalError):
    """A journal that cannot be opened or stays locked (a path, permissions, another writer)."""


class SessionError(ToolreelError):
    """A session that cannot be used as asked."""


class SessionNotFound(SessionError, UsageError, LookupError):
    """No session with this id in the journal."""

    def __init__(self, session_id: str, journal: str) -> None:
        """Name the session and the journal."""
        super().__init__(f"no session {session_id!r} in {journal}")
        self.session_id = session_id


class SessionBusy(SessionError):
    """The session is owned by another writer (another process or Client) right now."""

    def __init__(self, session_id: str, owner: str, expires_in: float | None = None) -> None:
        """Name the session, its owner and when the lease runs out."""
        detail = f"; its lease expires in {expires_in:.0f} s" if expires_in is not None else ""
        super().__init__(f"session {session_id!r} is in use by {owner}{detail}")
        self.session_id = session_id
        self.owner = owner
        self.expires_in = expires_in

"""A syrupy extension that stores a session (a chat session or an agent run) as its
stable transcript text."""

from __future__ import annotations

from typing import Any

from syrupy.extensions.amber import AmberSnapshotExtension

from toolreel.adapters import Session, render_transcript
from toolreel.shell import AgentSession


def as_session(data: Any) -> Session | AgentSession | None:
    """A session from a `Session` or `AgentSession`, an object with one as `.session`, or None."""
    if isinstance(data, Session | AgentSession):
        return data
    session = getattr(data, "session", None)
    return session if isinstance(session, Session | AgentSession) else None


class TranscriptExtension(AmberSnapshotExtension):
    """Serializes sessions as `render_transcript` text; anything else as syrupy would."""

    def serialize(self, data: Any, **kwargs: Any) -> Any:
        """The transcript of a session."""
        session = as_session(data)
        if session is not None:
            data = render_transcript(session)
        return super().serialize(data, **kwargs)

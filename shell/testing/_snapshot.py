"""A syrupy extension that stores a session (a chat session or an agent run) as its
stable transcript text.

`transcript_snapshot` is a `TranscriptSnapshot`: syrupy's snapshot assertion
(so `--snapshot-update` writes and refreshes the stored transcripts as for
any snapshot) with `hide(...)`, which leaves volatile parts out of the stored
transcript (`render_transcript`'s `hide=`: "usage", "ids", "timings",
"retries"). A failing comparison shows a unified diff of the two transcripts
first, then syrupy's own report.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any, ClassVar

from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.amber import AmberSnapshotExtension

from toolreel.adapters import Session, render_transcript
from toolreel.adapters._transcript import hidden
from toolreel.shell import AgentSession


def as_session(data: Any) -> Session | AgentSession | None:
    """A session from a `Session` or `AgentSession`, an object with one as `.session`, or None."""
    if isinstance(data, Session | AgentSession):
        return data
    session = getattr(data, "session", None)
    return session if isinstance(session, Session | AgentSession) else None


class TranscriptExtension(AmberSnapshotExtension):
    """Serializes sessions as `render_transcript` text; anything else as syrupy would."""

    #: What `render_transcript` leaves out (see `TranscriptSnapshot.hide`).
    hide: ClassVar[frozenset[str]] = frozenset()

    def serialize(self, data: Any, **kwargs: Any) -> Any:
        """The transcript of a session."""
        session = as_session(data)
        if session is not None:
            data = render_transcript(session, hide=self.hide)
        return super().serialize(data, **kwargs)

    def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Iterator[str]:
        """A unified diff of the two transcripts first, then syrupy's own diff.

        One line of context, so that the change fits in what pytest shows
        without `-vv` (its first eight lines).
        """
        stored, received = _text(snapshot_data), _text(serialized_data)
        if stored != received:
            yield "transcript diff (- snapshot, + received):"
            lines = difflib.unified_diff(
                stored.splitlines(), received.splitlines(), n=1, lineterm=""
            )
            yield from list(lines)[2:]  # no file headers: the first line names both sides
            yield "syrupy's diff:"
        yield from super().diff_lines(serialized_data, snapshot_data)


def _text(data: Any) -> str:
    """A serialized string as its text: amber's triple quotes taken off."""
    text = str(data) if data is not None else ""
    lines = text.split("\n")
    if len(lines) > 1 and lines[0] == lines[-1] == "'''":
        return "\n".join(lines[1:-1])
    return text


class TranscriptSnapshot(SnapshotAssertion):
    """syrupy's snapshot assertion, storing sessions as transcripts (`transcript_snapshot`)."""

    def hide(self, *names: str) -> TranscriptSnapshot:
        """This snapshot with `names` left out of the stored transcript ("usage", "ids", ...)."""
        base = self.extension_class
        wanted = getattr(base, "hide", frozenset()) | hidden(names)
        extension = type(base.__name__, (base,), {"hide": wanted})
        made = self.use_extension(extension)
        assert isinstance(made, TranscriptSnapshot)
        return made

    @classmethod
    def of(cls, snapshot: SnapshotAssertion) -> TranscriptSnapshot:
        """syrupy's `snapshot` fixture's assertion, storing transcripts."""
        return cls(
            session=snapshot.session,
            extension_class=TranscriptExtension,
            test_location=snapshot.test_location,
            update_snapshots=snapshot.update_snapshots,
            update_new_snapshots_only=snapshot.update_new_snapshots_only,
        )

"""A syrupy extension that stores a session (a chat session or an agent run) as its
stable transcript text.

It takes a `Session`, an `AgentSession`, or what made one — a `Client`, a
`RunResult`, an `AgentSuccess`/`AgentFailure` — read from its journal (so a
snapshot never holds a Client's repr: ids, pids, function addresses).
Anything else is refused with a UsageError saying what is accepted.

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

from toolreel.adapters import AgentSession, Session, render_transcript
from toolreel.adapters.transcript import hidden
from toolreel.core import UsageError
from toolreel.shell import AgentFailure, AgentSuccess, Client, RunResult

#: What a transcript snapshot takes, as its refusal names it.
ACCEPTED = (
    "a Session or an AgentSession (load_session, load_agent_session), a Client, "
    "a RunResult (run) or an agent result (AgentSuccess, AgentFailure)"
)


def as_session(data: object) -> Session | AgentSession:
    """The session `data` is, or made; anything else: a UsageError saying what is accepted."""
    if isinstance(data, Session | AgentSession):
        return data
    if isinstance(data, Client | RunResult):
        return data.session()
    if isinstance(data, AgentSuccess | AgentFailure):
        return data.metadata.session()
    raise UsageError(
        f"transcript_snapshot stores a session's transcript: compare it with {ACCEPTED}, "
        f"not a {type(data).__name__} (syrupy's own `snapshot` stores other values)"
    )


class TranscriptExtension(AmberSnapshotExtension):
    """Serializes a session (or what made one) as its `render_transcript` text."""

    #: What `render_transcript` leaves out (see `TranscriptSnapshot.hide`).
    hide: ClassVar[frozenset[str]] = frozenset()

    def serialize(self, data: Any, **kwargs: Any) -> Any:
        """The transcript of the session."""
        text = render_transcript(as_session(data), hide=self.hide)
        return super().serialize(text, **kwargs)

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

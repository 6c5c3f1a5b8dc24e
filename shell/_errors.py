"""The shell's own errors; `toolreel.shell.errors` draws the whole tree they belong to."""

from __future__ import annotations

from toolreel.adapters import (
    ContentRefused,
    DecodeError,
    JournalCorrupt,
    JournalError,
    JournalUnavailable,
    SessionBusy,
    SessionError,
    SessionNotFound,
)
from toolreel.core import ConfigError, Finish, StepError, ToolreelError, UsageError
from toolreel.core.notices import ApprovalRequested

__all__ = [
    "ApprovalPending",
    "ConfigError",
    "ContentRefused",
    "DecodeError",
    "JournalCorrupt",
    "JournalError",
    "JournalUnavailable",
    "NotOpen",
    "ReplayError",
    "RunFailed",
    "SessionBusy",
    "SessionError",
    "SessionNotFound",
    "StepError",
    "ToolreelError",
    "TurnInProgress",
    "UnknownApproval",
    "UnknownToolCall",
    "UsageError",
]


class NotOpen(UsageError, RuntimeError):
    """A Client used before `async with Client(...)` opened it (or after it closed)."""


class TurnInProgress(UsageError, RuntimeError):
    """A new prompt while a turn still runs."""


class UnknownToolCall(UsageError, ValueError):
    """A manual result for a call that awaits none.

    Its text is the core's (`toolreel.core.misuse`): the `StepError` `step` would
    raise for the event, which is its `__cause__`.
    """


class UnknownApproval(UnknownToolCall):
    """An approval or denial for a call that is not held for one (unknown, or decided).

    Worded by the core, as `UnknownToolCall` is.
    """


class ApprovalPending(ToolreelError):
    """A turn (or agent run) paused for approval where the caller cannot wait (`run()`).

    Continue it with `Client.resume(session_id, options)`, then `approve` / `deny`.
    """

    def __init__(
        self,
        session_id: str,
        requests: tuple[ApprovalRequested, ...],
        *,
        how: str = "Client.resume(session_id, options), then approve() or deny() each call",
    ) -> None:
        """Name the session, the calls that wait and how to go on (an agent run: `resume_agent`)."""
        calls = ", ".join(f"{r.call.name} ({r.call.id})" for r in requests)
        super().__init__(
            f"session {session_id} waits for approval of {calls}: resume it with {how}"
        )
        self.session_id = session_id
        self.requests = requests


class RunFailed(ToolreelError):
    """The turn finished FAILED: a model error, retries exhausted, or max iterations (RAISE)."""

    def __init__(self, finish: Finish) -> None:
        """Say why, in the provider's words where there are any."""
        error = finish.error
        detail = f"{error.kind}: {error.message}" if error else "failed"
        super().__init__(detail)
        self.finish = finish


class ReplayError(ToolreelError, AssertionError):
    """A recording and the program disagree (AssertionError, so pytest shows it as a failure)."""

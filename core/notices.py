"""Notices: what a turn tells the caller's stream, each carried by an `Emit` effect.

`Notice` is the closed union; its members, and when each is told, are listed in
the docstring of core/_notices.py. The shell's `Client.events()` yields them (with
`Finish` and `AwaitApproval`), and `toolreel.web` folds them into its streams.
"""

from __future__ import annotations

from ._notices import (
    ApprovalRequested,
    AttemptStarted,
    ContextCompacted,
    MessageRecorded,
    ModelChanged,
    Notice,
    ReasoningStreamed,
    ResultsRequested,
    RetryScheduled,
    RoundFinished,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallAnnounced,
    ToolCallStreaming,
    ToolResultReady,
    UsageReported,
    ValidationFailed,
)

__all__ = [
    "ApprovalRequested",
    "AttemptStarted",
    "ContextCompacted",
    "MessageRecorded",
    "ModelChanged",
    "Notice",
    "ReasoningStreamed",
    "ResultsRequested",
    "RetryScheduled",
    "RoundFinished",
    "TextStreamed",
    "ToolArgumentsStreamed",
    "ToolCallAnnounced",
    "ToolCallStreaming",
    "ToolResultReady",
    "UsageReported",
    "ValidationFailed",
]

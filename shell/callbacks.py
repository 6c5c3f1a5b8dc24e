"""The callbacks each API calls, one typed protocol per callback (for type checkers).

Annotate your own callbacks with these: `OnToolCall`, `OnToolResult`, `OnRound`,
`OnFinish` and `OnNotice` for the tool loop (`AgentOptions`); `OnAgentToolCall`,
`OnAgentToolResult`, `OnAttemptStart` and `OnValidationFailure` for a structured
output's definition (`AgentDefinition`), `OnAgentNotice` for its run's observers
(`AgentRunOptions`). Which is called when, and with what, is in shell/_callbacks.py.
"""

from __future__ import annotations

from ._callbacks import (
    OnAgentNotice,
    OnAgentToolCall,
    OnAgentToolResult,
    OnAttemptStart,
    OnFinish,
    OnNotice,
    OnRound,
    OnToolCall,
    OnToolResult,
    OnValidationFailure,
)

__all__ = [
    "OnAgentNotice",
    "OnAgentToolCall",
    "OnAgentToolResult",
    "OnAttemptStart",
    "OnFinish",
    "OnNotice",
    "OnRound",
    "OnToolCall",
    "OnToolResult",
    "OnValidationFailure",
]

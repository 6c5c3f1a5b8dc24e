"""Policies: the settings of `LoopConfig` that choose between behaviours of the loop.

- `RetryPolicy`: how often, and after what backoff, a failed model call is retried.
- `MaxIterationsPolicy`: what happens when the model still calls tools at the cap.
- `BlockedCallPolicy`: what a PreToolUse block does to the turn.
- `AnnouncePolicy`: when the calls of a response are announced (`ToolCallAnnounced`).
- `EmptyPromptPolicy`: what an empty prompt right after tool results means.
- `ErrorFormat`: how the loop words the error results it makes itself (text or JSON).
- `FallbackPolicy`: the models a failed model call falls back to (core/_fallback.py).

Each default is toolreel's way; the other members are open_agent's. Every member
says what it does; the rules that apply them are in core/_step.py.
"""

from __future__ import annotations

from ._config import (
    AnnouncePolicy,
    BlockedCallPolicy,
    EmptyPromptPolicy,
    ErrorFormat,
    MaxIterationsPolicy,
    RetryPolicy,
)
from ._fallback import FallbackPolicy

__all__ = [
    "AnnouncePolicy",
    "BlockedCallPolicy",
    "EmptyPromptPolicy",
    "ErrorFormat",
    "FallbackPolicy",
    "MaxIterationsPolicy",
    "RetryPolicy",
]

"""Hooks as the reducer sees them: where it asks (`HookPoint`) and what the answer may be.

`LoopConfig.hooks` names the points the caller has hooks for; at each the core
emits `AskHook` (PreToolUse, UserPromptSubmit) or `TellHook` (PostToolUse), and
an `AskHook` is answered by the event `HookDecided`, whose `decision` is one of
the closed union `Decision`: `Allowed`, `Blocked(reason)`, `Replaced(value)` or
`Ask(reason, value)` (hold the call for a human's approval). A prompt a hook
blocked ends the turn with `Blocked` as its outcome.
"""

from __future__ import annotations

from ._config import HookPoint
from ._events import Allowed, Ask, Blocked, Decision, Replaced

__all__ = ["Allowed", "Ask", "Blocked", "Decision", "HookPoint", "Replaced"]

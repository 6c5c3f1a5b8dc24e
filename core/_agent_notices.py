"""Agent notices: what an agent's callbacks are told, carried by `Emit` effects.

They are members of the one `Notice` union (core/_notices.py); `AgentNotice`
names the part of it that `agent_step` emits.

- `AttemptStarted`: an attempt begins (before its first model call);
  drives `on_attempt_start`.
- `ValidationFailed`: an attempt's output failed validation; drives
  `on_validation_failure`.

Tool callbacks need no notice: each `RunTool`/`Reflect` effect is one
execution, and the shell tells `on_tool_call` before it and `on_tool_result`
after it.
"""

from __future__ import annotations

from typing import TypeAlias

import attrs


@attrs.frozen(kw_only=True)
class AttemptStarted:
    """Attempt `attempt` (1-based) begins."""

    attempt: int


@attrs.frozen(kw_only=True)
class ValidationFailed:
    """The output of attempt `attempt` failed validation with `problems`."""

    attempt: int
    problems: tuple[str, ...]


AgentNotice: TypeAlias = AttemptStarted | ValidationFailed

"""Agent events: the facts `agent_step` is fed (a closed union).

The agent speaks the tool loop's vocabulary (core/_events.py) and adds one fact:

From the caller:
- `PromptSubmitted`: the prompt built from the agent's input; starts attempt 1.
- `Cancelled`: the caller aborted (checked by the shell before every model call).

From the model (decoded by an adapter), answering `CallModel`:
- `TextDelta`, `ReasoningDelta`, `ToolCallStarted`, `ToolCallArgumentsDelta`,
  then `ModelResponded` (finish reason and usage) or `ModelCallFailed`.

From the shell, answering an effect:
- `ToolFinished`: a helper's or the reflection handler's output (or failure),
  answering `RunTool` or `Reflect`.
- `ValidationFinished`: the problems found in an output (none: valid),
  answering `Validate`.
- `TimerFired`: a backoff elapsed, answering `StartTimer`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

import attrs

from ._events import (
    Cancelled,
    ModelCallFailed,
    ModelResponded,
    PromptSubmitted,
    ReasoningDelta,
    TextDelta,
    TimerFired,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
)


def _problems(problems: Iterable[str]) -> tuple[str, ...]:
    """Any iterable of problems, held as a tuple (a typed converter: strict callers pass)."""
    return tuple(problems)


@attrs.frozen(kw_only=True)
class ValidationFinished:
    """The output of attempt `attempt` was checked: `problems` lists what is wrong (none: valid).

    Schema problems come first, by field (`$.total: expected a number, got "12"`),
    then the custom validators' problems.
    """

    attempt: int
    problems: tuple[str, ...] = attrs.field(default=(), converter=_problems)


AgentEvent: TypeAlias = (
    PromptSubmitted
    | TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallArgumentsDelta
    | ModelResponded
    | ModelCallFailed
    | ToolFinished
    | ValidationFinished
    | TimerFired
    | Cancelled
)

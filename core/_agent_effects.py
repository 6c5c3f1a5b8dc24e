"""Agent effects: the commands `agent_step` hands the shell (a closed union).

Shared with the tool loop (core/_effects.py):
- `CallModel`: one iteration's model call; produces the model events.
- `RunTool`: run a helper tool; produces `ToolFinished`. Several in one step
  run in parallel (and in parallel with `Reflect`).
- `StartTimer`: a backoff before repeating a failed model call; produces `TimerFired`.
- `Emit`: tell the callbacks a notice (an `AgentNotice`); produces nothing.

The agent's own:
- `Reflect`: run the reflection handler on an output-tool call; produces `ToolFinished`.
- `Validate`: check an output (schema, then custom validators); produces
  `ValidationFinished`.
- `FinishAgent`: the run is over, with its outcome; produces nothing. Exactly
  one per run, always the last effect.
"""

from __future__ import annotations

from typing import TypeAlias

import attrs

from ._agent_outcome import AgentOutcome
from ._effects import CallModel, Emit, RunTool, StartTimer
from ._records import ChatMessage, ToolCall, Usage


@attrs.frozen(kw_only=True)
class Reflect:
    """Run the reflection handler on `call`'s arguments; answer with `ToolFinished`."""

    call: ToolCall


@attrs.frozen(kw_only=True)
class Validate:
    """Validate `output` (JSON text) of attempt `attempt`; answer with `ValidationFinished`."""

    output: str
    attempt: int


@attrs.frozen(kw_only=True)
class FinishAgent:
    """The run ended: its outcome, usage over every call, attempts, iterations, the conversation.

    `iterations` counts every model call made for a new iteration, over all attempts.
    """

    outcome: AgentOutcome
    usage: Usage
    attempts: int
    iterations: int
    history: tuple[ChatMessage, ...]


AgentEffect: TypeAlias = CallModel | RunTool | Reflect | Validate | StartTimer | Emit | FinishAgent

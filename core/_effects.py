"""Effects: commands `step` hands the shell to carry out (a closed union).

- `CallModel`: send `request` to the model; produces the model events,
  ending in `ModelResponded` or `ModelCallFailed`.
- `RunTool`: run one tool call; produces `ToolFinished`. Several in one
  step are meant to run in parallel.
- `AskHook`: ask the caller's hook; produces `HookDecided` (not for
  `PostToolUse`, which is told only).
- `StartTimer`: wait `seconds`; produces `TimerFired`.
- `Persist`: store a message of the history; produces nothing.
- `Emit`: tell the caller's stream a `Notice`; produces nothing.
- `Finish`: the turn is over, with its outcome; produces nothing.
"""

from __future__ import annotations

import enum
from typing import TypeAlias

import attrs

from ._config import HookPoint
from ._notices import Notice
from ._records import ChatMessage, ModelRequest, ToolCall, ToolResult, ToolRound, Usage


@attrs.frozen(kw_only=True)
class CallModel:
    """Call the model for iteration `iteration` (`retry` > 0 when repeating a failed call)."""

    request: ModelRequest
    iteration: int
    retry: int = 0


@attrs.frozen(kw_only=True)
class RunTool:
    """Run `call` (its arguments as hooks left them); answer with `ToolFinished`."""

    call: ToolCall


@attrs.frozen(kw_only=True)
class AskHook:
    """Ask the `point` hook; answer with `HookDecided(hook_id=...)` unless PostToolUse."""

    hook_id: str
    point: HookPoint
    prompt: str | None = None
    call: ToolCall | None = None
    result: ToolResult | None = None


@attrs.frozen(kw_only=True)
class StartTimer:
    """Wait `seconds`, then feed `TimerFired(token=...)`."""

    token: str
    seconds: float


@attrs.frozen(kw_only=True)
class Persist:
    """Store `message`, which just entered the history."""

    message: ChatMessage


@attrs.frozen(kw_only=True)
class Emit:
    """Tell the caller's stream `notice`."""

    notice: Notice


class FinishReason(enum.Enum):
    """Why a turn ended."""

    #: The model answered without calling tools.
    COMPLETED = "completed"
    #: Stopped at `max_iterations` under the STOP policy; every call was answered.
    MAX_ITERATIONS = "max_iterations"
    #: A model call failed (fatal, or out of retries), or the RAISE policy fired.
    FAILED = "failed"
    #: The caller cancelled.
    CANCELLED = "cancelled"
    #: The UserPromptSubmit hook blocked the prompt.
    BLOCKED = "blocked"


@attrs.frozen(kw_only=True)
class Failure:
    """Why a turn failed: `kind` is "model_error", "retries_exhausted" or "max_iterations"."""

    kind: str
    message: str
    status: int | None = None


@attrs.frozen(kw_only=True)
class Finish:
    """The turn ended: outcome, final text, this turn's rounds, iterations and usage."""

    reason: FinishReason
    text: str
    rounds: tuple[ToolRound, ...]
    iterations: int
    usage: Usage
    max_iterations_reached: bool = False
    error: Failure | None = None
    model_finish_reason: str | None = None
    block_reason: str | None = None


Effect: TypeAlias = CallModel | RunTool | AskHook | StartTimer | Persist | Emit | Finish

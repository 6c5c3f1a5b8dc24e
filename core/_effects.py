"""Effects: commands `step` hands the shell to carry out (one closed union, `Effect`).

- `CallModel`: send `request` to the model; produces the model events,
  ending in `ModelResponded` or `ModelCallFailed`.
- `RunTool`: run one tool call; produces `ToolFinished`. Several in one
  step are meant to run in parallel.
- `Reflect`: run a reflective output's handler on an output-tool call;
  produces `ToolFinished` (rule 17).
- `AskHook`: ask the caller's PreToolUse or UserPromptSubmit hooks; produces
  `HookDecided`.
- `TellHook`: tell the caller's PostToolUse hooks a call's result; produces
  nothing.
- `StartTimer`: wait `seconds`; produces `TimerFired`.
- `Persist`: a message entered the history: store it, and tell the caller's
  stream `MessageRecorded`; produces nothing.
- `Emit`: tell the caller's stream a `Notice`; produces nothing.
- `Validate`: check a structured output (its schema, then the validators);
  produces `ValidationFinished` (rule 17).
- `AwaitApproval`: the turn is paused, not over: the calls it lists wait for a
  human's `Approved` or `Denied` (nothing else runs; the process may exit).
  Produces nothing; each decision that leaves calls waiting repeats it.
- `Finish`: the turn is over, with its `Outcome`; produces nothing. Exactly
  one per turn, always its last effect.

A turn's outcome is a closed union, one member per way a turn ends:
`Completed`, `Produced` (a validated structured output), `Capped` (the
iteration cap), `Failed` (with a `FailureCode`), `Cancelled` (the caller's
event, core/_events.py), `Blocked` (the hook's decision that stopped the
prompt) and `OverBudget` (the budget ran out, core/_budget.py).
"""

from __future__ import annotations

import enum
from typing import TypeAlias

import attrs

from ._budget import OverBudget
from ._config import HookPoint, MaxIterationsPolicy
from ._events import Blocked, Cancelled
from ._notices import ApprovalRequested, Notice
from ._record import Value
from ._records import (
    AttemptErrors,
    ChatMessage,
    ModelRequest,
    ToolCall,
    ToolResult,
    ToolRound,
    Usage,
)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CallModel(Value):
    """Call the model for iteration `iteration` (`retry` > 0 when repeating a failed call).

    `model` is which model answers: 0 the config's own, then its fallbacks in order
    (`LoopConfig.fallback`; the shell's connection at that position).
    `summary`: the compaction policy's call that summarises the turns left out (rule 18).
    """

    request: ModelRequest
    iteration: int
    retry: int = 0
    model: int = 0
    summary: bool = False


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RunTool(Value):
    """Run `call` (its arguments as hooks left them); answer with `ToolFinished`."""

    call: ToolCall


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Reflect(Value):
    """Run the reflection handler on `call`'s arguments; answer with `ToolFinished`."""

    call: ToolCall


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AskHook(Value):
    """Ask the `point` hook (PreToolUse: `call`; UserPromptSubmit: `prompt`).

    Answer with `HookDecided(hook_id=...)`.
    """

    hook_id: str
    point: HookPoint
    prompt: str | None = None
    call: ToolCall | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TellHook(Value):
    """Tell the PostToolUse hooks that `call` got `result`; nothing answers.

    Older journals recorded this as `AskHook(point=PostToolUse)`; they read
    as this effect (`current_records` in adapters/_journal.py).
    """

    call: ToolCall
    result: ToolResult


@attrs.frozen(kw_only=True, repr=False, eq=False)
class StartTimer(Value):
    """Wait `seconds`, then feed `TimerFired(token=...)`."""

    token: str
    seconds: float


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Persist(Value):
    """Store `message`, which just entered the history (the shell tells `MessageRecorded`)."""

    message: ChatMessage


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Emit(Value):
    """Tell the caller's stream `notice`."""

    notice: Notice


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Validate(Value):
    """Validate `output` (JSON text) of attempt `attempt`; answer with `ValidationFinished`."""

    output: str
    attempt: int


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AwaitApproval(Value):
    """Pause the turn until each of `requests` is decided (`Approved` / `Denied`).

    Not a `Finish`: the turn goes on once the last call is decided.
    """

    requests: tuple[ApprovalRequested, ...]


class FinishReason(enum.Enum):
    """Why a turn ended."""

    #: The model answered without calling tools.
    COMPLETED = "completed"
    #: Stopped at `max_iterations` under STOP (or ONE_MORE_CALL); every call was answered.
    MAX_ITERATIONS = "max_iterations"
    #: A model call failed (fatal, or out of retries), or the RAISE policy fired.
    FAILED = "failed"
    #: The caller cancelled.
    CANCELLED = "cancelled"
    #: The UserPromptSubmit hook blocked the prompt (or, under END_TURN, PreToolUse a call).
    BLOCKED = "blocked"
    #: The budget ran out (`OverBudget`).
    OVER_BUDGET = "over_budget"


class FailureCode(enum.StrEnum):
    """Why a turn failed (a `str`: `code == "model_error"` holds)."""

    #: A model call failed with a fatal error (4xx other than 429, bad response).
    MODEL_ERROR = "model_error"
    #: A retryable failure outlasted `retry.max_retries`.
    RETRIES_EXHAUSTED = "retries_exhausted"
    #: `max_iterations` was reached under the RAISE policy (or, for a structured
    #: output, within one attempt).
    MAX_ITERATIONS = "max_iterations"
    #: A structured output: a response called no tool at all.
    INVALID_RESPONSE = "invalid_response"
    #: A reflective output: `submit` was called before any output-tool call.
    SUBMIT_BEFORE_OUTPUT = "submit_before_output"
    #: A structured output failed validation in every attempt.
    VALIDATION_FAILED = "validation_failed"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Completed(Value):
    """The model answered without calling tools: its `text` and the provider's finish reason."""

    text: str
    model_finish_reason: str = "stop"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Capped(Value):
    """`max_iterations` was reached and `policy` (STOP, FINAL_ANSWER, ONE_MORE_CALL) ended the turn.

    Under FINAL_ANSWER `text` is the last call's answer; else it is empty.
    """

    text: str
    policy: MaxIterationsPolicy
    model_finish_reason: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Failed(Value):
    """The turn failed: its `code`, the provider's (or the policy's) message and HTTP status."""

    code: FailureCode
    message: str
    status: int | None = None

    @property
    def kind(self) -> str:
        """The code as text (what `Finish.error.kind` always was)."""
        return self.code.value


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Produced(Value):
    """A structured output passed validation: `output`, the JSON text the model sent."""

    output: str


Outcome: TypeAlias = Completed | Produced | Capped | Failed | Cancelled | Blocked | OverBudget

_REASONS: dict[type, FinishReason] = {
    Completed: FinishReason.COMPLETED,
    Produced: FinishReason.COMPLETED,
    Failed: FinishReason.FAILED,
    Cancelled: FinishReason.CANCELLED,
    Blocked: FinishReason.BLOCKED,
    OverBudget: FinishReason.OVER_BUDGET,
}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Attempts(Value):
    """Where a turn with a structured output stood when it ended (rule 17).

    `number` is the attempt it ended in, `iteration` that attempt's model calls,
    `failed` every failed attempt's validation problems, and `validating`
    whether it ended while an output was being validated.
    """

    number: int
    iteration: int
    failed: tuple[AttemptErrors, ...] = ()
    validating: bool = False


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Finish(Value):
    """The turn ended: its outcome, its (last attempt's) rounds, its model calls and usage.

    `iterations` counts the turn's model calls (retries aside) over every
    attempt; `attempts` is None for a turn whose answer is text. The other
    attributes (`reason`, `text`, `error`, ...) are read from the outcome.
    """

    outcome: Outcome
    rounds: tuple[ToolRound, ...]
    iterations: int
    usage: Usage
    attempts: Attempts | None = None

    @property
    def reason(self) -> FinishReason:
        """The outcome as a `FinishReason` (a FINAL_ANSWER answer counts as COMPLETED)."""
        outcome = self.outcome
        if isinstance(outcome, Capped):
            answered = outcome.policy is MaxIterationsPolicy.FINAL_ANSWER
            return FinishReason.COMPLETED if answered else FinishReason.MAX_ITERATIONS
        return _REASONS[type(outcome)]

    @property
    def text(self) -> str:
        """The final answer's text, a produced output's JSON ("" unless the model answered)."""
        outcome = self.outcome
        if isinstance(outcome, OverBudget):
            return outcome.text or ""
        if isinstance(outcome, Produced):
            return outcome.output
        return outcome.text if isinstance(outcome, Completed | Capped) else ""

    @property
    def max_iterations_reached(self) -> bool:
        """Whether the turn hit `max_iterations` (whatever the policy made of it)."""
        outcome = self.outcome
        return isinstance(outcome, Capped) or (
            isinstance(outcome, Failed) and outcome.code is FailureCode.MAX_ITERATIONS
        )

    @property
    def error(self) -> Failed | None:
        """Why the turn failed, if it did."""
        return self.outcome if isinstance(self.outcome, Failed) else None

    @property
    def model_finish_reason(self) -> str | None:
        """The provider's finish reason of the final answer, if the model gave one."""
        return (
            self.outcome.model_finish_reason
            if isinstance(self.outcome, Completed | Capped | OverBudget)
            else None
        )

    @property
    def over_budget(self) -> OverBudget | None:
        """Which budget limit ended the turn, if one did."""
        return self.outcome if isinstance(self.outcome, OverBudget) else None

    @property
    def block_reason(self) -> str | None:
        """Why a hook blocked the turn (the prompt, or a call under END_TURN), if one did."""
        return self.outcome.reason if isinstance(self.outcome, Blocked) else None


Effect: TypeAlias = (
    CallModel
    | RunTool
    | Reflect
    | AskHook
    | TellHook
    | StartTimer
    | Persist
    | Emit
    | Validate
    | AwaitApproval
    | Finish
)

"""Notices: what the caller is told, carried by `Emit` effects (one closed union, `Notice`).

Told by every turn, to the caller's stream:

- `TextStreamed`: a piece of the model's text, as it arrives.
- `ReasoningStreamed`: a piece of reasoning text, as it arrives.
- `ToolCallStreaming`: the model began writing a call (its id, name and
  index in the response), before any of its arguments.
- `ToolArgumentsStreamed`: a fragment of the arguments of the call at an
  index, as it arrives (split anywhere: the fragments joined are the JSON
  text `ToolCallAnnounced` later carries parsed). A retry voids them as it
  voids streamed text.
- `ToolCallAnnounced`: the model issued a call (before it is checked or run).
- `ResultsRequested`: manual mode; the calls whose results the caller must add.
- `ApprovalRequested`: a call is held until a human approves or denies it
  (its tool requires approval, or a PreToolUse hook asked); also what
  `AwaitApproval` lists.
- `ToolResultReady`: a call got its result (tool output, or an error).
- `RoundFinished`: every call of a round has its result.
- `RetryScheduled`: a model call failed and will be retried; text streamed
  since that call began is void.
- `ModelChanged`: a failed model call moves on to the next model of the
  config's fallback (core/_fallback.py); text streamed since that call began
  is void, as after `RetryScheduled`.
- `UsageReported`: after each model response, when the config has a
  `budget`: what the turn and the session spent so far (core/_budget.py).
- `ContextCompacted`: before a model call, the compaction policy left older
  turns out of the requests (and said what a summary of them holds), or the
  provider answered that the context was too long (core/_compaction.py).
- `MessageRecorded`: a message entered the history. The core says this with
  `Persist` alone; the shell tells this notice when it carries that out.

Told only by a turn whose answer is a structured output (rule 17; the agent API's
callbacks hear them):
- `AttemptStarted`: an attempt begins (before its first model call); drives
  `on_attempt_start`.
- `ValidationFailed`: an attempt's output failed validation; drives
  `on_validation_failure`.
"""

from __future__ import annotations

from typing import TypeAlias

import attrs

from ._budget import Spending
from ._record import Value
from ._records import ChatMessage, ToolCall, ToolResult, ToolRound


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TextStreamed(Value):
    """A piece of the model's text."""

    text: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ReasoningStreamed(Value):
    """A piece of the model's reasoning."""

    text: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolCallStreaming(Value):
    """The model began the call `call_id` to `name`, at `index` of its response."""

    index: int
    call_id: str
    name: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolArgumentsStreamed(Value):
    """`fragment` of the JSON arguments of the call at `index` (see `ToolCallStreaming`)."""

    index: int
    fragment: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolCallAnnounced(Value):
    """The model issued `call` in iteration `iteration`."""

    call: ToolCall
    iteration: int


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ResultsRequested(Value):
    """Manual mode: add one result for each of `calls` (arguments as hooks left them)."""

    calls: tuple[ToolCall, ...]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ApprovalRequested(Value):
    """`call` (arguments as it would run) waits for `Approved` or `Denied`; `reason` from a hook."""

    call: ToolCall
    reason: str = ""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolResultReady(Value):
    """`result` answers the call; `is_error` results were failures or refusals."""

    result: ToolResult


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RoundFinished(Value):
    """Round `iteration` is complete."""

    round: ToolRound
    iteration: int


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RetryScheduled(Value):
    """Retry number `retry` of the model call starts in `seconds`."""

    retry: int
    seconds: float
    message: str
    status: int | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelChanged(Value):
    """The turn moves from model `previous` to `model` (position `index`: 0 the config's own,
    then its fallbacks), after the failure `message` (HTTP `status`)."""

    model: str
    index: int
    previous: str
    message: str
    status: int | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class UsageReported(Value):
    """What the running turn and the whole session have spent, after a model response."""

    turn: Spending
    session: Spending


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ContextCompacted(Value):
    """Requests now carry the history from message `start` on (after the pinned ones).

    Messages `first` to `start - 1` were left out by this compaction; `summary` is
    what replaces them (None: they were dropped); `too_long`: the provider had
    answered that the context was too long; `tokens`: the next request's count, as
    a token budget counts it (None: the policy counts turns).
    """

    first: int
    start: int
    summary: str | None = None
    too_long: bool = False
    tokens: int | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class MessageRecorded(Value):
    """`message` entered the history."""

    message: ChatMessage


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AttemptStarted(Value):
    """Attempt `attempt` (1-based) begins."""

    attempt: int


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ValidationFailed(Value):
    """The output of attempt `attempt` failed validation with `problems`."""

    attempt: int
    problems: tuple[str, ...]


Notice: TypeAlias = (
    TextStreamed
    | ReasoningStreamed
    | ToolCallStreaming
    | ToolArgumentsStreamed
    | ToolCallAnnounced
    | ResultsRequested
    | ApprovalRequested
    | ToolResultReady
    | RoundFinished
    | RetryScheduled
    | ModelChanged
    | UsageReported
    | ContextCompacted
    | MessageRecorded
    | AttemptStarted
    | ValidationFailed
)

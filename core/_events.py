"""Events: facts that happened, fed to `step` (one closed union, `Event`).

From the caller:
- `PromptSubmitted`: the user sent a prompt; starts a turn.
- `ToolFinished`: manual mode, the caller's result for one announced call
  (in `Phase.AWAITING_RESULTS`; the same fact as a tool run's output).
- `Cancelled`: stop whatever runs now.
- `HistoryReplaced`: between turns, the caller set the conversation to
  `history` (toolreel.open_agent's `message_history` assignment).
- `Approved` / `Denied`: a human decided one call held for approval
  (`ApprovalRequested`); any process, any time later.

From the model (decoded by an adapter; a non-streamed response arrives as the
same events in one go), answering `CallModel`:
- `TextDelta`: a piece of the answer's text.
- `ReasoningDelta`: a piece of a reasoning block that must be sent back.
- `ToolCallStarted`: a tool call at `index` began (its id and name).
- `ToolCallArgumentsDelta`: a fragment of the arguments of the call at `index`.
- `ModelResponded`: the response ended, with its finish reason and usage.
- `ModelCallFailed`: the call failed, retryable (429, 5xx, timeouts) or fatal.

From the shell, answering an effect:
- `HookDecided`: a hook's decision, answering `AskHook`:
  `Allowed`, `Blocked`, `Replaced`, or `Ask` (hold the call for approval).
- `ToolFinished`: a tool's output, answering `RunTool` (in `Phase.RUNNING_TOOLS`),
  or the reflection handler's, answering `Reflect` (a reflective output).
- `ToolTimedOut`: the tool outlasted its timeout, answering `RunTool` or `Reflect`
  (the core words the result).
- `ToolInterrupted`: resuming after a crash, a started call whose outcome was lost
  and whose tool may not run twice (the core words the result).
- `ValidationFinished`: the problems found in a structured output (none:
  valid), answering `Validate`.
- `TimerFired`: a backoff timer elapsed, answering `StartTimer`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias, get_args

import attrs

from ._content import ImagePart, images_of
from ._record import Value
from ._records import NO_USAGE, ChatMessage, Usage
from ._text import checked_text


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PromptSubmitted(Value):
    """The user sent `text` (and `images`, which follow it); a new turn starts.

    The history carries over. `text` is valid Unicode text (core/_text.py).
    """

    text: str = attrs.field(validator=checked_text("prompt"))
    images: tuple[ImagePart, ...] = attrs.field(default=(), converter=images_of)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Allowed(Value):
    """A hook lets the prompt or the call go ahead unchanged."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Blocked(Value):
    """A hook stops the prompt or the call; the model sees `reason` for a call."""

    reason: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Replaced(Value):
    """A hook goes ahead with a new prompt text, or new JSON arguments for a call."""

    value: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Ask(Value):
    """A hook holds the call for a human's approval (`reason` tells the human why).

    `value`, if given, is new JSON arguments the call runs with once approved.
    """

    reason: str = ""
    value: str | None = None


Decision: TypeAlias = Allowed | Blocked | Replaced | Ask


@attrs.frozen(kw_only=True, repr=False, eq=False)
class HookDecided(Value):
    """The hook asked as `hook_id` decided."""

    hook_id: str
    decision: Decision


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TextDelta(Value):
    """A piece of the model's text, in stream order."""

    text: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ReasoningDelta(Value):
    """A piece of a reasoning block.

    Text appends to the open block; a `signature` closes it (Anthropic sends
    the signature last); `redacted` is a whole redacted block on its own.
    `provider` names the wire format that sent it (its codec's name), so the
    block goes back to that provider only (`Reasoning.provider`).
    """

    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    provider: str = ""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolCallStarted(Value):
    """The call at `index` began; id and name arrive only here (OpenAI streams)."""

    index: int
    call_id: str
    name: str
    signature: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolCallArgumentsDelta(Value):
    """A fragment of the JSON arguments of the call at `index`, split anywhere."""

    index: int
    fragment: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelResponded(Value):
    """The response is complete: the provider's finish reason and this call's usage."""

    finish_reason: str = "stop"
    usage: Usage = NO_USAGE


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelCallFailed(Value):
    """The model call failed; `retryable` for 429/5xx/529/timeouts, else fatal.

    `retry_after` is the wait in seconds the provider asked for, if any;
    `context_too_long`: the provider refused the request as longer than the model's
    context (a compaction policy may shorten it and call once more: rule 18; a
    `FallbackPolicy` may move on to another model: core/_fallback.py).
    """

    retryable: bool
    message: str
    status: int | None = None
    retry_after: float | None = None
    context_too_long: bool = False


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolFinished(Value):
    """The result for `call_id`: a tool run's output or error, or the caller's (manual mode).

    `images` are images the tool returned beside `output`.
    Older journals stored the caller's result as `ToolResultAdded`,
    with `content` for `output`; it decodes as this event (adapters/_serde.py).
    """

    call_id: str
    output: str
    is_error: bool = False
    images: tuple[ImagePart, ...] = attrs.field(default=(), converter=images_of)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolTimedOut(Value):
    """The run of `call_id` outlasted `seconds` and was abandoned."""

    call_id: str
    seconds: float


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolInterrupted(Value):
    """The run of `call_id` started before a crash; its outcome is unknown."""

    call_id: str


#: The facts that answer a call that runs (in call order, whatever order they arrive in).
TOOL_OUTCOMES: tuple[type, ...] = (ToolFinished, ToolTimedOut, ToolInterrupted)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TimerFired(Value):
    """The timer started as `token` elapsed."""

    token: str


def _messages(messages: Iterable[ChatMessage]) -> tuple[ChatMessage, ...]:
    """Any iterable of messages, held as a tuple (a typed converter: strict callers pass)."""
    return tuple(messages)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class HistoryReplaced(Value):
    """Between turns, the caller replaced the conversation with `history`."""

    history: tuple[ChatMessage, ...] = attrs.field(converter=_messages)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Approved(Value):
    """A human approved the call `call_id`, held for approval: it will run."""

    call_id: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Denied(Value):
    """A human denied the call `call_id`: the model reads `reason` as its error result."""

    call_id: str
    reason: str = attrs.field(default="", validator=checked_text("reason"))


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Cancelled(Value):
    """The caller cancelled the run."""


def _problems(problems: Iterable[str]) -> tuple[str, ...]:
    """Any iterable of problems, held as a tuple (a typed converter: strict callers pass)."""
    return tuple(problems)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ValidationFinished(Value):
    """The output of attempt `attempt` was checked: `problems` lists what is wrong (none: valid).

    Schema problems come first, by field (`$.total: expected a number, got "12"`),
    then the custom validators' problems.
    """

    attempt: int
    problems: tuple[str, ...] = attrs.field(default=(), converter=_problems)


ModelEvent: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallArgumentsDelta
    | ModelResponded
    | ModelCallFailed
)

#: The model event classes, for checks like `isinstance(event, MODEL_EVENTS)`.
MODEL_EVENTS: tuple[type, ...] = get_args(ModelEvent)

#: What may still arrive for work a cancel abandoned (a stream, a tool, a timer, a
#: validation): dropped once the turn has ended, instead of being called misuse (rule 9).
LATE_ANSWERS: tuple[type, ...] = (*MODEL_EVENTS, *TOOL_OUTCOMES, TimerFired, ValidationFinished)

Event: TypeAlias = (
    PromptSubmitted
    | HookDecided
    | TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallArgumentsDelta
    | ModelResponded
    | ModelCallFailed
    | ToolFinished
    | ToolTimedOut
    | ToolInterrupted
    | TimerFired
    | Cancelled
    | HistoryReplaced
    | Approved
    | Denied
    | ValidationFinished
)

"""toolreel.core: the tool-calling loop as a pure reducer, `step(state, event) -> (state, effects)`.

Build a `LoopConfig`, get the first state from `initial_state(config)`, then
feed events (facts: a prompt, model deltas, tool results) to `step` and carry
out the effects it returns (commands: call the model, run tools, ...). The
core does no I/O; `toolreel.shell` is one interpreter of its effects. A turn
whose answer is a validated structured output (an agent run) is the same
reducer with `LoopConfig(output=PlainOutput(...) or ReflectiveOutput(...))`.
An event made of what a model, a tool or a hook sent goes through `well_formed`
first, so that a journal can hold exactly what `step` saw (core/_wellformed.py);
text a caller gives is refused instead where it holds a lone surrogate
(`checked_text`, the validator the core's own records use).

The vocabulary is one module per direction: events in core/_events.py,
effects (and outcomes) in core/_effects.py, notices in core/_notices.py, each
docstring listing every member. `__all__` is what a user of the reducer needs;
the records a config or an outcome names live in public submodules, each with
its own `__all__`: `toolreel.core.notices` (what a turn tells its stream),
`.outcomes` (how a turn ended), `.budget`, `.policies` (`RetryPolicy` and the
loop's other settings), `.hooks` (hook points and decisions) and `.images`.
Helpers our own layers share (`build_request`, `RULES`, ...) stay in their
private modules.
"""

from ._approval import awaiting_approval
from ._arguments import arguments_object
from ._config import LoopConfig, OutputSpec, PlainOutput, ReflectiveOutput, TextOutput
from ._content import ImagePart
from ._effects import (
    AskHook,
    AwaitApproval,
    CallModel,
    Effect,
    Emit,
    Finish,
    Persist,
    Reflect,
    RunTool,
    StartTimer,
    TellHook,
    Validate,
)
from ._errors import ConfigError, ToolreelError, UsageError
from ._events import (
    Approved,
    Cancelled,
    Denied,
    Event,
    HistoryReplaced,
    HookDecided,
    ModelCallFailed,
    ModelEvent,
    ModelResponded,
    PromptSubmitted,
    ReasoningDelta,
    TextDelta,
    TimerFired,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolInterrupted,
    ToolTimedOut,
    ValidationFinished,
)
from ._loop_round import awaiting_results
from ._misuse import misuse
from ._records import (
    ChatMessage,
    ModelRequest,
    Reasoning,
    ResultReason,
    ToolCall,
    ToolResult,
    ToolRound,
    ToolSpec,
    Usage,
)
from ._state import Phase, State, StepError, initial_state
from ._step import step
from ._text import checked_text
from ._wellformed import well_formed

__all__ = [
    "Approved",
    "AskHook",
    "AwaitApproval",
    "CallModel",
    "Cancelled",
    "ChatMessage",
    "ConfigError",
    "Denied",
    "Effect",
    "Emit",
    "Event",
    "Finish",
    "HistoryReplaced",
    "HookDecided",
    "ImagePart",
    "LoopConfig",
    "ModelCallFailed",
    "ModelEvent",
    "ModelRequest",
    "ModelResponded",
    "OutputSpec",
    "Persist",
    "Phase",
    "PlainOutput",
    "PromptSubmitted",
    "Reasoning",
    "ReasoningDelta",
    "Reflect",
    "ReflectiveOutput",
    "ResultReason",
    "RunTool",
    "StartTimer",
    "State",
    "StepError",
    "TellHook",
    "TextDelta",
    "TextOutput",
    "TimerFired",
    "ToolCall",
    "ToolCallArgumentsDelta",
    "ToolCallStarted",
    "ToolFinished",
    "ToolInterrupted",
    "ToolResult",
    "ToolRound",
    "ToolSpec",
    "ToolTimedOut",
    "ToolreelError",
    "Usage",
    "UsageError",
    "Validate",
    "ValidationFinished",
    "arguments_object",
    "awaiting_approval",
    "awaiting_results",
    "checked_text",
    "initial_state",
    "misuse",
    "step",
    "well_formed",
]

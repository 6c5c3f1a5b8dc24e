"""The callbacks each API calls: one typed protocol per callback, named for its API.

The tool loop (`Client`, `run`; set on `AgentOptions`) tells observers what happened:

    on_tool_call(call: ToolCall)           OnToolCall      a call, as the model made it
    on_tool_result(result: ToolResult)     OnToolResult    the result the model reads
    on_round(tool_round: ToolRound)        OnRound         a round, every call answered
    on_finish(finish: Finish)              OnFinish        the turn's end
    on_notice(notice: Notice | Finish)     OnNotice        every notice, then the Finish

A structured-output agent (`execute_agent`) has two kinds. Its definition's
callbacks (`AgentDefinition`) get the reducer's `State` first:

    on_tool_call(state, name, input)                 OnAgentToolCall
    on_tool_result(state, name, output)              OnAgentToolResult
    on_attempt_start(state, attempt)                 OnAttemptStart
    on_validation_failure(state, attempt, problems)  OnValidationFailure

and its run's observers (`AgentRunOptions`) are told like the loop's:
`on_tool_call(ToolCall)` / `on_tool_result(ToolResult)` for each helper call
(`OnToolCall`, `OnToolResult`) and `on_notice(notice)` (`OnAgentNotice`) for
every notice, then the run's `Finish`.

Every callback may be sync or async (return an awaitable, which is awaited);
what it returns is ignored, and what it raises is recorded in the API's
`callback_errors` (masked), never raised into the run. Parameters are
positional-only here, so a function names its parameters as it likes.
"""

from __future__ import annotations

from typing import Any, Protocol

from toolreel.core import Finish, State, ToolCall, ToolResult, ToolRound
from toolreel.core.notices import Notice

__all__ = [
    "OnAgentNotice",
    "OnAgentToolCall",
    "OnAgentToolResult",
    "OnAttemptStart",
    "OnFinish",
    "OnNotice",
    "OnRound",
    "OnToolCall",
    "OnToolResult",
    "OnValidationFailure",
]


class OnToolCall(Protocol):
    """Told each tool call as the model made it (before hooks or the tool run)."""

    def __call__(self, call: ToolCall, /) -> object:
        """Watch the call; the result, or an awaitable of it, is ignored."""
        ...


class OnToolResult(Protocol):
    """Told each result the model will read (a blocked or timed-out call's error too)."""

    def __call__(self, result: ToolResult, /) -> object:
        """Watch the result."""
        ...


class OnRound(Protocol):
    """The tool loop's: told each round once every call of it is answered."""

    def __call__(self, tool_round: ToolRound, /) -> object:
        """Watch the round."""
        ...


class OnFinish(Protocol):
    """The tool loop's: told how each turn finished."""

    def __call__(self, finish: Finish, /) -> object:
        """Watch the end of the turn."""
        ...


class OnNotice(Protocol):
    """The tool loop's: told every notice of a turn as it happens, then its `Finish`."""

    def __call__(self, notice: Notice | Finish, /) -> object:
        """Watch the turn (text streamed, calls announced, retries, messages recorded, ...)."""
        ...


class OnAgentNotice(Protocol):
    """An agent run's: told every notice of the run as it happens, then its `Finish`."""

    def __call__(self, notice: Notice | Finish, /) -> object:
        """Watch the run (attempts started, validation failures, ...)."""
        ...


class OnAgentToolCall(Protocol):
    """An agent definition's: a helper or the output tool is about to run on `input`."""

    def __call__(self, state: State, name: str, input: dict[str, Any], /) -> object:
        """Watch the call, with the run's state."""
        ...


class OnAgentToolResult(Protocol):
    """An agent definition's: a helper or the output tool gave `output` (what the model reads)."""

    def __call__(self, state: State, name: str, output: str, /) -> object:
        """Watch the result, with the run's state."""
        ...


class OnAttemptStart(Protocol):
    """An agent definition's: attempt number `attempt` (from 1) begins."""

    def __call__(self, state: State, attempt: int, /) -> object:
        """Watch the attempt start."""
        ...


class OnValidationFailure(Protocol):
    """An agent definition's: attempt `attempt`'s output failed with these `problems`."""

    def __call__(self, state: State, attempt: int, problems: list[str], /) -> object:
        """Watch the failed validation."""
        ...

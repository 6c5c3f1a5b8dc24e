"""AgentState: where an agent run stands — phase, attempt, iteration, conversation, output."""

from __future__ import annotations

import enum

import attrs

from ._agent_config import AgentConfig
from ._agent_outcome import AgentOutcome, AttemptErrors
from ._records import NO_USAGE, ChatMessage, ToolRound, Usage
from ._state import EMPTY_STREAM, PendingRound, StepError, Stream


class AgentPhase(enum.Enum):
    """What the agent waits for."""

    #: Not started; `PromptSubmitted` starts attempt 1.
    IDLE = "idle"
    #: A model call is under way; model events arrive.
    STREAMING = "streaming"
    #: A model call failed and will be repeated; waiting for `TimerFired`.
    BACKING_OFF = "backing_off"
    #: `RunTool`/`Reflect` issued; waiting for each call's `ToolFinished`.
    RUNNING_TOOLS = "running_tools"
    #: `Validate` issued; waiting for `ValidationFinished`.
    VALIDATING = "validating"
    #: `FinishAgent` was issued; the run is over.
    FINISHED = "finished"


class AgentStepError(StepError):
    """An event the caller may not feed in this agent phase (a programmer error)."""

    phase_label = "agent phase"


@attrs.frozen(kw_only=True)
class AgentState:
    """The whole run.

    `history` is the conversation up to the running attempt's user message
    (the prompt, or the feedback of the last failed validation); `rounds` are
    the attempt's completed iterations, one `ToolRound` each. `output` is the
    attempt's last output (arguments of its last valid output-tool call).
    `iteration` counts the attempt's model calls, `iterations` the run's.
    `usage` sums every model call; `errors` holds each failed attempt's problems.
    """

    config: AgentConfig
    phase: AgentPhase = AgentPhase.IDLE
    history: tuple[ChatMessage, ...] = ()
    attempt: int = 0
    iteration: int = 0
    iterations: int = 0
    retry: int = 0
    rounds: tuple[ToolRound, ...] = ()
    stream: Stream = EMPTY_STREAM
    pending: PendingRound | None = None
    output: str | None = None
    errors: tuple[AttemptErrors, ...] = ()
    usage: Usage = NO_USAGE
    outcome: AgentOutcome | None = None
    ignored_calls: frozenset[str] = frozenset()


def initial_agent_state(config: AgentConfig) -> AgentState:
    """The state before the run: `PromptSubmitted` (the built prompt) starts it."""
    return AgentState(config=config)


def attempt_message(state: AgentState, text: str = "") -> ChatMessage:
    """The running attempt's assistant message: its rounds, then any final text."""
    return ChatMessage(role="assistant", content=text, tool_rounds=state.rounds)


def conversation(state: AgentState) -> tuple[ChatMessage, ...]:
    """The conversation so far, the running attempt's completed iterations included."""
    if not state.rounds:
        return state.history
    return (*state.history, attempt_message(state))

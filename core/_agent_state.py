"""AgentState: where an agent run stands — phase, attempt, iteration, conversation, output."""

from __future__ import annotations

import enum
import operator

import attrs

from ._agent_config import AgentConfig
from ._agent_outcome import AgentOutcome, AttemptErrors
from ._budget import NOTHING_SPENT, Spending
from ._model import so_far
from ._records import ChatMessage, ToolRound, Usage
from ._response import EMPTY_STREAM, Stream
from ._round import PendingRound
from ._slots import blank, setters
from ._state import StepError


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
    #: Paused: nothing runs; each call held for approval waits for `Approved` / `Denied`.
    AWAITING_APPROVAL = "awaiting_approval"
    #: `Validate` issued; waiting for `ValidationFinished`.
    VALIDATING = "validating"
    #: `FinishAgent` was issued; the run is over.
    FINISHED = "finished"

    #: Members are singletons: identity hashing spares `agent_step`'s table lookup
    #: (one per event) the Python-level `Enum.__hash__` (as `Phase` does).
    __hash__ = object.__hash__


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
    `usage`, the tokens of what `spent` counts, sums every model call; `errors`
    holds each failed attempt's problems.
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
    outcome: AgentOutcome | None = None
    #: What the run spent so far, for its budget (rule 14).
    spent: Spending = NOTHING_SPENT

    @property
    def usage(self) -> Usage:
        """The tokens of every model call of the run."""
        return self.spent.usage


def initial_agent_state(config: AgentConfig) -> AgentState:
    """The state before the run: `PromptSubmitted` (the built prompt) starts it."""
    return AgentState(config=config)


_SLOTS = setters(AgentState)
_FIELDS = tuple(field.name for field in attrs.fields(AgentState))
_read = operator.attrgetter(*_FIELDS)
_put_stream = _SLOTS[_FIELDS.index("stream")]


def with_stream(state: AgentState, stream: Stream) -> AgentState:
    """`state` with a new partial response, built slot by slot (once per delta; core/_slots.py)."""
    new = blank(AgentState)
    for put, value in zip(_SLOTS, _read(state), strict=True):
        put(new, value)
    _put_stream(new, stream)
    return new


def conversation(state: AgentState) -> tuple[ChatMessage, ...]:
    """The conversation so far, the running attempt's completed iterations included."""
    return so_far(state.history, state.rounds)

"""State: where the loop stands — its phase, the history, the turn, the partial response."""

from __future__ import annotations

import enum

import attrs

from ._budget import NOTHING_SPENT, OverBudget, Spending
from ._compaction import WHOLE, Window
from ._config import LoopConfig
from ._content import ImagePart
from ._errors import UsageError
from ._fallback import ModelFailure
from ._record import Value
from ._records import AttemptErrors, ChatMessage, ToolRound, Usage
from ._response import EMPTY_STREAM, Stream
from ._round import PendingRound
from ._slots import blank, setters


class Phase(enum.Enum):
    """What the loop waits for."""

    #: No turn runs; `PromptSubmitted` starts one.
    IDLE = "idle"
    #: Waiting for the UserPromptSubmit hook's `HookDecided`.
    PROMPT_HOOK = "prompt_hook"
    #: A model call is under way; model events arrive.
    STREAMING = "streaming"
    #: The compaction policy's summary call is under way; its model events arrive
    #: (core/_context.py).
    SUMMARISING = "summarising"
    #: A model call failed and will be retried; waiting for `TimerFired`.
    BACKING_OFF = "backing_off"
    #: Waiting for the PreToolUse hook's decision on each call of the round.
    TOOL_HOOKS = "tool_hooks"
    #: `RunTool` issued; waiting for `ToolFinished` of each call.
    RUNNING_TOOLS = "running_tools"
    #: Manual mode; waiting for the caller's `ToolFinished` for each call.
    AWAITING_RESULTS = "awaiting_results"
    #: The turn is paused (`AwaitApproval`): nothing runs; each call held for approval
    #: waits for `Approved` or `Denied`, from any process.
    AWAITING_APPROVAL = "awaiting_approval"
    #: A structured output: `Validate` issued; waiting for `ValidationFinished`.
    VALIDATING = "validating"

    #: Members are singletons, so identity hashing agrees with their equality; it spares
    #: `step`'s table lookup (one per event) the Python-level `Enum.__hash__`.
    __hash__ = object.__hash__


class StepError(UsageError):
    """An event the caller may not feed in this phase (a programmer error, never bad data)."""

    #: How messages name the phase.
    phase_label = "phase"

    def __init__(self, phase: enum.Enum, event: object, detail: str = "") -> None:
        """Name the phase and the event, so the misuse is plain."""
        message = f"can't handle event {event!r} when {self.phase_label}={phase.name}"
        super().__init__(f"{message}: {detail}" if detail else message)
        self.phase = phase
        self.event = event


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Turn(Value):
    """One user prompt and everything the loop did for it so far.

    A turn whose answer is a structured output makes attempts (rule 17): each
    one's model calls are `iteration` (those of the attempts before: `earlier`),
    its completed rounds `rounds`, its output so far `output`; `failed` holds
    every failed attempt's problems. A chat turn is one attempt.
    """

    number: int
    prompt: str
    iteration: int = 0
    #: The images the prompt carries (rule 1); a hook's new prompt text keeps them.
    images: tuple[ImagePart, ...] = ()
    retry: int = 0
    rounds: tuple[ToolRound, ...] = ()
    pending: PendingRound | None = None
    final_call: bool = False
    #: ONE_MORE_CALL: the call past the cap is made; its calls are not run (rule 7).
    past_cap: bool = False
    #: END_TURN: the first reason a PreToolUse hook blocked a call with (rule 5).
    block_reason: str | None = None
    #: What the turn spent so far (tokens, model and tool calls, cost; rule 16).
    spent: Spending = NOTHING_SPENT
    #: The budget ran out: the turn ends so once its round is answered (rule 16).
    over_budget: OverBudget | None = None
    #: Rule 17: the attempt (1-based), its output so far, the failed attempts' problems,
    #: and the model calls of the attempts before this one.
    attempt: int = 1
    output: str | None = None
    failed: tuple[AttemptErrors, ...] = ()
    earlier: int = 0
    #: Rule 8: the model the turn calls (0: the config's own, then its fallbacks), and how
    #: each model it moved on from failed.
    model: int = 0
    tried: tuple[ModelFailure, ...] = ()
    #: Where the turn's messages begin in the history: compaction never leaves them out.
    start: int = 0
    #: The provider said the context was too long and the call was made again, compacted.
    squeezed: bool = False

    @property
    def usage(self) -> Usage:
        """The tokens of the turn's model calls (what `spent` counts)."""
        return self.spent.usage

    @property
    def iterations(self) -> int:
        """The turn's model calls over every attempt (retries aside)."""
        return self.earlier + self.iteration

    @property
    def scope(self) -> int:
        """What names the attempt in made-up call ids and retry timers: the turn's number,
        plus one per attempt after the first (an agent run, one turn, names its attempts)."""
        return self.number + self.attempt - 1


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Aside(Value):
    """What the session keeps beside its history and spending, changed between deltas only:
    the calls a cancel abandoned, whose late results are dropped, whether the last turn
    was cancelled (rules 9 and 10), and the part of the history requests carry under a
    compaction policy (rule 18, core/_compaction.py)."""

    ignored_calls: frozenset[str] = frozenset()
    after_cancel: bool = False
    context: Window = WHOLE


#: No call abandoned, the last turn not cancelled, the whole history carried.
NOTHING_ASIDE = Aside()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class State(Value):
    """The whole loop: config, phase, history, the running turn and its stream.

    `spent` is all the session spent (rule 16); `usage`, its tokens, sums every
    model call of the session (one field, not two: the state is rebuilt slot by
    slot on every delta, so what changes less often shares one field: `aside`).
    """

    config: LoopConfig
    phase: Phase = Phase.IDLE
    history: tuple[ChatMessage, ...] = ()
    turn: Turn | None = None
    stream: Stream = EMPTY_STREAM
    turns: int = 0
    spent: Spending = NOTHING_SPENT
    aside: Aside = NOTHING_ASIDE

    @property
    def usage(self) -> Usage:
        """The tokens of every model call of the session."""
        return self.spent.usage

    @property
    def ignored_calls(self) -> frozenset[str]:
        """The calls a cancel abandoned: their late results are dropped."""
        return self.aside.ignored_calls

    @property
    def after_cancel(self) -> bool:
        """Whether the last turn was cancelled (its late answers are dropped)."""
        return self.aside.after_cancel

    @property
    def context(self) -> Window:
        """The part of the history requests carry (core/_compaction.py): all of it by default."""
        return self.aside.context


(
    _config,
    _phase,
    _history,
    _turn,
    _stream,
    _turns,
    _spent,
    _aside,
) = setters(State)


def with_stream(state: State, stream: Stream) -> State:
    """`state` with a new partial response, built slot by slot (once per delta; core/_slots.py)."""
    new = blank(State)
    _config(new, state.config)
    _phase(new, state.phase)
    _history(new, state.history)
    _turn(new, state.turn)
    _stream(new, stream)
    _turns(new, state.turns)
    _spent(new, state.spent)
    _aside(new, state.aside)
    return new


def with_context(state: State, context: Window) -> State:
    """`state` whose requests carry the part of the history `context` says (rule 18)."""
    return attrs.evolve(state, aside=attrs.evolve(state.aside, context=context))


def initial_state(config: LoopConfig, history: tuple[ChatMessage, ...] = ()) -> State:
    """The state before the first prompt, optionally continuing an earlier history.

    Args:
        config: How the loop runs: model, tools, limits and policies.
        history: The conversation so far (`ChatMessage`s), to continue it.

    Returns:
        An idle state, ready for `PromptSubmitted`.
    """
    return State(config=config, history=tuple(history))

"""The one effect handler: a `Driver` folds events through `step`, the runner carries out
each effect — for a chat session and for a structured-output agent run alike.

One runner drives one session. Events are fed to `step` one at a time, in the
order they happen (shell/_driver.py); the effects are carried out as the core says:

- `CallModel`: the driver streams the model's events, each fed back as it arrives
  (once the caller's `abort` is set, it feeds `Cancelled` instead).
- `RunTool`: every call of a round runs at once in the run's task group
  (sync tools in worker threads), each with its timeout and within
  `max_concurrent_tools`; the outcome comes back as `ToolFinished` — an exception
  as an error result, a timeout as `ToolTimedOut` (the core words both).
- `Reflect`: a reflective output's handler on one output-tool call, as a tool
  run is (`ToolFinished`). `Validate`: the output's schema, then the
  validators; `ValidationFinished` with the problems (the typed value of an
  output that passes is kept: `accepted`).
- `AskHook`: the caller's PreToolUse/UserPromptSubmit hooks, answered with
  `HookDecided`. `TellHook`: the PostToolUse hooks, told only.
- `StartTimer`: sleep, then `TimerFired`. `Emit`: the caller's sink and the
  observers. `Persist`/every step: the journal, and `Persist` is told to the
  sink as `MessageRecorded`. `Finish`: the turn ends. `AwaitApproval`: the turn
  pauses: the run ends with nothing running (`turn` returns it), and the next
  run starts with a human's `Approved` / `Denied` (`Client.approve`,
  `resume_agent`).

Who is told: the `Observers` (the chat API's: every call announced, every
result, round, notice and `Finish`) and, for an agent run, its `Executions`
(the agent API's: each tool call or reflection as it runs, a blocked one too,
and its result; attempts started and failed validations), given the reducer's
state. What a callback raises is recorded in `callback_errors`, masked.

Durability: steps are journaled in batches, and always before a tool runs
(so a started call is on disk before it has any effect), after each tool
outcome, before each model call, at the end of a turn, at a pause for approval
and with each human decision. Every step is kept as it is reduced, before its
effects are carried out; a durable one ends with an effect of the runner's own,
`Flush` (save, then start the step's tools: shell/_steplog.py). Without a
journal (an agent run given none) nothing is kept.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, assert_never

import anyio
import attrs
from returns.result import Failure, Result, Success

from toolreel.adapters import Journal, ModelPort
from toolreel.adapters.redaction import Redactor
from toolreel.core import (
    Approved,
    AskHook,
    AwaitApproval,
    CallModel,
    ChatMessage,
    Denied,
    Effect,
    Emit,
    Event,
    Finish,
    HookDecided,
    LoopConfig,
    Persist,
    Phase,
    Reflect,
    ResultReason,
    RunTool,
    StartTimer,
    State,
    TellHook,
    ToolCall,
    ToolFinished,
    ToolInterrupted,
    ToolResult,
    ToolTimedOut,
    Validate,
    ValidationFinished,
    awaiting_approval,
    awaiting_results,
    initial_state,
    step,
    well_formed,
)
from toolreel.core.budget import Spending
from toolreel.core.hooks import HookPoint
from toolreel.core.notices import (
    ApprovalRequested,
    AttemptStarted,
    ContextCompacted,
    MessageRecorded,
    ModelChanged,
    Notice,
    ReasoningStreamed,
    ResultsRequested,
    RetryScheduled,
    RoundFinished,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallAnnounced,
    ToolCallStreaming,
    ToolResultReady,
    UsageReported,
    ValidationFailed,
)
from toolreel.core.record import Record

from ._callbacks import OnFinish, OnNotice, OnRound, OnToolCall, OnToolResult
from ._driver import Driver, RunEnd, guarded, limiter_for, run_within
from ._errors import ApprovalPending
from ._hooks import (
    Hook,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
    decide,
)
from ._images import ToolOutput
from ._steplog import FLUSH, Flush, StepLog
from ._telemetry import Telemetry, watched_tool
from ._tools import Tool, call_arguments

if TYPE_CHECKING:
    from ._agent_output import OutputTool, Validator

Sink = Callable[[Notice | Finish], None]

#: What runs a call: a tool's `run`, or a reflective output's handler.
Work = Callable[[str], Awaitable[Result[str | ToolOutput, str]]]


@attrs.define(repr=False)
class Observers(Record):
    """Callbacks that watch a run (shell/_callbacks.py); one that raises is recorded."""

    on_tool_call: OnToolCall | None = None
    on_tool_result: OnToolResult | None = None
    on_round: OnRound | None = None
    on_finish: OnFinish | None = None
    on_notice: OnNotice | None = None


class Executions(Protocol):
    """An agent API's watcher of tool runs and attempts (shell/_agent.py's callbacks).

    Each is called with the reducer's state, awaited, and what it raises is the
    runner's to record (`guarded`).
    """

    async def started(self, state: State, call: ToolCall, reflected: bool) -> None:
        """A tool call (as the model made it) or a reflection is about to run, or was blocked."""

    async def finished(self, state: State, result: ToolResult, reflected: bool) -> None:
        """Its result, as the model reads it (a blocked or timed-out call's error too)."""

    async def told(self, state: State, notice: AttemptStarted | ValidationFailed) -> None:
        """An attempt started, or an attempt's output failed validation."""


@attrs.define(repr=False)
class RunMetadata(Record):
    """What went wrong around a run without stopping it (callbacks, PostToolUse hooks)."""

    callback_errors: list[str] = attrs.Factory(list)


_RunnerEffect = Effect | Flush


#: The events and effects that make a step durable (module docstring: "Durability").
_DURABLE_EVENTS = (ToolFinished, ToolTimedOut, ToolInterrupted, Approved, Denied)
_DURABLE_EFFECTS = (RunTool, Reflect, CallModel, Finish, AwaitApproval)


def _durable(event: Event, effects: tuple[Effect, ...]) -> bool:
    """Whether a step is saved at once (module docstring: "Durability")."""
    if isinstance(event, _DURABLE_EVENTS):
        return True
    return any(isinstance(effect, _DURABLE_EFFECTS) for effect in effects)


class Runner:
    """Interprets one session's effects (see the module docstring)."""

    def __init__(
        self,
        *,
        config: LoopConfig,
        model: ModelPort,
        tools: Mapping[str, Tool],
        hooks: Mapping[HookPoint, tuple[Hook, ...]],
        journal: Journal | None,
        session_id: str,
        redactor: Redactor | None = None,
        tool_timeout: float = 60.0,
        max_concurrent_tools: int | None = None,
        observers: Observers | None = None,
        journal_in_memory: bool = False,
        output: OutputTool[Any] | None = None,
        validators: Sequence[Validator[Any]] = (),
        executions: Executions | None = None,
        abort: anyio.Event | None = None,
        fallbacks: Sequence[ModelPort] = (),
    ) -> None:
        """A runner at the start of a new session.

        `journal_in_memory`: the journal's `append` does no I/O (one its maker
        made in memory), so it runs in the event loop rather than a worker thread.
        `output` and `validators` carry out `Reflect` and `Validate` (a
        structured output); `executions` watch an agent run; `abort`, once set,
        cuts the model call in flight and ends the turn cancelled. `fallbacks` are the ports
        of the config's fallback models, in order (`CallModel.model` 1, 2, ...).
        """
        self.config = config
        self.tools = dict(tools)
        self.hooks = dict(hooks)
        self.journal = journal
        self.session_id = session_id
        self._log = StepLog(journal, session_id, inline=journal_in_memory)
        self.redactor = redactor or getattr(model, "redactor", None) or Redactor()
        self.tool_timeout = tool_timeout
        self.observers = observers or Observers()
        self.output = output
        self.validators = tuple(validators)
        self.executions = executions
        #: The typed value of the output that passed validation (a structured output).
        self.accepted: Any = None
        self.callback_errors: list[str] = []
        self.metadata = RunMetadata(callback_errors=self.callback_errors)
        self.sink: Sink | None = None
        kind = "agent" if config.structured else "loop"
        self.telemetry = Telemetry.of(kind, model, config.model, session_id, self.redactor)
        self._driver = Driver[State, Event, _RunnerEffect](
            model=model,
            fallbacks=fallbacks,
            reduce=self._reduce,
            handler=self,
            redactor=self.redactor,
            state=initial_state(config),
            settled=_settled,
            abort=abort,
            observe=self.telemetry.turn,
        )
        self._limiter = limiter_for(max_concurrent_tools)
        self._runs: list[tuple[ToolCall, bool]] = []
        #: The calls of the turn as the model made them, and those an agent's watcher was told.
        self._announced: dict[str, ToolCall] = {}
        self._watched: set[str] = set()

    async def _guarded(self, callback: Callable[..., Any] | None, *args: Any) -> None:
        """Call an observer or hook; what it raised is recorded, with any key masked."""
        await guarded(self.callback_errors, callback, *args, redact=self.redactor.text)

    @property
    def state(self) -> State:
        """The reducer's state: the session so far."""
        return self._driver.state

    @property
    def seq(self) -> int:
        """The number of the last step kept."""
        return self._log.seq

    @property
    def phase(self) -> Phase:
        """Where the session stands (IDLE between turns)."""
        return self.state.phase

    @property
    def spent(self) -> Spending:
        """What the session spent so far (core/_budget.py)."""
        return self.state.spent

    @property
    def history(self) -> tuple[ChatMessage, ...]:
        """The history, the running turn's rounds so far included (`in_progress`)."""
        return in_progress(self.state)

    def awaiting(self) -> tuple[ToolCall, ...]:
        """Manual mode: the calls whose results the turn waits for."""
        return awaiting_results(self.state)

    def awaiting_approval(self) -> tuple[ApprovalRequested, ...]:
        """The calls held for a human's decision, in call order."""
        return awaiting_approval(self.state)

    @property
    def finish(self) -> Finish | None:
        """How the last turn finished (a turn cancelled from outside included), if it has."""
        outcome = self._driver.outcome
        return outcome if isinstance(outcome, Finish) else None

    # --- running a turn -------------------------------------------------------

    async def run(self, first: Event | None = None) -> Finish:
        """Feed `first` (if any) and carry on until the turn finishes (a pause is refused).

        For callers whose turns cannot pause (no approvals configured); `turn` may.
        """
        outcome = await self.turn(first)
        if isinstance(outcome, AwaitApproval):
            raise ApprovalPending(self.session_id, outcome.requests)
        assert outcome is not None, "a turn ends with its Finish"
        return outcome

    def turn(self, first: Event | None = None) -> Coroutine[Any, Any, RunEnd]:
        """Feed `first` (if any) and carry on until the turn finishes or pauses for approval:
        to be awaited; how it finished or paused (None only if it did neither).

        The Driver's own run (`Driver.run`, which owns the turn's lifecycle), handed to the
        caller to await: no frame of the runner's between the turn's task and the reducer.
        """
        return self._driver.run(first)

    def interrupt(self) -> None:
        """Stop the model stream and the tools now; the turn finishes as cancelled.

        Said before the turn's task has begun, it still holds: no model call
        is made, and the loop takes the cancel from the inbox.
        """
        self._driver.interrupt()

    def drain(self) -> None:
        """Forget what came too late for the turns that are over (before the next one starts)."""
        self._driver.drain()

    async def apply(self, event: Event) -> None:
        """Between turns, feed an event that starts none (`HistoryReplaced`) and save its step."""
        await self._driver.feed(event)
        await self._log.save()

    async def submit(self, event: Event) -> None:
        """Hand the running turn an event (a caller's result) and wait until it is applied."""
        await self._driver.submit(event)

    def _reduce(self, state: State, event: Event) -> tuple[State, tuple[_RunnerEffect, ...]]:
        """`step` on the well-formed, redacted event, the step kept; its effects, then
        `FLUSH` if it must be durable."""
        # what step sees is what the journal can hold exactly (core/_wellformed.py), and no
        # key is ever stored, shown or sent on
        event = self.redactor.event(well_formed(event))
        state, effects = step(state, event)
        self._log.record(event, effects)
        if _durable(event, effects):
            return state, (*effects, FLUSH)
        return state, effects

    async def carry_out(self, effect: _RunnerEffect) -> None:
        """Carry out one effect (the slow ones in tasks)."""
        match effect:
            case CallModel():
                self._driver.call_model(effect)
            case RunTool(call=call):
                self._runs.append((call, False))
            case Reflect(call=call):
                self._runs.append((call, True))
            case Validate():
                self._driver.spawn(self._validate, effect)
            case AskHook():
                self._driver.spawn(self._ask_hook, effect)
            case TellHook():
                self._driver.spawn(self._tell_hook, effect)
            case StartTimer(token=token, seconds=seconds):
                self._driver.watch.retry_waiting(seconds)
                self._driver.start_timer(token, seconds)
            case Emit(notice=notice):
                await self._notify(notice)
            case Persist(message=message):  # the step, Persist included, is journaled
                await self._notify(MessageRecorded(message=message))
            case AwaitApproval():
                self._driver.end(effect)  # nothing runs: the run is over until a human decides
            case Finish():
                self._driver.end(effect)
                self._announced.clear()
                await self._guarded(self.observers.on_finish, effect)
                await self._guarded(self.observers.on_notice, effect)
                if self.sink is not None:
                    self.sink(effect)
            case Flush():
                await self._log.save()  # a tool call is on disk before it starts
                self._start_runs()
            case _:
                assert_never(effect)

    def _start_runs(self) -> None:
        """Start the tool calls and reflections the step asked for."""
        runs, self._runs = self._runs, []
        for call, reflected in runs:
            self._driver.spawn(self._run, call, reflected)

    # --- the effects --------------------------------------------------------------

    async def _run(self, call: ToolCall, reflected: bool) -> None:
        """Run one tool call or reflection with its timeout; its outcome goes to the inbox."""
        if reflected:
            assert self.output is not None, "a structured output's runner has its OutputTool"
            work: Work = self.output.reflect
            timeout = self.tool_timeout
        else:
            tool = self.tools[call.name]
            work = tool.run
            timeout = tool.timeout if tool.timeout is not None else self.tool_timeout
        await self._started(call, reflected)
        limiter = None if reflected else self._limiter
        outcome = await watched_tool(
            self._driver.watch, call, run_within(limiter, call, work, timeout)
        )
        self._driver.post(outcome)

    async def _started(self, call: ToolCall, reflected: bool) -> None:
        """Tell an agent's watcher that a call (as the model made it) runs."""
        if self.executions is None:
            return
        self._watched.add(call.id)
        made = self._announced.get(call.id, call)
        await self._guarded(self.executions.started, self.state, made, reflected)

    async def _validate(self, effect: Validate) -> None:
        """Check an output; keep the typed value of one that passes."""
        assert self.output is not None, "a structured output's runner has its OutputTool"
        from ._agent_output import check_output  # noqa: PLC0415 - only agents with an output

        match await check_output(self.output, self.validators, effect.output):
            case Success(value):
                self.accepted = value
                self._driver.post(ValidationFinished(attempt=effect.attempt))
            case Failure(problems):
                self._driver.post(ValidationFinished(attempt=effect.attempt, problems=problems))

    async def _tell_hook(self, tell: TellHook) -> None:
        """Tell the PostToolUse hooks a result; what they raise is recorded, nothing answers."""
        event = PostToolUseEvent(
            tool_name=tell.call.name,
            tool_input=call_arguments(tell.call),
            tool_result=tell.result.content,
            tool_use_id=tell.call.id,
            is_error=tell.result.is_error,
            history=self.state.history,
        )
        for hook in self.hooks.get(HookPoint.POST_TOOL_USE, ()):
            await self._guarded(hook, event)

    async def _ask_hook(self, ask: AskHook) -> None:
        """Run the PreToolUse or UserPromptSubmit hooks; their decision answers the core."""
        hooks = self.hooks.get(ask.point, ())
        history = self.state.history
        if ask.point is HookPoint.PRE_TOOL_USE:
            assert ask.call is not None
            asked: PreToolUseEvent | UserPromptSubmitEvent = PreToolUseEvent(
                tool_name=ask.call.name,
                tool_input=call_arguments(ask.call),
                tool_use_id=ask.call.id,
                history=history,
            )
        else:
            asked = UserPromptSubmitEvent(prompt=ask.prompt or "", history=history)
        decision = await decide(hooks, asked)
        self._driver.post(HookDecided(hook_id=ask.hook_id, decision=decision))

    async def _notify(self, notice: Notice) -> None:
        """Tell the sink, the observers and an agent's watcher."""
        if self.sink is not None:
            self.sink(notice)
        if self.observers.on_notice is not None:  # most turns have none: no await per delta
            await self._guarded(self.observers.on_notice, notice)
        match notice:
            case ToolCallAnnounced(call=call):
                self._announced.setdefault(call.id, call)
                await self._guarded(self.observers.on_tool_call, call)
            case ToolResultReady(result=result):
                await self._guarded(self.observers.on_tool_result, result)
                await self._result_watched(result)
            case RoundFinished(round=tool_round, iteration=iteration):
                self._driver.watch.round_finished(
                    iteration, [c.name for c in tool_round.tool_calls]
                )
                await self._guarded(self.observers.on_round, tool_round)
            case AttemptStarted() | ValidationFailed():
                if self.executions is not None:
                    await self._guarded(self.executions.told, self.state, notice)
            case (
                TextStreamed()
                | ReasoningStreamed()
                | ToolCallStreaming()
                | ToolArgumentsStreamed()
                | ResultsRequested()
                | ApprovalRequested()
                | RetryScheduled()
                | ModelChanged()
                | UsageReported()
                | ContextCompacted()
                | MessageRecorded()
            ):
                pass  # told to the sink and `on_notice` alone
            case _:
                assert_never(notice)

    async def _result_watched(self, result: ToolResult) -> None:
        """Tell an agent's watcher the result of a call it saw run (or that a hook blocked)."""
        if self.executions is None:
            return
        if result.reason is ResultReason.BLOCKED and result.call_id not in self._watched:
            call = self._announced.get(result.call_id)
            if call is not None:
                self._watched.add(call.id)
                await self._guarded(self.executions.started, self.state, call, False)
        if result.call_id in self._watched:
            self._watched.discard(result.call_id)
            reflected = self.output is not None and result.name == self.output.name
            await self._guarded(self.executions.finished, self.state, result, reflected)

    # --- resuming -------------------------------------------------------------------

    def restore(self) -> list[Effect]:
        """Rebuild the state from the journal (going on under today's config); what is owed."""
        assert self.journal is not None, "only a journaled session is restored"
        from ._restore import rebuild  # noqa: PLC0415 - a new session folds no journal

        restored = rebuild(self.journal, self.session_id)
        if restored.seq is not None:
            self._log.seq = restored.seq
        self._driver.state = attrs.evolve(restored.state, config=self.config)
        return [] if self.state.phase is Phase.IDLE else list(restored.owed)

    async def resume(
        self, owed: list[Effect], decisions: Sequence[Approved | Denied] = ()
    ) -> Finish | AwaitApproval | None:
        """Carry out what was owed at the crash and finish the interrupted turn, if any;
        then feed a human's `decisions` (journaled, in order) on a paused one.

        A turn paused for approval is not interrupted: it waits for a decision.
        """
        if self.state.phase is Phase.IDLE:
            return None

        async def begin() -> bool:
            for effect in owed:
                await self._redo(effect)
            self._start_runs()
            for decision in decisions:
                await self._driver.feed(decision)
            paused = isinstance(self._driver.outcome, AwaitApproval)
            if paused and self.state.phase is not Phase.AWAITING_APPROVAL:
                self._driver.reopen()  # a decision after the first paused it again: it goes on
            return self.state.phase not in (Phase.AWAITING_RESULTS, Phase.AWAITING_APPROVAL)

        return await self._driver.run(begin=begin)

    async def _redo(self, effect: Effect) -> None:
        """Carry out an owed effect; a started tool may not rerun (`lost_outcome`)."""
        from ._restore import lost_outcome  # noqa: PLC0415 - only a resumed session owes effects

        if isinstance(effect, RunTool) and (lost := lost_outcome(effect.call, self.tools)):
            self._driver.post(lost)
            return
        await self.carry_out(effect)


def _settled(state: State) -> bool:
    """No turn under way, or one paused for approval: a stop from outside has nothing to record."""
    return state.phase is Phase.IDLE or state.phase is Phase.AWAITING_APPROVAL


def in_progress(state: State) -> tuple[ChatMessage, ...]:
    """The history with the running turn's rounds so far as an assistant message."""
    turn = state.turn
    if turn is None or not turn.rounds:
        return state.history
    return (*state.history, ChatMessage(role="assistant", content="", tool_rounds=turn.rounds))

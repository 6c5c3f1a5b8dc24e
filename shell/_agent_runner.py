"""The agent's effect handler: a `Driver` folds events through `agent_step`, this carries
out each effect.

Events are fed to `agent_step` one at a time, in the order they happen (shell/_driver.py):

- `CallModel`: first the driver's abort check (an aborted run gets `Cancelled`
  instead of the call), then the model port streams events, each fed back.
- `RunTool` / `Reflect`: every execution of a round runs at once in the run's
  task group, each with its timeout, between the `on_tool_call` and
  `on_tool_result` callbacks; the outcome (an exception or a timeout as an
  error result) comes back as `ToolFinished`. A helper (`RunTool`, never the
  output tool's `Reflect`) first asks the PreToolUse hooks: a block is its
  outcome ("Tool call blocked: <reason>", an error result the model reads), a
  modified input is what the helper runs on; it then runs within
  `max_concurrent_tools`, and the PostToolUse hooks are told its result.
  Hooks are the shell's here (`agent_step` has no `AskHook`): the decision is
  folded into the `ToolFinished` the journal keeps, so replay never asks them;
  an `ask` is fed as `HookDecided(pre:<id>, Ask)` instead, which holds the call
  for a human (core rule 15), and an approved call runs without asking again.
- `AwaitApproval`: the run pauses (nothing runs); `run`/`resume` return it, and
  `resume(..., decisions)` later feeds the human's `Approved` / `Denied`.
- `Validate`: the schema then the validators (core rule 7); `ValidationFinished`.
- `StartTimer`: sleep, then `TimerFired`. `Emit`: `on_attempt_start` /
  `on_validation_failure`. `FinishAgent`: the run is over.

Every callback gets the reducer's `AgentState` first; one that raises is
recorded in `callback_errors` and never breaks the run.

Journaling (given a journal and a session id): every step is kept as an
`adapters.Step`, and saved as the Runner saves a tool loop's (shell/_runner.py,
"Durability"): before a helper or the reflection handler runs (so a started
call is on disk before it has any effect), after each tool outcome, before each
model call, at the end of the run, at a pause for approval and with each
hook's ask and human decision. `Record` (keep the step) is first in
every step, `Flush` (save, then start the step's tools) last in a durable one;
a `StepLog` keeps and saves them (shell/_steplog.py, shared with the Runner).

Resuming (`resume`, after `unfinished_run` folded the journal again): the run
goes on from its last saved step; what was owed is redone, except a helper
call that started without an outcome, which reruns only if its tool is
idempotent (else "interrupted; outcome unknown": `lost_outcome`, the
Runner's rule too).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, assert_never

import anyio
import attrs
from returns.result import Failure, Result, Success

from toolreel.adapters import Journal, ModelPort
from toolreel.adapters._redact import Redactor
from toolreel.core import (
    AgentConfig,
    AgentEffect,
    AgentEvent,
    AgentState,
    Allowed,
    ApprovalRequested,
    Approved,
    Ask,
    AttemptStarted,
    AwaitApproval,
    Blocked,
    CallModel,
    Decision,
    Denied,
    Emit,
    FinishAgent,
    HookDecided,
    HookPoint,
    ImagePart,
    MessageRecorded,
    Notice,
    PromptSubmitted,
    ReasoningStreamed,
    Reflect,
    Replaced,
    ResultsRequested,
    RetryScheduled,
    RoundFinished,
    RunTool,
    StartTimer,
    TextStreamed,
    ToolCall,
    ToolCallAnnounced,
    ToolFinished,
    ToolResult,
    ToolResultReady,
    UsageReported,
    Validate,
    ValidationFailed,
    ValidationFinished,
    agent_step,
    initial_agent_state,
    well_formed,
)
from toolreel.core._agent_approval import PRE_HOOK, was_approved

from ._agent_output import OutputTool, Validator, check_output
from ._callbacks import (
    OnAgentNotice,
    OnAgentToolCall,
    OnAgentToolResult,
    OnAttemptStart,
    OnToolCall,
    OnToolResult,
    OnValidationFailure,
)
from ._driver import Driver, guarded, limiter_for, run_call, run_within
from ._hooks import Hook, PostToolUseEvent, PreToolUseEvent, decide
from ._images import ToolOutput
from ._restore import lost_outcome
from ._steplog import Flush, Record, StepLog, framed
from ._telemetry import Telemetry, TurnEnd, watched_tool
from ._tools import Tool, call_arguments


@attrs.frozen(kw_only=True)
class AgentCallbacks:
    """What the caller watches, sync or async (shell/_callbacks.py).

    The `on_*` (the definition's) get the `AgentState` first; `observe_call` /
    `observe_result` (the options' `on_tool_call` / `on_tool_result`) get only
    the helper's `ToolCall` / `ToolResult`, as the Client's observers do;
    `on_notice` (the options') every notice, then the `FinishAgent`.
    """

    on_tool_call: OnAgentToolCall | None = None
    on_tool_result: OnAgentToolResult | None = None
    on_attempt_start: OnAttemptStart | None = None
    on_validation_failure: OnValidationFailure | None = None
    observe_call: OnToolCall | None = None
    observe_result: OnToolResult | None = None
    on_notice: OnAgentNotice | None = None


#: What runs a call: a helper's `run` or the output tool's reflection handler.
_Work = Callable[[str], Awaitable[Result[str | ToolOutput, str]]]
_RunnerEffect = AgentEffect | Record | Flush


def _durable(event: AgentEvent, effects: tuple[AgentEffect, ...]) -> bool:
    """Whether a step is saved at once (module docstring: "Journaling")."""
    return isinstance(event, ToolFinished | HookDecided | Approved | Denied) or any(
        isinstance(effect, RunTool | Reflect | CallModel | FinishAgent | AwaitApproval)
        for effect in effects
    )


class AgentRunner:
    """Interprets one agent run's effects (see the module docstring)."""

    def __init__(
        self,
        *,
        config: AgentConfig,
        model: ModelPort,
        helpers: Mapping[str, Tool],
        output: OutputTool[Any],
        validators: Sequence[Validator[Any]] = (),
        callbacks: AgentCallbacks | None = None,
        tool_timeout: float = 60.0,
        max_concurrent_tools: int | None = None,
        hooks: Mapping[HookPoint, tuple[Hook, ...]] | None = None,
        abort: anyio.Event | None = None,
        redactor: Redactor | None = None,
        journal: Journal | None = None,
        session_id: str = "",
    ) -> None:
        """A runner before the run (journaling its steps to `journal`, if given)."""
        self.redactor = redactor or getattr(model, "redactor", None) or Redactor()
        self.helpers = dict(helpers)
        self.output = output
        self.validators = tuple(validators)
        self.callbacks = callbacks or AgentCallbacks()
        self.tool_timeout = tool_timeout
        self.hooks = dict(hooks or {})
        self._limiter = limiter_for(max_concurrent_tools)
        self.callback_errors: list[str] = []
        self.accepted: Any = None
        self.journal = journal
        self.session_id = session_id
        self._log = StepLog(journal, session_id)  # the caller's journal: appended in a thread
        self._runs: list[tuple[ToolCall, _Work, float, bool]] = []
        self._driver = Driver[AgentState, AgentEvent, _RunnerEffect](
            model=model,
            reduce=self._reduce,
            handler=self,
            redactor=self.redactor,
            state=initial_agent_state(config),
            abort=abort,
        )
        self._finish: FinishAgent | None = None
        self._paused: AwaitApproval | None = None
        self._approved: set[str] = set()  # approved helper calls: run without PreToolUse
        self.telemetry = Telemetry.of("agent", model, config.model, session_id, self.redactor)

    async def _guarded(self, callback: Callable[..., Any] | None, *args: Any) -> None:
        """Call an observer or hook; what it raised is recorded, with any key masked."""
        await guarded(self.callback_errors, callback, *args, redact=self.redactor.text)

    @property
    def state(self) -> AgentState:
        """The reducer's state: the run so far."""
        return self._driver.state

    @property
    def seq(self) -> int:
        """The number of the last step kept."""
        return self._log.seq

    async def run(
        self, prompt: str, images: tuple[ImagePart, ...] = ()
    ) -> FinishAgent | AwaitApproval:
        """Run the agent on `prompt` (and its `images`) to its end, or to a pause for approval.

        A cancel from outside (a scope, `task.cancel()`) or anything else that
        stops it is recorded as `Cancelled` under a shield, then propagates
        as it was — never wrapped in an exception group.
        """

        async def begin() -> bool:
            await self._driver.feed(PromptSubmitted(text=prompt, images=images))
            return True

        return await self._drive(begin)

    async def resume(
        self,
        state: AgentState,
        seq: int,
        owed: Sequence[AgentEffect],
        decisions: Sequence[Approved | Denied] = (),
    ) -> FinishAgent | AwaitApproval:
        """Go on with a run a crash interrupted, or that paused: from `state`, carrying out
        what was `owed`, then feeding the human's `decisions` (journaled, in order).

        A helper call that started without an outcome runs again only if its
        tool is idempotent; otherwise its result is "interrupted; outcome
        unknown". Anything else owed (a model call, a reflection, a
        validation, a timer) is simply carried out again.
        """
        self._driver.state = state
        self._log.seq = seq

        async def begin() -> bool:
            for effect in owed:
                await self._redo(effect)
            self._start_runs()
            for decision in decisions:
                await self._driver.feed(decision)
            return True

        return await self._drive(begin)

    async def _drive(self, begin: Callable[[], Awaitable[bool]]) -> FinishAgent | AwaitApproval:
        """Drive the run until it finishes or pauses for approval."""
        self._finish = self._paused = None
        self._driver.drain()
        await self.telemetry.drive(self._driver, begin, self._ended)
        outcome = self._finish or self._paused
        assert outcome is not None
        return outcome

    def _ended(self) -> TurnEnd:
        """How the run finished, if it did (for the telemetry)."""
        return self._finish

    async def _redo(self, effect: AgentEffect) -> None:
        """Carry out an owed effect; a started helper may not rerun (`lost_outcome`)."""
        if isinstance(effect, RunTool) and (lost := lost_outcome(effect.call, self.helpers)):
            self._driver.post(lost)
            return
        await self.carry_out(effect)

    def _reduce(
        self, state: AgentState, event: AgentEvent
    ) -> tuple[AgentState, tuple[_RunnerEffect, ...]]:
        """`agent_step` on the well-formed, redacted event, the core's effects between the
        runner's own."""
        # what agent_step sees is what the journal can hold exactly (core/_wellformed.py), and
        # no key is ever kept, stored or shown
        event = self.redactor.event(well_formed(event))
        state, effects = agent_step(state, event)
        return state, framed(event, effects, durable=_durable(event, effects))

    async def carry_out(self, effect: _RunnerEffect) -> None:
        """Carry out one effect (the slow ones in tasks)."""
        match effect:
            case Record():
                self._log.record(effect)
            case Flush():
                await self._log.save()  # a tool call is on disk before it starts
                self._start_runs()
            case CallModel():
                self._driver.call_model(effect)
            case RunTool(call=call):
                if was_approved(self.state, call):
                    self._approved.add(call.id)
                helper = self.helpers[call.name]
                timeout = helper.timeout if helper.timeout is not None else self.tool_timeout
                self._runs.append((call, helper.run, timeout, True))
            case Reflect(call=call):
                self._runs.append((call, self.output.reflect, self.tool_timeout, False))
            case Validate():
                self._driver.spawn(self._validate, effect)
            case StartTimer(token=token, seconds=seconds):
                self._driver.watch.retry_waiting(seconds)
                self._driver.start_timer(token, seconds)
            case Emit(notice=notice):
                await self._notify(notice)
            case AwaitApproval():
                self._paused = effect
                self._driver.end()  # nothing runs: the run is over until a human decides
            case FinishAgent():
                self._finish = effect
                self._driver.end()
                await self._guarded(self.callbacks.on_notice, effect)
            case _:
                assert_never(effect)

    def _start_runs(self) -> None:
        """Start the helper and reflection runs the step asked for."""
        runs, self._runs = self._runs, []
        for call, work, timeout, helper in runs:
            self._driver.spawn(self._execute, call, work, timeout, helper)

    async def _notify(self, notice: Notice) -> None:
        """Tell `on_notice`, then the notice's own callback (`agent_step` emits AgentNotices)."""
        await self._guarded(self.callbacks.on_notice, notice)
        match notice:
            case AttemptStarted(attempt=attempt):
                await self._safe(self.callbacks.on_attempt_start, attempt)
            case ValidationFailed(attempt=attempt, problems=problems):
                await self._safe(self.callbacks.on_validation_failure, attempt, list(problems))
            case (
                TextStreamed()
                | ReasoningStreamed()
                | ToolCallAnnounced()
                | ResultsRequested()
                | ApprovalRequested()
                | ToolResultReady()
                | RoundFinished()
                | RetryScheduled()
                | UsageReported()
                | MessageRecorded()
            ):
                pass  # the tool loop's notices: agent_step never emits them
            case _:
                assert_never(notice)

    async def _execute(self, call: ToolCall, work: _Work, timeout: float, helper: bool) -> None:
        """One helper or reflection run, between its callbacks, answered with `ToolFinished`.

        A helper call PreToolUse answers `Ask` about is not run: `HookDecided` holds it
        for a human's decision (core rule 15); once approved it runs unasked.
        """
        decision: Decision = Allowed()
        if helper and call.id not in self._approved:
            decision = await self._pre_tool_use(call)
            if isinstance(decision, Ask):
                self._driver.post(HookDecided(hook_id=f"{PRE_HOOK}{call.id}", decision=decision))
                return
        await self._safe(self.callbacks.on_tool_call, call.name, call_arguments(call))
        if helper:
            await self._guarded(self.callbacks.observe_call, call)
            event = await watched_tool(
                self._driver.watch, call, self._run_helper(call, work, timeout, decision)
            )
        else:
            event = await watched_tool(self._driver.watch, call, run_call(call, work, timeout))
        await self._safe(self.callbacks.on_tool_result, call.name, event.output)
        if helper:
            result = ToolResult(
                call_id=call.id,
                name=call.name,
                content=event.output,
                is_error=event.is_error,
                images=event.images,
            )
            await self._guarded(self.callbacks.observe_result, result)
        self._driver.post(event)

    async def _run_helper(
        self, call: ToolCall, work: _Work, timeout: float, decision: Decision
    ) -> ToolFinished:
        """A helper call as PreToolUse decided, within `max_concurrent_tools`, PostToolUse told."""
        match decision:
            case Blocked(reason=reason):
                return ToolFinished(
                    call_id=call.id, output=f"Tool call blocked: {reason}", is_error=True
                )
            case Replaced(value=arguments):
                call = attrs.evolve(call, arguments=arguments)
            case Allowed() | Ask():  # an Ask was held (`_execute`): this call was approved
                pass
        event = await run_within(self._limiter, call, work, timeout)
        await self._post_tool_use(call, event)
        return event

    async def _pre_tool_use(self, call: ToolCall) -> Decision:
        """The PreToolUse hooks' decision on a helper call (no hooks: allowed)."""
        hooks = self.hooks.get(HookPoint.PRE_TOOL_USE, ())
        if not hooks:
            return Allowed()
        asked = PreToolUseEvent(
            tool_name=call.name,
            tool_input=call_arguments(call),
            tool_use_id=call.id,
            history=self.state.history,
        )
        return await decide(hooks, asked)

    async def _post_tool_use(self, call: ToolCall, event: ToolFinished) -> None:
        """Tell the PostToolUse hooks a helper's result; what they raise is recorded."""
        hooks = self.hooks.get(HookPoint.POST_TOOL_USE, ())
        told = PostToolUseEvent(
            tool_name=call.name,
            tool_input=call_arguments(call),
            tool_result=event.output,
            tool_use_id=call.id,
            is_error=event.is_error,
            history=self.state.history,
        )
        for hook in hooks:
            await self._guarded(hook, told)

    async def _validate(self, effect: Validate) -> None:
        """Check an output; keep the typed value of one that passes."""
        match await check_output(self.output, self.validators, effect.output):
            case Success(value):
                self.accepted = value
                self._driver.post(ValidationFinished(attempt=effect.attempt))
            case Failure(problems):
                self._driver.post(ValidationFinished(attempt=effect.attempt, problems=problems))

    async def _safe(self, callback: Callable[..., Any] | None, *args: Any) -> None:
        """Call a callback with the state first; record what it raised instead of raising."""
        await self._guarded(callback, self.state, *args)

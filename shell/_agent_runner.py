"""The agent's effect handler: a `Driver` folds events through `agent_step`, this carries
out each effect.

Events are fed to `agent_step` one at a time, in the order they happen (shell/_driver.py):

- `CallModel`: first the driver's abort check (an aborted run gets `Cancelled`
  instead of the call), then the model port streams events, each fed back.
- `RunTool` / `Reflect`: every execution of a round runs at once in the run's
  task group, each with its timeout, between the `on_tool_call` and
  `on_tool_result` callbacks; the outcome (an exception or a timeout as an
  error result) comes back as `ToolFinished`.
- `Validate`: the schema then the validators (core rule 7); `ValidationFinished`.
- `StartTimer`: sleep, then `TimerFired`. `Emit`: `on_attempt_start` /
  `on_validation_failure`. `FinishAgent`: the run is over.

Every callback gets the reducer's `AgentState` first; one that raises is
recorded in `callback_errors` and never breaks the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, assert_never

import anyio
import anyio.abc
import attrs
from returns.result import Failure, Result, Success

from toolreel.adapters import ModelPort
from toolreel.adapters._redact import Redactor
from toolreel.core import (
    AgentConfig,
    AgentEffect,
    AgentEvent,
    AgentState,
    AttemptStarted,
    CallModel,
    Emit,
    FinishAgent,
    MessageRecorded,
    Notice,
    PromptSubmitted,
    ReasoningStreamed,
    Reflect,
    ResultsRequested,
    RetryScheduled,
    RoundFinished,
    RunTool,
    StartTimer,
    TextStreamed,
    ToolCall,
    ToolCallAnnounced,
    ToolResultReady,
    Validate,
    ValidationFailed,
    ValidationFinished,
    agent_step,
    initial_agent_state,
)

from ._agent_output import OutputTool, Validator, check_output
from ._driver import Driver, guarded, run_call
from ._tools import Tool, call_arguments


@attrs.frozen(kw_only=True)
class AgentCallbacks:
    """What the caller watches; each gets the `AgentState` first and may be sync or async."""

    on_tool_call: Callable[..., Any] | None = None
    on_tool_result: Callable[..., Any] | None = None
    on_attempt_start: Callable[..., Any] | None = None
    on_validation_failure: Callable[..., Any] | None = None


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
        abort: anyio.Event | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        """A runner before the run."""
        self.redactor = redactor or getattr(model, "redactor", None) or Redactor()
        self.helpers = dict(helpers)
        self.output = output
        self.validators = tuple(validators)
        self.callbacks = callbacks or AgentCallbacks()
        self.tool_timeout = tool_timeout
        self.callback_errors: list[str] = []
        self.accepted: Any = None
        self._driver = Driver[AgentState, AgentEvent, AgentEffect](
            model=model,
            reduce=self._reduce,
            handler=self,
            state=initial_agent_state(config),
            abort=abort,
        )
        self._finish: FinishAgent | None = None

    async def _guarded(self, callback: Callable[..., Any] | None, *args: Any) -> None:
        """Call an observer or hook; what it raised is recorded, with any key masked."""
        await guarded(self.callback_errors, callback, *args, redact=self.redactor.text)

    @property
    def state(self) -> AgentState:
        """The reducer's state: the run so far."""
        return self._driver.state

    async def run(self, prompt: str) -> FinishAgent:
        """Run the agent on `prompt` to its end.

        A cancel from outside (a scope, `task.cancel()`) or anything else that
        stops it is recorded as `Cancelled` under a shield, then propagates
        as it was — never wrapped in an exception group.
        """

        async def begin() -> bool:
            await self._driver.feed(PromptSubmitted(text=prompt))
            return True

        self._driver.drain()
        await self._driver.run(begin)
        assert self._finish is not None
        return self._finish

    def _reduce(
        self, state: AgentState, event: AgentEvent
    ) -> tuple[AgentState, tuple[AgentEffect, ...]]:
        """`agent_step` on the redacted event."""
        return agent_step(state, self.redactor.event(event))  # no key is ever kept or shown

    async def carry_out(self, effect: AgentEffect) -> None:
        """Carry out one effect (the slow ones in tasks)."""
        match effect:
            case CallModel():
                self._driver.call_model(effect)
            case RunTool(call=call):
                helper = self.helpers[call.name]
                timeout = helper.timeout if helper.timeout is not None else self.tool_timeout
                self._driver.spawn(self._execute, call, helper.run, timeout)
            case Reflect(call=call):
                self._driver.spawn(self._execute, call, self.output.reflect, self.tool_timeout)
            case Validate():
                self._driver.spawn(self._validate, effect)
            case StartTimer(token=token, seconds=seconds):
                self._driver.start_timer(token, seconds)
            case Emit(notice=notice):
                await self._notify(notice)
            case FinishAgent():
                self._finish = effect
                self._driver.end()
            case _:
                assert_never(effect)

    async def _notify(self, notice: Notice) -> None:
        """Tell the caller's callback for the notice (`agent_step` emits only `AgentNotice`s)."""
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
                | ToolResultReady()
                | RoundFinished()
                | RetryScheduled()
                | MessageRecorded()
            ):
                pass  # the tool loop's notices: agent_step never emits them
            case _:
                assert_never(notice)

    async def _execute(
        self, call: ToolCall, work: Callable[[str], Awaitable[Result[str, str]]], timeout: float
    ) -> None:
        """One helper or reflection run, between its callbacks, answered with `ToolFinished`."""
        await self._safe(self.callbacks.on_tool_call, call.name, call_arguments(call))
        event = await run_call(call, work, timeout)
        await self._safe(self.callbacks.on_tool_result, call.name, event.output)
        self._driver.post(event)

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

"""The agent's effect interpreter: folds events through `agent_step` and carries out each effect.

Events are fed to `agent_step` one at a time, in the order they happen:

- `CallModel`: first the abort check (an aborted run gets `Cancelled`
  instead of the call), then the model port streams events, each fed back.
- `RunTool` / `Reflect`: every execution of a round runs at once in the run's
  task group, each with its timeout, between the `on_tool_call` and
  `on_tool_result` callbacks; the outcome (an exception or a timeout as an
  error result) comes back as `ToolFinished`.
- `Validate`: the schema then the validators (core rule 7); `ValidationFinished`.
- `StartTimer`: sleep, then `TimerFired`. `Notify`: `on_attempt_start` /
  `on_validation_failure`. `FinishAgent`: the run is over.

Every callback gets the reducer's `AgentState` first; one that raises is
recorded in `callback_errors` and never breaks the run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

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
    Cancelled,
    FinishAgent,
    Notify,
    PromptSubmitted,
    Reflect,
    RunTool,
    StartTimer,
    ToolCall,
    ToolFinished,
    Validate,
    ValidationFailed,
    ValidationFinished,
    agent_step,
    initial_agent_state,
)

from ._agent_output import OutputTool, Validator, check_output
from ._interpreter import Interpreter, unwrap
from ._tools import Tool, call_arguments


@attrs.frozen(kw_only=True)
class AgentCallbacks:
    """What the caller watches; each gets the `AgentState` first and may be sync or async."""

    on_tool_call: Callable[..., Any] | None = None
    on_tool_result: Callable[..., Any] | None = None
    on_attempt_start: Callable[..., Any] | None = None
    on_validation_failure: Callable[..., Any] | None = None


class AgentRunner(Interpreter[AgentEvent]):
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
        super().__init__(model)
        self.redactor = redactor or getattr(model, "redactor", None) or Redactor()
        self.helpers = dict(helpers)
        self.output = output
        self.validators = tuple(validators)
        self.callbacks = callbacks or AgentCallbacks()
        self.tool_timeout = tool_timeout
        self.abort = abort
        self.state: AgentState = initial_agent_state(config)
        self.accepted: Any = None
        self._finish: FinishAgent | None = None

    def finished(self) -> bool:
        """Whether the run has finished."""
        return self._finish is not None

    async def before_call(self, call: CallModel) -> bool:
        """Checked before every model call: an aborted run gets `Cancelled` instead."""
        if self.abort is not None and self.abort.is_set():
            await self.feed(Cancelled())
            return False
        return True

    async def stream_cancelled(self) -> None:
        """An abort cut the model call in flight."""
        await self.feed(Cancelled())

    async def run(self, prompt: str) -> FinishAgent:
        """Run the agent on `prompt` to its end.

        A cancel from outside (a scope, `task.cancel()`) or anything else that
        stops it is recorded as `Cancelled` under a shield, then propagates
        as it was — never wrapped in an exception group.
        """
        self.drain()
        error: BaseException | None = None
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                if self.abort is not None:
                    tasks.start_soon(self._watch_abort, self.abort)
                await self.feed(PromptSubmitted(text=prompt))
                await self.loop()
                tasks.cancel_scope.cancel()
        except BaseException as exc:
            error = unwrap(exc)
        finally:
            self._tasks = None
        if error is not None:
            with anyio.CancelScope(shield=True):
                if self._finish is None:
                    with contextlib.suppress(Exception):  # the error on its way says more
                        await self.feed(Cancelled())
            raise error
        assert self._finish is not None
        return self._finish

    async def _watch_abort(self, abort: anyio.Event) -> None:
        """Cut a model call in flight once the caller aborts (the loop then feeds `Cancelled`)."""
        await abort.wait()
        self.cut_stream()

    async def feed(self, event: AgentEvent) -> None:
        """Apply one event and carry out its effects in order."""
        event = self.redactor.event(event)  # no key is ever kept or shown
        self.state, effects = agent_step(self.state, event)
        for effect in effects:
            await self._dispatch(effect)

    async def _dispatch(self, effect: AgentEffect) -> None:
        """Carry out one effect (the slow ones in tasks)."""
        match effect:
            case CallModel():
                self._call = effect
            case RunTool(call=call):
                helper = self.helpers[call.name]
                timeout = helper.timeout if helper.timeout is not None else self.tool_timeout
                self.spawn(self._execute, call, helper.run, timeout)
            case Reflect(call=call):
                self.spawn(self._execute, call, self.output.reflect, self.tool_timeout)
            case Validate():
                self.spawn(self._validate, effect)
            case StartTimer(token=token, seconds=seconds):
                self.spawn(self.timer, token, seconds)
            case Notify(notice=AttemptStarted(attempt=attempt)):
                await self._safe(self.callbacks.on_attempt_start, attempt)
            case Notify(notice=ValidationFailed(attempt=attempt, problems=problems)):
                await self._safe(self.callbacks.on_validation_failure, attempt, list(problems))
            case FinishAgent():
                self._finish = effect

    async def _execute(
        self, call: ToolCall, work: Callable[[str], Awaitable[Result[str, str]]], timeout: float
    ) -> None:
        """One helper or reflection run, between its callbacks, answered with `ToolFinished`."""
        await self._safe(self.callbacks.on_tool_call, call.name, call_arguments(call))
        event = ToolFinished(
            call_id=call.id, output=f"Tool {call.name} timed out after {timeout:g} s", is_error=True
        )
        with anyio.move_on_after(timeout):
            match await work(call.arguments):
                case Success(text):
                    event = ToolFinished(call_id=call.id, output=text)
                case Failure(problem):
                    event = ToolFinished(call_id=call.id, output=problem, is_error=True)
        await self._safe(self.callbacks.on_tool_result, call.name, event.output)
        self.post(event)

    async def _validate(self, effect: Validate) -> None:
        """Check an output; keep the typed value of one that passes."""
        match await check_output(self.output, self.validators, effect.output):
            case Success(value):
                self.accepted = value
                self.post(ValidationFinished(attempt=effect.attempt))
            case Failure(problems):
                self.post(ValidationFinished(attempt=effect.attempt, problems=problems))

    async def _safe(self, callback: Callable[..., Any] | None, *args: Any) -> None:
        """Call a callback with the state first; record what it raised instead of raising."""
        await self.guarded(callback, self.state, *args)

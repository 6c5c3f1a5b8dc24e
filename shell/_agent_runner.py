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

import inspect
import json
import math
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc
import attrs
from returns.result import Failure, Result, Success

from toolreel.adapters import ModelPort
from toolreel.core import (
    AgentConfig,
    AgentEffect,
    AgentEvent,
    AgentState,
    AgentStepError,
    AttemptStarted,
    CallModel,
    Cancelled,
    FinishAgent,
    ModelCallFailed,
    ModelResponded,
    Notify,
    PromptSubmitted,
    Reflect,
    RunTool,
    StartTimer,
    TimerFired,
    ToolCall,
    ToolFinished,
    Validate,
    ValidationFailed,
    ValidationFinished,
    agent_step,
    initial_agent_state,
)

from ._agent_output import OutputTool, Validator, check_output
from ._tools import Tool


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
    ) -> None:
        """A runner before the run."""
        self.model = model
        self.helpers = dict(helpers)
        self.output = output
        self.validators = tuple(validators)
        self.callbacks = callbacks or AgentCallbacks()
        self.tool_timeout = tool_timeout
        self.abort = abort
        self.state: AgentState = initial_agent_state(config)
        self.callback_errors: list[str] = []
        self.accepted: Any = None
        self._send, self._inbox = anyio.create_memory_object_stream[AgentEvent](math.inf)
        self._call: CallModel | None = None
        self._finish: FinishAgent | None = None
        self._model_scope: anyio.CancelScope | None = None
        self._tasks: anyio.abc.TaskGroup | None = None

    async def run(self, prompt: str) -> FinishAgent:
        """Run the agent on `prompt` to its end (an anyio cancel is recorded, then raised)."""
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                if self.abort is not None:
                    tasks.start_soon(self._watch_abort, self.abort)
                await self.feed(PromptSubmitted(text=prompt))
                await self._loop()
                tasks.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                if self._finish is None:
                    await self.feed(Cancelled())
            raise
        finally:
            self._tasks = None
        assert self._finish is not None
        return self._finish

    async def _loop(self) -> None:
        """Make model calls and take events from the inbox until the run finishes."""
        while self._finish is None:
            if self._call is not None:
                call, self._call = self._call, None
                if self.abort is not None and self.abort.is_set():
                    await self.feed(Cancelled())  # checked before every model call
                else:
                    await self._stream(call)
            else:
                await self.feed(await self._inbox.receive())

    async def _watch_abort(self, abort: anyio.Event) -> None:
        """Cut a model call in flight once the caller aborts (the loop then feeds `Cancelled`)."""
        await abort.wait()
        if self._model_scope is not None:
            self._model_scope.cancel()

    def post(self, event: AgentEvent) -> None:
        """Hand the runner an event (a tool outcome, a validation, a timer)."""
        self._send.send_nowait(event)

    async def feed(self, event: AgentEvent) -> None:
        """Apply one event and carry out its effects in order."""
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
                self._spawn(self._execute, call, helper.run, timeout)
            case Reflect(call=call):
                self._spawn(self._execute, call, self.output.reflect, self.tool_timeout)
            case Validate():
                self._spawn(self._validate, effect)
            case StartTimer(token=token, seconds=seconds):
                self._spawn(self._timer, token, seconds)
            case Notify(notice=AttemptStarted(attempt=attempt)):
                await self._safe(self.callbacks.on_attempt_start, attempt)
            case Notify(notice=ValidationFailed(attempt=attempt, problems=problems)):
                await self._safe(self.callbacks.on_validation_failure, attempt, list(problems))
            case FinishAgent():
                self._finish = effect

    def _spawn(self, work: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        """Start background work in the run's task group."""
        assert self._tasks is not None
        self._tasks.start_soon(work, *args)

    async def _stream(self, call: CallModel) -> None:
        """Feed the model's events for `call`; a cut stream is a failure, an abort a cancel."""
        ended = False
        with anyio.CancelScope() as scope:
            self._model_scope = scope
            try:
                async for event in self.model.stream(call.request):
                    with anyio.CancelScope(shield=True):  # an abort never splits a step
                        await self.feed(event)
                    if isinstance(event, ModelResponded | ModelCallFailed):
                        ended = True
                        break
            except AgentStepError:
                raise  # a bug, not the model's doing
            except Exception as exc:
                failure = f"model client raised {type(exc).__name__}: {exc}"
                await self.feed(ModelCallFailed(retryable=False, message=failure))
                ended = True
        self._model_scope = None
        if ended:
            return
        if scope.cancelled_caught:
            await self.feed(Cancelled())
        else:
            ended_early = "model stream ended without a complete response"
            await self.feed(ModelCallFailed(retryable=True, message=ended_early))

    async def _execute(
        self, call: ToolCall, work: Callable[[str], Awaitable[Result[str, str]]], timeout: float
    ) -> None:
        """One helper or reflection run, between its callbacks, answered with `ToolFinished`."""
        await self._safe(self.callbacks.on_tool_call, call.name, _arguments(call))
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

    async def _timer(self, token: str, seconds: float) -> None:
        """Sleep, then say so."""
        await anyio.sleep(seconds)
        self.post(TimerFired(token=token))

    async def _safe(self, callback: Callable[..., Any] | None, *args: Any) -> None:
        """Call a callback with the state first; record what it raised instead of raising."""
        if callback is None:
            return
        try:
            result = callback(self.state, *args)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            name = getattr(callback, "__qualname__", repr(callback))
            self.callback_errors.append(f"{name} raised {type(exc).__name__}: {exc}")


def _arguments(call: ToolCall) -> Any:
    """A call's arguments as data (the core checked they are a JSON object)."""
    try:
        return json.loads(call.arguments)
    except ValueError:
        return {}

"""The agent run workflow: `agent_step` folded inside Temporal, each effect an activity.

Theory of operation. As the session workflow (shell/temporal/_workflow.py),
with the agent's effects, each carried out on a worker that holds the agent's
definition under the run's name (`AgentStart.agent`):

1. `configure` builds the run's `AgentConfig` and prompt (`build_prompt(input)`).
2. `CallModel` is an activity that streams the call, told the output tool's
   name; its events are folded in order once it is over.
3. `RunTool` (a helper, after the worker's PreToolUse hooks) and `Reflect` (the
   output tool's reflection handler) are one activity per call, all of a round
   at once; a helper that is not idempotent runs at most once (a lost worker:
   "interrupted; outcome unknown").
4. `Validate` is an activity: the schema, then the definition's validators;
   its `ValidationFinished` carries the problems (a lost one: one problem).
5. `StartTimer` is a durable timer; `Emit` needs nothing; `FinishAgent` ends the
   run, whose result is the record (config, every event folded, the `FinishAgent`).
6. The `cancel` signal folds `Cancelled`; late answers are dropped.

The definition's own callbacks are not called on Temporal: only the effects
(which the history keeps) are carried out.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, cast

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from toolreel.adapters._journal import config_of
from toolreel.adapters._serde import effect_data, event_data, event_of, unstructure
from toolreel.core import (
    AgentConfig,
    AgentEvent,
    AgentState,
    CallModel,
    Cancelled,
    FinishAgent,
    ModelCallFailed,
    PromptSubmitted,
    Reflect,
    RunTool,
    StartTimer,
    TimerFired,
    ToolFinished,
    Validate,
    ValidationFinished,
    agent_step,
    initial_agent_state,
    well_formed,
)
from toolreel.shell._restore import INTERRUPTED

from ._activity_options import ATTEMPTS, MARGIN, activity_options, cause, spawn
from ._wire import (
    AGENT_CALL_MODEL,
    AGENT_CONFIGURE,
    AGENT_REFLECT,
    AGENT_RUN_TOOL,
    AGENT_VALIDATE,
    AGENT_WORKFLOW,
    AgentCall,
    AgentSetup,
    AgentStart,
    SessionRecord,
    effect_digest,
)


@workflow.defn(name=AGENT_WORKFLOW)
class AgentWorkflow:
    """One agent run (see the module docstring)."""

    @workflow.init
    def __init__(self, start: AgentStart) -> None:
        """A run not yet configured."""
        self._start = start
        self._setup: AgentSetup | None = None
        self._state: AgentState | None = None
        self._inbox: deque[AgentEvent] = deque()
        self._events: list[dict[str, Any]] = []
        self._finish: dict[str, Any] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._seq = 0

    @workflow.run
    async def run(self, start: AgentStart) -> SessionRecord:
        """Configure on a worker, then fold events until `FinishAgent`."""
        self._setup = await workflow.execute_activity(
            AGENT_CONFIGURE,
            start,
            result_type=AgentSetup,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(maximum_attempts=ATTEMPTS),
        )
        config = config_of(self._setup.config)
        assert isinstance(config, AgentConfig)
        self._state = initial_agent_state(config)
        self._fold(PromptSubmitted(text=self._setup.prompt))
        while self._finish is None:
            await workflow.wait_condition(lambda: bool(self._inbox))
            self._fold(self._inbox.popleft())
        for task in self._tasks:
            task.cancel()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.record()

    @workflow.signal
    def cancel(self) -> None:
        """Stop the run: it finishes `EXECUTION_CANCELLED`."""
        self._inbox.append(Cancelled())

    @workflow.query
    def record(self) -> SessionRecord:
        """The config, every event folded so far, and the `FinishAgent` once there is one."""
        config = self._setup.config if self._setup is not None else {}
        return SessionRecord(config=config, events=list(self._events), finish=self._finish)

    @workflow.query
    def transcript(self) -> list[dict[str, Any]]:
        """The conversation so far as JSON messages."""
        if self._state is None:
            return []
        data: list[dict[str, Any]] = unstructure(self._state.history)
        return data

    def _fold(self, event: AgentEvent) -> None:
        """Apply one event, well-formed (core/_wellformed.py), and carry out its effects;
        nothing once the run is over."""
        if self._finish is not None or self._state is None:
            return
        event = well_formed(event)  # what a model, a tool or a hook sent: as journals hold it
        self._state, effects = agent_step(self._state, event)
        self._seq += 1
        self._events.append(event_data(event))
        for index, effect in enumerate(effects):
            key = f"{self._seq}.{index}-{effect_digest(effect)}"
            match effect:
                case CallModel():
                    self._spawn(self._call_model(effect, key))
                case RunTool() | Reflect():
                    self._spawn(self._run_tool(effect, key))
                case Validate():
                    self._spawn(self._validate(effect, key))
                case StartTimer():
                    self._spawn(self._timer(effect))
                case FinishAgent():
                    self._finish = unstructure(effect)
                case _:
                    pass  # Emit: the history keeps the events

    def _spawn(self, work: Awaitable[None]) -> None:
        """Run an effect's work in the background."""
        self._tasks = spawn(self._tasks, work)

    def _options(self, key: str, timeout: timedelta, attempts: int) -> dict[str, Any]:
        """Activity options: its id, timeouts, heartbeat and retries."""
        return activity_options(key, timeout, attempts, self._start.heartbeat_seconds)

    async def _answered(
        self,
        name: str,
        data: dict[str, Any],
        options: dict[str, Any],
        lost: Callable[[ActivityError], AgentEvent],
    ) -> None:
        """Run an effect's activity; post the events it returns, or what its loss means."""
        call = AgentCall(agent=self._start.agent, data=data)
        try:
            found = await workflow.execute_activity(
                name, call, result_type=list[dict[str, Any]], **options
            )
        except ActivityError as exc:
            self._inbox.append(lost(exc))
            return
        self._inbox.extend(cast(AgentEvent, event_of(item)) for item in found)

    async def _call_model(self, effect: CallModel, key: str) -> None:
        """The model call as an activity; its events folded in order."""
        assert self._setup is not None
        timeout = timedelta(seconds=self._setup.model_timeout) + MARGIN
        options = self._options(key, timeout, self._start.model_attempts)

        def lost(exc: ActivityError) -> AgentEvent:
            message = f"model call activity failed: {cause(exc)}"
            return ModelCallFailed(retryable=False, message=message)

        await self._answered(AGENT_CALL_MODEL, unstructure(effect.request), options, lost)

    async def _run_tool(self, effect: RunTool | Reflect, key: str) -> None:
        """A helper's or the reflection handler's run; a helper not idempotent runs at most once."""
        assert self._setup is not None
        call = effect.call
        helper = isinstance(effect, RunTool)
        once = helper and call.name not in self._setup.idempotent
        seconds = self._setup.timeouts.get(call.name, 60.0)
        options = self._options(key, timedelta(seconds=seconds) + MARGIN, 1 if once else ATTEMPTS)

        def lost(_: ActivityError) -> AgentEvent:
            return ToolFinished(call_id=call.id, output=INTERRUPTED, is_error=True)

        name = AGENT_RUN_TOOL if helper else AGENT_REFLECT
        await self._answered(name, unstructure(call), options, lost)

    async def _validate(self, effect: Validate, key: str) -> None:
        """The output's validation (schema, then validators) as an activity."""
        options = self._options(key, timedelta(seconds=60), ATTEMPTS)

        def lost(exc: ActivityError) -> AgentEvent:
            problem = f"validation activity failed: {exc}"
            return ValidationFinished(attempt=effect.attempt, problems=(problem,))

        await self._answered(AGENT_VALIDATE, effect_data(effect), options, lost)

    async def _timer(self, effect: StartTimer) -> None:
        """A durable timer; then `TimerFired`."""
        await workflow.sleep(effect.seconds)
        self._inbox.append(TimerFired(token=effect.token))

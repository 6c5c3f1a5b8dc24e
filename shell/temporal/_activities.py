"""The session workflow's activities: the effects that touch the world, run on a worker.

A worker holds the model connection, the tools and the hooks (a deployment's
configuration, never a workflow's input: no key enters a history). Each
activity heartbeats while it runs, so a worker that dies is noticed within
the heartbeat timeout; what it returns is redacted before Temporal records it.

- `configure`: the loop config this worker's tools and options make.
- `call_model`: one model call, streamed; its events, in order.
- `run_tool`: one tool call, with the tool's timeout; its `ToolFinished`.
- `ask_hook` / `tell_hook`: the PreToolUse/UserPromptSubmit hooks' decision;
  the PostToolUse hooks, told.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, cast

import attrs
from temporalio import activity

from toolreel.adapters._held import held_back
from toolreel.adapters._journal import config_data
from toolreel.adapters._providers import ModelPort
from toolreel.adapters._redact import Redactor
from toolreel.adapters._serde import event_data, get_converter, structure, unstructure
from toolreel.core import (
    AskHook,
    ChatMessage,
    Effect,
    HookDecided,
    HookPoint,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    TellHook,
    ToolCall,
    ToolFinished,
)
from toolreel.shell._client import loop_config
from toolreel.shell._driver import STREAM_ENDED, limiter_for, run_within
from toolreel.shell._hooks import (
    Hook,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
    call_hook,
    decide,
    hook_points,
)
from toolreel.shell._options import AgentOptions
from toolreel.shell._tools import call_arguments, registry

from ._wire import (
    ASK_HOOK,
    CALL_MODEL,
    CONFIGURE,
    RUN_TOOL,
    TELL_HOOK,
    HookRequest,
    SessionSetup,
    SessionStart,
)


@contextlib.asynccontextmanager
async def heartbeating() -> AsyncIterator[None]:
    """Heartbeat in the background, thrice per heartbeat timeout, while the block runs."""
    timeout = activity.info().heartbeat_timeout
    every = timeout.total_seconds() / 3 if timeout else 1.0

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def streamed(model: ModelPort, request: ModelRequest, redactor: Redactor) -> list[ModelEvent]:
    """One model call's events, ending in `ModelResponded` or `ModelCallFailed` (as the Driver).

    What the port raises is the model's failure; a stream that ends short is a
    retryable one. Every event is redacted: no key reaches the history.
    """
    events = model.stream(request)
    if redactor.secrets:
        events = held_back(events, redactor)
    found: list[ModelEvent] = []
    try:
        async for event in events:
            found.append(redactor.event(event))
            activity.heartbeat()
            if isinstance(event, ModelResponded | ModelCallFailed):
                return found
    except Exception as exc:
        failure = redactor.text(f"model client raised {type(exc).__name__}: {exc}")
        return [*found, ModelCallFailed(retryable=False, message=failure)]
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    return [*found, ModelCallFailed(retryable=True, message=STREAM_ENDED)]


class SessionActivities:
    """The activities of one worker: its options (tools, hooks, connection) and model port."""

    def __init__(self, options: AgentOptions, model: ModelPort) -> None:
        """Activities over `options` (MCP servers already opened) and an open `model`."""
        self.options = options
        self.tools = registry(options.tools)
        self.hooks: Mapping[HookPoint, tuple[Hook, ...]] = hook_points(options.hooks)
        self.connection = options.connection
        self.model = model
        self.redactor = self.connection.redactor(model)
        self._limiter = limiter_for(options.max_concurrent_tools)

    def all(self) -> Sequence[Callable[..., Any]]:
        """Every activity, for a `Worker`."""
        return [self.configure, self.call_model, self.run_tool, self.ask_hook, self.tell_hook]

    @activity.defn(name=CONFIGURE)
    async def configure(self, start: SessionStart) -> SessionSetup:
        """The loop config of a new session: this worker's tools and model, the caller's changes."""
        changes: dict[str, Any] = {"auto_execute_tools": start.auto_execute}
        if start.system_prompt is not None:
            changes["system_prompt"] = start.system_prompt
        if start.max_iterations is not None:
            changes["max_tool_iterations"] = start.max_iterations
        options = attrs.evolve(self.options, **changes)
        config = loop_config(options, self.tools, self.connection)
        default = options.tool_timeout
        return SessionSetup(
            config=config_data(config),
            idempotent=sorted(name for name, tool in self.tools.items() if tool.idempotent),
            timeouts={
                name: tool.timeout if tool.timeout is not None else default
                for name, tool in self.tools.items()
            },
            model_timeout=self.connection.call_timeout,
        )

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """Stream one model call; its events as JSON data, in order."""
        async with heartbeating():
            events = await streamed(self.model, structure(request, ModelRequest), self.redactor)
        return [event_data(event) for event in events]

    @activity.defn(name=RUN_TOOL)
    async def run_tool(self, call_data: dict[str, Any]) -> dict[str, Any]:
        """Run one tool call with its timeout; its `ToolFinished` as JSON data."""
        call = structure(call_data, ToolCall)
        tool = self.tools.get(call.name)
        if tool is None:
            message = f"Tool {call.name} is not offered by this worker"
            finished = ToolFinished(call_id=call.id, output=message, is_error=True)
        else:
            timeout = tool.timeout if tool.timeout is not None else self.options.tool_timeout
            async with heartbeating():
                finished = await run_within(self._limiter, call, tool.run, timeout)
        return event_data(self.redactor.event(finished))

    @activity.defn(name=ASK_HOOK)
    async def ask_hook(self, request: HookRequest) -> dict[str, Any]:
        """The PreToolUse or UserPromptSubmit hooks' decision, as `HookDecided` JSON data."""
        ask = _effect(request.effect)
        assert isinstance(ask, AskHook)
        history = structure(request.history, tuple[ChatMessage, ...])
        asked: PreToolUseEvent | UserPromptSubmitEvent
        if ask.point is HookPoint.PRE_TOOL_USE and ask.call is not None:
            asked = PreToolUseEvent(
                tool_name=ask.call.name,
                tool_input=call_arguments(ask.call),
                tool_use_id=ask.call.id,
                history=history,
            )
        else:
            asked = UserPromptSubmitEvent(prompt=ask.prompt or "", history=history)
        async with heartbeating():
            decision = await decide(self.hooks.get(ask.point, ()), asked)
        decided = self.redactor.event(HookDecided(hook_id=ask.hook_id, decision=decision))
        return event_data(decided)

    @activity.defn(name=TELL_HOOK)
    async def tell_hook(self, request: HookRequest) -> None:
        """Tell the PostToolUse hooks a result; what they raise is the worker's log's."""
        tell = _effect(request.effect)
        assert isinstance(tell, TellHook)
        event = PostToolUseEvent(
            tool_name=tell.call.name,
            tool_input=call_arguments(tell.call),
            tool_result=tell.result.content,
            tool_use_id=tell.call.id,
            is_error=tell.result.is_error,
            history=structure(request.history, tuple[ChatMessage, ...]),
        )
        for hook in self.hooks.get(HookPoint.POST_TOOL_USE, ()):
            try:
                await call_hook(hook, event)
            except Exception as exc:
                activity.logger.warning(self.redactor.text(f"PostToolUse hook raised {exc!r}"))


def _effect(data: dict[str, Any]) -> Effect:
    """An effect back from its tagged JSON data."""
    return cast(Effect, get_converter().structure(data, Effect))  # type: ignore[arg-type]


def history_data(history: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Messages as JSON data (what a hook activity is shown)."""
    data: list[dict[str, Any]] = unstructure(tuple(history))
    return data

"""The session workflow's activities: the effects that touch the world, run on a worker.

A worker holds the model connection, the tools, the hooks and the agent
definitions it runs, by name (a deployment's configuration, never a workflow's
input: no key enters a history). Each activity heartbeats while it runs, so a
worker that dies is noticed within the heartbeat timeout; what it returns is
redacted before Temporal records it.

- `configure`: the config this worker's tools and options make; for an agent
  run, its definition's (a structured output's) and its prompt (text a journal
  holds, else the run is refused, not retried).
- `call_model`: one model call, streamed (told a structured output's tool); its
  events, in order. While it runs, the text the model writes goes to the
  session's stream for its callers (shell/temporal/_live.py).
- `run_tool`: one tool call (the worker's, or the agent's helper), with the
  tool's timeout; its `ToolFinished` (or `ToolTimedOut`). `reflect`: an agent's
  reflection handler on one output-tool call.
- `validate`: an agent's output through its schema, then its validators:
  `ValidationFinished`.
- `ask_hook` / `tell_hook`: the PreToolUse/UserPromptSubmit hooks' decision;
  the PostToolUse hooks, told. An agent run cannot wait for a human on Temporal
  yet: a hook's `ask` about its tool call blocks the call instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, cast

import attrs
from returns.result import Failure, Success
from temporalio import activity
from temporalio.exceptions import ApplicationError

from toolreel.adapters import ModelPort, structure, unstructure
from toolreel.adapters.records import config_data, event_data, get_converter
from toolreel.adapters.redaction import Redactor, held_back
from toolreel.core import (
    AskHook,
    ChatMessage,
    ConfigError,
    Effect,
    HookDecided,
    LoopConfig,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    PromptSubmitted,
    TellHook,
    ToolCall,
    ToolFinished,
    ValidationFinished,
)
from toolreel.core.hooks import Ask, Blocked, HookPoint
from toolreel.shell import AgentDefinition, AgentOptions, Tool
from toolreel.shell.engine import (
    AGENT_OUTPUT_TOOL,
    STREAM_ENDED,
    agent_config,
    call_arguments,
    call_hook,
    check_output,
    decide,
    hook_points,
    limiter_for,
    loop_config,
    registry,
    run_call,
    run_within,
)
from toolreel.shell.hooks import (
    Hook,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
)

from ._live import Tell, live
from ._wire import (
    ASK_HOOK,
    CALL_MODEL,
    CONFIGURE,
    REFLECT,
    RUN_TOOL,
    TELL_HOOK,
    VALIDATE,
    HookRequest,
    ModelCall,
    OutputCheck,
    SessionSetup,
    SessionStart,
    ToolRun,
)

#: What an agent run's tool call gets when a hook asks a human on Temporal (it cannot wait).
NO_HUMAN = "Tool call needs a human's approval, which an agent run cannot wait for"


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


async def streamed(
    model: ModelPort, request: ModelRequest, redactor: Redactor, tell: Tell | None = None
) -> list[ModelEvent]:
    """One model call's events, ending in `ModelResponded` or `ModelCallFailed` (as the Driver).

    What the port raises is the model's failure; a stream that ends short is a
    retryable one. Every event is redacted (no key reaches the history) and told
    to `tell` as it comes.
    """
    events = model.stream(request)
    if redactor.secrets:
        events = held_back(events, redactor)
    found: list[ModelEvent] = []
    try:
        async for event in events:
            found.append(redactor.event(event))
            if tell is not None:
                tell(found[-1])
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
    """The activities of one worker: its options (tools, hooks, connection), model port and
    agent definitions by name."""

    def __init__(
        self,
        options: AgentOptions,
        model: ModelPort,
        agents: Mapping[str, AgentDefinition[Any, Any]] | None = None,
    ) -> None:
        """Activities over `options` (MCP servers already opened), an open `model` and `agents`.

        Fallback connections are refused (`ConfigError`): a worker holds one model port.
        """
        if options.fallbacks:
            raise ConfigError(
                "fallbacks",
                len(options.fallbacks),
                "none: sessions on Temporal cannot fall back to other models yet",
            )
        self.options = options
        self.tools = registry(options.tools)
        self.hooks: Mapping[HookPoint, tuple[Hook, ...]] = hook_points(options.hooks)
        self.connection = options.connection
        self.model = model
        self.redactor = self.connection.redactor(model)
        self._limiter = limiter_for(options.max_concurrent_tools)
        self.agents = dict(agents or {})
        self.helpers: dict[str, dict[str, Tool]] = {
            name: registry(definition.helpers) for name, definition in self.agents.items()
        }

    def all(self) -> Sequence[Callable[..., Any]]:
        """Every activity, for a `Worker`."""
        return [
            self.configure,
            self.call_model,
            self.run_tool,
            self.reflect,
            self.validate,
            self.ask_hook,
            self.tell_hook,
        ]

    def _definition(self, name: str) -> AgentDefinition[Any, Any]:
        """The agent `name` (one this worker lacks: the run fails, never retried)."""
        definition = self.agents.get(name)
        if definition is None:
            held = sorted(self.agents)
            message = f"this worker holds no agent {name!r} (it holds {held})"
            raise ApplicationError(message, non_retryable=True)
        return definition

    @activity.defn(name=CONFIGURE)
    async def configure(self, start: SessionStart) -> SessionSetup:
        """The config of a new session: this worker's tools and model, the caller's changes;
        an agent run's: its definition's, and its prompt."""
        if start.agent is not None:
            return self._agent_setup(start)
        changes: dict[str, Any] = {"auto_execute_tools": start.auto_execute}
        if start.system_prompt is not None:
            changes["system_prompt"] = start.system_prompt
        if start.max_iterations is not None:
            changes["max_tool_iterations"] = start.max_iterations
        options = attrs.evolve(self.options, **changes)
        # The workflow's id is the session's: the key of the provider's prompt cache.
        session_id = activity.info().workflow_id or ""
        config = loop_config(options, self.tools, self.connection, session_id=session_id)
        return self._setup(config, self.tools)

    def _agent_setup(self, start: SessionStart) -> SessionSetup:
        """An agent run's config (its definition, this worker's connection and hooks) and prompt."""
        assert start.agent is not None
        definition = self._definition(start.agent)
        helpers = self.helpers[start.agent]
        config = agent_config(definition, self.connection, helpers, frozenset(self.hooks))
        session_id = activity.info().workflow_id
        cache_key = self.connection.cache_key(session_id) if session_id else None
        config = attrs.evolve(config, cache_key=cache_key)
        if config.approval_required:  # never run them unasked: refuse the run, once
            held = sorted(config.approval_required)
            message = (
                f"agent {start.agent!r} has helpers that require approval ({held}); "
                "agent runs on Temporal cannot pause for approval yet: run it with execute_agent"
            )
            raise ApplicationError(message, non_retryable=True)
        setup = self._setup(config, helpers)
        prompt = _prompt(start.agent, definition.build_prompt(start.input))
        return dataclasses.replace(setup, prompt=prompt)

    def _setup(self, config: LoopConfig, tools: Mapping[str, Tool]) -> SessionSetup:
        """A session's setup: its config and what each of `tools` allows."""
        default = self.options.tool_timeout
        return SessionSetup(
            config=config_data(config),
            idempotent=sorted(name for name, tool in tools.items() if tool.idempotent),
            timeouts={
                name: tool.timeout if tool.timeout is not None else default
                for name, tool in tools.items()
            },
            model_timeout=self.connection.call_timeout,
        )

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, call: ModelCall) -> list[dict[str, Any]]:
        """Stream one model call (a test model told a structured output's tool); its events."""
        told = AGENT_OUTPUT_TOOL.set(call.output_tool or None)
        try:
            async with heartbeating(), live(call.stream_seconds) as tell:
                request = structure(call.request, ModelRequest)
                events = await streamed(self.model, request, self.redactor, tell)
        finally:
            AGENT_OUTPUT_TOOL.reset(told)
        return [event_data(event) for event in events]

    @activity.defn(name=RUN_TOOL)
    async def run_tool(self, run: ToolRun) -> dict[str, Any]:
        """Run one tool call with its timeout; its `ToolFinished` (or `ToolTimedOut`)."""
        call = structure(run.call, ToolCall)
        tools = self.tools if run.agent is None else self.helpers.get(run.agent, {})
        tool = tools.get(call.name)
        if tool is None:
            message = f"Tool {call.name} is not offered by this worker"
            finished: Any = ToolFinished(call_id=call.id, output=message, is_error=True)
        else:
            timeout = tool.timeout if tool.timeout is not None else self.options.tool_timeout
            async with heartbeating():
                finished = await run_within(self._limiter, call, tool.run, timeout)
        return event_data(self.redactor.event(finished))

    @activity.defn(name=REFLECT)
    async def reflect(self, run: ToolRun) -> dict[str, Any]:
        """An agent's reflection handler on one output-tool call; its `ToolFinished`."""
        assert run.agent is not None
        call = structure(run.call, ToolCall)
        output = self._definition(run.agent).output
        async with heartbeating():
            finished = await run_call(call, output.reflect, self.options.tool_timeout)
        return event_data(self.redactor.event(finished))

    @activity.defn(name=VALIDATE)
    async def validate(self, check: OutputCheck) -> dict[str, Any]:
        """An agent's output through its schema, then its validators: `ValidationFinished`."""
        definition = self._definition(check.agent)
        match await check_output(definition.output, definition.validators, check.output):
            case Success(_):
                finished = ValidationFinished(attempt=check.attempt)
            case Failure(problems):
                finished = ValidationFinished(attempt=check.attempt, problems=problems)
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
        if request.agent is not None and isinstance(decision, Ask):
            decision = Blocked(reason=NO_HUMAN)  # nobody answers an agent run here (yet)
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


def _prompt(agent: str, prompt: object) -> str:
    """An agent run's prompt: text (a workflow's prompt is text only) no journal refuses, or
    the run is refused, once (not retried)."""
    if not isinstance(prompt, str):
        kind = type(prompt).__name__
        raise ApplicationError(
            f"agent {agent!r}: build_prompt gave a {kind}; on Temporal a prompt is a str",
            non_retryable=True,
        )
    try:
        PromptSubmitted(text=prompt)
    except ConfigError as exc:
        raise ApplicationError(f"agent {agent!r}: {exc}", non_retryable=True) from exc
    return prompt

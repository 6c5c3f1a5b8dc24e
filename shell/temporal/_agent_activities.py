"""The agent run workflow's activities: a worker's agent definitions, by name, at work.

- `configure`: the run's `AgentConfig` (the definition and the worker's
  connection) and its prompt (`build_prompt(input)`).
- `call_model`: one model call, streamed, told the output tool's name.
- `run_tool`: one helper call after the worker's PreToolUse hooks (a block is
  the call's error result), its PostToolUse hooks told; `reflect`: the output
  tool's reflection handler on one call.
- `validate`: the schema, then the definition's validators: `ValidationFinished`.

An agent the worker does not hold fails its run's `configure` for good.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
from returns.result import Failure, Success
from temporalio import activity
from temporalio.exceptions import ApplicationError

from toolreel.adapters._journal import config_data
from toolreel.adapters._providers import ModelPort
from toolreel.adapters._serde import event_data, structure
from toolreel.core import (
    Allowed,
    Ask,
    Blocked,
    ConfigError,
    HookPoint,
    ModelRequest,
    PromptSubmitted,
    Replaced,
    ToolCall,
    ToolFinished,
    ValidationFinished,
)
from toolreel.shell._agent import AgentDefinition, agent_config
from toolreel.shell._agent_output import check_output
from toolreel.shell._connection import AGENT_OUTPUT_TOOL
from toolreel.shell._driver import limiter_for, run_call, run_within
from toolreel.shell._hooks import Hook, PostToolUseEvent, PreToolUseEvent, call_hook, decide
from toolreel.shell._options import AgentOptions
from toolreel.shell._tools import Tool, call_arguments, registry

from ._activities import heartbeating, streamed
from ._wire import (
    AGENT_CALL_MODEL,
    AGENT_CONFIGURE,
    AGENT_REFLECT,
    AGENT_RUN_TOOL,
    AGENT_VALIDATE,
    AgentCall,
    AgentSetup,
    AgentStart,
)


class AgentActivities:
    """The agent activities of one worker: its definitions by name, options and model port."""

    def __init__(
        self,
        agents: Mapping[str, AgentDefinition[Any, Any]],
        options: AgentOptions,
        model: ModelPort,
        hooks: Mapping[HookPoint, tuple[Hook, ...]],
    ) -> None:
        """Activities serving `agents` with the worker's connection, tool settings and hooks."""
        self.agents = dict(agents)
        self.helpers: dict[str, dict[str, Tool]] = {
            name: registry(definition.helpers) for name, definition in self.agents.items()
        }
        self.options = options
        self.model = model
        self.hooks = hooks
        self.redactor = options.connection.redactor(model)
        self._limiter = limiter_for(options.max_concurrent_tools)

    def all(self) -> Sequence[Callable[..., Any]]:
        """Every agent activity, for a `Worker`."""
        return [self.configure, self.call_model, self.run_tool, self.reflect, self.validate]

    def _definition(self, name: str) -> AgentDefinition[Any, Any]:
        """The agent `name` (one this worker lacks: the run fails, never retried)."""
        definition = self.agents.get(name)
        if definition is None:
            held = sorted(self.agents)
            message = f"this worker holds no agent {name!r} (it holds {held})"
            raise ApplicationError(message, non_retryable=True)
        return definition

    @activity.defn(name=AGENT_CONFIGURE)
    async def configure(self, start: AgentStart) -> AgentSetup:
        """The run's config and prompt, from the definition and this worker's connection."""
        definition = self._definition(start.agent)
        helpers = self.helpers[start.agent]
        config = agent_config(definition, self.options.connection, helpers)
        if config.approval_required:  # never run them unasked: refuse the run, once
            held = sorted(config.approval_required)
            message = (
                f"agent {start.agent!r} has helpers that require approval ({held}); "
                "agent runs on Temporal cannot pause for approval yet: run it with execute_agent"
            )
            raise ApplicationError(message, non_retryable=True)
        default = self.options.tool_timeout
        return AgentSetup(
            config=config_data(config),
            prompt=_prompt(start.agent, definition.build_prompt(start.input)),
            idempotent=sorted(name for name, tool in helpers.items() if tool.idempotent),
            timeouts={
                name: tool.timeout if tool.timeout is not None else default
                for name, tool in helpers.items()
            },
            model_timeout=self.options.connection.call_timeout,
        )

    @activity.defn(name=AGENT_CALL_MODEL)
    async def call_model(self, call: AgentCall) -> list[dict[str, Any]]:
        """Stream one model call (told the output tool's name); its events as JSON data."""
        output = self._definition(call.agent).output.name
        told = AGENT_OUTPUT_TOOL.set(output)
        try:
            async with heartbeating():
                request = structure(call.data, ModelRequest)
                events = await streamed(self.model, request, self.redactor)
        finally:
            AGENT_OUTPUT_TOOL.reset(told)
        return [event_data(event) for event in events]

    @activity.defn(name=AGENT_RUN_TOOL)
    async def run_tool(self, call: AgentCall) -> list[dict[str, Any]]:
        """One helper call, hooked as `execute_agent` hooks it; its `ToolFinished`."""
        tool_call = structure(call.data, ToolCall)
        helper = self.helpers.get(call.agent, {}).get(tool_call.name)
        if helper is None:
            message = f"Tool {tool_call.name} is not offered by this worker"
            finished = ToolFinished(call_id=tool_call.id, output=message, is_error=True)
        else:
            async with heartbeating():
                finished = await self._helper(tool_call, helper)
        return [event_data(self.redactor.event(finished))]

    async def _helper(self, call: ToolCall, helper: Tool) -> ToolFinished:
        """PreToolUse first, within `max_concurrent_tools`, PostToolUse told (as AgentRunner)."""
        match await self._pre_tool_use(call):
            case Blocked(reason=reason):
                blocked = f"Tool call blocked: {reason}"
                return ToolFinished(call_id=call.id, output=blocked, is_error=True)
            case Replaced(value=arguments):
                call = attrs.evolve(call, arguments=arguments)
            case Ask():
                refused = "Tool call needs a human's approval, which an agent run cannot wait for"
                return ToolFinished(call_id=call.id, output=refused, is_error=True)
            case Allowed():
                pass
        timeout = helper.timeout if helper.timeout is not None else self.options.tool_timeout
        finished = await run_within(self._limiter, call, helper.run, timeout)
        told = PostToolUseEvent(
            tool_name=call.name,
            tool_input=call_arguments(call),
            tool_result=finished.output,
            tool_use_id=call.id,
            is_error=finished.is_error,
            history=(),
        )
        for hook in self.hooks.get(HookPoint.POST_TOOL_USE, ()):
            try:
                await call_hook(hook, told)
            except Exception as exc:
                activity.logger.warning(self.redactor.text(f"PostToolUse hook raised {exc!r}"))
        return finished

    async def _pre_tool_use(self, call: ToolCall) -> Any:
        """The PreToolUse hooks' decision on a helper call (no hooks: allowed)."""
        hooks = self.hooks.get(HookPoint.PRE_TOOL_USE, ())
        if not hooks:
            return Allowed()
        asked = PreToolUseEvent(
            tool_name=call.name, tool_input=call_arguments(call), tool_use_id=call.id, history=()
        )
        return await decide(hooks, asked)

    @activity.defn(name=AGENT_REFLECT)
    async def reflect(self, call: AgentCall) -> list[dict[str, Any]]:
        """The output tool's reflection handler on one call; its `ToolFinished`."""
        tool_call = structure(call.data, ToolCall)
        output = self._definition(call.agent).output
        async with heartbeating():
            finished = await run_call(tool_call, output.reflect, self.options.tool_timeout)
        return [event_data(self.redactor.event(finished))]

    @activity.defn(name=AGENT_VALIDATE)
    async def validate(self, call: AgentCall) -> list[dict[str, Any]]:
        """The schema, then the validators, on an output: `ValidationFinished`."""
        definition = self._definition(call.agent)
        attempt, output = call.data["attempt"], call.data["output"]
        match await check_output(definition.output, definition.validators, output):
            case Success(_):
                finished = ValidationFinished(attempt=attempt)
            case Failure(problems):
                finished = ValidationFinished(attempt=attempt, problems=problems)
        return [event_data(self.redactor.event(finished))]


def _prompt(agent: str, prompt: object) -> str:
    """The run's prompt: text (a workflow's prompt is text only) no journal refuses, or the
    run is refused, once (not retried)."""
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

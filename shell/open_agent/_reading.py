"""The translations between open_agent's world and the shell Runner's: blocks, hooks, tools.

- `Blocks`: the Runner's notices as open_agent's blocks.
- `Hooked`: open_agent's hooks as the Runner's (first decision wins; a hook
  that raises blocks, and its exception is raised to the caller).
- `runner_tools`: open_agent's tools as the Runner's (arguments as the model
  sent them; a failure is `{"error": ..., "tool": name}`), their own values
  kept (`Values`) for PostToolUse.
- `Lenient`: the SDK client as open_agent reads it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import attrs
from returns.result import Failure, Result, Success

from toolreel.adapters.providers import close_stream, plain
from toolreel.core import AwaitApproval, Finish, ResultReason, ToolCall, arguments_object
from toolreel.core.hooks import HookPoint
from toolreel.core.notices import Notice, TextStreamed, ToolCallAnnounced, ToolResultReady
from toolreel.core.record import Record
from toolreel.shell import Tool as RunnerTool
from toolreel.shell import hooks as shell_hooks

from .hooks import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    HookDecision,
    HookEvent,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
    run_hooks,
)
from .tools import Tool
from .types import Block, TextBlock, ToolUseBlock, ToolUseError

_POINTS = {
    HOOK_PRE_TOOL_USE: HookPoint.PRE_TOOL_USE,
    HOOK_POST_TOOL_USE: HookPoint.POST_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT: HookPoint.USER_PROMPT_SUBMIT,
}
#: The core's words before a blocked call's reason (which open_agent shows as its own).
_BLOCKED = "Tool call blocked: "


def _key(name: str, arguments: str | Mapping[str, Any]) -> str:
    """A call's name and arguments, canonical (the key of its value)."""
    given = arguments_object(arguments) if isinstance(arguments, str) else dict(arguments)
    return json.dumps([name, given or {}], sort_keys=True, default=str)


@attrs.define(repr=False)
class Values(Record):
    """The tools' own values (or the caller's results), until PostToolUse is told them."""

    kept: dict[str, list[Any]] = attrs.field(factory=dict)

    def keep(self, name: str, arguments: str, value: Any) -> None:
        """Keep the value of a call."""
        self.kept.setdefault(_key(name, arguments), []).append(value)

    def take(self, name: str, arguments: Mapping[str, Any], text: str) -> Any:
        """The value kept for a call (oldest first), else its result text."""
        values = self.kept.get(_key(name, arguments))
        return values.pop(0) if values else text


@attrs.frozen(kw_only=True, eq=False, repr=False)
class _Runs(RunnerTool):
    """An open_agent tool as the Runner runs it."""

    tool: Tool
    values: Values

    async def run(self, arguments_json: str) -> Result[str, str]:
        """Run the tool on the model's arguments: its value as text, or the error as JSON."""
        given = arguments_object(arguments_json) or {}
        try:
            value = await self.tool.execute(given)
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            return Failure(json.dumps({"error": error, "tool": self.name}))
        self.values.keep(self.name, arguments_json, value)
        return Success(value if isinstance(value, str) else json.dumps(value, default=str))


def runner_tools(tools: Mapping[str, Tool], values: Values) -> dict[str, RunnerTool]:
    """open_agent's tools as the Runner's, by name."""
    return {
        name: _Runs(
            name=name,
            description=found.description,
            parameters=found.to_openai_format()["function"]["parameters"],
            handler=found.handler,
            argument_types={},
            takes_args_dict=True,
            tool=found,
            values=values,
        )
        for name, found in tools.items()
    }


class Hooked:
    """open_agent's hooks, handed to the Runner as one hook per point."""

    def __init__(
        self,
        hooks: Mapping[str, Sequence[Any]],
        values: Values,
        history: Callable[[], list[dict[str, Any]]],
    ) -> None:
        """The caller's hooks, the tools' values, and how to see the history as dicts."""
        self.hooks = hooks
        self.values = values
        self.history = history
        self.error: BaseException | None = None

    @staticmethod
    def points(names: Iterable[str]) -> frozenset[HookPoint]:
        """The core hook points of open_agent's hook names."""
        return frozenset(_POINTS[name] for name in names)

    def table(self) -> dict[HookPoint, tuple[shell_hooks.Hook, ...]]:
        """The Runner's hooks: one per point the caller hooked."""
        made: dict[HookPoint, tuple[shell_hooks.Hook, ...]] = {
            HookPoint.PRE_TOOL_USE: (self._pre,),
            HookPoint.POST_TOOL_USE: (self._post,),
            HookPoint.USER_PROMPT_SUBMIT: (self._prompt,),
        }
        wanted = self.points(name for name in _POINTS if self.hooks.get(name))
        return {point: hooks for point, hooks in made.items() if point in wanted}

    def take_error(self) -> BaseException | None:
        """The exception a hook raised, once."""
        error, self.error = self.error, None
        return error

    async def _decide(self, point: str, event: HookEvent) -> shell_hooks.HookDecision | None:
        """The caller's decision for the Runner; a hook that raises blocks (and is kept)."""
        try:
            decision: HookDecision | None = await run_hooks(self.hooks, point, event)
        except Exception as exc:
            self.error = self.error or exc
            return shell_hooks.HookDecision(continue_=False, reason=f"hook raised {exc}")
        if decision is None:
            return None
        return shell_hooks.HookDecision(
            continue_=decision.continue_,
            modified_input=decision.modified_input,
            modified_prompt=decision.modified_prompt,
            reason=decision.reason or "no reason given",
        )

    async def _pre(self, event: shell_hooks.PreToolUseEvent) -> shell_hooks.HookDecision | None:
        """PreToolUse, asked by the Runner."""
        asked = PreToolUseEvent(
            tool_name=event.tool_name,
            tool_input=dict(event.tool_input),
            tool_use_id=event.tool_use_id,
            history=self.history(),
        )
        return await self._decide(HOOK_PRE_TOOL_USE, asked)

    async def _prompt(
        self, event: shell_hooks.UserPromptSubmitEvent
    ) -> shell_hooks.HookDecision | None:
        """UserPromptSubmit, asked by the Runner."""
        asked = UserPromptSubmitEvent(prompt=event.prompt, history=self.history())
        return await self._decide(HOOK_USER_PROMPT_SUBMIT, asked)

    async def tell(self, call: ToolCall, value: Any) -> None:
        """PostToolUse about a result the core does not hold (a call of an edited history)."""
        told = PostToolUseEvent(
            tool_name=call.name,
            tool_input=arguments_object(call.arguments) or {},
            tool_result=value,
            tool_use_id=call.id,
            history=self.history(),
        )
        await run_hooks(self.hooks, HOOK_POST_TOOL_USE, told)

    async def _post(self, event: shell_hooks.PostToolUseEvent) -> None:
        """PostToolUse, told by the Runner: with the tool's own value (its decision is ignored)."""
        told = PostToolUseEvent(
            tool_name=event.tool_name,
            tool_input=dict(event.tool_input),
            tool_result=self.values.take(event.tool_name, event.tool_input, event.tool_result),
            tool_use_id=event.tool_use_id,
            history=_up_to(self.history(), event.tool_use_id),
        )
        await run_hooks(self.hooks, HOOK_POST_TOOL_USE, told)


def _up_to(history: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    """The history as it was when `call_id`'s result entered it (the hook runs a little later)."""
    for position, message in enumerate(history):
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            return history[: position + 1]
    return history


@attrs.define(repr=False)
class Blocks(Record):
    """The Runner's notices of one response (or turn) as open_agent's blocks."""

    inputs: dict[str, str] = attrs.field(factory=dict)
    invalid: set[str] = attrs.field(factory=set)

    def of(self, item: Notice | Finish | AwaitApproval) -> list[Block]:
        """The blocks one notice stands for."""
        match item:
            case TextStreamed(text=piece):
                return [TextBlock(text=piece)]
            case ToolCallAnnounced(call=call):
                given = arguments_object(call.arguments)
                if given is None:
                    self.invalid.add(call.id)
                    error = f"Invalid JSON in arguments for tool {call.name!r}: {call.arguments}"
                    return [ToolUseError(error=error, raw_data=call.arguments)]
                self.inputs[call.id] = json.dumps(given)
                return [ToolUseBlock(id=call.id, name=call.name, input=given)]
            case ToolResultReady(result=result) if result.is_error:
                if result.call_id in self.invalid:
                    return []
                if result.reason is ResultReason.NOT_RUN:
                    return []  # a call past the iteration cap: shown, not run
                error = _error_text(result.content)
                if result.reason is ResultReason.BLOCKED:
                    error = "Tool use blocked by hook: " + error.removeprefix(_BLOCKED)
                return [ToolUseError(error=error, raw_data=self.inputs.get(result.call_id))]
            case _:
                return []


def _error_text(content: str) -> str:
    """The message of a `{"error": ..., "tool": ...}` result (else the content itself)."""
    try:
        found = json.loads(content)
    except ValueError:
        return content
    return str(found["error"]) if isinstance(found, dict) and "error" in found else content


class Lenient:
    """The client as open_agent reads it: a stream that just stops is a complete answer.

    open_agent takes whatever chunks come as the answer; toolreel's codec calls a
    stream without a finish reason truncated. This wrapper adds the finish
    reason such a stream lacks, and shows only the new part of a text piece
    that repeats the whole text so far (as some local servers send it).
    """

    def __init__(self, client: Any) -> None:
        """Wrap `client` (its `chat.completions.create` is called as it is)."""
        self.client = client
        self.api_key = getattr(client, "api_key", None)
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    async def _create(self, **body: Any) -> Any:
        """Call the client; a streamed answer gets its end made explicit."""
        answer = await self.client.chat.completions.create(**body)
        return _ended(answer) if hasattr(answer, "__aiter__") else answer


async def _ended(stream: Any) -> AsyncIterator[Any]:
    """The stream's chunks (text resent whole cut to its new part), then a finish if none came."""
    finished, text = False, ""
    try:
        async for chunk in stream:
            data = plain(chunk)
            finished = finished or _finishes(data)
            text, data = _new_text(text, data)
            yield data
    finally:
        await close_stream(stream)
    if not finished:  # open_agent reads calls, not the reason: "stop" serves for both
        yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def _new_text(text: str, chunk: Any) -> tuple[str, Any]:
    """The text so far, and the chunk with a piece that repeats it cut to what is new."""
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    if not choices or not isinstance(choices[0], dict):
        return text, chunk
    delta = choices[0].get("delta")
    piece = delta.get("content") if isinstance(delta, dict) else None
    if not isinstance(piece, str) or not piece:
        return text, chunk
    if text and piece.startswith(text) and len(piece) > len(text):
        assert isinstance(delta, dict)
        delta["content"] = piece = piece[len(text) :]
    return text + piece, chunk


def _finishes(chunk: Any) -> bool:
    """Whether a chunk carries a finish reason."""
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    return any(isinstance(c, dict) and c.get("finish_reason") for c in choices or ())

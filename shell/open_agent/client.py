"""open_agent's `query()` and `Client`, on toolreel's records and its OpenAI-SDK model port.

The model is reached through `create_client(options)` (an `openai.AsyncOpenAI`,
the seam open_agent's users and tests patch: it is looked up at each use) and
`toolreel.adapters.openai_sdk_model`, which decodes its chunks with toolreel's
OpenAI codec. The conversation is kept as toolreel records (`client.records`);
`message_history` is derived from them as OpenAI-style dicts, and dicts the
caller edits or assigns are read back into records.

Behaviour, as open-agent-sdk 0.4.2 documents and tests it:

1. `await client.query(prompt)` runs UserPromptSubmit hooks (a block raises
   `PromptBlocked`), then starts the model call: a failure raises there and
   leaves the history as it was. `query("")` right after tool results is a
   continuation: no user message, no hook.
2. `receive_messages()` yields a `TextBlock` per streamed piece, then, once the
   response is complete (and recorded), a `ToolUseBlock` per call — or a
   `ToolUseError` for one PreToolUse blocked or whose arguments are not JSON.
   Before any `query()` it raises `NothingToReceive`; once a response has been
   read (or interrupted) it returns at once.
3. Manual mode: answer the calls with `await add_tool_result(id, content)`
   (PostToolUse runs there), then `await query("")` and read on.
4. Auto mode (`auto_execute_tools=True`): each call is run right after its
   block is yielded; a failure or an unknown tool yields a `ToolUseError` and the
   model reads `{"error": ..., "tool": name}`. The loop calls the model again
   while responses have calls, at most `max_tool_iterations` times after the
   first response (the response at the cap is shown, its calls not run); a
   PreToolUse block ends the turn.
5. `turn_count` counts responses read to their end (auto mode: whole turns);
   `interrupt()` stops the response being read, from any task, with or without
   `async with`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from copy import deepcopy
from types import TracebackType
from typing import Any

from toolreel.adapters._providers._openai_sdk import OpenAISdkModel, close_stream, openai_sdk_model
from toolreel.core import ChatMessage, ConfigError, ModelEvent, ModelRequest, ToolResult
from toolreel.shell import UnknownToolCall

from ._errors import ContentTypeError, ModelError, NothingToReceive, PromptBlocked, ResultsOwed
from ._history import Conversation
from ._reading import Lenient, Reading, Shown, show_call
from .hooks import (
    HOOK_POST_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    PostToolUseEvent,
    UserPromptSubmitEvent,
    run_hooks,
)
from .tools import Tool
from .types import AgentOptions, AssistantMessage, Block, TextBlock, ToolUseBlock, ToolUseError

log = logging.getLogger("toolreel.open_agent")


def create_client(options: AgentOptions) -> Any:
    """An `openai.AsyncOpenAI` for the options (patch this to use a client of your own)."""
    try:
        import openai  # noqa: PLC0415 - the optional dependency loads with the first client
    except ImportError as exc:
        detail = "the openai package: pip install 'toolreel[openai]'"
        raise ConfigError("openai", None, detail) from exc
    return openai.AsyncOpenAI(
        base_url=options.base_url, api_key=options.api_key, timeout=options.timeout
    )


async def _close_client(client: Any) -> None:
    """Close a client made by `create_client` (`close()`, awaited when it is async)."""
    await close_stream(client)


def _request(options: AgentOptions, messages: list[ChatMessage]) -> ModelRequest:
    """The neutral request for the conversation so far."""
    return ModelRequest(
        model=options.model,
        system=options.system_prompt or None,
        messages=tuple(messages),
        tools=tuple(_as_tool(item).spec for item in options.tools),
        max_tokens=options.max_tokens,
        temperature=options.temperature,
    )


def _as_tool(item: Any) -> Tool:
    """An open_agent tool, or a ConfigError naming what was given instead."""
    if not isinstance(item, Tool):
        raise ConfigError("tools", item, "tools made with toolreel.open_agent's @tool")
    return item


async def _submitted(options: AgentOptions, prompt: str, history: list[Any]) -> str:
    """The prompt after the UserPromptSubmit hooks (a block raises `PromptBlocked`)."""
    event = UserPromptSubmitEvent(prompt=prompt, history=history)
    decision = await run_hooks(options.hooks, HOOK_USER_PROMPT_SUBMIT, event)
    if decision is not None and not decision.continue_:
        raise PromptBlocked(f"Query blocked by hook: {decision.reason or 'no reason given'}")
    if decision is not None and decision.modified_prompt is not None:
        return decision.modified_prompt
    return prompt


async def query(prompt: str, options: AgentOptions) -> AsyncIterator[AssistantMessage]:
    """One prompt, no history, no tool execution: an `AssistantMessage` per piece of the answer."""
    client = create_client(options)
    try:
        prompt = await _submitted(options, prompt, [])
        user = ChatMessage(role="user", content=prompt)
        port = openai_sdk_model(Lenient(client), stream_usage=False)
        reading = Reading()
        events = port.stream(_request(options, [user]))
        try:
            async for event in events:
                piece = reading.take(event)
                if piece:
                    yield AssistantMessage(content=[TextBlock(text=piece)])
        finally:
            await close_stream(events)
        history = [{"role": "user", "content": prompt}]
        for call, given in reading.calls(1):
            shown = await show_call(options.hooks, call, given, history)
            yield AssistantMessage(content=[shown.block])
    finally:
        await _close_client(client)


class Client:
    """A multi-turn conversation, open_agent's way (with or without `async with`)."""

    def __init__(self, options: AgentOptions) -> None:
        """Check the tools (unique names); nothing is sent until `query`."""
        self.options = options
        self._tool_registry: dict[str, Tool] = {}
        for item in options.tools:
            found = _as_tool(item)
            if found.name in self._tool_registry:
                detail = f"Duplicate tool name '{found.name}' (Duplicate tool name: {found.name})"
                raise ConfigError("tools", found.name, detail)
            self._tool_registry[found.name] = found
        self.turn_count = 0
        #: The model call being read (an async iterator of core model events), else None.
        self.response_stream: AsyncIterator[ModelEvent] | None = None
        self._first: ModelEvent | None = None
        self._interrupted = False
        self._reading = False
        self._queried = False
        self._client: Any = None
        self._port: OpenAISdkModel | None = None
        self._calls_made = 0
        self._conversation = Conversation()
        self._view: list[dict[str, Any]] = []
        self._shown: list[dict[str, Any]] = []

    async def __aenter__(self) -> Client:
        """Make the model client now (it is closed on exit)."""
        self._model()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Drop a response not read to its end; close the model client."""
        await self.close()

    async def close(self) -> None:
        """Drop a response not read to its end; close the model client (made again if needed)."""
        await self._drop_response()
        client, self._client, self._port = self._client, None, None
        if client is not None:
            await _close_client(client)

    def _model(self) -> OpenAISdkModel:
        """The model port, over the client `create_client` makes (once)."""
        if self._port is None:
            self._client = create_client(self.options)
            self._port = openai_sdk_model(Lenient(self._client), stream_usage=False)
        return self._port

    # --- history ------------------------------------------------------------------------

    @property
    def records(self) -> tuple[ChatMessage, ...]:
        """toolreel's records of the conversation (a round awaiting results not included)."""
        self._absorb()
        return tuple(self._conversation.records)

    @property
    def message_history(self) -> list[dict[str, Any]]:
        """The conversation as OpenAI-style dicts (edit or assign it to change the history)."""
        self._absorb()
        return self._view

    @message_history.setter
    def message_history(self, messages: list[dict[str, Any]]) -> None:
        """Replace the history (read back into records)."""
        self._view = messages if isinstance(messages, list) else list(messages)
        self._absorb()

    @property
    def history(self) -> list[dict[str, Any]]:
        """A copy of `message_history`."""
        return list(self.message_history)

    @property
    def turn_metadata(self) -> dict[str, Any]:
        """`turn_count` and `max_turns`."""
        return {"turn_count": self.turn_count, "max_turns": self.options.max_turns}

    def _absorb(self) -> None:
        """Read the dicts back into records if the caller changed them."""
        if self._view != self._shown:
            self._conversation = Conversation.from_dicts(self._view)
            self._refresh()

    def _refresh(self) -> None:
        """Derive the dicts from the records again (in place: a held list stays current)."""
        self._view[:] = self._conversation.to_dicts()
        self._shown = deepcopy(self._view)

    # --- turns --------------------------------------------------------------------------

    async def query(self, prompt: str) -> None:
        """Send a prompt (or, `""` after tool results, continue) and start the model's answer."""
        self._interrupted = False
        self._absorb()
        await self._drop_response()
        if prompt == "" and self._conversation.ends_with_results():
            await self._call_model(None)
            return
        owed = self._conversation.owed()
        if owed:
            names = ", ".join(f"{call.id} ({call.name})" for call in owed)
            raise ResultsOwed(f"answer the tool calls first with add_tool_result: {names}")
        prompt = await _submitted(self.options, prompt, self.history)
        await self._call_model(prompt)

    async def _call_model(self, prompt: str | None) -> None:
        """Start a model call on the records (and `prompt`); a failure raises, recording nothing."""
        messages = list(self._conversation.records)
        if prompt is not None:
            messages.append(ChatMessage(role="user", content=prompt))
        events = self._model().stream(_request(self.options, messages))
        try:
            first = await anext(events)
            Reading().take(first)  # a failure raises ModelError
        except BaseException:
            await close_stream(events)
            raise
        self._queried = True
        if prompt is not None:
            self._conversation.add_user(prompt)
            self._refresh()
        self.response_stream, self._first = events, first

    async def _drop_response(self) -> None:
        """Close the response being read, if any (it is not recorded)."""
        stream, self.response_stream, self._first = self.response_stream, None, None
        if stream is not None and not self._reading:
            await close_stream(stream)

    async def receive_messages(self) -> AsyncGenerator[Block, None]:
        """The blocks of the response (auto mode: of the whole turn, tools run)."""
        if not self._queried:
            raise NothingToReceive("nothing to receive: Call query() or _continue_turn() first")
        if self.response_stream is None or self._interrupted:
            await self._drop_response()
            return
        if self.options.auto_execute_tools:
            async with aclosing(self._auto_turn()) as turn:
                async for block in turn:
                    yield block
        else:
            async with aclosing(self._receive_once()) as blocks:
                async for block, _ in blocks:
                    yield block
        if not self._interrupted:
            self.turn_count += 1

    async def _events(self) -> AsyncIterator[ModelEvent]:
        """The response's events, the first (read by `query`) included; stops when interrupted."""
        stream, first = self.response_stream, self._first
        assert stream is not None and first is not None
        yield first
        while not self._interrupted:
            self._reading = True
            try:
                event = await anext(stream)
            except StopAsyncIteration:
                return
            finally:
                self._reading = False
            if self._interrupted:  # interrupted from another task while this one waited
                return
            yield event

    async def _receive_once(self) -> AsyncGenerator[tuple[Block, Shown | None], None]:
        """One response: text pieces as they come, then its calls once it is recorded."""
        reading = Reading()
        try:
            async for event in self._events():
                piece = reading.take(event)
                if piece:
                    yield TextBlock(text=piece), None
                if self._interrupted:
                    return
        finally:
            stream, self.response_stream, self._first = self.response_stream, None, None
            if stream is not None:
                await close_stream(stream)
        if self._interrupted:
            return
        shown = await self._record(reading)
        for item in shown:
            yield item.block, item
            if self._interrupted:
                return

    async def _record(self, reading: Reading) -> list[Shown]:
        """Show the response's calls to the PreToolUse hooks and record the response."""
        history = self.history
        calls = reading.calls(self._calls_made + 1)
        self._calls_made += len(calls)
        shown = [await show_call(self.options.hooks, call, given, history) for call, given in calls]
        self._conversation.add_response(reading.text, [item.call for item in shown])
        for item in shown:
            if item.error is not None:
                content = json.dumps({"error": item.error, "tool": item.call.name})
                self._add(item.call.id, item.call.name, content, is_error=True)
        self._refresh()
        return shown

    async def _auto_turn(self) -> AsyncGenerator[Block, None]:
        """Run the calls and call the model again until it answers without calls (rule 4)."""
        responses = 0
        while True:
            responses += 1
            at_cap = responses > self.options.max_tool_iterations
            shown: list[Shown] = []
            async with aclosing(self._receive_once()) as blocks:
                async for block, item in blocks:
                    yield block
                    if self._interrupted:
                        return
                    if item is None:
                        continue
                    shown.append(item)
                    if isinstance(block, ToolUseBlock) and not at_cap:
                        failure = await self._run(block)
                        if failure is not None:
                            yield failure
            if self._interrupted or not shown or any(item.blocked for item in shown):
                return
            if at_cap:
                self._leave_unrun()
                return
            await self._call_model(None)

    def _leave_unrun(self) -> None:
        """At the iteration cap: the last response's calls are answered as not run."""
        log.warning(
            "max_tool_iterations (%d) reached; raise it if this is expected",
            self.options.max_tool_iterations,
        )
        error = f"not run: max_tool_iterations ({self.options.max_tool_iterations}) reached"
        for call in self._conversation.owed():
            content = json.dumps({"error": error, "tool": call.name})
            self._add(call.id, call.name, content, is_error=True)
        self._refresh()

    async def _run(self, block: ToolUseBlock) -> ToolUseError | None:
        """Run one call in auto mode and record its result; a `ToolUseError` if it failed."""
        found = self._tool_registry.get(block.name)
        if found is None:
            error = f"Unknown tool: {block.name}"
            await self._report(block, {"error": error, "tool": block.name}, is_error=True)
            return ToolUseError(error=error, raw_data=json.dumps(block.input))
        try:
            value = await found.execute(block.input)
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            await self._report(block, {"error": error, "tool": block.name}, is_error=True)
            return ToolUseError(error=error, raw_data=json.dumps(block.input))
        await self._report(block, value, is_error=False)
        return None

    async def _report(self, block: ToolUseBlock, value: Any, *, is_error: bool) -> None:
        """Record a tool's value as its result and tell the PostToolUse hooks."""
        content = value if isinstance(value, str) else json.dumps(value, default=str)
        self._add(block.id, block.name, content, is_error=is_error)
        self._refresh()
        await self._tell(block.id, block.name, block.input, value)

    def _add(self, call_id: str, name: str, content: str, *, is_error: bool) -> None:
        """Record one result."""
        result = ToolResult(call_id=call_id, name=name, content=content, is_error=is_error)
        self._conversation.add_result(result)

    async def _tell(self, call_id: str, name: str, given: dict[str, Any], value: Any) -> None:
        """The PostToolUse hooks (their decisions are ignored)."""
        event = PostToolUseEvent(
            tool_name=name,
            tool_input=given,
            tool_result=value,
            tool_use_id=call_id,
            history=self.history,
        )
        await run_hooks(self.options.hooks, HOOK_POST_TOOL_USE, event)

    async def add_tool_result(
        self, tool_call_id: str, content: str | dict[str, Any] | list[Any], name: str | None = None
    ) -> None:
        """The result of a call from the last response (a str as is; a dict or list as JSON)."""
        self._absorb()
        call = self._conversation.call(tool_call_id)
        if call is None:
            owed = [owed.id for owed in self._conversation.owed()]
            raise UnknownToolCall(f"Unknown tool_call_id {tool_call_id!r}; awaiting {owed}")
        if isinstance(content, str):
            text = content
        elif isinstance(content, dict | list):
            text = json.dumps(content, default=str)
        else:
            kind = type(content).__name__
            raise ContentTypeError(f"content must be a str, dict, or list, not {kind}")
        self._add(call.id, name or call.name, text, is_error=False)
        self._refresh()
        given = json.loads(call.arguments) if call.arguments.strip() else {}
        await self._tell(
            call.id, name or call.name, given if isinstance(given, dict) else {}, content
        )

    async def interrupt(self) -> None:
        """Stop the response being read, now or at its next event (safe at any time)."""
        self._interrupted = True
        if not self._reading:
            await self._drop_response()


__all__ = ["Client", "ModelError", "create_client", "query"]

"""open_agent's `query()` and `Client`, translated onto toolreel's core loop and shell Runner.

Every rule of the loop is decided by `toolreel.core.step` and carried out by
the shell's `Runner`, which journals each step (in memory unless a `journal=`
is given): this module only translates. `AgentOptions` become a `LoopConfig`
with open_agent's policies (`_loop_config`); the Runner's notices become
open_agent's blocks (`_Blocks`); the records become `message_history` dicts
(`_history.py`). The model is an `openai.AsyncOpenAI` from `create_client(options)`
(the seam open_agent's users and tests patch: looked up at the first model
call), read through `toolreel.adapters.openai_sdk_model`.

Behaviour, as open-agent-sdk 0.4.2 documents and tests it (the core rule in brackets):

1. `await client.query(prompt)` runs UserPromptSubmit (a block raises
   `PromptBlocked`) and waits for the model's first event: a failure raises
   `ModelError` there and the history is set back (`HistoryReplaced`, rule 14).
   `query("")` right after tool results continues (`EmptyPromptPolicy.CONTINUE`).
2. `receive_messages()` yields a `TextBlock` per streamed piece, then a
   `ToolUseBlock` per call once PreToolUse decided, with the input it runs with
   (`AnnouncePolicy.AFTER_HOOKS`), or a `ToolUseError` (arguments not JSON,
   blocked, unknown tool, failed run; results worded by `ErrorFormat.JSON`).
3. Manual mode: each response is a turn of one iteration (`max_iterations=1`);
   answer its calls with `add_tool_result`, then `query("")`.
4. Auto mode: a PreToolUse block ends the turn (`BlockedCallPolicy.END_TURN`);
   at the cap the model is called once more, its calls shown and not run
   (`MaxIterationsPolicy.ONE_MORE_CALL`). No retries, as open_agent has none.
5. `turn_count` counts responses read to their end (auto mode: whole turns);
   `interrupt()` stops the turn (recorded `Cancelled`), from any task, with or
   without `async with`. Without `async with` a turn runs in an asyncio task.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import attrs

from toolreel.adapters import Journal, Lease, OpenAISdkModel, openai_sdk_model
from toolreel.adapters.providers import close_stream
from toolreel.core import (
    ChatMessage,
    ConfigError,
    Finish,
    HistoryReplaced,
    LoopConfig,
    ModelEvent,
    ModelRequest,
    Phase,
    PromptSubmitted,
    ToolFinished,
    ToolResult,
)
from toolreel.core.hooks import Blocked as BlockedOutcome
from toolreel.core.notices import MessageRecorded, Notice, ResultsRequested
from toolreel.core.outcomes import Failed
from toolreel.core.policies import (
    AnnouncePolicy,
    BlockedCallPolicy,
    EmptyPromptPolicy,
    ErrorFormat,
    MaxIterationsPolicy,
    RetryPolicy,
)
from toolreel.shell import open_journal
from toolreel.shell.engine import Runner, TurnTask
from toolreel.shell.errors import UnknownToolCall

from ._errors import ContentTypeError, ModelError, NothingToReceive, PromptBlocked, ResultsOwed
from ._history import Conversation, dicts_of
from ._reading import Blocks, Hooked, Lenient, Values, runner_tools
from .hooks import HOOK_POST_TOOL_USE, HOOK_PRE_TOOL_USE, HOOK_USER_PROMPT_SUBMIT
from .tools import Tool
from .types import AgentOptions, AssistantMessage, Block

#: Notices that show the model has answered (so `query()` may return).
_QUIET = (MessageRecorded,)


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


def _as_tool(item: Any) -> Tool:
    """An open_agent tool, or a ConfigError naming what was given instead."""
    if not isinstance(item, Tool):
        raise ConfigError("tools", item, "tools made with toolreel.open_agent's @tool")
    return item


def _registry(options: AgentOptions) -> dict[str, Tool]:
    """The options' tools by name (two with one name are refused, as open_agent does)."""
    found: dict[str, Tool] = {}
    for item in options.tools:
        one = _as_tool(item)
        if one.name in found:
            detail = f"Duplicate tool name '{one.name}' (Duplicate tool name: {one.name})"
            raise ConfigError("tools", one.name, detail)
        found[one.name] = one
    return found


_HOOK_POINTS = (HOOK_PRE_TOOL_USE, HOOK_POST_TOOL_USE, HOOK_USER_PROMPT_SUBMIT)


def _loop_config(options: AgentOptions, tools: dict[str, Tool]) -> LoopConfig:
    """The core config open_agent's options and semantics describe (module docstring)."""
    hooks = options.hooks or {}
    auto = options.auto_execute_tools
    return LoopConfig(
        model=options.model,
        system_prompt=options.system_prompt or None,
        tools=tuple(found.spec for found in tools.values()),
        max_tokens=options.max_tokens,
        temperature=options.temperature,
        max_iterations=max(1, options.max_tool_iterations) if auto else 1,
        on_max_iterations=MaxIterationsPolicy.ONE_MORE_CALL if auto else MaxIterationsPolicy.STOP,
        retry=RetryPolicy(max_retries=0),
        hooks=Hooked.points(point for point in _HOOK_POINTS if hooks.get(point)),
        auto_execute=auto,
        on_tool_blocked=BlockedCallPolicy.END_TURN,
        announce=AnnouncePolicy.AFTER_HOOKS,
        error_format=ErrorFormat.JSON,
        empty_prompt=EmptyPromptPolicy.CONTINUE,
    )


class _Model:
    """The model port: `openai_sdk_model` over the client `create_client` makes at first use."""

    def __init__(self, options: AgentOptions) -> None:
        """Nothing is made until the first call."""
        self.options = options
        self.client: Any = None
        self._port: OpenAISdkModel | None = None

    def open(self) -> OpenAISdkModel:
        """The port, over the client `create_client` makes (once)."""
        if self._port is None:
            self.client = create_client(self.options)
            self._port = openai_sdk_model(Lenient(self.client), stream_usage=False)
        return self._port

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The events of one model call."""
        return self.open().stream(request)

    async def aclose(self) -> None:
        """Close the client (made again if needed)."""
        client, self.client, self._port = self.client, None, None
        if client is not None:
            await close_stream(client)


async def query(prompt: str, options: AgentOptions) -> AsyncIterator[AssistantMessage]:
    """One prompt, no history, no tool execution: an `AssistantMessage` per piece of the answer."""
    client = Client(attrs.evolve(options, auto_execute_tools=False))
    try:
        await client.query(prompt)
        async for block in client.receive_messages():
            yield AssistantMessage(content=[block])
    finally:
        await client.close()


class Client:
    """A multi-turn conversation, open_agent's way (with or without `async with`).

    `journal` (a path or a toolreel `Journal`; default: in memory) and
    `session_id` are toolreel's: the session replays like any other.
    """

    def __init__(
        self,
        options: AgentOptions,
        *,
        journal: str | Path | Journal | None = None,
        session_id: str | None = None,
    ) -> None:
        """Check the tools (unique names); nothing is sent until `query`."""
        self.options = options
        self._tool_registry = _registry(options)
        self.config = _loop_config(options, self._tool_registry)
        self.journal = open_journal(journal)
        self._own_journal = journal is None or isinstance(journal, str | Path)
        self.session_id = session_id or uuid.uuid4().hex
        self._values = Values()
        self._hooked = Hooked(options.hooks or {}, self._values, lambda: self.history)
        self._model = _Model(options)
        self.runner = Runner(
            config=self.config,
            model=self._model,
            tools=runner_tools(self._tool_registry, self._values),
            hooks=self._hooked.table(),
            journal=self.journal,
            session_id=self.session_id,
            tool_timeout=math.inf,
            journal_in_memory=journal is None,
        )
        self.runner.sink = self._sink
        self._turns = TurnTask(self.runner, self._spawn)
        self.turn_count = 0
        #: The notices of the turn being read, while one runs; else None.
        self.response_stream: Any = None
        self.last_finish: Finish | None = None
        self._task: asyncio.Task[None] | None = None  # the running turn's (held: not collected)
        self._answered: anyio.Event | None = None
        self._heard = False  # the running turn's model has been heard from
        self._generation = 0
        self._interrupted = False
        self._queried = False
        self._lease: Lease | None = None  # the session, once the first query began it
        self._view: list[dict[str, Any]] = []
        self._shown: list[dict[str, Any]] = []

    async def __aenter__(self) -> Client:
        """Make the model client now (it is closed on exit)."""
        self._model.open()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop a turn still running (recorded as cancelled); close the model client."""
        await self.close()

    async def close(self) -> None:
        """Stop a turn still running; give the session back to the journal; close the client."""
        await self._stop_turn()
        try:
            if self._lease is not None:
                lease, self._lease = self._lease, None
                self.journal.release(lease)
        finally:
            try:
                await self._model.aclose()
            finally:
                if self._own_journal:
                    self.journal.close()

    # --- history ------------------------------------------------------------------------

    @property
    def records(self) -> tuple[ChatMessage, ...]:
        """toolreel's records of the conversation (a round awaiting results not included)."""
        edited = self._edited()
        return edited if edited is not None else self.runner.history

    @property
    def message_history(self) -> list[dict[str, Any]]:
        """The conversation as OpenAI-style dicts (edit or assign it to change the history)."""
        if self._edited() is None:
            self._view[:] = dicts_of(self.runner.state)
            self._shown = json.loads(json.dumps(self._view, default=str))
        return self._view

    @message_history.setter
    def message_history(self, messages: list[dict[str, Any]]) -> None:
        """Replace the history (read back into records at the next `query`)."""
        self._view = messages if isinstance(messages, list) else list(messages)

    @property
    def history(self) -> list[dict[str, Any]]:
        """A copy of `message_history`."""
        return list(self.message_history)

    @property
    def turn_metadata(self) -> dict[str, Any]:
        """`turn_count` and `max_turns`."""
        return {"turn_count": self.turn_count, "max_turns": self.options.max_turns}

    def _edited(self) -> tuple[ChatMessage, ...] | None:
        """The records of dicts the caller changed, if they changed them."""
        if self._view == self._shown:
            return None
        return tuple(Conversation.from_dicts(self._view).records)

    async def _absorb(self) -> None:
        """Feed an edited history to the core (journaled, rule 14)."""
        edited = self._edited()
        if edited is not None:
            await self.runner.apply(HistoryReplaced(history=edited))
            self._view, self._shown = [], []

    # --- turns --------------------------------------------------------------------------

    async def query(self, prompt: str) -> None:
        """Send a prompt (or, `""` after tool results, continue) and start the model's answer.

        A prompt that is not a str, or not valid Unicode text, is toolreel's `ConfigError`.
        """
        event = PromptSubmitted(text=prompt)  # refused before anything begins
        self._interrupted = False
        owed = self.runner.awaiting()
        if owed:
            names = ", ".join(f"{call.id} ({call.name})" for call in owed)
            raise ResultsOwed(f"answer the tool calls first with add_tool_result: {names}")
        await self._stop_turn()
        self._begin_session()
        await self._absorb()
        before = self.runner.state.history
        self._start(event)
        assert self._answered is not None
        await self._answered.wait()
        finish = self.last_finish
        refused = isinstance(finish.outcome, Failed | BlockedOutcome) if finish else False
        if finish is not None and refused and not self._heard:
            await self._refused(finish, before)
        self._queried = True

    def _begin_session(self) -> None:
        """Tell the journal about the session, once."""
        if self._lease is None:
            self._lease = self.journal.begin(self.session_id, self.config)

    async def _refused(self, finish: Finish, before: tuple[ChatMessage, ...]) -> None:
        """A prompt the hook blocked, or a first model call that failed: raise; keep no trace."""
        await self._wait_turn()
        self.response_stream = None
        self._raise_errors()
        if isinstance(finish.outcome, BlockedOutcome):
            raise PromptBlocked(f"Query blocked by hook: {finish.outcome.reason}")
        await self.runner.apply(HistoryReplaced(history=before))
        assert isinstance(finish.outcome, Failed)
        raise ModelError(finish.outcome.message, finish.outcome.status)

    def _spawn(self, turn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run a turn in an asyncio task (open_agent's Client needs no `async with`)."""
        self._task = asyncio.get_running_loop().create_task(turn())

    def _start(self, event: PromptSubmitted) -> None:
        """Run the turn in a task; its notices go to the reader."""
        self._generation += 1
        self._turns.discard()
        self.runner.drain()
        self.last_finish = None
        answered = self._answered = anyio.Event()
        self._heard = False
        self.response_stream = self._turns

        async def turn() -> Finish:
            try:
                return await self.runner.run(event)
            finally:
                answered.set()  # however it ended: `query` waits no longer

        self._turns.start(turn)

    def _sink(self, item: Notice | Finish) -> None:
        """Pass a notice on to the reader; the first that comes from the model answers `query`."""
        if isinstance(item, Finish):
            self.last_finish = item
        elif not isinstance(item, _QUIET):
            self._heard = True
        if self._answered is not None and not isinstance(item, _QUIET):
            self._answered.set()
        self._turns.put(item)

    async def _wait_turn(self) -> None:
        """Wait for the turn's task to end."""
        with anyio.CancelScope(shield=True):
            await self._turns.wait()

    async def _stop_turn(self) -> None:
        """Interrupt a running turn (manual mode: awaiting results) and wait for its cancel."""
        with anyio.CancelScope(shield=True):
            await self._turns.stop()
        self.response_stream = None

    async def receive_messages(self) -> AsyncGenerator[Block, None]:
        """The blocks of the response (auto mode: of the whole turn, tools run)."""
        if not self._queried:
            raise NothingToReceive("nothing to receive: Call query() or _continue_turn() first")
        generation, blocks = self._generation, Blocks()
        while not self._interrupted and generation == self._generation:
            item = await self._turns.next()
            if item is None:  # nothing more will come: say what stopped the turn, if anything
                self._raise_turn_error()
                break
            if self._interrupted or generation != self._generation:
                break
            for block in blocks.of(item):
                yield block
                if self._interrupted:
                    return
            if isinstance(item, Finish | ResultsRequested):
                await self._ended(item)
                return
        self.response_stream = None

    def _raise_turn_error(self) -> None:
        """Raise what stopped the turn's task (a journal that gave up, a bug), if anything."""
        if self._turns.error is not None:
            self.response_stream = None
            self._turns.raise_error()

    def _raise_errors(self) -> None:
        """Raise what stopped the turn's task, else what a hook raised, if anything."""
        self._turns.raise_error()
        error = self._hooked.take_error()
        if error is not None:
            raise error

    async def _ended(self, item: Notice | Finish) -> None:
        """A response read to its end: count it; raise what stopped it, if anything did."""
        self.turn_count += 1
        if isinstance(item, Finish):
            await self._wait_turn()
            self.response_stream = None
            self._raise_errors()
            if isinstance(item.outcome, Failed):
                raise ModelError(item.outcome.message, item.outcome.status)

    async def add_tool_result(
        self, tool_call_id: str, content: str | dict[str, Any] | list[Any], name: str | None = None
    ) -> None:
        """The result of a call from the last response (a str as is; a dict or list as JSON)."""
        owed = self.runner.awaiting()
        call = next((call for call in owed if call.id == tool_call_id), None)
        edited = Conversation.from_dicts(self.message_history) if call is None else None
        if call is None and (edited is None or edited.call(tool_call_id) is None):
            raise UnknownToolCall(
                f"Unknown tool_call_id {tool_call_id!r}; awaiting {[c.id for c in owed]}"
            )
        text = _result_text(content)
        if edited is not None:  # a call the caller wrote into message_history
            await self._add_to_edited(edited, tool_call_id, text, content, name)
            return
        assert call is not None
        self._values.keep(call.name, call.arguments, content)
        await self.runner.submit(ToolFinished(call_id=call.id, output=text))
        if not self.runner.awaiting():
            await self._wait_turn()

    async def _add_to_edited(
        self, edited: Conversation, call_id: str, text: str, content: Any, name: str | None
    ) -> None:
        """A result for a call of an edited history: it joins the dicts (fed at the next query)."""
        call = edited.call(call_id)
        assert call is not None
        result = ToolResult(call_id=call_id, name=name or call.name, content=text)
        edited.add_result(result)
        self._view[:] = edited.to_dicts()
        await self._hooked.tell(call, content)

    async def interrupt(self) -> None:
        """Stop the response being read, now or at its next event (safe at any time)."""
        self._interrupted = True
        await self._stop_turn()

    @property
    def phase(self) -> Phase:
        """Where the conversation stands (toolreel's `Phase`)."""
        return self.runner.phase


def _result_text(content: Any) -> str:
    """A result as open_agent sends it: a str as is, a dict or list as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict | list):
        return json.dumps(content, default=str)
    kind = type(content).__name__
    raise ContentTypeError(f"content must be a str, dict, or list, not {kind}")


__all__ = ["Client", "ModelError", "create_client", "query"]

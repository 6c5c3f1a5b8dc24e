"""Client: one conversation over the runner — a prompt in, the core's notices out; and `run()`.

    async with Client(options) as client:
        await client.query("What is 25 plus 17?")
        async for notice in client.events():
            ...   # TextStreamed, ToolCallAnnounced, ToolResultReady, ..., then the Finish
        # or, for the end alone: finish = await client.wait()

Auto mode (`auto_execute_tools=True`) runs the tools and continues until the
model answers. Manual mode ends `events()` at `ResultsRequested`; answer each
of its calls with `add_tool_result(...)`, then read `events()` on: the turn
continues without a new user message.

Human approval: a call of a tool declared `@tool(requires_approval=True)`, or
one a PreToolUse hook answered `HookDecision(ask=True)` about, is held; the
turn pauses once nothing else runs (`events()` ends with `AwaitApproval`;
`wait()` returns None and `paused` holds it). The pause is journaled: later, in this process or
another, `Client.resume(session_id, options)`, then `approve(call_id)` or
`deny(call_id, reason)` for each of `pending_approvals`; the turn goes on
once the last is decided.

open_agent's API over the same loop (blocks, `receive_messages`, `query("")`)
is `toolreel.open_agent`'s Client.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from toolreel.adapters import (
    ContentRefused,
    Journal,
    JournalUnavailable,
    Lease,
    MemoryJournal,
    ModelPort,
    SessionNotFound,
)
from toolreel.adapters.providers import refusal
from toolreel.core import (
    Approved,
    AwaitApproval,
    Cancelled,
    ChatMessage,
    ConfigError,
    Denied,
    Finish,
    LoopConfig,
    Phase,
    PromptSubmitted,
    ToolFinished,
    ToolRound,
    Usage,
    UsageError,
    misuse,
    well_formed,
)
from toolreel.core.budget import OverBudget, Spending
from toolreel.core.notices import ApprovalRequested, Notice, ResultsRequested
from toolreel.core.outcomes import FinishReason
from toolreel.core.policies import MaxIterationsPolicy
from toolreel.core.record import Value

from ._connection import Connection
from ._errors import (
    ApprovalPending,
    NotOpen,
    RunFailed,
    TurnInProgress,
    UnknownApproval,
    UnknownToolCall,
)
from ._hooks import hook_points
from ._images import ImageSource, Prompt, ToolOutput, submitted, tool_output
from ._images import images as to_images
from ._journal_files import journal_at, open_location
from ._options import AgentOptions, fallback_policy
from ._prices import priced
from ._runner import Observers, RunMetadata, Runner
from ._tools import Tool, output_text, registry
from ._turn_task import TurnTask

if TYPE_CHECKING:
    import anyio.abc

    from toolreel.adapters import Session


def open_journal(journal: str | Path | Journal | None) -> Journal:
    """A journal from a path (".jsonl" for JSON lines, else SQLite), a `postgresql://` URL,
    an object, or memory."""
    if journal is None:
        return MemoryJournal()
    if isinstance(journal, str | Path):
        return open_location(journal)  # a path or URL that cannot be a journal: a JournalError
    if not callable(getattr(journal, "sessions", None)):
        raise ConfigError(
            "journal", journal, "None, a path (.db or .jsonl), a postgresql:// URL or a Journal"
        )
    return journal


def loop_config(
    options: AgentOptions,
    tools: dict[str, Tool],
    connection: Connection,
    port: object = None,
    session_id: str = "",
) -> LoopConfig:
    """The core config the options (and their connection, built once by the caller) describe.

    `port`: the model port given for the session, for its own name (`Connection.model_for`);
    `session_id`: the session's, the default key of the provider's prompt cache.
    """
    model = connection.model_for(port)
    budget = priced(options.budget, model, connection.provider, connection.base_url)
    for fallback in options.fallbacks:  # a cost limit needs each fallback's price too
        budget = priced(budget, fallback.model_for(port), fallback.provider, fallback.base_url)
    return LoopConfig(
        model=model,
        system_prompt=options.system_prompt,
        tools=tuple(item.spec for item in tools.values()),
        tool_choice=options.tool_choice,
        max_tokens=connection.max_tokens,
        temperature=connection.temperature,
        max_iterations=options.max_tool_iterations,
        on_max_iterations=MaxIterationsPolicy(options.on_max_iterations),
        retry=connection.retry,
        hooks=frozenset(hook_points(options.hooks)),
        auto_execute=options.auto_execute_tools,
        # Before its MCP servers are open the session lacks their tools, which per-tool
        # limits may name: the budget joins the config built once they are (`_open_sources`).
        # A budget with no price for the model gets genai-prices' (`_prices.py`).
        budget=None if options.mcp_servers else budget,
        approval_required=frozenset(name for name, item in tools.items() if item.requires_approval),
        cache_key=connection.cache_key(session_id) if session_id else None,
        fallback=fallback_policy(options, [item.model_for(port) for item in options.fallbacks]),
        compaction=options.compaction,
    )


def fallback_ports(
    fallbacks: Sequence[Connection], model: ModelPort | None
) -> tuple[ModelPort, ...]:
    """The model ports of the fallback connections, in order: `model` for each when the caller
    gave one (a test model or a recording answers every call), else each connection's own."""
    if model is not None:
        return tuple(model for _ in fallbacks)
    return tuple(connection.open_model() for connection in fallbacks)


@contextlib.asynccontextmanager
async def sources_opened(options: AgentOptions) -> AsyncIterator[AgentOptions]:
    """The options with their `mcp_servers` connected: their tools added, the servers taken out.

    The connections last until the block ends; every Client given the options
    it yields shares them (`toolreel serve` connects once for all its requests).
    """
    async with contextlib.AsyncExitStack() as stack:
        tools = list(options.tools)
        for source in options.mcp_servers:
            tools.extend((await stack.enter_async_context(source.open())).tools())
        yield attrs.evolve(options, tools=tools, mcp_servers=())


class Client:
    """One conversation with a model, its tools and its journal (use `async with`).

    `query` sends a prompt; `events()` yields what the loop does about it as it
    happens (text as it streams, each call before it runs, each result, each
    round), then the turn's `Finish`; `wait()` gives the `Finish` alone. Each
    prompt continues the same conversation.

    Args:
        options: The model, the tools, the journal and the loop's limits.
        model: A model port to use instead of the one the options describe
            (a `TestModel`, a `Recording`, `openai_sdk_model(client)`, ...);
            the Client never closes a model it was given.
    """

    def __init__(
        self,
        options: AgentOptions,
        *,
        model: ModelPort | None = None,
        _resume: bool = False,
    ) -> None:
        """Check the options and prepare; nothing is sent until `query`."""
        if not isinstance(options, AgentOptions):
            raise ConfigError("options", type(options).__name__, "an AgentOptions")
        self.options = options
        self.connection = options.connection
        self._tools = registry(options.tools)
        self.session_id = options.session_id or uuid.uuid4().hex
        self.config = loop_config(options, self._tools, self.connection, model, self.session_id)
        self._own_model = model is None
        self._own_journal = options.journal is None or isinstance(options.journal, str | Path)
        # The journal first: it may fail (a folder that is not there, a database that is
        # down), and then no model has taken a pooled connection that nothing would close.
        self.journal = open_journal(options.journal)
        try:
            self._model: ModelPort = model or self.connection.open_model()
            self._fallbacks = fallback_ports(options.fallbacks, model)
        except BaseException:
            if self._own_journal:
                self.journal.close()
            raise
        self.redactor = self.connection.redactor(self._model)
        for fallback, port in zip(options.fallbacks, self._fallbacks, strict=True):
            self.redactor = self.redactor | fallback.redactor(port)
        self._resume = _resume
        self._lease: Lease | None = None  # the session, held from `begin` until `release`
        self.runner = self._new_runner()
        self._sources: contextlib.AsyncExitStack | None = None  # the MCP servers, once open
        self._tasks: anyio.abc.TaskGroup | None = None
        self._turns = TurnTask(self.runner, lambda turn: self._require_open().start_soon(turn))
        self._continuing = anyio.Lock()  # one decision (or cancel) continues a paused turn at once
        self._deciding: set[str] = set()  # held calls whose decision is on its way

    def _new_runner(self) -> Runner:
        """The runner of the session, with the tools and config as they now are."""
        runner = Runner(
            config=self.config,
            model=self._model,
            fallbacks=self._fallbacks,
            tools=self._tools,
            hooks=hook_points(self.options.hooks),
            journal=self.journal,
            session_id=self.session_id,
            redactor=self.redactor,
            tool_timeout=self.options.tool_timeout,
            max_concurrent_tools=self.options.max_concurrent_tools,
            journal_in_memory=self.options.journal is None,  # open_journal made a MemoryJournal
            observers=Observers(
                on_tool_call=self.options.on_tool_call,
                on_tool_result=self.options.on_tool_result,
                on_round=self.options.on_round,
                on_finish=self.options.on_finish,
                on_notice=self.options.on_notice,
            ),
        )
        runner.sink = self._told
        return runner

    def _told(self, item: Notice | Finish) -> None:
        """The runner's sink: what the turn tells goes to the reader (`events()`)."""
        self._turns.put(item)

    async def _open_sources(self) -> None:
        """Connect the options' MCP servers for the client's life; their tools join the rest."""
        if not self.options.mcp_servers:
            return
        self._sources = contextlib.AsyncExitStack()
        options = await self._sources.enter_async_context(sources_opened(self.options))
        self._tools = registry(options.tools)  # a name two servers share: ConfigError
        self.config = loop_config(
            options, self._tools, self.connection, self._model, self.session_id
        )
        self.runner = self._turns.runner = self._new_runner()

    @classmethod
    def resume(cls, session_id: str, options: AgentOptions, **kwargs: Any) -> Client:
        """A client that continues a journaled session, finishing a turn a crash interrupted.

        A turn paused for approval stays paused (`paused`, `pending_approvals`)
        until `approve` / `deny`. (A Client whose `session_id` is already in its
        journal continues it the same way; `resume` also insists that it is there.)

        Args:
            session_id: The session to continue; it must be in `options.journal`.
            options: The session's options (the journal, the tools, the connection).
            **kwargs: As for `Client(...)`: `model=`.

        Returns:
            A Client to open with `async with`; `wait()` finishes an interrupted turn.
        """
        return cls(attrs.evolve(options, session_id=session_id), _resume=True, **kwargs)

    async def __aenter__(self) -> Client:
        """Open the session (or rebuild it from the journal when resuming)."""
        if self._tasks is not None:
            raise NotOpen("this Client is already open: use one `async with` per Client")
        try:
            await self._open_sources()
            self.journal.flush()  # steps a failed write kept back go first: read whole
            known = self.session_id in self.journal.sessions()
            if self._resume and not known:
                raise SessionNotFound(self.session_id, repr(self.journal))
            if known:  # the same session id goes on with the same conversation
                owed = self.runner.restore()
            # Refused (`SessionBusy`) if another writer holds it, or wrote after our reading.
            self._lease = self.journal.begin(self.session_id, self.config, from_seq=self.runner.seq)
        except BaseException:
            await self._close_all()
            raise
        # Entered here and exited in __aexit__, in the caller's task: `async with` nests it
        # inside every scope the caller opened before, and outside those opened within.
        self._tasks = await anyio.create_task_group().__aenter__()
        if self.runner.phase is Phase.AWAITING_APPROVAL:  # paused: nothing to finish or redo
            self._turns.end = AwaitApproval(requests=self.pending_approvals)
        elif known and self.runner.phase is not Phase.IDLE:
            self._turns.start(lambda: self.runner.resume(owed))
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop what still runs (recorded as cancelled), then close what the client opened.

        Runs to its end even when the caller's task is being cancelled; the
        exception that ended the block (a cancellation included) goes on as it was.
        """
        tasks = self._require_open()
        try:
            with anyio.CancelScope(shield=True):
                await self._turns.stop()
        finally:
            self._tasks = None
            tasks.cancel_scope.cancel()
            try:
                await tasks.__aexit__(None, None, None)  # its turns are over: returns at once
            finally:
                await self._close_all()

    async def _close_all(self) -> None:
        """Close what the client opened (shielded), then disconnect its MCP servers."""
        try:
            with anyio.CancelScope(shield=True):
                await self._close()
        finally:
            await self._close_sources()

    async def _close(self) -> None:
        """Give the session back to the journal (if this client holds it); close the pool and
        journal the client owns."""
        lease, self._lease = self._lease, None
        try:
            if lease is not None:  # a client refused at `begin` holds nothing to give back
                self.journal.release(lease)
        except JournalUnavailable:
            if self._own_journal:
                raise
            # The caller's journal keeps the unwritten steps (and the session): its own
            # flush() or close() writes them once the file is writable again.
        finally:
            try:
                if self._own_model:  # a caller's own model is the caller's to close
                    for port in (self._model, *self._fallbacks):
                        await port.aclose()
            finally:
                if self._own_journal:
                    self.journal.close()

    async def _close_sources(self) -> None:
        """Disconnect the MCP servers (in the caller's scope, where they were connected)."""
        if self._sources is not None:
            sources, self._sources = self._sources, None
            await sources.aclose()

    def _kept_in(self, *, closing: bool) -> str | Path | Journal:
        """Where the session can be read: the journal, or its path if the client closes it."""
        given = self.options.journal
        return given if closing and isinstance(given, str | Path) else self.journal

    def session(self) -> Session:
        """The session so far, rebuilt from the journal (as `load_session` does), open or closed.

        Its transcript is `render_transcript(client.session())`.
        """
        with journal_at(self._kept_in(closing=self._tasks is None)) as journal:
            from toolreel.adapters import load_session  # noqa: PLC0415 - sessions load at first use

            return load_session(journal, self.session_id)

    def _require_open(self) -> anyio.abc.TaskGroup:
        """The client's task group; NotOpen outside `async with`."""
        if self._tasks is None:
            raise NotOpen("this Client is not open: use `async with Client(options) as client:`")
        return self._tasks

    # --- turns --------------------------------------------------------------------------

    @property
    def last_finish(self) -> Finish | None:
        """How the last turn finished, once it has (None while one runs, or it paused)."""
        end = self._turns.end
        return end if isinstance(end, Finish) else None

    @property
    def paused(self) -> AwaitApproval | None:
        """How the last turn paused for approval, if it did (and no decision went on since)."""
        end = self._turns.end
        return end if isinstance(end, AwaitApproval) else None

    async def query(self, prompt: Prompt, *, images: Iterable[ImageSource] | None = None) -> None:
        """Send a user prompt; the turn runs while you read `events()` (or `wait()`).

        The prompt is a str, or a list of texts and `ImagePart`s (pydantic-ai's
        convention: the texts joined by newlines, the images after them); anything
        else, or text that is not valid Unicode (a lone surrogate), is a `ConfigError`
        and nothing is sent. `images` (paths, bytes, URLs or `ImagePart`s;
        shell/_images.py) follow the prompt's; a model that cannot take them is
        refused here (`ContentRefused`). While a turn runs (or waits for results
        or approval) a new prompt is refused (`TurnInProgress`).

        Args:
            prompt: The user's prompt: a str, or a list of texts and `ImagePart`s.
            images: Images sent after the prompt's text: paths, bytes, URLs or `ImagePart`s.

        Raises:
            NotOpen: The Client is not open (`async with`).
            TurnInProgress: A turn is still running, or waits for results or approval.
            ConfigError: The prompt or an image is not valid; nothing was sent.
        """
        self._require_open()
        event = self._prompt(prompt, images)
        if self._turns.running:
            raise TurnInProgress(
                "a turn is still running: read it to its end (or answer its tool calls) first"
            )
        if self.phase is Phase.AWAITING_APPROVAL:
            held = [request.call.id for request in self.pending_approvals]
            raise TurnInProgress(
                f"the turn waits for approval of {held}: approve() or deny() each first "
                "(or interrupt() it)"
            )
        self._turns.discard()  # what turns that are over told, read or not
        self.runner.drain()  # what came too late for the turns that are over
        self._turns.start(lambda: self.runner.turn(event))

    def _prompt(self, prompt: Prompt, sources: Iterable[ImageSource] | None) -> PromptSubmitted:
        """The prompt's event, refused at once if it is no prompt or the model cannot take
        its images."""
        event = submitted(prompt, to_images(sources))
        codec = getattr(self._model, "codec", None)
        if event.images and codec is not None:
            message = ChatMessage(role="user", content=event.text, images=event.images)
            why = refusal(codec, (message,))
            if why is not None:
                raise ContentRefused(why)
        return event

    async def events(self) -> AsyncIterator[Notice | Finish | AwaitApproval]:
        """The running turn's notices, then its `Finish` (paused for approval: ending with
        `AwaitApproval`; manual mode: ending with a `ResultsRequested` whose calls await
        results, read on once `add_tool_result` answered them).

        With no turn under way, and nothing left unread, it ends at once.
        """
        self._require_open()
        while True:
            item = await self._turns.until_done(self._turns.next())
            if item is None:  # nothing more will come: say what stopped the turn, if anything
                self._turns.raise_error()
                return
            yield item
            if isinstance(item, Finish | AwaitApproval):
                await self.wait()  # the turn's task is ending; let it finish
                return
            if isinstance(item, ResultsRequested) and self._owed(item):
                return

    def _owed(self, request: ResultsRequested) -> bool:
        """Whether a call `request` asked results for still awaits one (one answered early
        while the stream was not read that far does not stop it)."""
        awaited = self.pending_tool_calls()
        return any(call.id in awaited for call in request.calls)

    async def wait(self) -> Finish | None:
        """Wait for the running turn to finish or pause for approval (its notices stay readable).

        Its `Finish`; None when no turn finished: none ran, or it is paused for
        approval (`paused` says how; `approve` / `deny` each of `pending_approvals`).

        Returns:
            The turn's `Finish` (its outcome, `text`, `rounds`, `usage`), or None.
        """
        self._require_open()
        await self._turns.until_done(self._turns.wait())
        self._turns.raise_error()
        return self.last_finish

    async def add_tool_result(
        self, tool_call_id: str, content: Any, *, is_error: bool = False
    ) -> None:
        """Manual mode: the result of a call the model made (any value; non-text becomes JSON).

        An `ImagePart`, or a list of text and images, gives a result with images.
        Text that is not valid Unicode (a lone surrogate) is a `UsageError`; a
        call that awaits no result an `UnknownToolCall`.
        """
        self._require_open()
        try:
            given = tool_output(content, output_text) or ToolOutput(
                text=output_text(content), images=()
            )
        except Exception as exc:
            raise UsageError(
                f"the result for {tool_call_id!r} is a {type(content).__name__}, which cannot be "
                "turned into text; pass a str, a number, a list, a dict or an attrs class"
            ) from exc
        event = ToolFinished(
            call_id=tool_call_id, output=given.text, is_error=is_error, images=given.images
        )
        if well_formed(event) is not event:  # a journal could not hold it as it is
            raise UsageError(
                f"the result for {tool_call_id!r} is not valid Unicode text (it holds a lone "
                "surrogate: an undecodable byte read with surrogateescape?); decode bytes "
                "with errors='replace'"
            )
        if (error := misuse(self.phase, event, self.pending_tool_calls())) is not None:
            raise UnknownToolCall(str(error)) from error
        if not self._turns.running:  # a resumed session that was awaiting results
            self.runner.drain()
            self._turns.start(self.runner.turn)
        await self._turns.until_done(self.runner.submit(event))

    def pending_tool_calls(self) -> dict[str, str]:
        """Manual mode: ids and names of the calls waiting for `add_tool_result`."""
        return {call.id: call.name for call in self.runner.awaiting()}

    @property
    def pending_approvals(self) -> tuple[ApprovalRequested, ...]:
        """The calls held for `approve` / `deny` (each its call and why), in call order."""
        return self.runner.awaiting_approval()

    async def approve(self, call_id: str) -> None:
        """Approve a held call; once the last held call is decided, the turn goes on.

        Returns once the decision is journaled; `wait()` or `events()` give what follows.

        Args:
            call_id: The held call's id (`pending_approvals[i].call.id`).

        Raises:
            UnknownApproval: No such call is held (unknown, or already decided).
        """
        await self._decide(Approved(call_id=call_id))

    async def deny(self, call_id: str, reason: str = "") -> None:
        """Deny a held call: the model reads `reason` as its error result.

        An empty reason reads "The user denied this tool call."; otherwise as `approve`.
        A reason that is not valid Unicode text is a `ConfigError`.

        Args:
            call_id: The held call's id (`pending_approvals[i].call.id`).
            reason: What the model reads as the call's result.

        Raises:
            UnknownApproval: No such call is held (unknown, or already decided).
        """
        await self._decide(Denied(call_id=call_id, reason=reason))

    async def _decide(self, decision: Approved | Denied) -> None:
        """Feed a human's decision, continuing a paused turn (in a run of its own).

        One decision per call: one for a call not held (unknown, decided, or
        its decision on its way) is refused at once (`UnknownApproval`).
        """
        self._require_open()
        held = [r.call.id for r in self.pending_approvals if r.call.id not in self._deciding]
        if (error := misuse(self.phase, decision, held)) is not None:
            raise UnknownApproval(str(error)) from error
        self._deciding.add(decision.call_id)
        try:
            await self._continue(decision)
        finally:
            self._deciding.discard(decision.call_id)

    async def _continue(self, event: Approved | Denied | Cancelled) -> None:
        """Hand the turn `event`; a paused turn's run is over, so a new run takes it.

        One at a time: two would start two runs of one session. Raises what
        applying `event` raised (a journal that gave up), never waits forever.
        """
        async with self._continuing:
            if self.phase is Phase.AWAITING_APPROVAL:
                await self._turns.until_done(self._turns.wait())  # the paused run is ending
            if not self._turns.running:
                self._turns.discard()  # what the paused run told, read or not
                self.runner.drain()
                self._turns.start(self.runner.turn)
            await self._turns.until_done(self.runner.submit(event))

    async def interrupt(self) -> None:
        """Stop the model stream and running tools now; the turn finishes CANCELLED.

        A turn paused for approval is cancelled too: its held calls answered "cancelled".
        """
        self._require_open()
        with anyio.CancelScope(shield=True):
            if self.phase is Phase.AWAITING_APPROVAL and not self._turns.running:
                await self._continue(Cancelled())
                await self.wait()
                return
            await self._turns.stop()

    @property
    def phase(self) -> Phase:
        """Where the conversation stands: `Phase.IDLE` between turns, else a turn is unfinished."""
        return self.runner.phase

    @property
    def history(self) -> tuple[ChatMessage, ...]:
        """The provider-neutral history (a running turn's rounds included)."""
        return self.runner.history

    @property
    def spent(self) -> Spending:
        """What the session spent so far (tokens, model and tool calls, cost), live while a
        turn runs; the running turn's own is told by `UsageReported` when a budget is set."""
        return self.runner.spent

    @property
    def metadata(self) -> RunMetadata:
        """Errors of callbacks and PostToolUse hooks, recorded instead of raised."""
        return self.runner.metadata


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RunResult(Value):
    """What one `run()` gave: the answer, its rounds, usage, and why it ended."""

    text: str
    rounds: tuple[ToolRound, ...]
    usage: Usage
    reason: FinishReason
    iterations: int
    max_iterations_reached: bool
    session_id: str
    history: tuple[ChatMessage, ...]
    callback_errors: tuple[str, ...] = ()
    #: What the turn spent: tokens, model and tool calls, cost (with a budget's prices).
    spent: Spending = attrs.field(factory=Spending)
    #: The budget limit that ended the turn (`reason` OVER_BUDGET), if one did.
    over_budget: OverBudget | None = None
    #: Where the session is kept: the options' journal (a path, a URL or a `Journal`), or
    #: the in-memory one the Client kept when they named none (see `session`).
    journal: str | Path | Journal | None = attrs.field(default=None, eq=False, repr=False)

    def session(self) -> Session:
        """The session the run made, rebuilt from its journal (as `load_session` does).

        Its transcript is `render_transcript(result.session())`.
        """
        if self.journal is None:
            raise UsageError("this RunResult was not made by run(): it has no journal to read")
        with journal_at(self.journal) as journal:
            from toolreel.adapters import load_session  # noqa: PLC0415 - sessions load at first use

            return load_session(journal, self.session_id)


async def run(
    prompt: Prompt,
    options: AgentOptions,
    *,
    model: ModelPort | None = None,
    images: Iterable[ImageSource] | None = None,
) -> RunResult:
    """Run one prompt (and its `images`) to its end with the tools executed.

    Raises `RunFailed` if it failed. A turn that pauses for approval raises
    `ApprovalPending` (it is journaled: a Client can resume it, if the options
    journal it).

    Args:
        prompt: The user's prompt: a str, or a list of texts and `ImagePart`s.
        options: The model, the tools, the journal and the loop's limits.
        model: A model port to use instead of the one the options describe
            (a `TestModel`, a `Recording`, `openai_sdk_model(client)`, ...).
        images: Images sent after the prompt's text: paths, bytes, URLs or `ImagePart`s.

    Returns:
        The turn's answer (`text`), its tool `rounds`, `usage`, finish `reason`, and
        what it spent; `over_budget` when a budget ended it.

    Raises:
        RunFailed: The turn failed (the provider's error past its retries, a fatal one).
        ApprovalPending: The turn waits for a person to approve or deny a call.
        ConfigError: The prompt or the options are not valid; nothing was sent.
    """
    options = attrs.evolve(options, auto_execute_tools=True)
    submitted(prompt)  # no prompt (a `ConfigError`): no session begun
    async with Client(options, model=model) as client:
        await client.query(prompt, images=images)
        finish = await client.wait()
        if client.paused is not None:
            raise ApprovalPending(client.session_id, client.paused.requests)
        assert finish is not None
        if finish.reason is FinishReason.FAILED:
            raise RunFailed(finish)
        return RunResult(
            text=finish.text,
            rounds=finish.rounds,
            usage=finish.usage,
            reason=finish.reason,
            iterations=finish.iterations,
            max_iterations_reached=finish.max_iterations_reached,
            session_id=client.session_id,
            history=client.history,
            callback_errors=tuple(client.metadata.callback_errors),
            spent=client.spent,
            over_budget=finish.over_budget,
            journal=client._kept_in(closing=True),  # the client closes a journal it opened
        )

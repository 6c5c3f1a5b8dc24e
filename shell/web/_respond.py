"""One turn as an HTTP response: the SSE streams of a `Client`'s events, and `chat_response`.

`ui_message_stream(client.events())` / `event_stream(...)` turn any stream of
notices into SSE text; `chat_response(options, prompt)` runs one turn in its own
`Client` and streams it, for users who keep their own routes (`sessions=`: in a
session of elsewhere, as shell/web/_conversations.py says, e.g. on Temporal).

Disconnects: the response listens for `http.disconnect` while it streams (and
treats a failed write the same way). A client that goes away cancels the
streaming, and with it the `Client`'s `events()`: the turn is interrupted and
journaled `Cancelled` (tools stopped, completed rounds kept), and the session
can be continued by its id. A turn that ends normally closes the response.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Sequence
from typing import Any, Generic, Literal, TypeVar

import anyio
import attrs
from starlette.responses import JSONResponse, StreamingResponse
from starlette.types import Receive, Scope, Send

from toolreel.adapters import JournalError, ModelPort, SessionBusy, SessionNotFound
from toolreel.core import (
    AwaitApproval,
    ConfigError,
    Finish,
    Phase,
    PromptSubmitted,
    ToolreelError,
    UsageError,
)
from toolreel.core.notices import Notice, ToolCallAnnounced
from toolreel.core.record import Value
from toolreel.shell import AgentOptions

from ._approvals import ApprovalDecision, refusal, waiting_response
from ._conversations import Conversation, Conversations, LocalConversations
from ._ending import Ending, after_ending
from ._event_stream import (
    EVENT_STREAM_HEADERS,
    plain_error,
    plain_events,
    plain_start,
    sse_event,
)
from ._ui_stream import DONE, UI_STREAM_HEADERS, sse, ui_error, ui_parts, ui_start
from ._whatif import SessionConflict

#: Which stream a response speaks: the AI SDK's UI message stream, the plain events, or AG-UI's.
Protocol = Literal["ui", "events", "agui"]
Clock = Callable[[], float]
#: A stream protocol's fold state and one output of it (a part, an event).
State = TypeVar("State")
Out = TypeVar("Out")


def new_message_id() -> str:
    """A fresh id for an assistant message."""
    return f"msg_{uuid.uuid4().hex}"


async def ui_message_stream(
    items: AsyncIterable[Notice | Finish | AwaitApproval],
    *,
    message_id: str | None = None,
    clock: Clock = time.monotonic,
    redact: Callable[[str], str] = str,
    denied: Iterable[str] = (),
) -> AsyncIterator[str]:
    """One turn's notices as the AI SDK UI message stream: SSE text, `data: [DONE]` last.

    `denied`: when the stream continues the client's assistant message after its
    `addToolApprovalResponse`, the calls it denied (their outputs: `tool-output-denied`).
    A toolreel error raised by `items` (a journal that gave up, ...) becomes an
    `error` part and `finish`; anything else is a bug and propagates. One
    `finish`, always: the parts that end the message wait until `items` has
    ended (a client's `events()` ends right after the `Finish`, once the turn is
    recorded), and an error raised then ends it instead.
    """
    stream, parts = ui_start(message_id or new_message_id(), denied=denied)
    encoding = Encoding(
        fold=ui_parts,
        ended=lambda after, _: after.finished,
        error=lambda before, message, _: ui_error(before, message)[1],
        write=sse,
    )
    async for text in _encoded(items, stream, parts, encoding, clock=clock, redact=redact):
        yield text
    yield DONE


async def event_stream(
    items: AsyncIterable[Notice | Finish | AwaitApproval],
    *,
    session_id: str,
    clock: Clock = time.monotonic,
    redact: Callable[[str], str] = str,
) -> AsyncIterator[str]:
    """One turn's notices as the plain event stream (`session` first, `done` last).

    One `done`, always: the events of the turn's end wait until `items` has
    ended (the turn is then recorded); an error raised then (`error`, `done`)
    replaces them.
    """
    stream, events = plain_start(session_id)
    encoding = Encoding(
        fold=plain_events,
        ended=lambda _, events: any(kind == "done" for kind, _ in events),
        error=lambda _, message, code: plain_error(message, code),
        write=lambda event: sse_event(*event),
    )
    async for text in _encoded(items, stream, events, encoding, clock=clock, redact=redact):
        yield text


async def agui_stream(
    items: AsyncIterable[Notice | Finish | AwaitApproval],
    *,
    thread_id: str,
    run_id: str,
    clock: Clock = time.monotonic,
    redact: Callable[[str], str] = str,
) -> AsyncIterator[str]:
    """One turn's notices as one AG-UI run (shell/web/_agui_stream.py): `RUN_STARTED` first,
    `RUN_FINISHED` or `RUN_ERROR` last, once `items` has ended (an error raised then:
    `RUN_ERROR`). Loads `ag_ui` (the `agui` extra) when called."""
    from ._agui_stream import agui_error, agui_events, agui_sse, agui_start  # noqa: PLC0415

    stream, events = agui_start(thread_id, run_id)
    encoding = Encoding(
        fold=agui_events,
        ended=lambda after, _: after.finished,
        error=lambda before, message, code: agui_error(before, message, code)[1],
        write=agui_sse,
    )
    async for text in _encoded(items, stream, events, encoding, clock=clock, redact=redact):
        yield text


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Encoding(Value, Generic[State, Out]):
    """One stream protocol's pure fold (shell/web/_ui_stream.py, _event_stream.py,
    _agui_stream.py) as `_encoded` drives it: fold an item, whether what it made ends the
    stream, what a toolreel error raised by the items makes, and how one output is written."""

    fold: Callable[[State, Notice | Finish | AwaitApproval, float], tuple[State, Sequence[Out]]]
    ended: Callable[[State, Sequence[Out]], bool]
    error: Callable[[State, str, str], Sequence[Out]]
    write: Callable[[Out], str]


async def _encoded(
    items: AsyncIterable[Notice | Finish | AwaitApproval],
    stream: State,
    first: Sequence[Out],
    encoding: Encoding[State, Out],
    *,
    clock: Clock,
    redact: Callable[[str], str],
) -> AsyncIterator[str]:
    """`first`, then each item folded and written, as SSE text. What ends the stream waits
    until `items` has ended (the turn is then recorded); an error `items` raises (a journal
    that gave up, ...) replaces it; anything else is a bug and propagates."""
    for out in first:
        yield encoding.write(out)
    ending: Sequence[Out] | None = None  # what ends the stream, once `items` ends
    try:
        async with _closing(items) as notices:
            async for item in notices:
                if ending is not None:
                    continue  # nothing is sent after the stream's end
                after, outs = encoding.fold(stream, item, clock())
                if encoding.ended(after, outs):
                    ending = outs
                    continue
                stream = after
                for out in outs:
                    yield encoding.write(out)
    except ToolreelError as exc:
        ending = encoding.error(stream, redact(str(exc)), _code(exc))
    for out in ending or ():
        yield encoding.write(out)


def _code(exc: ToolreelError) -> str:
    """An error's kind for the `code` field: its class name in snake case."""
    name = type(exc).__name__
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


@contextlib.asynccontextmanager
async def _closing(items: AsyncIterable[Any]) -> AsyncIterator[AsyncIterable[Any]]:
    """`items`, closed at the end if it is a generator (so a client's `events()` is too)."""
    try:
        yield items
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()


# --- the response ------------------------------------------------------------------------


def error_response(exc: BaseException) -> JSONResponse:
    """`{"error": message}` with the status that fits a toolreel error."""
    status = 500
    if isinstance(exc, SessionBusy | SessionConflict):
        status = 409
    elif isinstance(exc, SessionNotFound):
        status = 404
    elif isinstance(exc, UsageError | ConfigError):
        status = 400
    elif isinstance(exc, JournalError):
        status = 503
    return JSONResponse({"error": " ".join(str(exc).split())}, status_code=status)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TurnRequest(Value):
    """What one response runs: a prompt in a session (or decisions on its paused turn),
    with these options and model, or in `sessions` (default: the options' journal, a
    `Client` in this process)."""

    options: AgentOptions
    prompt: str
    protocol: Protocol = "ui"
    message_id: str | None = None
    model: ModelPort | None = None
    decisions: tuple[ApprovalDecision, ...] = ()
    #: The decisions come from the client's own assistant message (useChat's
    #: `addToolApprovalResponse`), which the response continues: the held calls are
    #: not announced again, a denied call ends `tool-output-denied`, and a call of the
    #: paused round decided before is passed over.
    continued: bool = False
    #: No prompt: the turn the session owes (a fork's, one a crash left) goes on, streamed.
    owed: bool = False
    #: The AG-UI run this response is (`protocol="agui"`; default: a new id).
    run_id: str | None = None
    sessions: Conversations | None = None


class TurnResponse(StreamingResponse):
    """A streamed turn: opens its session when served, and cancels the turn on disconnect.

    If the session cannot be opened (in use: 409, unknown: 404, journal: 503),
    or the prompt is no valid Unicode text (400: nothing begun), the response is
    `{"error": ...}` instead of a stream.
    """

    def __init__(self, turn: TurnRequest, *, resume: bool = False) -> None:
        """Prepare; nothing runs until the server calls the response (`resume`: the session
        must exist)."""
        headers = UI_STREAM_HEADERS if turn.protocol == "ui" else EVENT_STREAM_HEADERS
        super().__init__((), media_type="text/event-stream", headers=dict(headers))
        self.turn = turn
        self.resume = resume
        self._first: tuple[Notice | Finish | AwaitApproval, ...] = ()
        self._ending = Ending()
        self._session_id = turn.options.session_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Open the session, run the turn and stream it; close the session whatever happens.

        The client leaving stops it at any point: while the turn is begun (a
        decision waiting to be journaled) as while it streams. A response of the
        same session that is ending is waited for first (web/_ending.py).
        """
        await after_ending(self._session_id)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_watch_disconnect, receive, tasks.cancel_scope, self._end)
                await self._respond(scope, receive, send)
                tasks.cancel_scope.cancel()
        finally:
            self._ending.closed()

    def _end(self) -> None:
        """The response is ending (its last chunk goes, or its client left): mark the session."""
        if self._session_id is not None:
            self._ending.mark(self._session_id)

    async def _respond(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`__call__`, watched for the client leaving."""
        async with contextlib.AsyncExitStack() as stack:
            try:
                PromptSubmitted(text=self.turn.prompt)  # text no session holds: 400, none begun
                options = self.turn.options
                sessions = self.turn.sessions or LocalConversations(
                    options=options, model=self.turn.model
                )
                opened = sessions.open(options.session_id, resume=self.resume)
                client = await stack.enter_async_context(opened)
                self._session_id = client.session_id
                refused = await self._begin(client)
            except ToolreelError as exc:
                refused = error_response(exc)
            if refused is not None:  # the session could not be opened, or the turn begun
                await refused(scope, receive, send)
                return
            await self._stream(self._body(client), send)

    async def _begin(self, client: Conversation) -> JSONResponse | None:
        """Start the turn: the prompt, or the decisions that continue a paused turn.

        Refused (the response to send instead of the stream): a prompt while the
        turn waits for approval (409), a decision for a call not held (400).
        """
        if self.turn.decisions:
            return await self._decide(client)
        if self.turn.owed:
            if client.phase is Phase.IDLE:
                return error_response(
                    SessionConflict(f"session {client.session_id!r} has no turn to continue")
                )
            return None  # the resumed turn runs: its notices stream
        if client.phase not in (Phase.IDLE, Phase.AWAITING_APPROVAL):
            await client.wait()  # a turn a crash left unfinished: finish it first
        if client.phase is Phase.AWAITING_APPROVAL:
            return waiting_response(client)
        await client.query(self.turn.prompt)
        return None

    async def _decide(self, client: Conversation) -> JSONResponse | None:
        """Apply the decisions in order; what the runs before the last one told opens the stream.

        A response to `/api/approvals` is a new message: it opens by announcing
        the held calls again, so their outputs belong to a call of its own step.
        """
        held = client.pending_approvals
        refused = refusal(client, self.turn.decisions, continued=self.turn.continued)
        if refused is not None:
            return refused
        first: list[Notice | Finish | AwaitApproval] = []
        if not self.turn.continued:
            iteration = client.iteration
            first = [ToolCallAnnounced(call=r.call, iteration=iteration) for r in held]
        ids = {request.call.id for request in held}
        decisions = [d for d in self.turn.decisions if d.call_id in ids]
        if not decisions:  # each was decided before: the turn waits as it did
            self._first = (*first, AwaitApproval(requests=held))
            return None
        for index, decision in enumerate(decisions):
            if index:  # what the run the previous decision began told, up to its pause
                first += [i async for i in client.events() if not isinstance(i, AwaitApproval)]
            if decision.approve:
                await client.approve(decision.call_id)
            else:
                await client.deny(decision.call_id, decision.reason)
        self._first = tuple(first)
        return None

    def _body(self, client: Conversation) -> AsyncIterator[str]:
        """The turn's SSE text in this response's protocol."""
        redact = client.redact
        items = _ending_at_end(_after(self._first, client.events()), self._end)
        if self.turn.protocol == "ui":
            denied = [
                d.call_id for d in self.turn.decisions if self.turn.continued and not d.approve
            ]
            return ui_message_stream(
                items, message_id=self.turn.message_id, redact=redact, denied=denied
            )
        if self.turn.protocol == "agui":
            run_id = self.turn.run_id or f"run_{uuid.uuid4().hex}"
            return agui_stream(items, thread_id=client.session_id, run_id=run_id, redact=redact)
        return event_stream(items, session_id=client.session_id, redact=redact)

    async def _stream(self, body: AsyncIterator[str], send: Send) -> None:
        """Send the head and every chunk (a client gone on write stops it, as a disconnect)."""
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async with _closing(body) as chunks:
                async for chunk in chunks:
                    await send(_body_message(chunk.encode(), more=True))
            self._end()
            await send(_body_message(b"", more=False))
        except OSError:  # the client is gone (a server that says so on write)
            pass


async def _after(
    first: tuple[Notice | Finish | AwaitApproval, ...],
    items: AsyncIterator[Notice | Finish | AwaitApproval],
) -> AsyncIterator[Notice | Finish | AwaitApproval]:
    """`first`, then `items` (closed when this is)."""
    async with _closing(items) as rest:
        for item in first:
            yield item
        async for item in rest:
            yield item


async def _ending_at_end(
    items: AsyncIterator[Notice | Finish | AwaitApproval], end: Callable[[], None]
) -> AsyncIterator[Notice | Finish | AwaitApproval]:
    """`items`, calling `end` before the turn's last (its `Finish`, or the pause) goes out."""
    async with _closing(items) as rest:
        async for item in rest:
            if isinstance(item, Finish | AwaitApproval):
                end()
            yield item


def _body_message(body: bytes, *, more: bool) -> dict[str, Any]:
    """An ASGI body message."""
    return {"type": "http.response.body", "body": body, "more_body": more}


async def _watch_disconnect(
    receive: Receive, scope: anyio.CancelScope, leaving: Callable[[], None]
) -> None:
    """Cancel `scope` when the client disconnects (telling `leaving` first)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            leaving()
            scope.cancel()
            return


def decision_response(
    options: AgentOptions,
    session_id: str,
    decision: ApprovalDecision,
    *,
    protocol: Protocol = "ui",
    model: ModelPort | None = None,
    sessions: Conversations | None = None,
) -> StreamingResponse:
    """A decision on a call the paused turn of `session_id` holds, and what follows, streamed.

    An unknown session is a 404; a call that is not held (unknown, decided) a 400.
    """
    turn = TurnRequest(
        options=attrs.evolve(options, session_id=session_id, auto_execute_tools=True),
        prompt="",
        protocol=protocol,
        model=model,
        decisions=(decision,),
        sessions=sessions,
    )
    return TurnResponse(turn, resume=True)


def approval_response(
    options: AgentOptions,
    session_id: str,
    decisions: Sequence[ApprovalDecision],
    *,
    message_id: str | None = None,
    model: ModelPort | None = None,
    sessions: Conversations | None = None,
) -> StreamingResponse:
    """useChat's approval responses applied to the paused turn of `session_id`, and what
    follows, streamed as the continuation of the client's assistant message `message_id`.

    The decisions are applied in order (`Client.approve` / `deny`); one for a call
    of the paused round decided before is passed over. An unknown session is a
    404; a decision for any other call a 400 naming it, before any is applied.
    """
    if not decisions:
        raise UsageError("no approval responses to apply")
    turn = TurnRequest(
        options=attrs.evolve(options, session_id=session_id, auto_execute_tools=True),
        prompt="",
        message_id=message_id,
        model=model,
        decisions=tuple(decisions),
        continued=True,
        sessions=sessions,
    )
    return TurnResponse(turn, resume=True)


def continue_response(
    options: AgentOptions,
    session_id: str,
    *,
    protocol: Protocol = "ui",
    message_id: str | None = None,
    model: ModelPort | None = None,
    sessions: Conversations | None = None,
) -> StreamingResponse:
    """The turn session `session_id` owes (a fork's, one a crash interrupted), carried on and
    streamed as a new message. An unknown session is a 404; one that owes no turn a 409."""
    turn = TurnRequest(
        options=attrs.evolve(options, session_id=session_id, auto_execute_tools=True),
        prompt="",
        protocol=protocol,
        message_id=message_id,
        model=model,
        owed=True,
        sessions=sessions,
    )
    return TurnResponse(turn, resume=True)


def chat_response(
    options: AgentOptions,
    prompt: str,
    *,
    session_id: str | None = None,
    protocol: Protocol = "ui",
    message_id: str | None = None,
    model: ModelPort | None = None,
    sessions: Conversations | None = None,
) -> StreamingResponse:
    """One turn of `prompt` as a streaming response (AI SDK UI stream, or `protocol="events"`).

    The turn runs in a `Client` of its own, opened when the response is sent:
    in `session_id` (continued when `options.journal` has it; default
    `options.session_id`, else a new one), tools executed. Closing the
    connection cancels the turn (journaled `Cancelled`; the session resumes).
    `sessions`: the session lives and runs there instead (e.g.
    `toolreel.temporal.WorkflowChats`: a session workflow, its workers running it).
    """
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    changes: dict[str, Any] = {"auto_execute_tools": True}
    if session_id is not None:
        changes["session_id"] = session_id
    turn = TurnRequest(
        options=attrs.evolve(options, **changes),
        prompt=prompt,
        protocol=protocol,
        message_id=message_id,
        model=model,
        sessions=sessions,
    )
    return TurnResponse(turn)


def agui_response(
    options: AgentOptions,
    thread_id: str,
    run_id: str,
    *,
    prompt: str = "",
    decisions: Sequence[ApprovalDecision] = (),
    model: ModelPort | None = None,
    sessions: Conversations | None = None,
) -> StreamingResponse:
    """One AG-UI run in session `thread_id`: the turn of `prompt` (a new session when the
    thread is unknown), or `decisions` on the interrupted run's held calls and what follows
    (the session must exist: 404; a call not held: 400)."""
    if not decisions and not prompt.strip():
        raise UsageError("the run has neither a user message nor resume entries")
    turn = TurnRequest(
        options=attrs.evolve(options, session_id=thread_id, auto_execute_tools=True),
        prompt=prompt,
        protocol="agui",
        model=model,
        decisions=tuple(decisions),
        continued=bool(decisions),
        run_id=run_id,
        sessions=sessions,
    )
    return TurnResponse(turn, resume=bool(decisions))
